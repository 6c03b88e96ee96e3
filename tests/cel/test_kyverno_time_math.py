"""time.now/truncate/toCron and math.round (sdk time/lib_test.go, math/impl_test.go)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_math import go_round, math_library, math_round
from kubectl_kyrec.cel.kyverno_time import time_library

UTC = datetime.timezone.utc
NOW = datetime.datetime(2025, 1, 2, 15, 30, 45, tzinfo=UTC)


def run(expr: str, now: datetime.datetime = NOW) -> Any:
    env = Environment([time_library(now), math_library()], [])
    outcome = env.compile(expr).evaluate(env.activation({}))
    return outcome.error if outcome.error is not None else outcome.value


def test_now_is_the_context_clock() -> None:
    assert run("time.now()") == NOW
    assert run('time.now() - duration("3h")') == NOW - datetime.timedelta(hours=3)


def test_now_treats_a_naive_clock_as_utc() -> None:
    assert run("time.now()", now=datetime.datetime(2025, 1, 2, 15, 30)) == datetime.datetime(
        2025, 1, 2, 15, 30, tzinfo=UTC)


def test_truncate_to_the_hour() -> None:
    assert run('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("1h"))') == datetime.datetime(
        2025, 1, 2, 3, 0, tzinfo=UTC)


def test_truncate_counts_from_go_zero_time_not_unix_epoch() -> None:
    # 2025-01-02 is a Thursday; Go's zero time (0001-01-01) is a Monday, so a week truncates to Monday
    assert run('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("168h"))') == datetime.datetime(
        2024, 12, 30, tzinfo=UTC)


def test_truncate_with_non_positive_duration_is_a_no_op() -> None:
    assert run('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("0s"))') == datetime.datetime(
        2025, 1, 2, 3, 45, 27, tzinfo=UTC)
    assert run('time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("-1h"))') == datetime.datetime(
        2025, 1, 2, 3, 45, 27, tzinfo=UTC)


def test_to_cron() -> None:
    assert run('time.toCron(timestamp("2025-01-02T15:30:00Z"))') == "30 15 2 1 4"
    assert run('time.toCron(timestamp("2025-03-09T05:07:00Z"))') == "7 5 9 3 0"  # a Sunday is 0


@pytest.mark.parametrize(("expr", "value"), [
    ("math.round(10.125, 2)", 10.13),
    ("math.round(10.125, 0)", 10.0),
    ("math.round(12345.6789, -2)", 12300.0),
    ("math.round(-2.5, 0)", -3.0),
    ("math.round(2.5, 0)", 3.0),
    ("math.round(1.005, 2)", 1.0),  # 1.005 * 100 is 100.49999999999999 in binary floating point
])
def test_round(expr: str, value: float) -> None:
    assert run(expr) == value


def test_cel_math_round_with_one_argument_still_works() -> None:
    assert run("math.round(1.5)") == 2.0


def test_round_precision_is_an_int() -> None:
    env = Environment([math_library()], [])
    with pytest.raises(Exception, match="no matching overload"):
        env.compile("math.round(1.5, 1.0)")


def test_round_overflows_like_go() -> None:
    assert str(math_round(1.0, 400)) == "nan"  # 1 * +Inf / +Inf
    assert str(math_round(1.0, -400)) == "nan"  # 10^-400 underflows to 0: 0 / 0
    assert go_round(0.49999999999999994) == 0.0
