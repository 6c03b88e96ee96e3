"""Progress of a long run on stderr: on a terminal only, never on a pipe or a file
(docs/architecture.md#the-command-line)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from kubectl_kyrec.golang.time import format_duration


class Progress:
    """`tick` once per object; a line `evaluated N objects (R/s)` is redrawn at most every `interval` s, and
    once `expect` has said how many there are, `evaluated N of T objects (R/s, about 1m20s left)`. Before
    the first tick, `phase` says what the run is doing (`loading inputs`); `loading` counts the input files
    as they are opened (`loading 12 files`). The phases of a long run: loading, evaluating, then writing
    (`writing_output`).
    `unit` names what is counted (`objects`, apply's `writes`); `every` (a power of two) how many ticks go
    between two reads of the clock; `clock` is the monotonic clock (a synthetic one in tests).

    The rate, and the time left from it, count from `expect`: the work counted alone (eval's evaluation,
    apply's writes), not the loading, reading or planning before it, which would make the first estimates
    many times too long."""

    def __init__(self, label: str, stream: TextIO, interval: float = 0.25, *, unit: str = "objects",
                 every: int = 64, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = stream
        self.interval = interval
        self.unit = unit
        self._mask = every - 1
        self._clock = clock
        self.count = 0
        self.start = clock()
        self._next = self.start + interval
        self._shown = False
        self.total: int | None = None
        self.files = 0

    def expect(self, total: int) -> None:
        """`total` objects to come, from now: the rate counts from here. The loading is over: the line says
        so at once rather than keep a file count that no longer moves."""
        self.total = total
        self.start = self._clock()
        self._next = self.start + self.interval
        if self._shown and self.files:
            self.phase(f"{self.label} 0 of {total} {self.unit}")

    def phase(self, text: str) -> None:
        """What the run does until the first object is counted, shown at once."""
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._shown = True

    def loading(self, _name: str = "") -> None:
        """One more input file opened: `loading N files`, redrawn at most every `interval` s (the first at
        once), until the evaluation starts."""
        self.files += 1
        now = self._clock()
        if self.files == 1 or now >= self._next:
            self._next = now + self.interval
            self.phase(f"loading {self.files} file{'s' if self.files != 1 else ''}")

    def tick(self, _item: Any = None) -> None:
        self.count += 1
        if self.count & self._mask:      # the clock is read once per `every` objects: ticking stays cheap
            return
        now = self._clock()
        if now >= self._next or self.count == self.total:      # the last one is always shown
            self._next = now + self.interval
            rate = self.count / max(now - self.start, 1e-9)
            # numbers as every table and summary line prints them: no thousands separator (kubectl's way;
            # a count copies into a script or a comparison as it is)
            self.stream.write(f"\r{self.label} {self._progress(rate)}\x1b[K")
            self.stream.flush()
            self._shown = True

    def _progress(self, rate: float) -> str:
        if not self.total or self.count > self.total:
            return f"{self.count} {self.unit} ({rate:.0f}/s)"
        # the time left at the rate so far, to the second as Go prints a duration (`1m20s`)
        left = format_duration(round((self.total - self.count) / rate) * 1_000_000_000 if rate > 0 else 0)
        return f"{self.count} of {self.total} {self.unit} ({rate:.0f}/s, about {left} left)"

    def clear(self) -> None:
        """The line goes (a line of output is about to be written on the same terminal); the next tick
        draws it again."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
            self._next = self.start

    def close(self) -> None:
        self.clear()        # what follows is the output

    @staticmethod
    @contextmanager
    def on_terminal(label: str, stream: TextIO | None = None, *, phase: str = "", **options: Any) -> Iterator[Handle]:
        """A handle whose `tick` is None unless `stream` (stderr) is a terminal: nothing to call otherwise.
        `phase`: shown until the first count; `options`: Progress's own (unit, every, clock)."""
        stream = stream if stream is not None else sys.stderr
        progress = Progress(label, stream, **options) if _is_terminal(stream) else None
        if progress is not None and phase:
            progress.phase(phase)
        try:
            yield Handle(progress)
        finally:
            if progress is not None:
                progress.close()


@contextmanager
def writing_output(stream: TextIO | None = None, output: TextIO | None = None) -> Iterator[None]:
    """`writing output` on the terminal (`stream`, stderr) while the output goes to a pipe or a file (a
    large JSON document takes seconds), cleared when it is written or the writing fails. Not when the output
    (`output`, stdout) is a terminal itself: it is then its own progress, and the line would be in its way."""
    stream = stream if stream is not None else sys.stderr
    output = output if output is not None else sys.stdout
    show = _is_terminal(stream) and not _is_terminal(output)
    if show:
        stream.write("\rwriting output\x1b[K")
        stream.flush()
    try:
        yield
    finally:
        if show:
            stream.write("\r\x1b[K")
            stream.flush()


class Handle:
    __slots__ = ("clear", "expect", "loading", "phase", "tick")

    def __init__(self, progress: Progress | None) -> None:
        self.tick: Callable[[Any], None] | None = progress.tick if progress is not None else None
        self.expect: Callable[[int], None] | None = progress.expect if progress is not None else None
        self.clear: Callable[[], None] | None = progress.clear if progress is not None else None
        self.loading: Callable[[str], None] | None = progress.loading if progress is not None else None
        self.phase: Callable[[str], None] | None = progress.phase if progress is not None else None



def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
