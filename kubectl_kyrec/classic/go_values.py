"""The plain JSON values Kyverno's classic engine carries (`any` trees of float64, string, bool, nil, []any,
map[string]any): which are numbers, and reflect.DeepEqual on them (printing them is golang.fmt's).

Python ints stand for Go numbers that are integral (Go holds them as float64 or int64; both compare alike).
"""

from __future__ import annotations

from typing import Any


class GoInt(int):
    """A Go `int` (not float64): what a direct Go call passes for `1`; JSON-decoded numbers are never GoInt."""


def is_number(value: Any) -> bool:
    """A JSON number (Python's bool is an int, but never a Go number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
