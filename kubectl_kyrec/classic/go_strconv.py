"""Go's strconv.ParseFloat / ParseInt spellings, which Kyverno's operators and to_number rely on."""

from __future__ import annotations

import math
import re

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
