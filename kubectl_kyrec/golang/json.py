"""Go's `encoding/json` encoder: the one kyrec has, shared by the json CEL library and the report hash.

Both must write exactly what Go writes: floats in strconv's shortest form (`'f'`, or `'e'` below 1e-6 and
from 1e21, with a negative one-digit exponent unpadded), strings HTML-safe with U+2028/U+2029 escaped, map
keys sorted by their bytes, `[]byte` as base64. `marshal` walks a value; callers with values of their own
(CEL timestamps, Kyverno's native types) pass `special`. `roundtrip` is `json.Unmarshal(json.Marshal(v))`
into Go's `any`.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.golang.strconv import format_float
from kubectl_kyrec.golang.time import format_rfc3339, in_utc

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class MarshalError(ValueError):
    """A value Go's json.Marshal refuses."""


class UnsupportedValue(MarshalError):
    """NaN or an infinity: `json.Marshal` refuses them."""


class UnsupportedType(MarshalError):
    """A value of a type JSON has no form for (`value` is it), or a map key that is not a string."""

    def __init__(self, message: str, value: Any) -> None:
        super().__init__(message)
        self.value = value


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


def go_decoded(text: str) -> str:
    """What Go's decoder holds for this text: surrogate pairs joined, lone surrogates U+FFFD."""
    if not _SURROGATE_RE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


Special = Callable[[Any], "str | None"]
"""A caller's encoding for values of its own: their JSON text, or None for the default encoding."""


def marshal(value: Any, special: Special | None = None) -> str:
    """`json.Marshal(value)` for values decoded from JSON or YAML (dict, list, str, int, float, bool, None,
    bytes). Integers outside int64 are float64 to Go's decoder, and written as such."""
    out: list[str] = []
    _encode(value, out, special)
    return "".join(out)


def _encode(v: Any, out: list[str], special: Special | None) -> None:
    if special is not None:
        text = special(v)
        if text is not None:
            out.append(text)
            return
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(marshal_string(go_decoded(v)))
    elif isinstance(v, int):
        out.append(str(v) if _INT64_MIN <= v <= _INT64_MAX else marshal_float(float(v)))
    elif isinstance(v, float):
        out.append(marshal_float(v))
    elif isinstance(v, Mapping):
        for key in v:
            if not isinstance(key, str):
                raise UnsupportedType(f"map key {key!r} is not a string", key)
        out.append("{")
        for i, key in enumerate(sorted(v, key=go_decoded)):
            if i:
                out.append(",")
            out.append(marshal_string(go_decoded(key)))
            out.append(":")
            _encode(v[key], out, special)
        out.append("}")
    elif isinstance(v, list | tuple):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _encode(item, out, special)
        out.append("]")
    elif isinstance(v, bytes | bytearray):
        # Go marshals []byte as base64
        out.append('"' + base64.b64encode(bytes(v)).decode("ascii") + '"')
    else:
        raise UnsupportedType(f"json: unsupported type: {type(v).__name__}", v)


def roundtrip(value: Any) -> Any:
    """`json.Unmarshal(json.Marshal(v), &any)`: every number a float64, `[]byte` base64, a time.Time its
    RFC 3339 text (in UTC, as the values Kyverno marshals hold it), map keys strings. UnsupportedValue for
    NaN and the infinities, as json.Marshal refuses them."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise UnsupportedValue(f"json: unsupported value: {format_float(value, 'g')}")
        return value
    if isinstance(value, dict):
        return {str(k): roundtrip(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [roundtrip(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime):
        return format_rfc3339(in_utc(value), nano=True)
    return value

