"""Go's `encoding/json`: the one encoder and decoder kyrec has, shared by the CEL json and yaml libraries,
the classic engine's JMESPath functions and the report hash.

The encoder must write exactly what Go writes: floats in strconv's shortest form (`'f'`, or `'e'` below 1e-6 and
from 1e21, with a negative one-digit exponent unpadded), strings HTML-safe with U+2028/U+2029 escaped, map
keys sorted by their bytes, `[]byte` as base64. `marshal` walks a value; callers with values of their own
(CEL timestamps, Kyverno's native types) pass `special`. `roundtrip` is `json.Unmarshal(json.Marshal(v))`
into Go's `any`. `unmarshal` decodes into Go's `any` (every number a float64) and fails with the Go
scanner's own texts (`invalid character 'x' looking for beginning of value`, `syntax_error`), which end up
in policy report messages. Every failure is a `GoJSONError`. `as_go_decodes` turns a value Python's json
decoded into the one Go's decoder holds (a lone surrogate escape is U+FFFD): every JSON input goes through it.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.strconv import format_float, quote
from kubectl_kyrec.golang.time import format_rfc3339, in_utc

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class GoJSONError(ValueError, EngineError):
    """A decoding or encoding failure worded as Go's encoding/json words it."""


class UnsupportedValue(GoJSONError):
    """NaN or an infinity: `json.Marshal` refuses them."""


class UnsupportedType(GoJSONError):
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


# characters Go escapes that Python's json module writes raw (ensure_ascii=False)
_GO_EXTRA_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                     "\u2029": "\\u2029"}
_GO_EXTRA_RE = re.compile("[<>&\u2028\u2029]")


def marshal(value: Any, special: Special | None = None) -> str:
    """`json.Marshal(value)` for values decoded from JSON or YAML (dict, list, str, int, float, bool, None,
    bytes). Integers outside int64 are float64 to Go's decoder, and written as such."""
    if special is None and not _needs_slow_path(value):
        # fast path: the C encoder agrees with Go on everything but the characters Go also escapes
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        # a lone surrogate changes both the string and the key order Go sees: that takes the slow path
        if not _SURROGATE_RE.search(text):
            return _GO_EXTRA_RE.sub(lambda m: _GO_EXTRA_ESCAPES[m.group()], text)
    out: list[str] = []
    _encode(value, out, special)
    return "".join(out)


def _needs_slow_path(value: Any) -> bool:
    """Python writes floats, ints outside int64 and non-string keys differently; bytes need base64."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if not all(type(k) is str for k in v):
                return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str) or v is None or isinstance(v, bool):
            continue
        elif isinstance(v, int):
            if not _INT64_MIN <= v <= _INT64_MAX:
                return True
        else:
            return True
    return False


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


# ---------------------------------------------------------------------------------------------- decode


def _reject_constant(name: str) -> Any:
    # Python accepts NaN/Infinity; Go's scanner stops at the first letter.
    raise ValueError(name)


def _go_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise GoJSONError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def as_go_decodes(value: Any, text: str, start: int = 0, end: int | None = None) -> Any:
    """`value`, which Python's json decoded from `text[start:end]`, as Go's encoding/json holds it: each lone
    surrogate escape in a string (keys too) is U+FFFD.

    Go's decoder (decode.go, unquoteBytes) reads a \\u escape in U+D800-U+DFFF together with the escape that
    follows it; if the two do not make a valid UTF-16 pair, the first becomes unicode.ReplacementChar and
    the second is read on its own. A valid pair is one character, as in Python. Python keeps an unpaired
    one as a surrogate code point, which no UTF-8 output (nor the CEL engine) can carry, so each is replaced
    here: the same strings as Go's. kubectl, the API server and Kyverno decode JSON with this decoder, so
    every JSON input of load/ (but protojson's Envoy requests, which refuse such an escape) and `unmarshal`
    apply this one function.

    The text is searched first, and the value walked only when it may hold such an escape: a value whose
    text has none, which is every value Kubernetes itself wrote, is returned as it is."""
    # A \uD800-\uDFFF escape (its hex digits in either case) is the only way a string Python's json decodes
    # can hold a surrogate, the text being valid UTF-8, which has none. Searching for how one starts costs
    # about 3 instructions a character, for each of the two forms, which made a --state run (each item read
    # twice) 0.8 % slower (bench/instructions.py); a backslash, which JSON needs for any escape, is found by
    # memchr at a tenth of an instruction a character, and there is none in most Kubernetes objects.
    first = text.find("\\", start, end)
    if first < 0 or (text.find("\\ud", first, end) < 0 and text.find("\\uD", first, end) < 0):
        return value
    return _go_strings(value)


def _go_strings(value: Any) -> Any:
    if isinstance(value, str):
        return go_decoded(value)
    if isinstance(value, list | tuple):
        # of its own type: a caller's object_pairs_hook may make objects lists of (key, value) pairs
        return type(value)(_go_strings(v) for v in value)
    if isinstance(value, dict):
        # two keys that become the same: the later value wins, as Go's map assignment has it
        return {go_decoded(k): _go_strings(v) for k, v in value.items()}
    return value


def loads(text: str) -> Any:
    """`json.loads` of an input document (Python's numbers, as every input keeps them), its strings as Go's
    decoder holds them (`as_go_decodes`); the json module's errors."""
    return as_go_decodes(json.loads(text), text)


def unmarshal(text: str) -> Any:
    """`json.Unmarshal(text, &any)`: objects, arrays, strings, bools, null and float64 numbers."""
    try:
        value = json.loads(text, parse_int=_go_float, parse_float=_go_float, parse_constant=_reject_constant)
    except GoJSONError:
        raise
    except (ValueError, RecursionError):
        raise GoJSONError(syntax_error(text) or "unexpected end of JSON input") from None
    return as_go_decodes(value, text)


def _quote_char(c: str) -> str:
    # Go's scanner quoteChar: strconv.Quote of the byte, as a rune, inside single quotes (a byte of a
    # multi-byte character is its first UTF-8 byte read as U+0080..U+00FF).
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    return "'" + quote(chr(c.encode("utf-8", "surrogatepass")[0]))[1:-1] + "'"


_WS = " \t\r\n"


def syntax_error(text: str) -> str | None:
    """The message Go's JSON scanner gives for `text`, or None when it is valid JSON."""
    pos = 0
    n = len(text)

    def err(c: str, context: str) -> str:
        return f"invalid character {_quote_char(c)} {context}"

    def skip(i: int) -> int:
        while i < n and text[i] in _WS:
            i += 1
        return i

    def value(i: int) -> int | str:
        i = skip(i)
        if i >= n:
            return "unexpected end of JSON input"
        c = text[i]
        if c == "{":
            return obj(i + 1)
        if c == "[":
            return arr(i + 1)
        if c == '"':
            return string(i + 1)
        if c == "-" or c.isdigit() and c.isascii():
            return number(i)
        for word in ("true", "false", "null"):
            if c == word[0]:
                return literal(i, word)
        return err(c, "looking for beginning of value")

    def literal(i: int, word: str) -> int | str:
        for k, expected in enumerate(word):
            if i + k >= n:
                return "unexpected end of JSON input"
            if text[i + k] != expected:
                return err(text[i + k], f"in literal {word} (expecting {_quote_char(expected)})")
        return i + len(word)

    def number(i: int) -> int | str:
        if text[i] == "-":
            i += 1
            if i >= n:
                return "unexpected end of JSON input"
            if not ("0" <= text[i] <= "9"):
                return err(text[i], "in numeric literal")
        if text[i] == "0":
            i += 1
        else:
            while i < n and "0" <= text[i] <= "9":
                i += 1
        if i < n and text[i] == ".":
            i += 1
            if i >= n:
                return "unexpected end of JSON input"
            if not ("0" <= text[i] <= "9"):
                return err(text[i], "after decimal point in numeric literal")
            while i < n and "0" <= text[i] <= "9":
                i += 1
        if i < n and text[i] in "eE":
            i += 1
            if i < n and text[i] in "+-":
                i += 1
            if i >= n:
                return "unexpected end of JSON input"
            if not ("0" <= text[i] <= "9"):
                return err(text[i], "in exponent of numeric literal")
            while i < n and "0" <= text[i] <= "9":
                i += 1
        return i

    def string(i: int) -> int | str:
        while i < n:
            c = text[i]
            if c == '"':
                return i + 1
            if c == "\\":
                i += 1
                if i >= n:
                    return "unexpected end of JSON input"
                e = text[i]
                if e == "u":
                    for k in range(1, 5):
                        if i + k >= n:
                            return "unexpected end of JSON input"
                        if text[i + k] not in "0123456789abcdefABCDEF":
                            return err(text[i + k], "in \\u hexadecimal character escape")
                    i += 5
                    continue
                if e not in '"\\/bfnrt':
                    return err(e, "in string escape code")
                i += 1
                continue
            if ord(c) < 0x20:
                return err(c, "in string literal")
            i += 1
        return "unexpected end of JSON input"

    def obj(i: int) -> int | str:
        i = skip(i)
        if i < n and text[i] == "}":
            return i + 1
        while True:
            i = skip(i)
            if i >= n:
                return "unexpected end of JSON input"
            if text[i] != '"':
                return err(text[i], "looking for beginning of object key string")
            r = string(i + 1)
            if isinstance(r, str):
                return r
            i = skip(r)
            if i >= n:
                return "unexpected end of JSON input"
            if text[i] != ":":
                return err(text[i], "after object key")
            r = value(i + 1)
            if isinstance(r, str):
                return r
            i = skip(r)
            if i >= n:
                return "unexpected end of JSON input"
            if text[i] == "}":
                return i + 1
            if text[i] != ",":
                return err(text[i], "after object key:value pair")
            i += 1

    def arr(i: int) -> int | str:
        i = skip(i)
        if i < n and text[i] == "]":
            return i + 1
        while True:
            r = value(i)
            if isinstance(r, str):
                return r
            i = skip(r)
            if i >= n:
                return "unexpected end of JSON input"
            if text[i] == "]":
                return i + 1
            if text[i] != ",":
                return err(text[i], "after array element")
            i += 1

    try:
        r = value(pos)
    except RecursionError:
        return "exceeded max depth"
    if isinstance(r, str):
        return r
    end = skip(r)
    if end < n:
        return err(text[end], "after top-level value")
    return None
