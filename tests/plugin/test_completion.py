"""kubectl's plugin completion protocol (`kubectl_complete-kyrec`), answered in-process."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_kyrec.cli import completion_cmd
from kubectl_kyrec.cli.completion_cmd import complete, complete_words
from kubectl_kyrec.cluster.namespaces import live_namespace_lister

ROOT = Path(__file__).resolve().parents[2]


def values(words: list[str], **kw: object) -> list[str]:
    return [v for v, _ in complete(words, **kw).values]  # type: ignore[arg-type]


def test_subcommands_include_those_added_later() -> None:
    found = values([""])
    for name in ("eval", "diff", "coverage", "test", "completion", "version", "apply", "capture", "lint", "convert"):
        assert name in found
    assert values(["c"]) == ["coverage", "completion", "convert", "capture"]
    assert complete_words(["ev"])[-1] == ":4"


def test_output_values_are_the_commands_formats() -> None:
    assert values(["eval", "-o", ""]) == ["table", "wide", "yaml", "json", "reports", "github", "junit", "sarif"]
    assert "diff" in values(["diff", "-o", ""])
    assert "reports" not in values(["test", "--output", ""])
    assert values(["eval", "--output=j"]) == ["--output=json", "--output=junit"]


def test_choice_and_bool_flags_offer_their_values_not_flags() -> None:
    assert values(["eval", "--fail-on", ""]) == ["error", "fail", "warn", "never"]
    assert values(["eval", "--exit-code", "f"]) == ["false"]
    assert values(["completion", ""]) == ["bash", "fish", "zsh"]


def test_paths_are_left_to_the_shell() -> None:
    for flag in ("-p", "-r", "-e", "--state", "--policy", "--crd"):
        found = complete(["eval", flag, ""])
        assert found.values == [] and found.directive == completion_cmd.DIRECTIVE_DEFAULT, flag
    found = complete(["test", ""])
    assert found.values == [] and found.directive == completion_cmd.DIRECTIVE_DEFAULT


def test_flags_on_a_dash_and_once_only() -> None:
    flags = values(["eval", "--"])
    assert "--fail-on" in flags and "--policy" in flags and "--help" in flags
    assert all(f.startswith("--") for f in flags)
    assert "--fail-on" not in values(["eval", "--fail-on", "warn", "--"])   # single-valued, given
    assert "--policy" in values(["eval", "-p", "a.yaml", "--"])             # repeatable
    assert "--file-name" in values(["test", "-"])


def test_unknown_command_offers_nothing() -> None:
    assert complete(["nope", ""]).values == []


KUBECONFIG = """apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster: {server: "http://127.0.0.1:%d"}
contexts:
- name: dev
  context: {cluster: c1, user: u}
- name: prod-eu
  context: {cluster: c1, user: u}
users:
- name: u
  user: {token: t}
"""


def test_context_from_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(KUBECONFIG % 1)
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    assert values(["diff", "--context", ""]) == ["dev", "prod-eu"]
    assert values(["diff", "--context", "p"]) == ["prod-eu"]
    other = tmp_path / "other"
    other.write_text(KUBECONFIG.replace("prod-eu", "staging") % 1)
    assert values(["diff", "--kubeconfig", str(other), "--context", ""]) == ["dev", "staging"]
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    assert values(["diff", "--context", ""]) == []


class _Namespaces(http.server.BaseHTTPRequestHandler):
    delay = 0.0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        time.sleep(self.delay)
        body = json.dumps({"kind": "NamespaceList", "apiVersion": "v1", "metadata": {},
                           "items": [{"metadata": {"name": n}} for n in ("kube-system", "default", "team-a")]})
        try:
            self.send_response(200 if self.path.startswith("/api/v1/namespaces") else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())
        except OSError:     # the client gave up on a slow answer, as it should
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def api_server() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Namespaces)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def test_namespaces_from_a_cluster_that_answers(api_server: http.server.ThreadingHTTPServer, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _Namespaces.delay = 0.0
    cfg = tmp_path / "config"
    cfg.write_text(KUBECONFIG % api_server.server_address[1])
    monkeypatch.setenv("KUBECONFIG", str(cfg))

    # the machine running the tests may be busy: the 1 s limit itself is the next test's subject
    def patient(words: object) -> list[str]:
        return completion_cmd.cluster_namespaces(words, timeout=10, setup_timeout=30)  # type: ignore[arg-type]

    assert values(["eval", "-n", ""], namespaces=patient) == ["default", "kube-system", "team-a"]
    assert values(["eval", "--namespace", "t"], namespaces=patient) == ["team-a"]


def test_slow_cluster_gives_nothing_after_a_second(api_server: http.server.ThreadingHTTPServer, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _Namespaces.delay = 3.0
    cfg = tmp_path / "config"
    cfg.write_text(KUBECONFIG % api_server.server_address[1])
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    live_namespace_lister(str(cfg), None)   # import the client before timing
    start = time.monotonic()
    assert values(["eval", "-n", ""]) == []
    assert time.monotonic() - start < 1.8


def test_no_cluster_is_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    assert complete_words(["eval", "-n", ""]) == [":4"]
    assert capsys.readouterr().err == ""


def test_namespace_timeout_with_a_fake_lister() -> None:
    def prepare(kubeconfig: str | None, context: str | None):  # type: ignore[no-untyped-def]
        def slow() -> list[str]:
            time.sleep(5)
            return ["late"]
        return slow

    start = time.monotonic()
    assert completion_cmd.cluster_namespaces([], prepare=prepare, timeout=0.2) == []
    assert time.monotonic() - start < 1.0
    assert completion_cmd.cluster_namespaces(["--context", "x"], prepare=lambda k, c: lambda: [str(c)]) == ["x"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_committed_scripts_equal_the_printed_ones(shell: str) -> None:
    committed = (ROOT / "completions" / f"kubectl-kyrec.{shell}").read_text()
    assert completion_cmd.completion_script(shell) + "\n" == committed, (
        f"completions/kubectl-kyrec.{shell} drifted: regenerate with "
        f"`kubectl-kyrec completion {shell} > completions/kubectl-kyrec.{shell}`")


def test_output_that_names_a_file_completes_paths() -> None:
    found = complete(["capture", "-o", ""])
    assert found.values == [] and found.directive == completion_cmd.DIRECTIVE_DEFAULT
    assert values(["version", "-o", ""]) == ["text", "json", "yaml"]
