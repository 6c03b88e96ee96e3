"""The phases `diff`, `coverage` and `apply` show on a terminal (render/progress.py, cli/common.input_phases):
the input files counted as they are opened (`loading N files`), a live run's LISTs, `evaluating` (apply:
`evaluating and planning`) once everything is read, and apply's `applied N of T writes`; each line gone
before the output, and nothing on stderr when it is not a terminal. The commands run on a pseudo-terminal;
apply against the API double."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubeapi.server import ApiServer
from tests.pty_read import drain

ROOT = Path(__file__).resolve().parents[2]
STATE = str(ROOT / "testdata" / "examples" / "cluster.yaml")
POLICY = str(ROOT / "tests" / "cluster" / "data" / "gpol-configmap.yaml")


def on_a_terminal(args: list[str], env: dict[str, str] | None = None, *, terminal: bool = True) -> tuple[str, int]:
    """kyrec with stdout on a pipe and stderr on a pseudo-terminal (or a pipe too): what stderr got, and
    the exit code."""
    environ = {**os.environ, "TERM": "xterm", **(env or {})}
    command = [sys.executable, "-c", "from kubectl_kyrec.cli.console import main; main()", *args]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=environ, cwd=ROOT, timeout=120)
        return done.stderr, done.returncode
    main, child = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=child, env=environ, cwd=ROOT)
    os.close(child)
    output = drain(main)
    code = proc.wait(timeout=120)
    os.close(main)
    return output.decode(), code


def in_order(shown: str, *parts: str) -> None:
    at = [shown.find(p) for p in parts]
    assert all(i >= 0 for i in at) and at == sorted(at), (parts, at, shown)


@pytest.mark.parametrize("command", ["diff", "coverage"])
def test_diff_and_coverage_show_the_files_loaded_then_evaluating(command: str) -> None:
    shown, code = on_a_terminal([command, "--state", STATE, "--now", "2026-09-01T00:00:00Z"])
    assert code == 1, shown
    in_order(shown, "\rloading inputs\x1b[K", "\rloading 1 file\x1b[K", "\revaluating\x1b[K")
    # the line is cleared before the first line of the run's own (its notices, on the same terminal)
    after = shown[shown.index("\revaluating\x1b[K") + len("\revaluating\x1b[K"):]
    assert after.startswith("\r\x1b[K"), after[:80]
    quiet, code = on_a_terminal([command, "--state", STATE, "--now", "2026-09-01T00:00:00Z"], terminal=False)
    assert code == 1 and "loading" not in quiet and "evaluating" not in quiet and "\x1b[K" not in quiet


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "team-a", "team-b", "team-c"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api


def test_apply_shows_loading_listing_planning_then_writes_done_of_planned(cluster: ApiServer, tmp_path: Path) -> None:
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    shown, code = on_a_terminal(["apply", "-p", POLICY, "--yes", "-o", "json"], env)
    assert code == 0, shown
    in_order(shown, "\rloading 1 file\x1b[K", "listing ", "\revaluating and planning\x1b[K", "plan: 3 write(s)",
             "applied 3 of 3 writes")
    # the plan (on stderr with -o json) starts on a line of its own, not after the phase's text
    assert "\r\x1b[Kplan: 3 write(s)" in shown
    assert shown.endswith("\r\x1b[K"), shown[-200:]
    quiet, code = on_a_terminal(["apply", "-p", POLICY, "--yes", "-o", "json"], env, terminal=False)
    assert code == 0 and "\x1b[K" not in quiet and "plan: 0 write(s)" in quiet
