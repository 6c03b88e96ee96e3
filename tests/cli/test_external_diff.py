"""`KUBECTL_EXTERNAL_DIFF` for `kyrec diff`'s unified diffs, as kubectl diff (pkg/cmd/diff/diff.go) runs it:
two temporary directories `LIVE-*` and `MERGED-*` holding one YAML file per object, named
`<group>.<version>.<Kind>.<namespace>.<name>`, passed to the program as its first two arguments; the
variable split on spaces into the program and extra arguments, which come after the directories and are
kept only when made of letters, digits, `-` and `=`. Only for the human styles (table, wide, diff)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.external_diff import command
from kubectl_kyrec.cli.main import cli
from tests.render.test_diff_direction import ARGS

SECRET = "v1.Secret.team-a.app-credentials"
REPORT = "wgpolicyk8s.io.v1alpha2.PolicyReport.shop.11111111-0000-0000-0000-000000000002"

FAKE_DIFF = """#!{python}
import json, os, sys
live, merged = sys.argv[1], sys.argv[2]
def read(d):
    return {{n: open(os.path.join(d, n)).read() for n in sorted(os.listdir(d))}}
with open(os.environ["FAKE_DIFF_LOG"], "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "live": read(live), "merged": read(merged),
                         "modes": sorted({{oct(os.stat(os.path.join(live, n)).st_mode & 0o777)
                                           for n in os.listdir(live)}})}}) + "\\n")
print("FAKE DIFF of", len(os.listdir(live)), "objects")
sys.stderr.write("fake diff on stderr\\n")
sys.exit(int(os.environ.get("FAKE_DIFF_EXIT", "1")))
"""


@pytest.fixture
def fake_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    program = tmp_path / "fakediff"
    program.write_text(FAKE_DIFF.format(python=sys.executable))
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_DIFF_LOG", str(log))
    monkeypatch.setenv("KUBECTL_EXTERNAL_DIFF", str(program))
    return {"program": str(program), "log": log}


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_variable_splits_as_kubectl_splits_it() -> None:
    assert command({}) is None
    assert command({"KUBECTL_EXTERNAL_DIFF": ""}) is None
    assert command({"KUBECTL_EXTERNAL_DIFF": "colordiff -N -u"}) == ("colordiff", ("-N", "-u"))
    # split on single spaces; only letters, digits, '-' and '=' survive as arguments (kubectl's regex)
    assert command({"KUBECTL_EXTERNAL_DIFF": "meld  --color=always a.b $(rm) x;y -w"}) == (
        "meld", ("--color=always", "-w"))


def test_directories_files_and_contents(fake_diff: dict[str, Any]) -> None:
    os.environ["KUBECTL_EXTERNAL_DIFF"] = f"{fake_diff['program']} -N  -u --color=auto bad;arg"
    result = CliRunner().invoke(cli, [*ARGS, "-o", "diff"], catch_exceptions=False)
    [call] = _calls(fake_diff["log"])
    live, merged, *extra = call["argv"]
    assert Path(live).parent == Path(merged).parent == Path(tempfile.gettempdir())
    assert Path(live).name.startswith("LIVE-") and Path(merged).name.startswith("MERGED-")
    assert extra == ["-N", "-u", "--color=auto"]       # after the directories, as kubectl passes them
    assert set(call["live"]) == set(call["merged"]) == {SECRET, REPORT}
    assert call["modes"] == ["0o700"]                  # kubectl's file mode
    before, after = yaml.safe_load(call["live"][SECRET]), yaml.safe_load(call["merged"][SECRET])
    assert before["kind"] == "Secret" and "managedFields" not in before["metadata"]
    # masked: the values read as changed or not, never as themselves
    assert set(before["data"].values()) | set(after["data"].values()) <= {"***", "*** (before)", "*** (after)"}
    assert "*** (before)" in before["data"].values() and "*** (after)" in after["data"].values()
    assert [r["result"] for r in yaml.safe_load(call["live"][REPORT])] == ["pass"]
    assert [r["result"] for r in yaml.safe_load(call["merged"][REPORT])] == ["fail"]
    # the program's output replaces the built-in diffs; the directories are gone afterwards
    assert "FAKE DIFF of 2 objects" in result.stdout and "--- live/" not in result.stdout
    assert "fake diff on stderr" in result.stderr
    assert not Path(live).exists() and not Path(merged).exists()


def test_table_then_the_program_output(fake_diff: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli, [*ARGS], catch_exceptions=False)
    assert result.stdout.index("Downstreams:") < result.stdout.index("FAKE DIFF of 2 objects")
    assert "--- live/" not in result.stdout
    assert len(_calls(fake_diff["log"])) == 1


@pytest.mark.parametrize("output", ["json", "yaml", "sarif", "junit", "github"])
def test_never_for_machine_outputs(fake_diff: dict[str, Any], output: str) -> None:
    result = CliRunner().invoke(cli, [*ARGS, "-o", output], catch_exceptions=False)
    assert result.exit_code == 1
    assert _calls(fake_diff["log"]) == []
    if output == "json":
        diffs = [c["diff"] for c in json.loads(result.stdout)["changes"] if c["diff"]]
        assert any(d.startswith(f"--- live/{SECRET}\n") for d in diffs)


@pytest.mark.parametrize(("program_exit", "flags", "kyrec_exit"), [
    ("0", [], 1),                          # the program found nothing to show: kyrec still has its findings
    ("1", [], 1),
    ("1", ["--exit-code", "false"], 0),    # differences found by the program are not findings of their own
    ("0", ["--exit-code", "false"], 0),
])
def test_exit_codes_zero_and_one_leave_kyrecs_own(fake_diff: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                  program_exit: str, flags: list[str], kyrec_exit: int) -> None:
    monkeypatch.setenv("FAKE_DIFF_EXIT", program_exit)
    result = CliRunner().invoke(cli, [*ARGS, "-o", "diff", *flags], catch_exceptions=False)
    assert result.exit_code == kyrec_exit, result.stderr
    assert "error" not in result.stderr


def test_a_failing_program_is_an_output_error(fake_diff: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_DIFF_EXIT", "2")
    result = CliRunner().invoke(cli, [*ARGS, "-o", "diff"], catch_exceptions=False)
    assert result.exit_code == 74
    assert f'error: failed to run "{fake_diff["program"]}": exit status 2' in result.stderr.splitlines()
    [call] = _calls(fake_diff["log"])
    assert not any(Path(d).exists() for d in call["argv"][:2])


def test_a_missing_program_is_an_output_error(fake_diff: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECTL_EXTERNAL_DIFF", "no-such-diff-program-kyrec -u")
    result = CliRunner().invoke(cli, [*ARGS, "-o", "diff"], catch_exceptions=False)
    assert result.exit_code == 74
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith('error: failed to run "no-such-diff-program-kyrec": ')
    assert "Traceback" not in result.stderr


def test_to_a_file_the_program_output_follows_the_table(fake_diff: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    result = CliRunner().invoke(cli, [*ARGS, "-o", f"table={target}"], catch_exceptions=False)
    assert result.exit_code == 1
    text = target.read_text()
    assert text.index("Downstreams:") < text.index("FAKE DIFF of 2 objects")


def test_a_real_process_writes_the_program_output_after_the_table(fake_diff: dict[str, Any]) -> None:
    """Run as a user runs it: the program inherits kyrec's stdout (a terminal stays a terminal for it)."""
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", *ARGS], capture_output=True, text=True,
                          env=os.environ, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stdout.index("Downstreams:") < done.stdout.index("FAKE DIFF of 2 objects")


def test_without_the_variable_the_built_in_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECTL_EXTERNAL_DIFF", "")
    result = CliRunner().invoke(cli, [*ARGS, "-o", "diff"], catch_exceptions=False)
    assert f"--- live/{SECRET}\n+++ merged/{SECRET}\n" in result.stdout


def test_the_help_example_runs() -> None:
    """`diff --help` shows a line to paste that sets the variable; its words all reach the program (none is
    dropped by kubectl's filter) and, run with GNU diff, it shows the drifts coloured."""
    import shlex
    import shutil

    text = CliRunner().invoke(cli, ["diff", "--help"]).stdout
    example = text[text.index("Example:"):text.index("Options:")]
    [line] = [ln.strip() for ln in example.splitlines() if "KUBECTL_EXTERNAL_DIFF=" in ln]
    words = shlex.split(line)
    assert words[1:4] == ["kubectl", "kyrec", "diff"]
    value = words[0].removeprefix("KUBECTL_EXTERNAL_DIFF=")
    program, extra = command({"KUBECTL_EXTERNAL_DIFF": value}) or ("", ())
    assert [program, *extra] == value.split(" ")
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not on PATH")
    # as a user runs it: the program writes to kyrec's own stdout, escapes and all
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", *ARGS, "-o", "diff"], capture_output=True,
                          text=True, env={**os.environ, "KUBECTL_EXTERNAL_DIFF": value}, check=False)
    assert done.returncode == 1, done.stderr
    assert f"/{SECRET}\t" in done.stdout and f"/{REPORT}\t" in done.stdout     # diff -u's header lines
    assert "\x1b[" in done.stdout
