"""Go's `strconv`: FormatFloat, Quote, ParseFloat and ParseInt, byte for byte.

Kyverno and Kubernetes print numbers and quote strings with these (`%v` of a float64, `%q` of a value, a
float map key in sigs.k8s.io/yaml, json.Marshal's floats), and those texts reach messages and reports.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal

# ---------------------------------------------------------------------------------------------- FormatFloat


def _float32(value: float) -> float:
    """Go's float32(value): rounded to nearest, out of range becoming an infinity."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _digits(value: float, bit_size: int) -> tuple[str, int]:
    """Shortest digits of |value| that read back to the same float64 (or float32), without leading or
    trailing zeros, and Go's decimal point position (`0.0123` -> ("123", -1))."""
    text = repr(abs(value))
    if bit_size == 32:
        for precision in range(9):  # nine significant digits always round-trip a float32
            candidate = f"{abs(value):.{precision}e}"
            if _float32(float(candidate)) == value:
                text = candidate
                break
    _, digit_tuple, exponent = Decimal(text).as_tuple()
    digits = "".join(str(d) for d in digit_tuple).lstrip("0")
    dp = len(digits) + int(exponent)
    return digits.rstrip("0"), dp


def format_float(value: float, fmt: str, bit_size: int = 64) -> str:
    """strconv.FormatFloat(value, fmt, -1, bit_size) for fmt in 'e', 'E', 'f', 'g', 'G': the shortest text
    that reads back to the same float64 (bit_size 64) or float32 (bit_size 32, value rounded first)."""
    if bit_size == 32:
        value = _float32(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if fmt in "EG":
        return format_float(value, fmt.lower(), bit_size).upper()
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + ("0e+00" if fmt == "e" else "0")
    digits, dp = _digits(value, bit_size)
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


# ---------------------------------------------------------------------------------------------- Quote

_SHORT_ESCAPES = {
    0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v",
}


def quote(value: str | bytes) -> str:
    """strconv.Quote, which `%q` prints: bytes that are not UTF-8 become `\\xNN` as Go prints them."""
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
    out = ['"']
    i = 0
    while i < len(data):
        rune, width = _decode_rune(data, i)
        if rune is None:
            out.append(f"\\x{data[i]:02x}")
        else:
            out.append(_quote_rune(rune))
        i += width
    out.append('"')
    return "".join(out)


def _decode_rune(data: bytes, i: int) -> tuple[int | None, int]:
    # Go decodes one rune at a time and treats each undecodable byte on its own.
    for width in (1, 2, 3, 4):
        chunk = data[i:i + width]
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) == 1:
            return ord(text), width
    return None, 1


def _quote_rune(rune: int) -> str:
    if rune in (0x22, 0x5C):
        return "\\" + chr(rune)
    if rune == 0x20 or (rune > 0x20 and rune != 0x7F and chr(rune).isprintable()):
        return chr(rune)
    if rune in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[rune]
    if rune < 0x20 or rune == 0x7F:
        return f"\\x{rune:02x}"
    if rune < 0x10000:
        return f"\\u{rune:04x}"
    return f"\\U{rune:08x}"


# ---------------------------------------------------------------------------------------------- Parse

_DEC_FLOAT = re.compile(r"[+-]?(?:[0-9](?:_?[0-9])*\.?(?:[0-9](?:_?[0-9])*)?|\.[0-9](?:_?[0-9])*)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf, "+infinity": math.inf,
            "-infinity": -math.inf, "nan": math.nan, "+nan": math.nan, "-nan": math.nan}


def parse_float(text: str) -> float:
    """strconv.ParseFloat(text, 64); ValueError when Go would return an error (syntax or range)."""
    lower = text.lower()
    if lower in _SPECIAL:
        return _SPECIAL[lower]
    if lower.lstrip("+-").startswith("0x"):
        try:
            return float.fromhex(text)
        except (ValueError, OverflowError):
            raise ValueError(text) from None
    # Go accepts underscores only with a base prefix, which decimal floats do not have
    if "_" in text or not _DEC_FLOAT.fullmatch(text):
        raise ValueError(text)
    value = float(text)
    if math.isinf(value):
        raise ValueError(text)  # out of range
    return value


def parse_int(text: str, bits: int = 64) -> int:
    """strconv.ParseInt(text, 10, bits)."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(text)
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(text)
    return value
