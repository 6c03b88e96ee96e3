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

SPLIT_RE_TEXT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT = f"quantities must match the regular expression '{SPLIT_RE_TEXT}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MAX = 2**31 - 1
_MAX_DIGITS = 4000
_CONTEXT = decimal.Context(prec=_MAX_DIGITS, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                           traps=[decimal.InvalidOperation, decimal.Inexact, decimal.Overflow])
_ROUNDING = _CONTEXT.copy()
_ROUNDING.traps[decimal.Inexact] = False
_NANO = Decimal("1e-9")

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = "eEinumkKMGTP"
_DIGITS = "0123456789"


class QuantityError(ValueError):
    """A string ParseQuantity rejects; the message is apimachinery's error text."""


def _scan(text: str) -> tuple[str, int, int, str]:
    """apimachinery's parseQuantityString: (number text, integer digits, fraction digits, suffix).

    Integer digits are counted without leading zeros (at least one), as Go counts them to choose
    between its int64 and big-decimal paths.
    """
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return text, 1, 0, ""  # only a sign and zeros
    num_start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num_len = max(pos - num_start, 1)
    denom_len = 0
    if pos < end and text[pos] == ".":
        pos += 1
        denom_start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom_len = pos - denom_start
    number, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return number, num_len, denom_len, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, bool]:
    """(base, exponent, binary) for a suffix, as apimachinery's quantitySuffixer.interpret."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], False
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if body and all(c in _DIGITS for c in body):
            exponent = int(digits)
            # Exponents must survive negation as an int32 scale; others are rejected, not wrapped.
            if -_INT32_MAX <= exponent <= _INT32_MAX:
                return 10, exponent, False
    raise QuantityError(ERR_SUFFIX)


def _takes_int64_path(num_len: int, denom_len: int, exponent: int, binary: bool) -> bool:
    # ParseQuantity's fast path; the other path hands the number text to inf.Dec, which rejects a
    # text without digits ("Ei" or ".e-10"), while the fast path reads it as 0 ("Mi" parses as 0).
    if binary:
        return denom_len == 0 and 15 - num_len - (exponent * 3 // 10) - 1 >= 0
    return 18 - (num_len + denom_len) >= 0 and exponent - denom_len >= -9


def parse_quantity(text: str) -> Decimal:
    """The value ``resource.ParseQuantity`` gives ``text``, or :class:`QuantityError`."""
    if not text:
        raise QuantityError(ERR_FORMAT)
    number, num_len, denom_len, suffix = _scan(text)
    base, exponent, binary = _interpret(suffix)
    digits = number.lstrip("+-")
    negative = number.startswith("-")
    if not any(c in _DIGITS for c in digits):
        if not _takes_int64_path(num_len, denom_len, exponent, binary):
            raise QuantityError(ERR_NUMERIC)
        return Decimal(0)
    amount = Decimal(digits)
    if amount != 0:
        amount = _exact(lambda: amount.scaleb(exponent) if base == 10 else amount * (2 ** exponent))
        places = amount.as_tuple().exponent
        if isinstance(places, int) and places < -9:
            # Round up in magnitude: asking for a sliver of a resource still gets the smallest unit.
            amount = _exact(lambda: amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_ROUNDING))
        if binary and amount > _INT64_MAX:
            amount = Decimal(_INT64_MAX)
    return -amount if negative and amount else amount


def _exact(compute: Any) -> Decimal:
    try:
        with decimal.localcontext(_CONTEXT):
            result: Decimal = compute()
            return result
    except decimal.DecimalException:
        raise CelFunctionError(f"kyrec: quantity exceeds {_MAX_DIGITS} significant digits") from None


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
