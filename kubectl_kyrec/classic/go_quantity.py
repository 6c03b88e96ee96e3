"""Kubernetes resource.Quantity as Kyverno's arithmetic and comparisons use it: parse with its Format
(DecimalSI, BinarySI, DecimalExponent) and print with Quantity.String()'s canonical form.

The value is kubectl_kyrec.cel.k8s_quantity's exact Decimal (rounded up to nano units as ParseQuantity does);
its exponent keeps the scale Go's inf.Dec would carry, which division rounds to.
"""

from __future__ import annotations

import decimal
import functools
from dataclasses import dataclass
from decimal import Decimal

from kubectl_kyrec.cel.k8s_quantity import QuantityError, parse_quantity

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_DEC_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BIN_SUFFIX = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}
_CTX = decimal.Context(prec=4000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

__all__ = ["Quantity", "QuantityError", "parse", "format_quantity", "DECIMAL_SI", "BINARY_SI", "DECIMAL_EXPONENT"]


@dataclass(frozen=True)
class Quantity:
    value: Decimal
    format: str

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)


def _format_of(text: str) -> str:
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


def parse(text: str) -> Quantity:
    """resource.ParseQuantity: the exact value and the Format its suffix implies; QuantityError otherwise."""
    return Quantity(parse_quantity(text), _format_of(text))


@functools.lru_cache(maxsize=8192)
def try_parse_value(text: str) -> Decimal | None:
    """The value ParseQuantity gives `text`, or None when it fails (cached: patterns repeat)."""
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


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


def dec_scale(value: Decimal) -> int:
    """inf.Dec's scale of the value (digits after the point; negative for trailing zeros folded away)."""
    exp = value.as_tuple().exponent
    assert isinstance(exp, int)
    return -exp


def quo_round_down(dividend: Decimal, divisor: Decimal, scale: int) -> Decimal:
    """inf.Dec QuoRound(dividend, divisor, scale, RoundDown)."""
    with decimal.localcontext(_CTX):
        return (dividend / divisor).quantize(Decimal(1).scaleb(-scale), rounding=decimal.ROUND_DOWN)
