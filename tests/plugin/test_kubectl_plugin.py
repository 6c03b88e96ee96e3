"""The real kubectl finds, runs and completes the plugin.

Skipped where kubectl is not on PATH, except under CI=true, where a missing kubectl is a failure: the
plugin tests must run there, not skip quietly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")
pytestmark = pytest.mark.skipif(KUBECTL is None and not IN_CI, reason="kubectl is not on PATH")


@pytest.fixture(autouse=True)
def _kubectl_present() -> None:
    assert KUBECTL is not None, "CI=true but kubectl is not on PATH: the plugin tests must run in CI"


@pytest.fixture()
def plugin_path(tmp_path: Path) -> dict[str, str]:
    """A PATH holding only shims that run this checkout's kyrec (so the test does not need an install)."""
    root = Path(__file__).resolve().parents[2]
    for name, entry in (("kubectl-kyrec", "main"), ("kubectl_complete-kyrec", "complete")):
        shim = tmp_path / name
        shim.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(root)!r})\n"
                        f"from kubectl_kyrec.cli.console import {entry}\n{entry}()\n")
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{tmp_path}{os.pathsep}{Path(KUBECTL or '').parent}"
    env["KUBECONFIG"] = str(tmp_path / "no-kubeconfig")
    return env


def test_plugin_list_finds_kyrec(plugin_path: dict[str, str]) -> None:
    out = subprocess.run([KUBECTL or "kubectl", "plugin", "list"], capture_output=True, text=True, env=plugin_path)
    assert "kubectl-kyrec" in out.stdout


def test_kubectl_kyrec_help_and_eval(plugin_path: dict[str, str]) -> None:
    root = Path(__file__).resolve().parents[2]
    help_out = subprocess.run([KUBECTL or "kubectl", "kyrec", "--help"], capture_output=True, text=True,
                              env=plugin_path, check=True)
    assert "eval" in help_out.stdout and "coverage" in help_out.stdout
    run = subprocess.run([KUBECTL or "kubectl", "kyrec", "eval", "-p", str(root / "testdata/examples/policies"),
                          "-r", str(root / "testdata/examples/resources")], capture_output=True, text=True,
                         env=plugin_path)
    assert run.returncode == 1
    assert "pass: 4, fail: 2" in run.stdout


def test_kubectl_completes_through_the_plugin(plugin_path: dict[str, str]) -> None:
    out = subprocess.run([KUBECTL or "kubectl", "__complete", "kyrec", "ev"], capture_output=True, text=True,
                         env=plugin_path)
    lines = out.stdout.splitlines()
    assert any(line.startswith("eval") for line in lines), out.stdout + out.stderr
    out = subprocess.run([KUBECTL or "kubectl", "__complete", "kyrec", "eval", "--fail"], capture_output=True,
                         text=True, env=plugin_path)
    assert any(line.startswith("--fail-on") for line in out.stdout.splitlines()), out.stdout + out.stderr


def complete(env: dict[str, str], *words: str) -> list[str]:
    out = subprocess.run([KUBECTL or "kubectl", "__complete", "kyrec", *words], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_kubectl_kyrec_version(plugin_path: dict[str, str]) -> None:
    out = subprocess.run([KUBECTL or "kubectl", "kyrec", "version", "-o", "yaml"], capture_output=True, text=True,
                         env=plugin_path, check=True)
    assert "kyrec: " in out.stdout and "release: v1." in out.stdout


def test_usage_says_kubectl_kyrec_when_kubectl_runs_it(plugin_path: dict[str, str]) -> None:
    # through a shell, as a user types it: the shell records the command in $_ for the plugin to read
    via_kubectl = subprocess.run(["bash", "-c", "kubectl kyrec eval --help"], capture_output=True, text=True,
                                 env=plugin_path, check=True)
    assert via_kubectl.stdout.startswith("Usage: kubectl kyrec eval [OPTIONS]"), via_kubectl.stdout
    direct = subprocess.run(["bash", "-c", "kubectl-kyrec eval --help"], capture_output=True, text=True,
                            env=plugin_path, check=True)
    assert direct.stdout.startswith("Usage: kubectl-kyrec eval [OPTIONS]"), direct.stdout


def test_kubectl_completes_every_subcommand(plugin_path: dict[str, str]) -> None:
    names = {line.split("\t")[0] for line in complete(plugin_path, "")}
    assert {"eval", "diff", "coverage", "test", "completion", "version", "apply", "capture"} <= names


def test_kubectl_completes_output_formats(plugin_path: dict[str, str]) -> None:
    lines = complete(plugin_path, "eval", "-o", "")
    assert [line.split("\t")[0] for line in lines if not line.startswith(":")] == \
        ["table", "wide", "yaml", "json", "reports", "github", "junit", "sarif"]
    assert not any(line.startswith("--") for line in lines)


def test_kubectl_completes_contexts_from_the_kubeconfig(plugin_path: dict[str, str], tmp_path: Path) -> None:
    cfg = tmp_path / "kubeconfig"
    cfg.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                   "users: [{name: u, user: {}}]\ncontexts:\n- {name: kind-dev, context: {cluster: c, user: u}}\n"
                   "- {name: kind-prod, context: {cluster: c, user: u}}\ncurrent-context: kind-dev\n")
    env = dict(plugin_path, KUBECONFIG=str(cfg))
    lines = complete(env, "diff", "--context", "kind-")
    assert [line.split("\t")[0] for line in lines if not line.startswith(":")] == ["kind-dev", "kind-prod"]


def test_click_scripts_reach_the_same_completion(plugin_path: dict[str, str]) -> None:
    env = dict(plugin_path, _KUBECTL_KYREC_COMPLETE="bash_complete", COMP_WORDS="kubectl-kyrec eval --fail-on ",
               COMP_CWORD="3")
    out = subprocess.run(["kubectl-kyrec"], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.splitlines() == ["plain,error", "plain,fail", "plain,warn", "plain,never"]


def _values(lines: list[str]) -> list[str]:
    return [line.split("\t")[0] for line in lines if not line.startswith(":")]


def test_kubectl_completes_values_where_a_new_user_found_flags(plugin_path: dict[str, str], tmp_path: Path) -> None:
    """The words a new user tried (issue 15): values, not every flag; paths left to the shell."""
    assert _values(complete(plugin_path, "eval", "--fail-on", "")) == ["error", "fail", "warn", "never"]
    assert _values(complete(plugin_path, "completion", "")) == ["bash", "fish", "zsh"]
    test_paths = complete(plugin_path, "test", "")
    assert _values(test_paths) == [] and test_paths[-1] == ":0"      # ShellCompDirectiveDefault: files
    # -n with a cluster that does not answer: nothing, quietly, and no flags either
    cfg = tmp_path / "kubeconfig"
    cfg.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                   "users: [{name: u, user: {}}]\ncontexts: [{name: dev, context: {cluster: c, user: u}}]\n"
                   "current-context: dev\n")
    namespaces = complete(dict(plugin_path, KUBECONFIG=str(cfg)), "eval", "-n", "")
    assert _values(namespaces) == [] and namespaces[-1] == ":4"
    assert _values(complete(plugin_path, "coverage", "-o", "")) == \
        ["table", "wide", "json", "yaml", "junit", "sarif", "github"]
