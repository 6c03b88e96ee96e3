"""robfig/cron v3 ParseStandard's verdicts (the CleanupPolicy schedule check), from its parser.go rules."""

from __future__ import annotations

import pytest

from kubectl_kyrec.golang.robfig_cron import CronSpecError, parse_standard


@pytest.mark.parametrize("spec", [
    "*/5 * * * *", "0 0 * * mon-fri", "0 0 1 JAN *", "? ? ? ? ?", "0-59/15 0,12 1-31 * 0-6",
    "*/61 * * * *",             # a step beyond the range is accepted
    "@hourly", "@midnight", "@every 1h30m", "TZ=Europe/Paris 0 * * * *", "CRON_TZ=UTC 0 * * * *",
])
def test_accepted(spec: str) -> None:
    parse_standard(spec)


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty spec string"),
    ("0 0 * *", "expected exactly 5 fields, found 4: [0 0 * *]"),
    ("0 0 0 * * *", "expected exactly 5 fields, found 6: [0 0 0 * * *]"),     # no seconds field
    ("0 24 * * *", "end of range (24) above maximum (23): 24"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("0 0 * * monday", "failed to parse int from monday"),
    ("@every x", "failed to parse duration @every x"),
    ("@sometimes", "unrecognized descriptor: @sometimes"),
    ("TZ=Nowhere/Else 0 * * * *", "provided bad location Nowhere/Else"),
])
def test_refused(spec: str, message: str) -> None:
    with pytest.raises(CronSpecError) as info:
        parse_standard(spec)
    assert str(info.value) == message
