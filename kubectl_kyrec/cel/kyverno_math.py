"""`math.round(double, int) -> double` (sdk: math/lib.go, impl.go).

It joins the CEL math extension's own `math.round(double)`; the two overloads have different arities
so they do not collide.
"""

from __future__ import annotations

import math

from kubectl_kyrec.cel.decl import Library, Overload, fn


def go_round(value: float) -> float:
    """Go's math.Round: half away from zero, exact for every double."""
    if math.isnan(value) or math.isinf(value):
        return value
    whole = float(math.trunc(value))
    if abs(value - whole) >= 0.5:
        whole += math.copysign(1.0, value)
    return whole


def _go_divide(a: float, b: float) -> float:
    # IEEE division as Go does it; Python raises on a zero divisor instead
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def math_round(value: float, precision: int) -> float:
    """math.Round(v*10^p) / 10^p, with Go's float64 overflow to infinity."""
    try:
        shift = 10.0 ** precision
    except OverflowError:
        shift = math.inf
    return _go_divide(go_round(value * shift), shift)


def math_library() -> Library:
    return Library("kyverno.math", [
        fn("math.round", Overload("math_round_float_int", ["double", "int"], "double", math_round)),
    ])
