"""apply's progress line (render/progress.py with unit `writes`, every answer counted): the rate and the
time left count from the first write, on a synthetic clock; an outcome line printed on the same terminal
takes the line away and the next answer draws it again."""

from __future__ import annotations

import io

from kubectl_kyrec.render.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_writes_done_of_planned_with_the_rate_from_the_first_write() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("applied", stream, unit="writes", every=1, clock=clock)
    clock.now = 130.0                    # 30 s of reading and planning: not part of the rate
    progress.expect(100)
    for _ in range(10):
        clock.now += 0.2                 # 5 writes a second
        progress.tick()
    assert stream.getvalue().split("\r")[-1] == "applied 10 of 100 writes (5/s, about 18s left)\x1b[K"


def test_an_outcome_line_clears_the_progress_and_the_next_answer_redraws_it() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("applied", stream, interval=10.0, unit="writes", every=1, clock=clock)
    progress.expect(3)
    clock.now += 11
    progress.tick()
    assert stream.getvalue().endswith("applied 1 of 3 writes (0/s, about 22s left)\x1b[K")
    progress.clear()
    assert stream.getvalue().endswith("\r\x1b[K")
    clock.now += 1                       # within the interval, yet drawn again: the line had gone
    progress.tick()
    assert stream.getvalue().endswith("applied 2 of 3 writes (0/s, about 6s left)\x1b[K")
    progress.tick()                      # the last one is always shown
    assert stream.getvalue().endswith("applied 3 of 3 writes (0/s, about 0s left)\x1b[K")
