"""The promises a streamed output keeps (issue 36), for every format of `eval`, on a run of many subjects
whose output is written in many pieces (render/sink.py write_stream): the writer is mid-document when
the failure comes.

- `-o FORMAT=FILE` writes the same bytes as standard output does;
- a write to FILE that fails part-way (the file size limit, RLIMIT_FSIZE: a real EFBIG from the kernel)
  is one line and exit 74, and the old FILE is as it was, with no temporary left beside it;
- a reader that leaves part-way (`| head -c`) ends the run quietly with 141;
- SIGINT while FILE is being written: exit 130, `interrupted`, the old FILE as it was, nothing beside it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubectl_kyrec.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
POLICIES = str(ROOT / "testdata" / "examples" / "policies")
NOW = "2026-11-29T00:00:00Z"
# `github` prints 10 annotations per level and a count (GitHub shows no more): a short text at any size
LONG = ("table", "wide", "json", "yaml", "junit", "sarif", "reports")
FORMATS = (*LONG, "github")
OLD = "the report of the run before\n"
PODS = 3000

# the console command's own entry point, SIGINT at Python's default whatever this suite was started with
# (a command kyrec finds ignoring SIGINT keeps ignoring it: kubectl_kyrec/interrupts.py)
LAUNCH = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
          "sys.argv = ['kubectl-kyrec', *sys.argv[1:]]; "
          "from kubectl_kyrec.cli.console import main; main()")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PODS Pods in 9 namespaces, most failing one policy or both: results on every subject."""
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"web-{i}", "namespace": f"team-{i % 9}",
                          "uid": f"00000000-0000-4000-8000-{i:012d}",
                          **({"labels": {"owner": "me"}} if i % 3 == 0 else {})},
             "spec": {"containers": [{"name": "c", "image": "nginx",
                                      **({"resources": {"limits": {"memory": f"{i % 4}Gi"}}} if i % 5 else {})}]}}
            for i in range(PODS)]
    path = tmp_path_factory.mktemp("streaming") / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}, indent=4))
    return path


def _argv(state: Path, output: str) -> list[str]:
    return [sys.executable, "-c", LAUNCH, "eval", "-p", POLICIES, "--state", str(state), "--now", NOW,
            "-o", output, "--sarif-root", str(ROOT)]


def _said(stderr: str) -> list[str]:
    """stderr without the run's notices (the state's gaps, printed before any output)."""
    return [line for line in stderr.splitlines() if not line.startswith("notice: ")]


def _beside(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.iterdir() if p != target)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_failed_write_part_way_keeps_the_old_file(state: Path, tmp_path: Path, fmt: str) -> None:
    whole = subprocess.run(_argv(state, fmt), capture_output=True, timeout=300)
    assert whole.returncode == int(ExitCode.FINDINGS), whole.stderr
    if fmt in LONG:
        assert len(whole.stdout) > 64 << 10     # many writes, past a pipe's buffer
    out = tmp_path / "out" / f"result.{fmt}"
    out.parent.mkdir()
    written = subprocess.run(_argv(state, f"{fmt}={out}"), capture_output=True, timeout=300)
    assert written.returncode == int(ExitCode.FINDINGS), written.stderr
    # the file receives what standard output does, byte for byte
    assert out.read_bytes() == whole.stdout
    assert _beside(out) == []

    out.write_text(OLD)
    limit = len(whole.stdout) // 2

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # EFBIG instead of the signal's core dump

    failed = subprocess.run(_argv(state, f"{fmt}={out}"), capture_output=True, text=True, timeout=300,
                            preexec_fn=limited)
    assert failed.returncode == int(ExitCode.OUTPUT) == 74
    assert _said(failed.stderr) == [f"error: {out}: cannot write: File too large"]
    assert out.read_text() == OLD
    assert _beside(out) == []


@pytest.mark.parametrize("fmt", LONG)
def test_a_reader_leaving_part_way_is_a_quiet_141(state: Path, fmt: str) -> None:
    child = subprocess.Popen(_argv(state, fmt), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    head = child.stdout.read(1000)            # `| head -c 1000`: what it reads, then it leaves
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=300) == int(ExitCode.BROKEN_PIPE) == 141
    assert _said(err.decode()) == []
    assert len(head) == 1000


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_sigint_while_the_file_is_written_keeps_the_old_file(state: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"result.{fmt}"
    out.write_text(OLD)
    child = subprocess.Popen(_argv(state, f"{fmt}={out}"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    assert child.stderr is not None
    # the temporary beside FILE holds a first piece of the document: the writer is part-way
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and child.poll() is None:
        if any(p.stat().st_size for p in tmp_path.iterdir() if p.name.endswith(".kyrec-tmp")):
            break
        time.sleep(0.005)
    assert child.poll() is None, "the run ended before its output was part-way written"
    child.send_signal(signal.SIGINT)
    err = child.stderr.read()
    assert child.wait(timeout=120) == int(ExitCode.INTERRUPTED) == 130
    assert _said(err) == ["interrupted"]
    assert out.read_text() == OLD
    assert _beside(out) == []
    assert not os.path.exists(str(out) + ".kyrec-tmp")
