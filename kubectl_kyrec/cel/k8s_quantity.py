"""Kubernetes' CEL quantity library (``library.Quantity()``) over ``resource.ParseQuantity`` semantics.

``quantity(s)``, ``isQuantity(s)``, the global ``sign(q)`` (Kubernetes declares it as a plain overload,
so ``q.sign()`` does not compile there either), and the members ``isInteger asInteger
asApproximateFloat add sub isGreaterThan isLessThan compareTo``.

A Quantity is the map ``{"@type": "kubernetes.Quantity", "value": <exact decimal text>}``. Parsing
keeps what ``ParseQuantity`` keeps of the number: the exact value, rounded *up* in magnitude to a
multiple of 1e-9, and capped at 2^63-1 in magnitude for binary (``Ki``..``Ei``) suffixes. The text is
canonical (``"1073741824"`` for both ``1Gi`` and ``1024Mi``), so ``==`` agrees with Kubernetes'
``Quantity.Equal`` (a ``Cmp``).

Known differences, all from keeping the value and not Go's internal representation:
- ``isInteger()``/``asInteger()`` look at the value. Kubernetes keeps the parsed scale, so an integral
  value written with a fractional or milli form (``"1.0"``, ``"1000m"``, or ``quantity("1").add(
  quantity("1000m"))``) is *not* an integer there (``asInteger`` errors); here it is.
- ``asApproximateFloat()`` is the correctly rounded double; Go multiplies mantissa by a power of ten
  in float64 and can differ in the last bit.
- Results with more than 4000 significant digits are refused with a ``kyrec:`` error (Go's big
  decimals have no such bound).
- ``mul``/``div``/``divInt``, which newer Kubernetes sources add (their compatibility list still marks the
  release as "1.??"), are not provided.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import NO_SUCH_OVERLOAD, QUANTITY, SharedMember, expect, tagged
from kubectl_kyrec.k8s.quantity import (  # noqa: F401  (ERR_FORMAT: part of this library's errors)
    _INT64_MAX,
    _INT64_MIN,
    ERR_FORMAT,
    QuantityError,
    QuantityTooLarge,
    exact,
    parse_quantity,
)


def _exact(compute: Any) -> Decimal:
    # the shared arithmetic, its precision error as the CEL function error the library reports
    try:
        return exact(compute)
    except QuantityTooLarge as err:
        raise CelFunctionError(str(err)) from None


def canonical_text(value: Decimal) -> str:
    """One text per value, so that equal quantities are equal maps."""
    if value == 0:
        return "0"
    normal = _exact(lambda: value.normalize())
    exponent = normal.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent >= -40 and normal.adjusted() <= 60:
        return format(normal, "f")
    return str(normal)


def as_quantity(value: Decimal) -> dict[str, Any]:
    return tagged(QUANTITY, value=canonical_text(value))


def value_of(quantity: Any) -> Decimal:
    try:
        return Decimal(expect(quantity, QUANTITY)["value"])
    except (decimal.InvalidOperation, KeyError, TypeError):  # a hand-written map, not one quantity() made
        raise CelFunctionError(NO_SUCH_OVERLOAD) from None


def _to_quantity(text: str) -> dict[str, Any]:
    try:
        return as_quantity(parse_quantity(text))
    except QuantityError as exc:
        raise CelFunctionError(str(exc)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityTooLarge as exc:
        raise CelFunctionError(str(exc)) from None
    except QuantityError:
        return False
    return True


def _is_integer(q: Mapping[str, Any]) -> bool:
    value = value_of(q)
    return value == value.to_integral_value() and _INT64_MIN <= value <= _INT64_MAX


def _as_integer(q: Mapping[str, Any]) -> int:
    if not _is_integer(q):
        raise CelFunctionError("cannot convert value to integer")
    return int(value_of(q))


def _as_float(q: Mapping[str, Any]) -> float:
    return float(value_of(q))


def _sign(q: Mapping[str, Any]) -> int:
    value = value_of(q)
    return (value > 0) - (value < 0)


def _add(q: Mapping[str, Any], other: Any) -> dict[str, Any]:
    left = value_of(q)
    right = Decimal(other) if isinstance(other, int) else value_of(other)
    return as_quantity(_exact(lambda: left + right))


def _sub(q: Mapping[str, Any], other: Any) -> dict[str, Any]:
    left = value_of(q)
    right = Decimal(other) if isinstance(other, int) else value_of(other)
    return as_quantity(_exact(lambda: left - right))


def _compare(q: Mapping[str, Any], other: Mapping[str, Any]) -> int:
    left, right = value_of(q), value_of(other)
    return (left > right) - (left < right)


LIBRARY = Library("kubernetes.quantity", [
    fn("quantity", Overload("string_to_quantity", ["string"], "map", _to_quantity)),
    fn("isQuantity", Overload("is_quantity_string", ["string"], "bool", _is_quantity)),
    fn("sign", Overload("quantity_sign", ["map"], "int", _sign)),
    fn("isInteger", Overload("quantity_is_integer", ["map"], "bool", _is_integer, member=True)),
    fn("asInteger", Overload("quantity_get_int", ["map"], "int", _as_integer, member=True)),
    fn("asApproximateFloat", Overload("quantity_get_float", ["map"], "double", _as_float, member=True)),
    fn("add", Overload("quantity_add", ["map", "map"], "map", _add, member=True),
       Overload("quantity_add_int", ["map", "int"], "map", _add, member=True)),
    fn("sub", Overload("quantity_sub", ["map", "map"], "map", _sub, member=True),
       Overload("quantity_sub_int", ["map", "int"], "map", _sub, member=True)),
])

SHARED = (
    SharedMember("isGreaterThan", QUANTITY, ("map", "map"), "bool", lambda a, b: _compare(a, b) == 1),
    SharedMember("isLessThan", QUANTITY, ("map", "map"), "bool", lambda a, b: _compare(a, b) == -1),
    SharedMember("compareTo", QUANTITY, ("map", "map"), "int", _compare),
)
