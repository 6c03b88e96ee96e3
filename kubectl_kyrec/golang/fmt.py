"""Go's `fmt.Sprint` / `%v` of the plain JSON values Kyverno carries (`any` trees of float64, string, bool,
nil, []any, map[string]any).

Kyverno embeds values in messages and substituted strings with `%v`, so kyrec must print them byte for byte.
Python ints stand for Go numbers that are integral (Go holds them as float64 or int64; both print alike).
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.golang.strconv import format_float


def sprint_float(value: float) -> str:
    """fmt's `%v` of a float64: strconv 'g' shortest (`1e+06`, `0.0001`, `1e-05`)."""
    return format_float(value, "g")


def sprint(value: Any) -> str:
    """Go `fmt.Sprint(value)` / `%v` of a JSON value: maps print sorted by key, as fmt sorts them."""
    if value is None:
        return "<nil>"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return sprint_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return "[" + " ".join(str(b) for b in value) + "]"   # a []byte prints as its numbers
    if isinstance(value, dict):
        return "map[" + " ".join(f"{sprint(k)}:{sprint(value[k])}" for k in sorted(value, key=str)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(sprint(v) for v in value) + "]"
    return str(value)
