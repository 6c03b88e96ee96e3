"""Kubernetes quantities (resource.ParseQuantity): the parser every stage shares (the CEL quantity library,
the comparison of resource maps in drift).

Parsing keeps what ParseQuantity keeps of the number: the exact value, rounded *up* in magnitude to a
multiple of 1e-9, and capped at 2^63-1 in magnitude for binary (`Ki`..`Ei`) suffixes.
"""

from __future__ import annotations

import decimal
import functools
from decimal import Decimal
from typing import Any

from kubectl_kyrec.errors import EngineError

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


class QuantityError(ValueError, EngineError):
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


# ---- Quantity.String(): the canonical text (moved here from classic/go_quantity for the API server's defaulting)

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_DEC_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BIN_SUFFIX = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}


def format_of(text: str) -> str:
    """The Format ParseQuantity gives `text` by its suffix (before the small-binary-fraction case)."""
    body = text.lstrip("+-")
    i = 0
    while i < len(body) and (body[i].isdigit() or body[i] == "."):
        i += 1
    suffix = body[i:]
    if suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        return BINARY_SI
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def _canonical_decimal(value: Decimal) -> tuple[int, int]:
    """(mantissa, exponent) with the exponent a multiple of 3 and no factor of 10 left that could move."""
    sign, digits, exp = value.as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits)) or "0")
    while mantissa and mantissa % 10 == 0:
        mantissa //= 10
        exp += 1
    shift = exp % 3
    mantissa *= 10**shift
    exp -= shift
    return (-mantissa if sign else mantissa), exp


def format_quantity(value: Decimal, fmt: str) -> str:
    """Quantity.String() (CanonicalizeBytes): `1Ki`, `1500m`, `2k`, `1e3`, `0`."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI:
        if -1024 < value < 1024 or value != value.to_integral_value():
            fmt = DECIMAL_SI
        else:
            amount = int(value)
            exponent = 0
            while amount and amount % 1024 == 0:
                amount //= 1024
                exponent += 10
            if exponent in _BIN_SUFFIX:
                return f"{amount}{_BIN_SUFFIX[exponent]}"
            fmt = DECIMAL_SI
    mantissa, exponent = _canonical_decimal(value)
    if fmt == DECIMAL_SI and exponent in _DEC_SUFFIX:
        return f"{mantissa}{_DEC_SUFFIX[exponent]}"
    if exponent == 0:
        return str(mantissa)
    return f"{mantissa}e{exponent}"


def _kept_text(text: str) -> bool:
    """Whether ParseQuantity keeps `text` itself as the Quantity's string (its fast path, when it judges the
    text canonical): MarshalJSON then writes `text` back unchanged, sign and all."""
    number, num_len, denom_len, suffix = _scan(text)
    base, exponent, binary = _interpret(suffix)
    if not _takes_int64_path(num_len, denom_len, exponent, binary):
        return False
    body = number.lstrip("+-")
    whole, _, fraction = body.partition(".")
    shifted = (whole.lstrip("0") or "0") + fraction
    if not shifted.isdigit() or len(shifted) > 19 or int(shifted) > _INT64_MAX:
        return False
    value = int(shifted)
    if binary:
        return value * (2 ** exponent) <= _INT64_MAX and value & 0x07 != 0
    scale = exponent - denom_len
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


@functools.lru_cache(maxsize=4096)
def quantity_json(text: str, *, round_to_milli: bool = False) -> str:
    """The text the API server writes back for a quantity it read as `text` (UnmarshalJSON, then MarshalJSON):
    Quantity.String()'s canonical form unless ParseQuantity kept the text (quantity.go ParseQuantity, the
    "if the number is in canonical form, reuse the string" branch). `round_to_milli` first applies
    pkg/apis/core/v1/defaults.go SetDefaults_ResourceList (RoundUp(-3): away from zero, to a multiple of 1m),
    which every ResourceList of a built-in kind gets. QuantityError when the server would refuse `text`."""
    if text == "0":
        return text
    value = parse_quantity(text)
    fmt = format_of(text)
    rounded = value
    if round_to_milli:
        rounded = exact(lambda: value.quantize(Decimal("0.001"), rounding=decimal.ROUND_UP, context=_ROUNDING))
    if rounded == value and _kept_text(text):
        return text
    if fmt == BINARY_SI and 0 < abs(value) < 1:
        fmt = DECIMAL_SI          # ParseQuantity's own switch for binary fractions
    return format_quantity(rounded.normalize(_CONTEXT) if rounded else Decimal(0), fmt)
