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


def test_the_time_left_of_parallel_writes_is_within_a_quarter_after_the_first_tenth() -> None:
    """8 writes in flight, each answered after 20-60 ms (as the writer counts answers, in the order they
    come): from the first 10 % of the writes on, the time left is within 25 % of the real time left."""
    import heapq
    import random
    import re

    rng = random.Random(36)
    total, in_flight = 3000, 8
    start = 130.0                        # reading and planning before: not part of the rate
    free = [start] * in_flight           # when each of the 8 slots is free again
    answers = []
    for _ in range(total):
        sent = heapq.heappop(free)
        answered = sent + rng.uniform(0.02, 0.06)
        answers.append(answered)
        heapq.heappush(free, answered)
    answers.sort()
    clock, stream = Clock(), io.StringIO()
    clock.now = start
    progress = Progress("applied", stream, unit="writes", every=1, clock=clock)
    progress.expect(total)
    checked = 0
    for done, at in enumerate(answers, 1):
        clock.now = at
        before = len(stream.getvalue())
        progress.tick()
        drawn = stream.getvalue()[before:]
        if not drawn or done < total // 10:
            continue
        real = answers[-1] - at
        if real < 4:                     # the last seconds: printed to the second, a ratio means little
            continue
        left = re.search(r"about (?:(\d+)m)?(\d+)s left", drawn)
        assert left is not None, drawn
        shown = int(left.group(1) or 0) * 60 + int(left.group(2))
        assert abs(shown - real) <= 0.25 * real, (done, drawn, real)
        checked += 1
    assert checked >= 20
