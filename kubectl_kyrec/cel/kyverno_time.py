"""`time.now()`, `time.truncate(timestamp, duration)`, `time.toCron(timestamp)` (sdk: time/lib.go).

`time.now()` answers the evaluation clock from the library context (`--now`), never the wall clock,
so results are reproducible.
"""

from __future__ import annotations

import datetime

from kubectl_kyrec.cel.decl import Library, Overload, fn

_UTC = datetime.UTC
# Go's time.Truncate counts from the zero time, 0001-01-01T00:00:00Z, not from the Unix epoch: weekly
# truncation lands on a Monday, not on the Thursday a Unix-epoch count would give.
_GO_ZERO = datetime.datetime(1, 1, 1, tzinfo=_UTC)


def _utc(value: datetime.datetime) -> datetime.datetime:
    return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)


def time_truncate(value: datetime.datetime, step: datetime.timedelta) -> datetime.datetime:
    """Go's Time.Truncate: round down to a multiple of `step` since the zero time; step <= 0 is a no-op."""
    value = _utc(value)
    if step <= datetime.timedelta(0):
        return value
    elapsed = value - _GO_ZERO
    return value - (elapsed % step)


def time_to_cron(value: datetime.datetime) -> str:
    """"minute hour day-of-month month day-of-week", Sunday being 0, without zero padding."""
    value = _utc(value)
    return f"{value.minute} {value.hour} {value.day} {value.month} {value.isoweekday() % 7}"


def time_library(now: datetime.datetime) -> Library:
    instant = _utc(now)
    return Library("kyverno.time", [
        fn("time.now", Overload("time_now", [], "timestamp", lambda: instant)),
        fn("time.truncate", Overload("time_truncate", ["timestamp", "duration"], "timestamp", time_truncate)),
        fn("time.toCron", Overload("time_to_cron", ["timestamp"], "string", time_to_cron)),
    ])
