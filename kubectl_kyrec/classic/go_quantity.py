"""Kubernetes resource.Quantity as Kyverno's arithmetic and comparisons use it: parse with its Format
(DecimalSI, BinarySI, DecimalExponent) and print with Quantity.String()'s canonical form.

The value is kubectl_kyrec.k8s.quantity's exact Decimal (rounded up to nano units as ParseQuantity does);
its exponent keeps the scale Go's inf.Dec would carry, which division rounds to.
"""

from __future__ import annotations

import decimal
import functools
from dataclasses import dataclass
from decimal import Decimal

from kubectl_kyrec.k8s.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    QuantityError,
    format_of,
    format_quantity,
    parse_quantity,
)

_CTX = decimal.Context(prec=4000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

__all__ = ["Quantity", "QuantityError", "parse", "format_quantity", "DECIMAL_SI", "BINARY_SI", "DECIMAL_EXPONENT"]


@dataclass(frozen=True)
class Quantity:
    value: Decimal
    format: str

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)


def parse(text: str) -> Quantity:
    """resource.ParseQuantity: the exact value and the Format its suffix implies; QuantityError otherwise."""
    return Quantity(parse_quantity(text), format_of(text))


@functools.lru_cache(maxsize=8192)
def try_parse_value(text: str) -> Decimal | None:
    """The value ParseQuantity gives `text`, or None when it fails (cached: patterns repeat)."""
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


def dec_scale(value: Decimal) -> int:
    """inf.Dec's scale of the value (digits after the point; negative for trailing zeros folded away)."""
    exp = value.as_tuple().exponent
    assert isinstance(exp, int)
    return -exp


def quo_round_down(dividend: Decimal, divisor: Decimal, scale: int) -> Decimal:
    """inf.Dec QuoRound(dividend, divisor, scale, RoundDown)."""
    with decimal.localcontext(_CTX):
        return (dividend / divisor).quantize(Decimal(1).scaleb(-scale), rounding=decimal.ROUND_DOWN)
