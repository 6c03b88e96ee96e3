"""`-o FORMAT=FILE`: writes go through the path as given; only regular files are replaced atomically.

What the user had is never lost: a failed write leaves the old file as it was and no temporary beside it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kubectl_kyrec.errors import ExitCode, OutputError
from kubectl_kyrec.render.sink import write_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"


def test_a_new_file_is_created_with_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    old = os.umask(0o022)
    try:
        write_text(str(target), "{}\n")
    finally:
        os.umask(old)
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_an_existing_file_is_replaced_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    target.chmod(0o640)
    write_text(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_symlink_stays_a_symlink_and_its_target_gets_the_text(tmp_path: Path) -> None:
    real = tmp_path / "real" / "results.json"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text(str(link), "new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["results.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    real = tmp_path / "made.json"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text(str(link), "x\n")
    assert link.is_symlink() and real.read_text() == "x\n"


def test_a_fifo_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_text(str(fifo), "through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_dev_fd_path_is_written_into() -> None:
    read_end, write_end = os.pipe()
    try:
        write_text(f"/dev/fd/{write_end}", "via fd\n")
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        assert fh.read() == b"via fd\n"


@pytest.mark.parametrize("form", ["/dev/fd/{fd}", "/proc/self/fd/{fd}"])
def test_a_descriptor_on_a_regular_file_is_written_where_it_points(tmp_path: Path, form: str) -> None:
    # `3>>log.txt` then `-o json=/dev/fd/3`: the text lands at the descriptor's offset, in append mode, in the
    # same file; the file is neither truncated nor replaced by another inode
    log = tmp_path / "log.txt"
    log.write_text("kept\n")
    inode = log.stat().st_ino
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        write_text(form.format(fd=fd), "appended\n")
    finally:
        os.close(fd)
    assert log.read_text() == "kept\nappended\n"
    assert log.stat().st_ino == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.txt"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_dev_full_is_one_line_error_and_stays_a_device() -> None:
    with pytest.raises(OutputError) as caught:
        write_text("/dev/full", "x" * 100_000)
    assert str(caught.value).startswith("/dev/full: cannot write: ")
    assert "No space left on device" in str(caught.value)
    assert caught.value.exit_code not in (ExitCode.CLEAN, ExitCode.FINDINGS)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_no_space_on_a_regular_file_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("what the user had\n")

    def full_disk(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputError) as caught:
        write_text(str(target), "new\n", write=full_disk)
    assert str(caught.value) == f"{target}: cannot write: No space left on device"
    assert target.read_text() == "what the user had\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "out.json"
    with pytest.raises(OutputError) as caught:
        write_text(str(target), "x\n")
    assert str(caught.value) == f"{target}: cannot write: No such file or directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_directory_is_one_line_and_keeps_the_file(tmp_path: Path) -> None:
    target = tmp_path / "ro" / "out.json"
    target.parent.mkdir()
    target.write_text("old\n")
    target.parent.chmod(0o555)
    try:
        with pytest.raises(OutputError) as caught:
            write_text(str(target), "new\n")
    finally:
        target.parent.chmod(0o755)
    assert str(caught.value) == f"{target}: cannot write: Permission denied"
    assert target.read_text() == "old\n"


def test_a_directory_target_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(OutputError) as caught:
        write_text(str(tmp_path), "x\n")
    assert str(caught.value) == f"{tmp_path}: cannot write: Is a directory"


# ---- through the command line --------------------------------------------------------------------------

def _kyrec(*args: str, shell: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(EXAMPLES / "policies"), "-r",
           str(EXAMPLES / "resources"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_cli_dev_full_exits_with_the_output_code() -> None:
    proc = _kyrec("-o", "json=/dev/full")
    assert proc.returncode == int(ExitCode.OUTPUT)
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("error: /dev/full: cannot write: No space left on device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_cli_stdout_on_a_full_device_is_the_output_code() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(EXAMPLES / "policies"),
                               "-r", str(EXAMPLES / "resources"), "-o", "json"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == int(ExitCode.OUTPUT)
    assert proc.stderr.strip() == "error: standard output: cannot write: No space left on device"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for process substitution")
def test_cli_process_substitution_receives_the_output(tmp_path: Path) -> None:
    count = tmp_path / "count"
    script = (f'"{sys.executable}" -m kubectl_kyrec eval -p "{EXAMPLES / "policies"}" '
              f'-r "{EXAMPLES / "resources"}" -o table -o junit=>(wc -c > "{count}"); echo "rc=$?"; wait')
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert "rc=1" in proc.stdout, proc.stderr
    # the subshell may finish after bash returns; wait for it briefly
    for _ in range(100):
        if count.exists() and count.read_text().strip():
            break
        threading.Event().wait(0.05)
    assert int(count.read_text()) > 100
