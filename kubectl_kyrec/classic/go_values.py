"""How Go prints the plain JSON values Kyverno's classic engine carries (`any` trees of float64, string, bool,
nil, []any, map[string]any): `fmt.Sprint`/`%v` and `strconv.FormatFloat` (`json.Marshal` is gojson's).

Kyverno embeds values in messages and substituted strings with these, so kyrec must print them byte for byte.
Python ints stand for Go numbers that are integral (Go holds them as float64 or int64; both print alike).
"""

from __future__ import annotations

import math
from typing import Any

from kubectl_kyrec.gojson import format_float


class GoInt(int):
    """A Go `int` (not float64): what a direct Go call passes for `1`; JSON-decoded numbers are never GoInt."""


def is_number(value: Any) -> bool:
    """A JSON number (Python's bool is an int, but never a Go number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def sprint_float(value: float) -> str:
    """fmt's `%v` of a float64: strconv 'g' shortest (`1e+06`, `0.0001`, `1e-05`)."""
    return format_float(value, "g")


def sprint(value: Any) -> str:
    """Go `fmt.Sprint(value)` / `%v` of a JSON value."""
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
    if isinstance(value, dict):
        return "map[" + " ".join(f"{sprint(k)}:{sprint(value[k])}" for k in sorted(value, key=str)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(sprint(v) for v in value) + "]"
    return str(value)


def format_float_upper_e(value: float) -> str:
    """strconv.FormatFloat(v, 'E', -1, 64): `10` -> `1E+01`."""
    return format_float(float(value), "e").upper()


def format_float_f32(value: float) -> str:
    """strconv.FormatFloat(v, 'f', -1, 32): the shortest text that round-trips through float32."""
    import struct

    f32 = struct.unpack("f", struct.pack("f", value))[0]
    if f32 == 0 or math.isinf(f32) or math.isnan(f32):
        return format_float(f32, "f")
    # shortest digits that read back to the same float32
    for precision in range(1, 10):
        text = f"{f32:.{precision}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            return format_float(float(text), "f")
    return format_float(f32, "f")


def deep_equal(left: Any, right: Any) -> bool:
    """reflect.DeepEqual on decoded JSON: numbers compare by value, bools are never numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if is_number(left) and is_number(right):
        return bool(left == right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(deep_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(deep_equal(a, b) for a, b in zip(left, right))
    if type(left) is not type(right):
        return False
    return bool(left == right)
