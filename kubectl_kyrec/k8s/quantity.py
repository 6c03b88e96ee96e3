"""Kubernetes quantities (resource.ParseQuantity): the parser every stage shares (the CEL quantity library,
the comparison of resource maps in drift).

Parsing keeps what ParseQuantity keeps of the number: the exact value, rounded *up* in magnitude to a
multiple of 1e-9, and capped at 2^63-1 in magnitude for binary (`Ki`..`Ei`) suffixes.
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Any

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


class QuantityTooLarge(QuantityError):
    """More significant digits than kyrec computes with (Go's big decimals have no such bound)."""


def exact(compute: Any) -> Decimal:
    """`compute()` in kyrec's decimal context; QuantityTooLarge past its precision."""
    try:
        with decimal.localcontext(_CONTEXT):
            result: Decimal = compute()
            return result
    except decimal.DecimalException:
        raise QuantityTooLarge(f"kyrec: quantity exceeds {_MAX_DIGITS} significant digits") from None


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
        amount = exact(lambda: amount.scaleb(exponent) if base == 10 else amount * (2 ** exponent))
        places = amount.as_tuple().exponent
        if isinstance(places, int) and places < -9:
            # Round up in magnitude: asking for a sliver of a resource still gets the smallest unit.
            amount = exact(lambda: amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_ROUNDING))
        if binary and amount > _INT64_MAX:
            amount = Decimal(_INT64_MAX)
    return -amount if negative and amount else amount
