"""Whether github.com/robfig/cron/v3 `ParseStandard` accepts a schedule: the parser Kyverno's CleanupPolicy
and ClusterCleanupPolicy validation uses (kk: api/kyverno/v2 cleanup_policy_types.go ValidateSchedule), a
different library from the DeletingPolicy's (golang/cronexpr.py, supercronic's).

Its grammar: an optional `TZ=zone ` or `CRON_TZ=zone ` prefix; then a descriptor (`@yearly`, `@annually`,
`@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`, `@every <Go duration>`) or exactly five fields
(minute hour day-of-month month day-of-week), each a comma list of `*` or `?`, `N`, `N-M`, with an optional
`/step`; months and weekdays also by their three-letter English names (any case).
"""

from __future__ import annotations

_MONTHS = {name: i for i, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                              "oct", "nov", "dec"), 1)}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (min, max, names) of minute, hour, day of month, month, day of week
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS),
                                                         (0, 6, _DAYS))
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class CronSpecError(ValueError):
    """str() is robfig/cron's error text."""


def parse_standard(spec: str) -> None:
    """Raise CronSpecError where robfig/cron's ParseStandard fails."""
    if not spec:
        raise CronSpecError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        zone = spec[spec.find("=") + 1:space if space >= 0 else len(spec)]
        if space < 0 or not _known_zone(zone):
            raise CronSpecError(f"provided bad location {zone}")
        spec = spec[space:].strip()
    if spec.startswith("@"):
        _descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != 5:
        raise CronSpecError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, bounds in zip(fields, _BOUNDS, strict=True):
        for part in text.split(","):
            _range(part, *bounds)


def _descriptor(spec: str) -> None:
    from kubectl_kyrec.golang.time import try_parse_duration

    if spec in _DESCRIPTORS:
        return
    if spec.startswith("@every "):
        if try_parse_duration(spec[len("@every "):]) is None:
            raise CronSpecError(f"failed to parse duration {spec}")
        return
    raise CronSpecError(f"unrecognized descriptor: {spec}")


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise CronSpecError(f"too many hyphens: {expr}")
    if len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if len(low_and_high) == 1:
            end = high      # `N/step` is `N-max/step`
        if step == 0:
            raise CronSpecError(f"step of range should be a positive number: {expr}")
    elif len(range_and_step) > 2:
        raise CronSpecError(f"too many slashes: {expr}")
    if start < low:
        raise CronSpecError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronSpecError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronSpecError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")


def _int_or_name(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    return _int(text)


def _int(text: str) -> int:
    """mustParseInt: strconv.Atoi, negatives refused."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise CronSpecError(f"failed to parse int from {text}")
    value = int(text)
    if value < 0:
        raise CronSpecError(f"negative number ({value}) not allowed: {text}")
    return value


def _known_zone(name: str) -> bool:
    """time.LoadLocation: "" and UTC are UTC, Local the machine's, else an IANA zone."""
    import zoneinfo

    if name in ("", "UTC", "Local"):
        return True
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
