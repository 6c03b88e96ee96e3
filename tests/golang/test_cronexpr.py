"""golang/cronexpr.py against what github.com/aptible/supercronic/cronexpr v0.2.42 (the parser Kyverno's
DeletingPolicy schedule goes through) answers: testdata/cronexpr holds its Parse errors and Next times for
47 expressions (macros, L, W, LW, NL, N#K, names, steps, years, the library's quirks) at 43 instants."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from kubectl_kyrec.golang.cronexpr import CronError, parse_cron

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "cronexpr" / "next-v0.2.42.txt"


def _cases() -> list[tuple[str, str, str]]:
    lines = [line.rstrip("\n") for line in GOLDEN.read_text().splitlines() if line and not line.startswith("#")]
    return [tuple(line.split("|", 2)) for line in lines]  # type: ignore[misc]


def _answer(moment_text: str, expression: str) -> str:
    moment = datetime.datetime.strptime(moment_text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    try:
        nxt = parse_cron(expression).next_after(moment)
    except CronError as exc:
        return f"ERR {exc}"
    return "ZERO" if nxt is None else nxt.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_every_golden_answer_is_the_libraries() -> None:
    cases = _cases()
    assert len(cases) > 700
    wrong = [(t, e, want, got) for t, e, want in cases if (got := _answer(t, e)) != want]
    assert wrong == []


@pytest.mark.parametrize(("expression", "after", "want"), [
    ("*/1 * * * *", "2026-12-04T22:35:10Z", "2026-12-04T22:36:00Z"),
    ("0 1 * * *", "2026-12-04T22:35:00Z", "2026-12-05T01:00:00Z"),
    # both day fields restricted: either one matching runs (Friday the 4th, before the 13th)
    ("0 0 13 * 5", "2026-12-04T22:35:00Z", "2026-12-11T00:00:00Z"),
    ("0 0 L * *", "2024-02-01T00:00:00Z", "2024-02-29T00:00:00Z"),
])
def test_next_run(expression: str, after: str, want: str) -> None:
    assert _answer(after, expression) == want


def test_errors_are_the_libraries() -> None:
    with pytest.raises(CronError, match=r"^missing field\(s\)$"):
        parse_cron("* * * *")
    with pytest.raises(CronError, match=r"^invalid interval \*/60$"):
        parse_cron("*/60 * * * *")


def test_sub_seconds_are_dropped_and_next_is_strictly_after() -> None:
    expr = parse_cron("*/1 * * * *")
    at = datetime.datetime(2026, 1, 1, 0, 0, 0, tzinfo=datetime.UTC)
    assert expr.next_after(at) == datetime.datetime(2026, 1, 1, 0, 1, tzinfo=datetime.UTC)
    assert expr.next_after(at.replace(microsecond=5)) == datetime.datetime(2026, 1, 1, 0, 1, tzinfo=datetime.UTC)
