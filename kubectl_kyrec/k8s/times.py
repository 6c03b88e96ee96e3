"""RFC 3339 times as Kubernetes and Kyverno parse them: Go's `time.Parse(time.RFC3339, text)`.

One parser for every time kyrec reads: creationTimestamp, a PolicyException's expiresAt, scan times in
reports, exclusion expiry, `--now`. Go's layout is strict: upper-case `T` and `Z`, two-digit fields, an
optional fraction, and `Z` or a `+hh:mm` offset; a date alone or a time without offset is refused.
"""

from __future__ import annotations

import datetime
import functools
import re

from kubectl_kyrec.golang import time as go_time

# Go's time.RFC3339 layout: upper-case T and Z, optional fraction, offset hh:mm
_RFC3339_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_NO_OFFSET_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?$")


# a policy's creation time is parsed once per trigger, and objects created in one second share theirs: a
# datetime is immutable, so the answers are kept
@functools.lru_cache(maxsize=4096)
def parse_rfc3339(text: str) -> datetime.datetime | None:
    """Parse as Go's `time.Parse(time.RFC3339, text)` accepts it; None when Go would fail."""
    m = _RFC3339_RE.match(text)
    if not m:
        return None
    zone = m.group(8)
    if zone != "Z" and (int(zone[1:3]) > 23 or int(zone[4:6]) > 59):
        return None
    frac = m.group(7)
    # fromisoformat takes at most 6 fraction digits; Go keeps nanoseconds, kyrec needs no more than micro
    head = text[:19] + ((frac + "000000")[:7] if frac else "")
    try:
        return datetime.datetime.fromisoformat(head + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None


def lacks_offset(text: str) -> bool:
    """A date-time that only misses its zone offset (to say so instead of "not RFC 3339")."""
    return bool(_NO_OFFSET_RE.match(text))


def format_rfc3339(moment: datetime.datetime) -> str:
    """metav1.Time's form: UTC, seconds, `Z`."""
    return go_time.format_rfc3339(moment.astimezone(datetime.UTC))


def kubectl_age(seconds: float | None) -> str:
    """An age as kubectl's AGE column prints it, coarsely: 45s, 12m, 5h, 3d; `-` when unknown. One format
    for every age kyrec prints (report tables, causes)."""
    if seconds is None:
        return "-"
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"

