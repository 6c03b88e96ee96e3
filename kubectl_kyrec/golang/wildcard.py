"""go-wildcard v1.0.3 matching (kk: ext/wildcard) behind Kyverno's pkg/utils/wildcard, which Kyverno uses for
names, namespaces, kinds, labels, resourceFilters and PodSecurity exemptions.

`*` matches any sequence (the empty one too), `?` exactly one character; nothing else is special (no
`[...]` classes, so fnmatch does not fit). An empty pattern matches only the empty string.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = []
    for ch in pattern:
        parts.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
    return re.compile("".join(parts), re.DOTALL)


def match(pattern: str, text: str) -> bool:
    """wildcard.Match(pattern, text)."""
    if pattern == "*":
        return True
    if "*" not in pattern and "?" not in pattern:
        return pattern == text
    return _compiled(pattern).fullmatch(text) is not None


def contains_wildcard(text: str) -> bool:
    """wildcard.ContainsWildcard: whether text has a `*` or `?`."""
    return "*" in text or "?" in text
