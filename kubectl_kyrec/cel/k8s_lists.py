"""Kubernetes' CEL list library (``library.Lists()`` in k8s.io/apiserver ``pkg/cel/library/lists.go``).

``<list>.isSorted() sum() min() max() indexOf(x) lastIndexOf(x)``. Kyverno registers ``Lists()`` without a
version, so ``includes`` (version 1) is not part of it. cel-go types these per element type
(``list<int>.sum() -> int``); here every overload takes ``list`` and returns ``dyn`` because the engine
dispatches on ``list`` alone. Element comparison and equality follow cel-go's rules (no bool/number
mixing, ints and doubles compare numerically, NaN cannot be ordered).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import NO_SUCH_OVERLOAD

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# The engine cannot hand a duration or timestamp back from a `dyn` result; say so plainly instead of
# letting it fail with its own "Non-CEL value type" text.
_TIME_RESULT = ("kyrec: the CEL engine cannot return a duration or timestamp from a list function; "
                "compare or convert the elements instead")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_COMPARABLE = (bool, int, float, str, bytes, bytearray, datetime.timedelta, datetime.datetime)


def _require_comparable(value: Any) -> None:
    # cel-go checks the traits.Comparer interface of every element before comparing anything.
    if not isinstance(value, _COMPARABLE):
        raise CelFunctionError(NO_SUCH_OVERLOAD)


def cel_compare(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 as cel-go's ``Compare``; None where cel-go's Compare yields an error value.

    isSorted/min/max only test the result against 1 or -1, so such errors never surface there
    (``[1, 'a'].isSorted()`` is true in cel-go, and NaN never wins a comparison).
    """
    if _is_number(left) and _is_number(right):
        if (isinstance(left, float) and math.isnan(left)) or (isinstance(right, float) and math.isnan(right)):
            return None
        return (left > right) - (left < right)
    if isinstance(left, bytes | bytearray) and isinstance(right, bytes | bytearray):
        return (bytes(left) > bytes(right)) - (bytes(left) < bytes(right))
    for kind in (bool, str, datetime.timedelta, datetime.datetime):
        if isinstance(left, kind) and isinstance(right, kind):
            a: Any = left
            return int(a > right) - int(a < right)
    return None


def cel_equal(left: Any, right: Any) -> bool:
    """CEL's heterogeneous equality: values of different kinds are unequal, numbers compare by value."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, bytes | bytearray) and isinstance(right, bytes | bytearray):
        return bytes(left) == bytes(right)
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        if len(left) != len(right):
            return False
        return all(key in right and cel_equal(value, right[key]) for key, value in left.items())
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(cel_equal(a, b) for a, b in zip(left, right))
    for kind in (str, datetime.timedelta, datetime.datetime, type(None)):
        if isinstance(left, kind) and isinstance(right, kind):
            return bool(left == right)
    return False


def is_sorted(items: Sequence[Any]) -> bool:
    for i, item in enumerate(items):
        _require_comparable(item)
        if i and cel_compare(items[i - 1], item) == 1:
            return False
    return True


def list_sum(items: Sequence[Any]) -> Any:
    if not items:
        return 0  # cel-go returns the element type's zero; an untyped empty list gives int 0
    first = items[0]
    if all(isinstance(x, int) and not isinstance(x, bool) for x in items):
        total = 0
        for x in items:
            total += x
            if not _INT64_MIN <= total <= _INT64_MAX:
                raise CelFunctionError("integer overflow")
        return total
    if all(isinstance(x, float) for x in items):
        return sum(items, 0.0)  # left to right from 0.0, as cel-go adds, so rounding matches
    if all(isinstance(x, datetime.timedelta) for x in items) and isinstance(first, datetime.timedelta):
        raise CelFunctionError(_TIME_RESULT)
    raise CelFunctionError(NO_SUCH_OVERLOAD)


def _extreme(items: Sequence[Any], name: str, prefer: int) -> Any:
    if not items:
        raise CelFunctionError(f"{name} called on empty list")
    best = items[0]
    _require_comparable(best)
    for item in items[1:]:
        _require_comparable(item)
        if cel_compare(best, item) == prefer:
            best = item
    if isinstance(best, datetime.timedelta | datetime.datetime):
        raise CelFunctionError(_TIME_RESULT)
    return best


def list_min(items: Sequence[Any]) -> Any:
    return _extreme(items, "min", 1)


def list_max(items: Sequence[Any]) -> Any:
    return _extreme(items, "max", -1)


def index_of(items: Sequence[Any], item: Any) -> int:
    for i, value in enumerate(items):
        if cel_equal(value, item):
            return i
    return -1


def last_index_of(items: Sequence[Any], item: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if cel_equal(items[i], item):
            return i
    return -1


LIBRARY = Library("kubernetes.lists", [
    fn("isSorted", Overload("list_is_sorted_bool", ["list"], "bool", is_sorted, member=True)),
    fn("sum", Overload("list_sum_dyn", ["list"], "dyn", list_sum, member=True)),
    fn("min", Overload("list_min_dyn", ["list"], "dyn", list_min, member=True)),
    fn("max", Overload("list_max_dyn", ["list"], "dyn", list_max, member=True)),
    # The strings extension already declares indexOf/lastIndexOf on strings; these join them.
    fn("indexOf", Overload("list_a_index_of_int", ["list", "dyn"], "int", index_of, member=True)),
    fn("lastIndexOf", Overload("list_a_last_index_of_int", ["list", "dyn"], "int", last_index_of,
                               member=True)),
])
