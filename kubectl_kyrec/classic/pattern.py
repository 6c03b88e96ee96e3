"""Kyverno's scalar pattern values (pkg/engine/pattern, pkg/engine/operator): `>=`, `<=`, `>`, `<`, `!`,
ranges `a-b`/`a!-b`, `|`, `&`, durations, quantities, wildcards, `*`, `?*`, null.

Go types: Kyverno decodes a rule's pattern with encoding/json, so every pattern number is a float64; the
resource comes through the Kubernetes decoder, so its integral numbers are int64 and the others float64.
Here a Python int in a pattern is a float64 (a GoInt is a Go int, for callers that mean one) and a Python
int in a resource is an int64.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kubectl_kyrec.classic import go_quantity
from kubectl_kyrec.classic.go_values import GoInt
from kubectl_kyrec.golang import time as go_time
from kubectl_kyrec.golang import wildcard
from kubectl_kyrec.golang.strconv import format_float, parse_float, parse_int

EQUAL = ""
MORE_EQUAL = ">="
LESS_EQUAL = "<="
NOT_EQUAL = "!"
MORE = ">"
LESS = "<"
IN_RANGE = "-"
NOT_IN_RANGE = "!-"

_NUM = r"[-|+]?[0-9]+(?:\.[0-9]+)?[A-Za-z]*"
IN_RANGE_REGEX = re.compile(rf"^({_NUM})-({_NUM})$")
NOT_IN_RANGE_REGEX = re.compile(rf"^({_NUM})!-({_NUM})$")


def get_operator(pattern: str) -> str:
    """operator.GetOperatorFromStringPattern: '', '>=', '<=', '>', '<', '!', '-' (range) or '!-'."""
    if len(pattern) < 2:
        return EQUAL
    for op in (MORE_EQUAL, LESS_EQUAL, MORE, LESS, NOT_EQUAL):
        if pattern.startswith(op):
            return op
    if NOT_IN_RANGE_REGEX.search(pattern):
        return NOT_IN_RANGE
    if IN_RANGE_REGEX.search(pattern):
        return IN_RANGE
    return EQUAL


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate(value: Any, pattern: Any) -> bool:
    """pattern.Validate(value, pattern) for a scalar (or map/list: type check only) pattern."""
    if isinstance(pattern, bool):
        return isinstance(value, bool) and value == pattern
    if isinstance(pattern, GoInt):
        return validate_int_pattern(value, int(pattern))
    if isinstance(pattern, (int, float)):
        return validate_float_pattern(value, float(pattern))
    if pattern is None:
        return validate_nil_pattern(value)
    if isinstance(pattern, dict):
        return isinstance(value, dict)
    if isinstance(pattern, str):
        return validate_string_patterns(value, pattern)
    return False


def validate_int_pattern(value: Any, pattern: int) -> bool:
    if isinstance(value, bool):
        return False
    if _is_int(value):
        return int(value) == pattern
    if isinstance(value, float):
        if value != math.trunc(value):
            return False
        return int(value) == pattern
    if isinstance(value, str):
        try:
            return parse_int(value) == pattern
        except ValueError:
            return False
    return False


def validate_float_pattern(value: Any, pattern: float) -> bool:
    if isinstance(value, bool):
        return False
    if _is_int(value):
        if pattern != math.trunc(pattern):
            return False
        return int(pattern) == value
    if isinstance(value, float):
        return value == pattern
    if isinstance(value, str):
        try:
            return parse_float(value) == pattern
        except ValueError:
            return False
    return False


def validate_nil_pattern(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, str):
        return value == ""
    return False


def validate_string_patterns(value: Any, pattern: str) -> bool:
    if isinstance(value, str) and value == pattern:
        return True
    for condition in pattern.split("|"):
        condition = condition.strip(" ")
        if all(validate_string_pattern(value, c.strip(" ")) for c in condition.split("&")):
            return True
    return False


def validate_string_pattern(value: Any, pattern: str) -> bool:
    op = get_operator(pattern)
    if op == IN_RANGE:
        m = IN_RANGE_REGEX.search(pattern)
        if m is None:
            return False
        return validate_string_pattern(value, f">= {m.group(1)}") and validate_string_pattern(value, f"<= {m.group(2)}")
    if op == NOT_IN_RANGE:
        m = NOT_IN_RANGE_REGEX.search(pattern)
        if m is None:
            return False
        return validate_string_pattern(value, f"< {m.group(1)}") or validate_string_pattern(value, f"> {m.group(2)}")
    return validate_string(value, pattern[len(op):].strip(" \t\n\r\v\f"), op)


def validate_string(value: Any, pattern: str, op: str) -> bool:
    result = _compare_duration(value, pattern, op)
    if result is not None:
        return result
    result = _compare_quantity(value, pattern, op)
    if result is not None:
        return result
    return compare_string(value, pattern, op)


def convert_number_to_string(value: Any) -> str | None:
    """pattern.convertNumberToString: nil is "0", float64 `%f`, int64 decimal; None for other types."""
    if value is None:
        return "0"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, int):
        return str(value)
    return None


def _cmp_result(cmp: int, op: str) -> bool | None:
    if op == EQUAL:
        return cmp == 0
    if op == NOT_EQUAL:
        return cmp != 0
    if op == MORE:
        return cmp > 0
    if op == LESS:
        return cmp < 0
    if op == MORE_EQUAL:
        return cmp >= 0
    if op == LESS_EQUAL:
        return cmp <= 0
    return None


def _compare_duration(value: Any, pattern: str, op: str) -> bool | None:
    want = go_time.try_parse_duration(pattern)
    if want is None:
        return None
    text = convert_number_to_string(value)
    if text is None:
        return None
    have = go_time.try_parse_duration(text)
    if have is None:
        return None
    return _cmp_result((have > want) - (have < want), op)


def _compare_quantity(value: Any, pattern: str, op: str) -> bool | None:
    want = go_quantity.try_parse_value(pattern)
    if want is None:
        return None
    text = convert_number_to_string(value)
    if text is None:
        return None
    have = go_quantity.try_parse_value(text)
    if have is None:
        return None
    return _cmp_result((have > want) - (have < want), op)


def compare_string(value: Any, pattern: str, op: str) -> bool:
    """pattern.compareString: `=`/`!` only, wildcards; float64 values print as FormatFloat 'E' (`1E+01`)."""
    if op not in (EQUAL, NOT_EQUAL):
        return False
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = format_float(value, "E")
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        return False
    matched = wildcard.match(pattern, text)
    return not matched if op == NOT_EQUAL else matched
