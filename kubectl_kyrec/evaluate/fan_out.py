"""Split one pure loop over subjects across forked processes, and put the pieces back in order.

Evaluation is CPU-bound Python around a C++ engine, so threads do not help (the GIL); forked workers
inherit the compiled programs and the loaded state for free, which spawned ones would have to rebuild.
Each worker runs the loop on one contiguous slice of the items and writes its answer, encoded to bytes,
into a temporary file (FileWorker); the calling process runs the first slice itself, then reads the
others in slice order. The
caller's encoding decides what crosses: pickling kyrec's results costs as much as evaluating them, so
pipeline.py sends plain tuples through `marshal` instead.

Only on Linux (see can_fork) and only in a process that has no other threads: a forked child of a
threaded process may inherit a lock some other thread held.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO, TypeVar

T = TypeVar("T")
R = TypeVar("R")

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


# the slice the running process works on: 0 here, a worker's own number in a forked worker (_write_answer)
_SLOT = 0


class SliceCounts:
    """How far the workers of a fan_out have got, so that a progress line here moves with all of them,
    not only with this process's slice (whose end would otherwise be followed by a jump).

    One 8-byte count per slice, in an anonymous shared mapping made before the workers fork; each count
    is written by its own worker only (`advance`) and read here (`news`). A count read while being written
    can only be off for that one redraw of a progress line."""

    def __init__(self) -> None:
        self.parts: list[range] = []
        self._memory: mmap.mmap | None = None
        self._told: list[int] = []

    def start(self, parts: list[range]) -> None:
        """fan_out, before forking: the slices."""
        self.parts = parts
        self._memory = mmap.mmap(-1, 8 * len(parts))
        self._told = [part.start for part in parts]

    def advance(self, done: int) -> None:
        """In a worker: `done` items of its slice are finished."""
        if self._memory is not None and _SLOT:
            struct.pack_into("q", self._memory, 8 * _SLOT, done)

    def news(self, final: bool = False) -> Iterator[int]:
        """Here: the indexes of the items the workers finished since the last call; with `final` (the
        workers have answered), every one not told yet."""
        memory = self._memory
        if memory is None:          # never started: no worker ran
            return
        for slot in range(1, len(self.parts)):
            part = self.parts[slot]
            done = part.stop if final else min(part.stop, part.start + struct.unpack_from("q", memory, 8 * slot)[0])
            told = self._told[slot]
            if done > told:
                self._told[slot] = done
                yield from range(told, done)


def even_slices(count: int, parts: int) -> list[range]:
    """`parts` contiguous ranges of (nearly) equal length covering 0..count, for workers alone."""
    parts = max(1, min(parts, count))
    return [range(count * i // parts, count * (i + 1) // parts) for i in range(parts)]


# how often this process, waiting for workers that do all the work (fan_out's `here=False`), calls `waiting`
WAIT_TICK = 0.05


def fan_out(items: Sequence[T], work: Callable[[Sequence[T]], R], *, jobs: int,
            encode: Callable[[R], bytes | Iterable[bytes]], decode: Callable[[BinaryIO], R],
            counts: SliceCounts | None = None, here: bool = True, waiting: Callable[[], object] | None = None,
            consume: Callable[[R], object] | None = None, slice_max: int | None = None) -> list[R]:
    """`[work(slice) for slice in slices(items)]`, the slices after the first worked on in forked children
    (FileWorker), each answering `encode(work(slice))`, which `decode` reads back from the worker's file.

    With one job, or where fork is not safe, everything runs here in one slice. `work` must have no
    effect that its return value does not carry: a child's other effects die with it. `counts`: where
    the workers say how far they are (SliceCounts.advance), for this process to read.

    `here=False`: every slice is worked on in a worker, none in this process, which waits (calling
    `waiting` every WAIT_TICK seconds, e.g. to read `counts`). What `work` leaves allocated and never frees
    (cel-expr-python keeps every value handed to a Python-implemented CEL function) then dies with the
    workers instead of growing this process, at the price of encoding and decoding every slice.

    `consume`: each answer is handed to it in slice order, while a worker's file is still open (so `decode`
    may return an answer read lazily from it), and none is kept: fan_out returns []. `encode` may yield its
    bytes piece by piece, so that a worker whose `work` answers lazily never holds its whole answer either.

    `slice_max` (with `here=False`): no worker gets more items than this; the slices are then more than
    `jobs`, at most `jobs` of them worked on at a time, the next worker started as each answer is read.
    What a worker leaves allocated (above) then grows with `slice_max`, not with the items.
    """
    def given(answer: R) -> list[R]:
        if consume is None:
            return [answer]
        consume(answer)
        return []

    parallel = jobs > 1 and can_fork()
    if parallel and not here and len(items) > 1:
        parts = even_slices(len(items), max(jobs, -(-len(items) // slice_max)) if slice_max else jobs)
        ours: range | None = None
        counted = [range(0), *parts]        # slot 0 is this process's, which has nothing to tell
    else:
        parts = slices(len(items), jobs) if parallel else [range(len(items))]
        ours, parts, counted = parts[0], parts[1:], parts
    if not parts:
        return given(work(items))
    if counts is not None:
        counts.start(counted)
    workers: list[FileWorker] = []
    pending = list(enumerate(parts, 1))
    # at most `jobs` processes at a time: this one (when it takes a slice) and its workers
    at_once = jobs - 1 if ours is not None else jobs

    def start_next() -> None:
        slot, part = pending[0]
        answer = functools.partial(_write_answer, work, encode, items[part.start:part.stop], slot)
        workers.append(FileWorker(answer, name="evaluation"))
        del pending[0]

    try:
        try:
            while pending and len(workers) < at_once:
                start_next()
        except OSError:     # no temporary file or no process to be had: all of it here
            if counts is not None:
                counts.start([range(len(items))])       # no worker has anything to tell
            return given(work(items))
        answers = given(work(items[ours.start:ours.stop])) if ours is not None else []
        joined = 0
        while joined < len(workers):
            with workers[joined].join(waiting) as file:
                answers.extend(given(decode(file)))     # the worker's file, rewound: read as it is decoded
            joined += 1
            if pending:
                try:
                    start_next()
                except OSError:     # no more processes: the slices not started are worked on here, in order
                    break
        while joined < len(workers):        # those started before a start failed, then the rest here
            with workers[joined].join(waiting) as file:
                answers.extend(given(decode(file)))
            joined += 1
        for _, part in pending:
            answers.extend(given(work(items[part.start:part.stop])))
        return answers
    finally:
        for worker in workers:      # those not joined (this process or an earlier worker failed): ended
            worker.stop()


S = TypeVar("S")


def fan_out_stream(parts: Iterable[S], work: Callable[[S], R], *, jobs: int,
                   encode: Callable[[R], bytes | Iterable[bytes]], decode: Callable[[S, BinaryIO], R],
                   consume: Callable[[S, R], object], waiting: Callable[[], object] | None = None) -> None:
    """`consume(part, work(part))` for each part of `parts` in order, each worked on in a forked worker (as
    fan_out's `here=False`), at most `jobs` at a time. `parts` is read lazily: the next part is read while the
    workers work, and started on a worker as soon as one of them has ended; the answers are consumed, in
    order, while the part read waits for a worker. `consume` may return an iterator, consumed a step at a
    time: between steps the part read is started as soon as a worker is free, so that a worker ending while
    this process consumes an answer does not wait for the rest of it (the workers end about a slice's reading
    apart, which is less than an answer's consuming). This process holds the parts owed an answer (at most
    `jobs` + 1, the one being consumed among them) and the one read next, never all of them (eval's -r and
    --state read as they are evaluated, issue 36). With one job, or where fork is not safe, every part is
    worked on here."""
    if jobs <= 1 or not can_fork():
        for part in parts:
            _drive(consume(part, work(part)))
        return
    # started and not yet consumed, in order; a worker may end before an older one
    workers: list[tuple[S, FileWorker]] = []
    read: list[S] = []      # the part read and not started yet (one at most)
    here = False            # no process to be had: what is left is worked on here

    def start_read(consuming: int) -> None:
        # on a worker if one is free and no more than `jobs` answers are owed but those being consumed
        nonlocal here
        if not read or here:
            return
        _note_ended([w for _, w in workers], 0)
        if sum(not w.ended for _, w in workers) >= jobs or len(workers) - consuming > jobs:
            return
        try:
            worker = FileWorker(functools.partial(_write_answer, work, encode, read[0], 0), name="evaluation")
        except OSError:
            here = True
            return
        workers.append((read.pop(), worker))

    def answer_oldest() -> None:
        part, worker = workers[0]
        with worker.join(waiting) as file:
            for _ in _steps(consume(part, decode(part, file))):
                start_read(1)
        del workers[0]

    try:
        for part in parts:
            read.append(part)
            while read and not here:
                start_read(0)
                if not read or here:
                    break
                if workers[0][1].ended or sum(not w.ended for _, w in workers) < jobs:
                    # an answer to consume meanwhile (or, a later worker having ended first, the oldest waited
                    # for: the answers go in order)
                    answer_oldest()
                else:
                    _note_ended([w for _, w in workers], None, waiting)
            if here:
                while workers:
                    answer_oldest()
                while read:
                    late = read.pop()
                    _drive(consume(late, work(late)))
        while workers:
            answer_oldest()
    finally:
        for _, worker in workers:       # those not answered (this process or a worker failed): ended
            worker.stop()


def _steps(consumed: object) -> Iterator[object]:
    """The steps of what a `consume` returned: its own when it is an iterator, else none."""
    return consumed if isinstance(consumed, Iterator) else iter(())


def _drive(consumed: object) -> None:
    for _ in _steps(consumed):
        pass


def _note_ended(workers: Sequence[FileWorker], timeout: float | None,
                waiting: Callable[[], object] | None = None) -> None:
    """Mark `ended` those of `workers` that have ended (their error pipe readable: at its end, or holding the
    traceback the worker writes before it ends), waiting up to `timeout` seconds for one (None: until one
    has, calling `waiting` every WAIT_TICK seconds meanwhile)."""
    working = {w.errors_fd: w for w in workers if not w.ended}
    if not working:
        return
    tick = timeout if timeout is not None else WAIT_TICK if waiting is not None else None
    while True:
        ready = select.select(list(working), [], [], tick)[0]
        for fd in ready:
            working[fd].ended = True
        if ready or timeout is not None:
            return
        if waiting is not None:
            waiting()


class BesideCall:
    """`work()` running in a forked worker (call_beside): `answer()` waits for what it returned (pickled
    across), `stop()` ends it when that is not wanted."""

    def __init__(self, work: Callable[[], object]) -> None:
        self.worker = FileWorker(lambda file: pickle.dump(work(), file, protocol=pickle.HIGHEST_PROTOCOL),
                                 name="state reading")

    def answer(self) -> object:
        with self.worker.join() as file:
            return pickle.load(file)

    def stop(self) -> None:
        self.worker.stop()


def call_beside(work: Callable[[], object]) -> BesideCall | None:
    """`work()` started in a forked worker while this process goes on (load/run_inputs/state.py reads half
    of a large state there before anything is evaluated); None where fork is not safe (can_fork) or no
    process or temporary file can be had: the caller then does the work itself."""
    if not can_fork():
        return None
    try:
        return BesideCall(work)
    except OSError:
        return None


def _write_answer(work: Callable[[S], R], encode: Callable[[R], bytes | Iterable[bytes]],
                  items: S, slot: int, file: BinaryIO) -> None:
    global _SLOT
    _SLOT = slot        # in the forked worker only
    data = encode(work(items))
    if isinstance(data, bytes):
        file.write(data)
        return
    for piece in data:
        file.write(piece)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


class FileWorker:
    """`work(file)` run in a forked child that writes into an unlinked temporary file; `join()` waits for it
    and gives the file back, rewound; `stop()` ends it when its answer is not wanted. A file rather than a
    pipe: the child would stop after 64 KiB of a pipe until this process got round to reading it, and this
    process is busy with its own share meanwhile. `name` says which worker in its errors."""

    def __init__(self, work: Callable[[BinaryIO], object], *, name: str = "output") -> None:
        self.name = name
        self.file: BinaryIO = tempfile.TemporaryFile()     # noqa: SIM115 - join() hands it on, open
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(read_end)
            _child_file(work, self.file, write_end)
        os.close(write_end)
        self._errors = read_end
        self._reaped = False
        # the worker has ended, or is ending (fan_out_stream's _note_ended): join() will not wait long
        self.ended = False

    @property
    def errors_fd(self) -> int:
        """The read end of the pipe the worker writes its traceback to, readable once it ends."""
        return self._errors

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

    def join(self, waiting: Callable[[], object] | None = None) -> BinaryIO:
        """The worker's answer, once it has ended; `waiting` is called every WAIT_TICK seconds until then."""
        if waiting is not None:
            # the error pipe is readable when the worker writes its traceback or ends (end of file)
            while not select.select([self._errors], [], [], WAIT_TICK)[0]:
                waiting()
        self.ended = True
        with os.fdopen(self._errors, "rb") as errors:
            self._errors = -1
            text = errors.read()
        _, status = os.waitpid(self.pid, 0)
        self._reaped = True
        if text or status:
            self.file.close()
            last = text.decode("utf-8", "replace").strip().splitlines()
            raise WorkerError(f"{self.name} worker failed: {last[-1]}" if last
                              else f"{self.name} worker {self.pid} ended without an answer ({_status_text(status)})")
        self.file.seek(0)
        return self.file


def _child_file(work: Callable[[BinaryIO], object], file: BinaryIO, errors: int) -> None:
    code = 0
    try:
        try:
            work(file)
            file.flush()
        except BaseException:     # noqa: BLE001 - whatever it was, the parent must hear of it
            code = 1
            os.write(errors, traceback.format_exc().encode("utf-8", "replace"))
    finally:
        # no atexit handlers, no flushing of the parent's buffered output, no destructors: the
        # parent owns all of that
        os._exit(code)
