"""A long sequence in a document, written by two processes: this one and a forked worker.

Writing 230,000 results as JSON or YAML is Python work item by item (building each entry, emitting each
line), as much as a fifth of a large eval. The items are independent and the text of a sequence is the
text of its halves one after the other, so a forked worker (evaluate/fan_out.FileWorker) writes the
second half into a temporary file while this process writes the first half to the output, then copies the
worker's text after it. The bytes are the same as one process writes; only large sequences are split
(below PARALLEL_ITEMS a fork costs more than it saves), and only when the run was given more than one job.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from kubectl_kyrec.evaluate.fan_out import FileWorker, WorkerError, can_fork

PARALLEL_ITEMS = 10_000
_COPY = 1 << 20

Write = Callable[[str], object]
# writes the text of some items (no separator before the first), returns how many it wrote
WriteItems = Callable[[Iterable[Any], Write], int]


class Sliced:
    """`count` items made a range at a time by `make(start, stop)`; iterates as all of them.

    `shared`: the items' nested sequence items (a report's entries) and Joined parts may be shared
    between items and never change (yaml_emit writes each once and reuses its lines). `jobs`: the
    processes the run may use. `parts`: the same items, made by range as `make` makes them, as
    render/joined.Joined mappings whose parts are shared between items and never change (the YAML writer
    writes each part once and reuses its text).
    """

    __slots__ = ("count", "make", "jobs", "shared", "parts")

    def __init__(self, count: int, make: Callable[[int, int], Iterable[Any]], *, jobs: int = 1,
                 shared: bool = False, parts: Callable[[int, int], Iterable[Any]] | None = None) -> None:
        self.count = count
        self.make = make
        self.jobs = jobs
        self.shared = shared
        self.parts = parts

    def __iter__(self) -> Iterator[Any]:
        return iter(self.make(0, self.count))

    def split(self) -> bool:
        """Whether to write it in two processes."""
        return self.jobs > 1 and self.count >= PARALLEL_ITEMS and can_fork()


def write_in_halves(items: Sliced, write_items: WriteItems, write: Write, separator: str) -> int:
    """`write_items(all items, write)` as two processes write it: `separator` goes between the halves."""
    half = items.count // 2

    def second_half(file: BinaryIO) -> None:
        text = io.TextIOWrapper(file, encoding="utf-8", newline="", write_through=False)
        write_items(items.make(half, items.count), text.write)
        text.flush()
        text.detach()       # the file is the parent's to read: not closed here

    try:
        worker = FileWorker(second_half)
    except OSError:         # no temporary file to be had: all of it here
        return write_items(items.make(0, items.count), write)
    joined = False
    try:
        count = write_items(items.make(0, half), write)
        try:
            file = worker.join()
        except WorkerError:
            # the worker could not write its half (a full temporary directory, say): written here
            # instead, where a bug in the writing shows as itself
            joined = True
            if count:
                write(separator)
            return count + write_items(items.make(half, items.count), write)
        joined = True
        with file:
            if count:
                write(separator)
            _copy(file, write)
    finally:
        if not joined:      # this process failed (or was interrupted) first: the worker's answer is not wanted
            worker.stop()
    return count + (items.count - half)


def _copy(file: BinaryIO, write: Write) -> None:
    """The worker's text after what `write` wrote. Into a UTF-8 file or pipe, as bytes (the kernel copies
    them, os.sendfile); into anything else as text, decoded a chunk at a time."""
    stream = getattr(write, "__self__", None)
    if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name == "utf-8":
        stream.flush()
        raw = stream.buffer
        raw.flush()
        try:
            out = raw.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            out = -1
        if out >= 0:
            source, offset = file.fileno(), 0
            size = os.fstat(source).st_size
            try:
                while offset < size:
                    sent = os.sendfile(out, source, offset, size - offset)
                    if not sent:
                        break
                    offset += sent
                if offset == size:
                    return
            except OSError as exc:
                if offset or exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise           # a real write failure (a full disk, a closed pipe): as writing would
            file.seek(offset)
        while chunk := file.read(_COPY):
            raw.write(chunk)
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    while chunk := file.read(_COPY):
        write(decoder.decode(chunk))
    write(decoder.decode(b"", final=True))
