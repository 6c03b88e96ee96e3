"""eval's progress (render/progress.py) on a synthetic clock: the phase before the first object, and the time
left measured from the evaluation alone, within 25 % of the real time left from the first 10 % of the work
on, however long the loading before it took."""

from __future__ import annotations

import io
import random
import re

from kubectl_kyrec.render.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _seconds(text: str) -> float:
    """A Go duration as format_duration prints it (`1m30s`, `45s`, `2h0m0s`)."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?", text)
    assert m is not None and text, text
    hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return hours * 3600 + minutes * 60 + seconds


def test_the_phase_is_shown_until_the_first_object() -> None:
    terminal = Terminal()
    with Progress.on_terminal("evaluated", terminal, phase="loading inputs") as handle:
        assert terminal.getvalue() == "\rloading inputs\x1b[K"
        assert handle.expect is not None and handle.tick is not None
    assert terminal.getvalue().endswith("\r\x1b[K")        # the line goes before the output
    pipe = io.StringIO()
    with Progress.on_terminal("evaluated", pipe, phase="loading inputs"):
        pass
    assert pipe.getvalue() == ""


def test_the_estimate_is_within_a_quarter_of_the_time_left_after_the_first_tenth() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("evaluated", stream, interval=1.0, clock=clock)
    clock.now += 45.0                    # loading and compiling: long, and not evaluation
    total = 20_000
    rng = random.Random(7)
    costs = [0.004 * (0.5 + rng.random()) for _ in range(total)]     # 4 ms on average, +-50 %
    progress.expect(total)
    checked = 0
    for done in range(1, total + 1):
        clock.now += costs[done - 1]
        before = stream.getvalue()
        progress.tick()
        drawn = stream.getvalue()[len(before):]
        if not drawn or done < total // 10:
            continue
        left = re.search(r"about (\S+) left", drawn)
        assert left is not None, drawn
        real = sum(costs[done:])
        if real < 4:                     # the last seconds: printed to the second, a ratio means little
            continue
        assert abs(_seconds(left.group(1)) - real) <= 0.25 * real, (done, drawn, real)
        checked += 1
    assert checked >= 40
