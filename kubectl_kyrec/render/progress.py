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
    the first tick, `phase` says what the run is doing (`loading inputs`).
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

    def expect(self, total: int) -> None:
        """`total` objects to come, from now: the rate counts from here."""
        self.total = total
        self.start = self._clock()
        self._next = self.start + self.interval

    def phase(self, text: str) -> None:
        """What the run does until the first object is counted, shown at once."""
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._shown = True

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


class Handle:
    __slots__ = ("clear", "expect", "tick")

    def __init__(self, progress: Progress | None) -> None:
        self.tick: Callable[[Any], None] | None = progress.tick if progress is not None else None
        self.expect: Callable[[int], None] | None = progress.expect if progress is not None else None
        self.clear: Callable[[], None] | None = progress.clear if progress is not None else None



def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
