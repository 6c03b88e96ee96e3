"""Ctrl-C (SIGINT) ends every command with one line and exit 130, never a traceback: while it reads a live
cluster, while the process leaves (its atexit handlers), and when the exception the signal raised was
dropped by the code it landed in.

Each command runs in a child process, the console command as installed (kubectl_kyrec.cli.console), with
Python's default SIGINT handler whatever this suite was started with; the tests wait for a request the API
double logs or a line the child writes, never for a fixed time, and every wait has a deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubeapi.server import ApiServer

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")
DEADLINE = 60.0


def console(args: list[str], tmp_path: Path, *, sigint: str = "default_int_handler", before: str = "",
            ) -> subprocess.Popen[str]:
    """`kubectl-kyrec ARGS` in a child started with SIGINT as `sigint` (a name in `signal`) and SIGTERM at
    its default; `before` is Python run first, in the child."""
    launcher = (f"import signal, sys; signal.signal(signal.SIGINT, signal.{sigint}); "
                "signal.signal(signal.SIGTERM, signal.SIG_DFL); sys.argv[0] = 'kubectl-kyrec'\n"
                f"{before}\n"
                "from kubectl_kyrec.cli.console import main; main()")
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", launcher, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(api: ApiServer, method: str, path: str, count: int = 1) -> None:
    deadline = time.monotonic() + DEADLINE
    while len(api.requests(method, path)) < count:
        assert time.monotonic() < deadline, f"no {method} {path} within {DEADLINE} s"
        time.sleep(0.01)


def finish(child: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = child.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        raise AssertionError(f"kyrec did not end: {err}") from None
    return child.returncode, out, err


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as server:
        for name in ("default", "team-a"):
            server.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        server.kubeconfig(tmp_path / "kubeconfig")
        server.clear_log()
        yield server


@pytest.mark.parametrize("command", [["diff", "-p", POLICY], ["coverage", "-p", POLICY], ["capture", "-p", POLICY],
                                     ["eval", "--live", "-p", POLICY]])
def test_ctrl_c_while_reading_the_cluster(api: ApiServer, tmp_path: Path, command: list[str]) -> None:
    api.inject("/api/v1/namespaces$", method="GET", delay=30)
    child = console(command, tmp_path)
    wait_for(api, "GET", "/api/v1/namespaces$")
    child.send_signal(signal.SIGINT)
    assert finish(child)[::2] == (130, "interrupted\n")


def test_ctrl_c_while_the_process_leaves(api: ApiServer, tmp_path: Path) -> None:
    # an atexit handler that takes a while, as closing the kubernetes client's connections can: the Ctrl-C
    # comes while it runs, and used to print `Exception ignored in atexit callback` with a traceback
    slow_exit = ("import atexit, time\n"
                 "def slow():\n"
                 "    sys.stderr.write('leaving\\n'); sys.stderr.flush(); time.sleep(2)\n"
                 "atexit.register(slow)")
    child = console(["diff", "-p", POLICY], tmp_path, before=slow_exit)
    assert child.stderr is not None
    deadline = time.monotonic() + DEADLINE
    while (line := child.stderr.readline()) != "leaving\n":
        assert line and time.monotonic() < deadline, "the child never reached its atexit handlers"
    child.send_signal(signal.SIGINT)
    code, out, err = finish(child)
    assert (code, err) == (130, "interrupted\n")
    assert "missing" in out         # the diff itself was printed in full before


def test_a_ctrl_c_dropped_where_it_landed_still_ends_the_run(tmp_path: Path) -> None:
    # the signal's exception raised inside a weakref callback, where Python only prints it and goes on
    dropped = ("import weakref\n"
               "from kubectl_kyrec.interrupts import raise_on_sigint\n"
               "raise_on_sigint()\n"
               "class Thing: pass\n"
               "thing = Thing()\n"
               "ref = weakref.ref(thing, lambda r: signal.raise_signal(signal.SIGINT))\n"
               "del thing")
    code, out, err = finish(console(["version"], tmp_path, before=dropped))
    assert (code, err) == (130, "interrupted\n")


def test_an_ignored_sigint_is_left_ignored(api: ApiServer, tmp_path: Path) -> None:
    api.inject("/api/v1/namespaces$", method="GET", delay=0.5)
    probe = ("import atexit\n"
             "atexit.register(lambda: sys.stderr.write(f'{signal.getsignal(signal.SIGINT) is signal.SIG_IGN}\\n'))")
    child = console(["diff", "-p", POLICY], tmp_path, sigint="SIG_IGN", before=probe)
    wait_for(api, "GET", "/api/v1/namespaces$")
    child.send_signal(signal.SIGINT)
    code, out, err = finish(child)
    assert (code, err) == (1, "True\n") and "missing" in out     # the diff ran to its end
