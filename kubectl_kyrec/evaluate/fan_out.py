"""Split one pure loop over subjects across forked processes, and put the pieces back in order.

Evaluation is CPU-bound Python around a C++ engine, so threads do not help (the GIL); forked workers
inherit the compiled programs and the loaded state for free, which spawned ones would have to rebuild.
Each worker runs the loop on one contiguous slice of the items and writes its answer, encoded to bytes,
to a pipe; the calling process runs the first slice itself, then reads the others in slice order. The
caller's encoding decides what crosses: pickling kyrec's results costs as much as evaluating them, so
pipeline.py sends plain tuples through `marshal` instead.

Only on Linux (see can_fork) and only in a process that has no other threads: a forked child of a
threaded process may inherit a lock some other thread held.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import BinaryIO, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# a worker's answer starts with one of these bytes
_OK, _FAILED = b"+", b"!"


class WorkerError(RuntimeError):
    """A worker failed: its exception's text (a bug in kyrec, surfaced as an internal error)."""


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    # Linux only: on macOS a forked child of a process that touched some system frameworks can crash
    # (why Python's multiprocessing spawns there), and Windows has no fork
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


# A worker takes longer than this process on a slice of the same size: it also encodes its answer, and
# copies each memory page it writes to (reference counts included). Measured on the eval of 10,000 Pods x
# 24 policies: about 15% longer; so this process takes a little more than its share.
WORKER_OVERHEAD = 0.15


def slices(count: int, parts: int) -> list[range]:
    """`parts` contiguous ranges covering 0..count: the first for this process, a little longer than
    the others (WORKER_OVERHEAD), so that all end at about the same time."""
    parts = max(1, min(parts, count))
    if parts == 1:
        return [range(count)]
    first = min(count - (parts - 1), round(count * (1 + WORKER_OVERHEAD) / (parts + WORKER_OVERHEAD)))
    size, extra = divmod(count - first, parts - 1)
    out, start = [range(first)], first
    for i in range(parts - 1):
        stop = start + size + (i < extra)
        out.append(range(start, stop))
        start = stop
    return out


def fan_out(items: Sequence[T], work: Callable[[Sequence[T]], R], *, jobs: int,
            encode: Callable[[R], bytes], decode: Callable[[bytes], R]) -> list[R]:
    """`[work(slice) for slice in slices(items)]`, the slices after the first worked on in forked children.

    With one job, or where fork is not safe, everything runs here in one slice. `work` must have no
    effect that its return value does not carry: a child's other effects die with it.
    """
    parts = slices(len(items), jobs) if jobs > 1 and can_fork() else [range(len(items))]
    if len(parts) == 1:
        return [work(items)]
    children: list[tuple[int, int]] = []     # (pid, read end)
    done = False
    reaped: set[int] = set()     # children already waited for (a pid waited for may be another's next)
    try:
        for part in parts[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:                       # the child: work, answer, and leave without cleanup
                os.close(read_end)
                _child(items[part.start:part.stop], work, encode, write_end)
            os.close(write_end)
            children.append((pid, read_end))
        answers = [work(items[parts[0].start:parts[0].stop])]
        for pid, read_end in children:
            answers.append(decode(_answer(pid, read_end, reaped)))
        done = True
        return answers
    finally:
        for pid, read_end in children:
            _reap(pid, read_end, reaped, stop=not done)


def _child(items: Sequence[T], work: Callable[[Sequence[T]], R], encode: Callable[[R], bytes],
           write_end: int) -> None:
    code = 0
    try:
        try:
            payload = _OK + encode(work(items))
        except BaseException:     # noqa: BLE001 - whatever it was, the parent must hear of it
            payload = _FAILED + traceback.format_exc().encode("utf-8", "replace")
            code = 1
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
    finally:
        # no atexit handlers, no flushing of the parent's buffered output, no destructors: the
        # parent owns all of that
        os._exit(code)


def _answer(pid: int, read_end: int, reaped: set[int]) -> bytes:
    with os.fdopen(read_end, "rb", closefd=False) as stream:
        data = stream.read()
    if data[:1] == _OK:
        return data[1:]
    if data[:1] == _FAILED:
        last = data[1:].decode("utf-8", "replace").strip().splitlines()
        raise WorkerError(f"evaluation worker failed: {last[-1] if last else 'no message'}")
    _, status = os.waitpid(pid, 0)
    reaped.add(pid)
    raise WorkerError(f"evaluation worker {pid} ended without an answer ({_status_text(status)})")


def _reap(pid: int, read_end: int, reaped: set[int], *, stop: bool = False) -> None:
    """Close the child's pipe and wait for it; `stop`: this process failed (or was interrupted) first,
    so the child's answer is not wanted and it is ended rather than waited out."""
    with contextlib.suppress(OSError):
        os.close(read_end)
    if pid in reaped:
        return
    if stop:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):      # already reaped by _answer
        os.waitpid(pid, 0)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


class FileWorker:
    """`work(file)` run in a forked child that writes into an unlinked temporary file; `join()` waits for it
    and gives the file back, rewound. For output that is text in the end: a worker writing half of a large
    document while this process writes the other half (a pipe would hold it back after 64 KiB, until this
    process got round to reading)."""

    def __init__(self, work: Callable[[BinaryIO], None]) -> None:
        self.file: BinaryIO = tempfile.TemporaryFile()     # noqa: SIM115 - join() hands it on, open
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(read_end)
            _child_file(work, self.file, write_end)
        os.close(write_end)
        self._errors = read_end
        self._reaped = False

    def stop(self) -> None:
        """End the worker, its answer not wanted (this process failed first), and drop its file."""
        if not self._reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self._reaped = True
        if self._errors >= 0:
            with contextlib.suppress(OSError):
                os.close(self._errors)
            self._errors = -1
        self.file.close()

    def join(self) -> BinaryIO:
        with os.fdopen(self._errors, "rb") as errors:
            self._errors = -1
            text = errors.read()
        _, status = os.waitpid(self.pid, 0)
        self._reaped = True
        if text or status:
            self.file.close()
            last = text.decode("utf-8", "replace").strip().splitlines()
            raise WorkerError(f"output worker failed: {last[-1]}" if last
                              else f"output worker {self.pid} ended with {_status_text(status)}")
        self.file.seek(0)
        return self.file


def _child_file(work: Callable[[BinaryIO], None], file: BinaryIO, errors: int) -> None:
    code = 0
    try:
        try:
            work(file)
            file.flush()
        except BaseException:     # noqa: BLE001 - whatever it was, the parent must hear of it
            code = 1
            os.write(errors, traceback.format_exc().encode("utf-8", "replace"))
    finally:
        os._exit(code)
