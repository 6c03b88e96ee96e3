"""Go's `time` package as Kyverno uses it: ParseDuration, Duration.String, time.Parse with Go layouts
(`2006-01-02T15:04:05Z07:00`, `Mon Jan _2 15:04:05 MST 2006`, ...) and Format(time.RFC3339 / RFC3339Nano).

Durations are integer nanoseconds; times are aware datetimes (microsecond precision: Go's nanoseconds are cut).
"""

from __future__ import annotations

import datetime
import functools
import re

from kubectl_kyrec.golang.strconv import quote

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_INT64 = 2**63 - 1


class GoTimeError(ValueError):
    """str() is Go's error text."""


class _DurationError(GoTimeError):
    # the message is built only when read: failed parses are the common case in pattern matching
    def __init__(self, template: str, text: str, unit: str = "") -> None:
        super().__init__(template)
        self.template, self.text, self.unit = template, text, unit

    def __str__(self) -> str:
        return self.template.format(quoted=quote(self.text), unit=quote(self.unit))


def parse_duration(text: str) -> int:
    """time.ParseDuration: nanoseconds, or GoTimeError with Go's message."""
    orig = text
    neg = False
    if text and text[0] in "+-":
        neg = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if text == "":
        raise _DurationError("time: invalid duration {quoted}", orig)
    total = 0
    while text:
        if not (text[0] == "." or text[0].isdigit()):
            raise _DurationError("time: invalid duration {quoted}", orig)
        m = re.match(r"[0-9]*", text)
        assert m is not None
        int_part = m.group(0)
        text = text[len(int_part):]
        pre = int_part != ""
        frac_part = ""
        post = False
        if text.startswith("."):
            text = text[1:]
            m = re.match(r"[0-9]*", text)
            assert m is not None
            frac_part = m.group(0)
            text = text[len(frac_part):]
            post = frac_part != ""
        if not pre and not post:
            raise _DurationError("time: invalid duration {quoted}", orig)
        i = 0
        while i < len(text) and text[i] != "." and not text[i].isdigit():
            i += 1
        unit_text = text[:i]
        text = text[i:]
        if unit_text == "":
            raise _DurationError("time: missing unit in duration {quoted}", orig)
        if unit_text not in _UNITS:
            raise _DurationError("time: unknown unit {unit} in duration {quoted}", orig, unit_text)
        unit = _UNITS[unit_text]
        value = int(int_part or "0")
        if value > _MAX_INT64 // unit:
            raise _DurationError("time: invalid duration {quoted}", orig)
        v = value * unit
        if frac_part:
            # Go accumulates the fraction as a float64 scaled by the unit, truncated toward zero
            scale = 10 ** len(frac_part)
            v += int(float(int(frac_part)) * (unit / scale))
        total += v
        if total > _MAX_INT64:
            raise _DurationError("time: invalid duration {quoted}", orig)
    return -total if neg else total


@functools.lru_cache(maxsize=8192)
def try_parse_duration(text: str) -> int | None:
    """parse_duration, or None when Go's ParseDuration would fail (cached: patterns repeat)."""
    try:
        return parse_duration(text)
    except GoTimeError:
        return None


def _frac(value: int, digits: int) -> tuple[str, int]:
    """Go's fmtFrac: the fraction of value/10^digits without trailing zeros, and the integer part."""
    frac = value % (10**digits)
    rest = value // (10**digits)
    if frac == 0:
        return "", rest
    text = str(frac).rjust(digits, "0").rstrip("0")
    return "." + text, rest


def format_duration(ns: int) -> str:
    """time.Duration.String(): `1h2m3.5s`, `1.5ms`, `0s`."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            frac, whole = _frac(u, 3)
            return f"{sign}{whole}{frac}\u00b5s"
        frac, whole = _frac(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, secs = _frac(u, 9)
    hours, rest = divmod(secs, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}{frac}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}{frac}s"
    return f"{sign}{seconds}{frac}s"


def to_timedelta(ns: int) -> datetime.timedelta:
    return datetime.timedelta(microseconds=ns // 1000 if ns >= 0 else -((-ns) // 1000))


def timedelta_ns(delta: datetime.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


# ---------------------------------------------------------------------------------------------- layouts

RFC3339 = "2006-01-02T15:04:05Z07:00"
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
# Go's std chunks, longest first where one is a prefix of another
_STD = ["January", "Jan", "Monday", "Mon", "MST", "2006", "002", "01", "02", "03", "04", "05", "06", "_2",
        "15", "1", "2", "3", "4", "5", "PM", "pm", "-07:00:00", "-070000", "-07:00", "-0700", "-07",
        "Z07:00:00", "Z070000", "Z07:00", "Z0700", "Z07"]
_FRAC_RE = re.compile(r"[.,](0+|9+)(?![0-9])")


def _chunks(layout: str) -> list[tuple[str, str]]:
    """Split a layout into ("lit", text) and ("std", chunk) parts, as Go's nextStdChunk does."""
    out: list[tuple[str, str]] = []
    i = 0
    lit = ""
    while i < len(layout):
        found = None
        m = _FRAC_RE.match(layout, i)
        if m and i > 0 and layout[i - 1].isdigit() and out and out[-1][0] == "std" and lit == "" \
                and out[-1][1] in ("05", "5"):
            found = m.group(0)
        if found is None:
            for std in _STD:
                if layout.startswith(std, i):
                    # Go: "Jan"/"Mon"/"January"/"Monday" must not be followed by a lower-case letter
                    if std in ("Jan", "Mon", "MST") and i + len(std) < len(layout) \
                            and layout[i + len(std)].islower():
                        continue
                    if std in ("2006",) or std not in ("1", "2", "3", "4", "5"):
                        found = std
                        break
                    found = std
                    break
        if found is None:
            lit += layout[i]
            i += 1
            continue
        if lit:
            out.append(("lit", lit))
            lit = ""
        out.append(("std", found))
        i += len(found)
    if lit:
        out.append(("lit", lit))
    return out


class _Parsed:
    def __init__(self) -> None:
        self.year = 1
        self.month = 1
        self.day = 1
        self.yday = -1
        self.hour = 0
        self.minute = 0
        self.second = 0
        self.nanos = 0
        self.pm: bool | None = None
        self.offset: int | None = None  # seconds east of UTC


def _getnum(value: str, fixed: bool, width: int = 2) -> tuple[int, str]:
    if not value or not value[0].isdigit():
        raise ValueError
    if width == 2:
        if len(value) < 2 or not value[1].isdigit():
            if fixed:
                raise ValueError
            return int(value[0]), value[1:]
        return int(value[:2]), value[2:]
    if len(value) < width or not value[:width].isdigit():
        raise ValueError
    return int(value[:width]), value[width:]


def _lookup(names: list[str], value: str, length: int | None) -> tuple[int, str]:
    for i, name in enumerate(names):
        candidate = name[:length] if length else name
        if value[: len(candidate)].lower() == candidate.lower():
            return i, value[len(candidate):]
    raise ValueError


def _frac_digits(value: str) -> tuple[int, str]:
    m = re.match(r"[.,]([0-9]+)", value)
    if not m:
        return 0, value
    digits = m.group(1)
    nanos = int((digits + "000000000")[:9])
    return nanos, value[m.end():]


def parse_time(layout: str, value: str) -> datetime.datetime:
    """Go time.Parse(layout, value): an aware datetime (UTC when the value names no zone)."""
    orig_value = value
    p = _Parsed()

    def fail(elem: str, rest: str) -> GoTimeError:
        return GoTimeError(f"parsing time {quote(orig_value)} as {quote(layout)}: cannot parse "
                           f"{quote(rest)} as {quote(elem)}")

    for kind, chunk in _chunks(layout):
        if kind == "lit":
            # Go skips leading spaces in the value when the layout has spaces
            lit = chunk
            while lit and value:
                if lit[0] == " " and value[0] == " ":
                    lit = lit.lstrip(" ")
                    value = value.lstrip(" ")
                    continue
                if lit[0] != value[0]:
                    raise fail(chunk, value)
                lit, value = lit[1:], value[1:]
            if lit:
                raise fail(chunk, value)
            continue
        rest = value
        try:
            if chunk == "2006":
                if len(value) < 4 or not value[:4].isdigit():
                    raise ValueError
                p.year, value = int(value[:4]), value[4:]
            elif chunk == "06":
                n, value = _getnum(value, True)
                p.year = n + (1900 if n >= 69 else 2000)
            elif chunk == "January":
                i, value = _lookup(_MONTHS, value, None)
                p.month = i + 1
            elif chunk == "Jan":
                i, value = _lookup(_MONTHS, value, 3)
                p.month = i + 1
            elif chunk in ("01", "1"):
                p.month, value = _getnum(value, chunk == "01")
                if not 1 <= p.month <= 12:
                    raise GoTimeError(f"parsing time {quote(orig_value)}: month out of range")
            elif chunk == "Monday":
                _, value = _lookup(_DAYS, value, None)
            elif chunk == "Mon":
                _, value = _lookup(_DAYS, value, 3)
            elif chunk in ("02", "_2", "2"):
                if chunk == "_2" and value[:1] == " ":
                    value = value[1:]
                p.day, value = _getnum(value, chunk == "02")
            elif chunk == "002":
                p.yday, value = _getnum(value, True, 3)
            elif chunk == "15":
                p.hour, value = _getnum(value, False)
                if p.hour > 23:
                    raise GoTimeError(f"parsing time {quote(orig_value)}: hour out of range")
            elif chunk in ("03", "3"):
                p.hour, value = _getnum(value, chunk == "03")
                if p.hour > 12:
                    raise GoTimeError(f"parsing time {quote(orig_value)}: hour out of range")
            elif chunk in ("04", "4"):
                p.minute, value = _getnum(value, chunk == "04")
                if p.minute > 59:
                    raise GoTimeError(f"parsing time {quote(orig_value)}: minute out of range")
            elif chunk in ("05", "5"):
                p.second, value = _getnum(value, chunk == "05")
                if p.second > 59:
                    raise GoTimeError(f"parsing time {quote(orig_value)}: second out of range")
                # Go reads a fractional second the layout does not spell
                if value[:1] in (".", ",") and value[1:2].isdigit():
                    p.nanos, value = _frac_digits(value)
            elif chunk[0] in ".,":
                if chunk[1] == "0":
                    width = len(chunk) - 1
                    if len(value) < width + 1 or value[0] not in ".," or not value[1:width + 1].isdigit():
                        raise ValueError
                    p.nanos, value = _frac_digits(value[: width + 1])[0], value[width + 1:]
                else:
                    p.nanos, value = _frac_digits(value)
            elif chunk in ("PM", "pm"):
                ampm = value[:2]
                if ampm.upper() not in ("AM", "PM"):
                    raise ValueError
                p.pm = ampm.upper() == "PM"
                value = value[2:]
            elif chunk == "MST":
                m = re.match(r"UTC|GMT[+-]?[0-9]*|[A-Z]{3,5}|[+-][0-9]{2}", value)
                if not m:
                    raise ValueError
                p.offset = p.offset if p.offset is not None else 0
                value = value[m.end():]
            else:  # zone offsets
                if chunk.startswith("Z") and value[:1] == "Z":
                    p.offset = 0
                    value = value[1:]
                else:
                    body = chunk[1:] if chunk.startswith("Z") else chunk[1:]
                    m = re.match(r"[+-]", value)
                    if not m:
                        raise ValueError
                    sign = -1 if value[0] == "-" else 1
                    value = value[1:]
                    colon = ":" in body
                    parts = [2, 2, 2][: {2: 1, 4: 2, 5: 2, 6: 3, 8: 3}[len(body)]]
                    nums = []
                    for idx, width in enumerate(parts):
                        if idx and colon:
                            if value[:1] != ":":
                                raise ValueError
                            value = value[1:]
                        if len(value) < width or not value[:width].isdigit():
                            raise ValueError
                        nums.append(int(value[:width]))
                        value = value[width:]
                    while len(nums) < 3:
                        nums.append(0)
                    p.offset = sign * (nums[0] * 3600 + nums[1] * 60 + nums[2])
        except ValueError as exc:
            if isinstance(exc, GoTimeError):
                raise
            raise fail(chunk, rest) from None
    if value:
        raise GoTimeError(f"parsing time {quote(orig_value)}: extra text: {quote(value)}")
    if p.pm is not None:
        if p.pm and p.hour < 12:
            p.hour += 12
        elif not p.pm and p.hour == 12:
            p.hour = 0
    tz = datetime.UTC if not p.offset else datetime.timezone(datetime.timedelta(seconds=p.offset))
    try:
        if p.yday >= 0:
            base = datetime.datetime(p.year, 1, 1, tzinfo=tz) + datetime.timedelta(days=p.yday - 1)
            return base.replace(hour=p.hour, minute=p.minute, second=p.second, microsecond=p.nanos // 1000)
        return datetime.datetime(p.year, p.month, p.day, p.hour, p.minute, p.second, p.nanos // 1000, tzinfo=tz)
    except ValueError:
        raise GoTimeError(f"parsing time {quote(orig_value)}: day out of range") from None


def format_rfc3339(value: datetime.datetime, *, nano: bool = False) -> str:
    """t.Format(time.RFC3339), or time.RFC3339Nano with `nano` (the fraction's trailing zeros dropped, as
    json.Marshal writes a time.Time): `Z` for a zero offset, else ±hh:mm. A naive datetime is UTC."""
    offset = value.utcoffset() or datetime.timedelta(0)
    base = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:" \
           f"{value.second:02d}"
    if nano and value.microsecond:
        base += f".{value.microsecond:06d}".rstrip("0")
    seconds = int(offset.total_seconds())
    if seconds == 0:
        return base + "Z"
    sign = "-" if seconds < 0 else "+"
    seconds = abs(seconds)
    return f"{base}{sign}{seconds // 3600:02d}:{(seconds % 3600) // 60:02d}"


def in_utc(value: datetime.datetime) -> datetime.datetime:
    """t.UTC(); a naive datetime (YAML's, a certificate's) already stands for UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=datetime.UTC)
    return value.astimezone(datetime.UTC)


_GO_ZERO = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)


def truncate(value: datetime.datetime, ns: int) -> datetime.datetime:
    """Time.Truncate(d): down to a multiple of d since Go's zero time, keeping the location."""
    if ns <= 0:
        return value
    elapsed = timedelta_ns(value - _GO_ZERO)
    return value - to_timedelta(elapsed % ns)
