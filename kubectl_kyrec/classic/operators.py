"""Kyverno's condition operators (pkg/engine/variables/operator): Equals, NotEquals, In, AnyIn, AllIn, NotIn,
AnyNotIn, AllNotIn, GreaterThan[OrEquals], LessThan[OrEquals] and the deprecated Duration* ones.

Names are matched case-insensitively to pick the handler (and `Equal`/`NotEqual` are aliases), but the
numeric and duration comparisons switch on the exact spelling, as Kyverno's do: `greaterthan` builds the
numeric handler whose comparison then answers false.

Go types: a Python int is a Go int64, a float a float64, a GoInt a Go int (the same here).
"""

from __future__ import annotations

import json
import math
from typing import Any

from kubectl_kyrec.classic import go_quantity, pattern
from kubectl_kyrec.classic.go_values import deep_equal
from kubectl_kyrec.golang import time as go_time
from kubectl_kyrec.golang import wildcard
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.golang.semver import SemverError
from kubectl_kyrec.golang.semver import compare as semver_compare
from kubectl_kyrec.golang.semver import parse as semver_parse
from kubectl_kyrec.golang.strconv import parse_float, parse_int

_HANDLER = {"equal": "Equals", "equals": "Equals", "notequal": "NotEquals", "notequals": "NotEquals",
            "in": "In", "anyin": "AnyIn", "allin": "AllIn", "notin": "NotIn", "anynotin": "AnyNotIn",
            "allnotin": "AllNotIn", "greaterthanorequals": "Numeric", "greaterthan": "Numeric",
            "lessthanorequals": "Numeric", "lessthan": "Numeric", "durationgreaterthanorequals": "Duration",
            "durationgreaterthan": "Duration", "durationlessthanorequals": "Duration", "durationlessthan": "Duration"}


def handler_exists(name: str) -> bool:
    """Whether CreateOperatorHandler builds a handler for `name`."""
    return name.lower() in _HANDLER


def evaluate_operator(name: str, key: Any, value: Any) -> bool:
    """handler.Evaluate(key, value); ValueError when Kyverno builds no handler for `name`."""
    kind = _HANDLER.get(name.lower())
    if kind is None:
        raise ValueError(f"operator {name} not supported")
    if kind == "Equals":
        return _equal(key, value)
    if kind == "NotEquals":
        return _not_equal(key, value)
    if kind == "Numeric":
        return _numeric(name, key, value)
    if kind == "Duration":
        return _duration_op(name, key, value)
    return _IN_HANDLERS[kind](key, value)


# ---------------------------------------------------------------------------------------------- helpers


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _seconds(v: Any) -> int:
    """time.Duration(v) * time.Second, in nanoseconds (float64 truncates first, as Go's conversion)."""
    return int(v) * 1_000_000_000


def _parse_duration_pair(key: Any, value: Any) -> tuple[int, int] | None:
    """operator.parseDuration: both as durations when at least one string is a duration (not "0")."""
    key_d = value_d = None
    if isinstance(key, str) and key != "0":
        key_d = go_time.try_parse_duration(key)
    if isinstance(value, str) and value != "0":
        value_d = go_time.try_parse_duration(value)
    if key_d is None and value_d is None:
        return None
    if key_d is None:
        if not _is_num(key):
            return None
        key_d = _seconds(key)
    if value_d is None:
        if not _is_num(value):
            return None
        value_d = _seconds(value)
    return key_d, value_d


def _quantity(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    return go_quantity.try_parse_value(text)


# ---------------------------------------------------------------------------------------------- equality


def _equal_string(key: str, value: Any) -> bool:
    durations = _parse_duration_pair(key, value)
    if durations is not None:
        return durations[0] == durations[1]
    key_q = _quantity(key)
    if key_q is not None and isinstance(value, str):
        value_q = _quantity(value)
        return value_q is not None and key_q == value_q
    if isinstance(value, str):
        return wildcard.match(value, key)
    return False


def _equal_float(key: float, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if _is_int(value):
        return key == math.trunc(key) and int(key) == value
    if isinstance(value, float):
        return value == key
    if isinstance(value, str):
        try:
            return parse_float(value) == key
        except ValueError:
            return False
    return False


def _equal_int(key: int, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if _is_int(value):
        return int(value) == key
    if isinstance(value, float):
        return value == math.trunc(value) and int(value) == key
    if isinstance(value, str):
        try:
            return parse_int(value) == key
        except ValueError:
            return False
    return False


def _equal(key: Any, value: Any) -> bool:
    if isinstance(key, bool):
        return isinstance(value, bool) and key == value
    if _is_int(key):
        return _equal_int(int(key), value)
    if isinstance(key, float):
        return _equal_float(key, value)
    if isinstance(key, str):
        return _equal_string(key, value)
    if isinstance(key, dict):
        return isinstance(value, dict) and deep_equal(key, value)
    if isinstance(key, list):
        return isinstance(value, list) and deep_equal(key, value)
    return False


def _not_equal_string(key: str, value: Any) -> bool:
    durations = _parse_duration_pair(key, value)
    if durations is not None:
        return durations[0] != durations[1]
    key_q = _quantity(key)
    if key_q is not None and isinstance(value, str):
        if value == "":
            return not wildcard.match(value, key)
        value_q = _quantity(value)
        if value_q is None:
            return True
        return key_q != value_q
    if isinstance(value, str):
        return not wildcard.match(value, key)
    return True


def _not_equal(key: Any, value: Any) -> bool:
    if isinstance(key, bool):
        return not isinstance(value, bool) or key != value
    if _is_int(key):
        if isinstance(value, bool):
            return True
        if _is_int(value):
            return int(value) != int(key)
        if isinstance(value, float):
            return value != math.trunc(value) or int(value) != int(key)
        if isinstance(value, str):
            try:
                return parse_int(value) != int(key)
            except ValueError:
                return True
        return True
    if isinstance(key, float):
        if isinstance(value, bool):
            return True
        if _is_int(value):
            return key != math.trunc(key) or int(key) != value
        if isinstance(value, float):
            return value != key
        if isinstance(value, str):
            try:
                return parse_float(value) != key
            except ValueError:
                return True
        return True
    if isinstance(key, str):
        return _not_equal_string(key, value)
    if isinstance(key, dict):
        return not isinstance(value, dict) or not deep_equal(key, value)
    if isinstance(key, list):
        return not isinstance(value, list) or not deep_equal(key, value)
    return False


# ---------------------------------------------------------------------------------------------- numeric


def _compare(op: str, key: float, value: float) -> bool:
    if op == "GreaterThanOrEquals":
        return key >= value
    if op == "GreaterThan":
        return key > value
    if op == "LessThanOrEquals":
        return key <= value
    if op == "LessThan":
        return key < value
    return False


def _numeric_number(op: str, key: Any, value: Any) -> bool:
    """validateValueWith{Int,Float}Pattern: key is a number."""
    if isinstance(value, bool):
        return False
    if _is_num(value):
        return _compare(op, float(key), float(value))
    if isinstance(value, str):
        durations = _parse_duration_pair(key, value)
        if durations is not None:
            return _compare(op, durations[0] / 1e9, durations[1] / 1e9)
        try:
            return _compare(op, float(key), parse_float(value))
        except ValueError:
            pass
        try:
            return _compare(op, float(key), float(parse_int(value)))
        except ValueError:
            return False
    return False


def _numeric(op: str, key: Any, value: Any) -> bool:
    if isinstance(key, bool):
        return False
    if _is_num(key):
        return _numeric_number(op, key, value)
    if not isinstance(key, str):
        return False
    durations = _parse_duration_pair(key, value)
    if durations is not None:
        return _compare(op, durations[0] / 1e9, durations[1] / 1e9)
    key_q, value_q = _quantity(key), _quantity(value)
    if key_q is not None and value_q is not None:
        return _compare(op, float((key_q > value_q) - (key_q < value_q)), 0.0)
    try:
        return _numeric_number(op, parse_float(key), value)
    except ValueError:
        pass
    try:
        return _numeric_number(op, parse_int(key), value)
    except ValueError:
        pass
    try:
        key_v = semver_parse(key)
    except SemverError:
        return False
    if not isinstance(value, str):
        return False
    try:
        value_v = semver_parse(value)
    except SemverError:
        return False
    return _compare(op, float(semver_compare(key_v, value_v)), 0.0)


def _duration_compare(op: str, key: int, value: int) -> bool:
    if op == "DurationGreaterThanOrEquals":
        return key >= value
    if op == "DurationGreaterThan":
        return key > value
    if op == "DurationLessThanOrEquals":
        return key <= value
    if op == "DurationLessThan":
        return key < value
    return False


def _duration_op(op: str, key: Any, value: Any) -> bool:
    if isinstance(key, bool):
        return False
    if _is_num(key):
        key_d = _seconds(key)
    elif isinstance(key, str):
        try:
            key_d = go_time.parse_duration(key)
        except go_time.GoTimeError:
            return False
    else:
        return False
    if isinstance(value, bool):
        return False
    if _is_num(value):
        return _duration_compare(op, key_d, _seconds(value))
    if isinstance(value, str):
        try:
            return _duration_compare(op, key_d, go_time.parse_duration(value))
        except go_time.GoTimeError:
            return False
    return False


# ---------------------------------------------------------------------------------------------- set operators


class _InvalidType(Exception):
    pass


def _scalar_key(key: Any) -> str | None:
    if isinstance(key, str):
        return key
    if isinstance(key, (bool, int, float)):
        return sprint(key)
    return None


def _json_string_list(text: str) -> list[str] | None:
    """json.Unmarshal(text, &[]string): None when it errors; null gives an empty list."""
    try:
        decoded = json.loads(text)
    except ValueError:
        return None
    if decoded is None:
        return []
    if not isinstance(decoded, list) or not all(isinstance(v, str) for v in decoded):
        return None
    return decoded


def _json_valid(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _both_ways(a: str, b: str) -> bool:
    return wildcard.match(a, b) or wildcard.match(b, a)


def _key_exists_in_array(key: str, value: Any) -> bool:
    """In/NotIn's keyExistsInArray (raises _InvalidType)."""
    if isinstance(value, list):
        return any(_both_ways(sprint(v), key) for v in value)
    if isinstance(value, str):
        if wildcard.match(value, key):
            return True
        arr = _json_string_list(value)
        if arr is None:
            raise _InvalidType
        return key in arr
    raise _InvalidType


def _range_matches(key: str, value: str) -> bool:
    return pattern.validate(key, value)


def _string_array(value: str) -> list[str]:
    if _json_valid(value):
        arr = _json_string_list(value)
        if arr is None:
            raise _InvalidType
        return arr
    return [value]


def _any_key_exists_in_array(key: str, value: Any) -> bool:
    """AnyIn/AllIn/AnyNotIn/AllNotIn's single-key check (raises _InvalidType)."""
    if isinstance(value, list):
        return any(_both_ways(sprint(v), key) for v in value)
    if isinstance(value, str):
        if wildcard.match(value, key):
            return True
        if pattern.get_operator(value) == pattern.IN_RANGE:
            return _range_matches(key, value)
        return key in _string_array(value)
    raise _InvalidType


def _is_any_in(keys: list[str], values: list[str]) -> bool:
    return any(_both_ways(k, v) for k in keys for v in values)


def _is_any_not_in(keys: list[str], values: list[str]) -> bool:
    return any(not any(_both_ways(k, v) for v in values) for k in keys)


def _is_all_in(keys: list[str], values: list[str]) -> bool:
    return all(any(_both_ways(k, v) for v in values) for k in keys)


def _is_all_not_in(keys: list[str], values: list[str]) -> bool:
    return not any(_both_ways(k, v) for k in keys for v in values)


def _any_set(keys: list[str], value: Any, negate: bool) -> bool:
    if isinstance(value, list):
        values = [sprint(v) for v in value]
        return _is_any_not_in(keys, values) if negate else _is_any_in(keys, values)
    if isinstance(value, (bool, int, float)):
        values = [sprint(value)]
        return _is_any_not_in(keys, values) if negate else _is_any_in(keys, values)
    if isinstance(value, str):
        if len(keys) == 1 and keys[0] == value:
            return not negate
        if pattern.get_operator(value) == pattern.IN_RANGE:
            if negate:
                not_range = value.replace("-", "!-", 1)
                return any(_range_matches(k, not_range) for k in keys)
            return any(_range_matches(k, value) for k in keys)
        arr = _string_array(value)
        return _is_any_not_in(keys, arr) if negate else _is_any_in(keys, arr)
    raise _InvalidType


def _all_set(keys: list[str], value: Any, negate: bool) -> bool:
    if isinstance(value, list):
        values = [sprint(v) for v in value]
        return _is_all_not_in(keys, values) if negate else _is_all_in(keys, values)
    if isinstance(value, str):
        if len(keys) == 1 and keys[0] == value:
            return not negate
        if pattern.get_operator(value) == pattern.IN_RANGE:
            if negate:
                return not any(_range_matches(k, value) for k in keys)
            return all(_range_matches(k, value) for k in keys)
        arr = _string_array(value)
        return _is_all_not_in(keys, arr) if negate else _is_all_in(keys, arr)
    raise _InvalidType


def _set_exists(keys: list[str], value: Any, negate: bool) -> bool:
    """In/NotIn's setExistsInArray."""
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise _InvalidType
        values = list(value)
    elif isinstance(value, str):
        if len(keys) == 1 and keys[0] == value:
            return True
        arr = _json_string_list(value)
        if arr is None:
            raise _InvalidType
        values = arr
    else:
        raise _InvalidType
    present = set(values)
    if negate:
        return any(k not in present for k in keys)
    return all(k in present for k in keys)


def _in_family(scalar: Any, set_check: Any, negate: bool, strict_slice: bool) -> Any:
    def handler(key: Any, value: Any) -> bool:
        single = _scalar_key(key)
        try:
            if single is not None:
                return (not scalar(single, value)) if negate else scalar(single, value)
            if isinstance(key, list):
                if strict_slice:
                    if not all(isinstance(v, str) for v in key):
                        return False  # Go panics on the type assertion
                    keys = list(key)
                else:
                    keys = [sprint(v) for v in key]
                return set_check(keys, value)
        except _InvalidType:
            return False
        return False

    return handler


_IN_HANDLERS = {
    "In": _in_family(_key_exists_in_array, lambda k, v: _set_exists(k, v, False), False, True),
    "NotIn": _in_family(_key_exists_in_array, lambda k, v: _set_exists(k, v, True), True, True),
    "AnyIn": _in_family(_any_key_exists_in_array, lambda k, v: _any_set(k, v, False), False, False),
    "AnyNotIn": _in_family(_any_key_exists_in_array, lambda k, v: _any_set(k, v, True), True, False),
    "AllIn": _in_family(_any_key_exists_in_array, lambda k, v: _all_set(k, v, False), False, False),
    "AllNotIn": _in_family(_any_key_exists_in_array, lambda k, v: _all_set(k, v, True), True, False),
}
