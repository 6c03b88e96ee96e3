"""Go's `encoding/json` number and string encoding, shared by the json CEL library and the report hash.

Both must write exactly what Go writes: floats in strconv's shortest form (`'f'`, or `'e'` below 1e-6 and
from 1e21, with a negative one-digit exponent unpadded), strings HTML-safe with U+2028/U+2029 escaped.
"""

from __future__ import annotations

import math
from decimal import Decimal


class UnsupportedValue(ValueError):
    """NaN or an infinity: `json.Marshal` refuses them."""


def _digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of |value| (no leading/trailing zeros) and Go's decimal point position."""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    text = "".join(str(d) for d in digit_tuple).lstrip("0")
    dp = len(text) + int(exponent)
    return text.rstrip("0"), dp


def format_float(value: float, fmt: str) -> str:
    """strconv.FormatFloat(value, fmt, -1, 64) for fmt in 'e', 'f', 'g'."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + ("0e+00" if fmt == "e" else "0")
    digits, dp = _digits(value)
    if fmt == "g":
        # the shortest %g switches to %e when the exponent is < -4 or >= 6 (eprec is 6)
        fmt = "e" if not -4 <= dp - 1 < 6 else "f"
    if fmt == "e":
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp = dp - 1
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return sign + "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return sign + digits[:dp] + "." + digits[dp:]


def marshal_float(value: float) -> str:
    """encoding/json's float64 encoding: 'f' form, switching to 'e' for tiny or huge magnitudes."""
    if math.isnan(value) or math.isinf(value):
        raise UnsupportedValue(f"json: unsupported value: {format_float(value, 'g')}")
    magnitude = abs(value)
    fmt = "f"
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        fmt = "e"
    out = format_float(value, fmt)
    if fmt == "e" and len(out) >= 4 and out[-4] == "e" and out[-3] == "-" and out[-2] == "0":
        out = out[:-2] + out[-1]  # e-07 -> e-7, as json.Marshal cleans it up
    return out


_HEX = "0123456789abcdef"
_SIMPLE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def marshal_string(value: str) -> str:
    """A Go json.Marshal string: HTML-safe (`<>&` escaped), U+2028/U+2029 escaped."""
    out = ['"']
    for c in value:
        code = ord(c)
        if c in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[c])
        elif code < 0x20 or c in "<>&":
            out.append("\\u00" + _HEX[code >> 4] + _HEX[code & 0xF])
        elif c in "\u2028\u2029":
            out.append("\\u202" + _HEX[code & 0xF])
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)
