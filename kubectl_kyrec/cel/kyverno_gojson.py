"""Go `encoding/json` behaviour, as Kyverno's libraries see it.

Kyverno decodes JSON into Go `any` (every number becomes a float64) and encodes with `json.Marshal`
(map keys sorted, no spaces, `<>&` escaped, floats in Go's shortest form). Its error texts are the Go
scanner's (`invalid character 'x' looking for beginning of value`), and those texts end up in policy
report messages, so they are reproduced here rather than Python's.
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError
from kubectl_kyrec.golang import json as gojson
from kubectl_kyrec.golang.json import UnsupportedType, UnsupportedValue, marshal_string
from kubectl_kyrec.golang.json import marshal_float as _marshal_float
from kubectl_kyrec.golang.strconv import quote
from kubectl_kyrec.golang.time import format_rfc3339, in_utc


class GoJSONError(CelFunctionError):
    """A decoding or encoding failure worded as Go's encoding/json words it."""


# ---------------------------------------------------------------------------------------------- decode


def _reject_constant(name: str) -> Any:
    # Python accepts NaN/Infinity; Go's scanner stops at the first letter.
    raise ValueError(name)


def _go_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise GoJSONError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def _strip_surrogates(value: Any) -> Any:
    # Go decodes a lone \ud800 escape to U+FFFD; Python keeps the surrogate, which no engine can carry.
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, list):
        return [_strip_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_strip_surrogates(k): _strip_surrogates(v) for k, v in value.items()}
    return value


def unmarshal(text: str) -> Any:
    """`json.Unmarshal(text, &any)`: objects, arrays, strings, bools, null and float64 numbers."""
    try:
        value = json.loads(text, parse_int=_go_float, parse_float=_go_float, parse_constant=_reject_constant)
    except GoJSONError:
        raise
    except (ValueError, RecursionError):
        raise GoJSONError(syntax_error(text) or "unexpected end of JSON input") from None
    if "\\u" in text and any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)):
        return _strip_surrogates(value)
    return value


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


def roundtrip(value: Any) -> Any:
    """`json.Unmarshal(json.Marshal(v))`: what Kyverno's JSON round trips make of loaded data."""
    try:
        return gojson.roundtrip(value)
    except UnsupportedValue as exc:
        raise GoJSONError(str(exc)) from None


# ---------------------------------------------------------------------------------------------- encode


def marshal_float(value: float) -> str:
    """encoding/json's float64 encoding; NaN and infinities fail as Go's json.Marshal fails."""
    try:
        return _marshal_float(value)
    except UnsupportedValue as exc:
        raise GoJSONError(str(exc)) from None


def cel_type_name(value: Any) -> str:
    """The CEL type name cel-go prints in conversion errors."""
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    return type(value).__name__


def marshal(value: Any) -> str:
    """`json.Marshal` of a CEL value converted the way Kyverno's json library converts it (gojson's
    encoder, with CEL's own values: timestamps, durations, Kyverno's native types)."""
    try:
        return gojson.marshal(value, _cel_special)
    except UnsupportedValue as exc:
        raise GoJSONError(str(exc)) from None
    except UnsupportedType as exc:
        raise GoJSONError(f"json: unsupported type: {cel_type_name(exc.value)}") from None


def _cel_special(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)           # a CEL uint is a Go uint64: written whole, never as a float
    if isinstance(value, datetime.datetime):
        return '"' + format_rfc3339(in_utc(value), nano=True) + '"'
    if isinstance(value, datetime.timedelta):
        # a CEL duration is a Go time.Duration: an integer count of nanoseconds
        return str((value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1000)
    if isinstance(value, dict):
        special = _tagged_json(value)
        if special is not None:
            return special
        for key in value:
            if not isinstance(key, str):
                raise GoJSONError("json: failed to convert CEL map to native map: "
                                  f"type conversion error from {cel_type_name(key)} to 'string'")
    return None


def _tagged_json(value: dict[Any, Any]) -> str | None:
    # Kyverno's native values marshal through their Go types, not as maps.
    tag = value.get("@type")
    if tag == "kyverno.image":
        # name.Tag/name.Digest embed name.Repository, whose MarshalJSON is promoted: "registry/repository"
        return marshal_string(f"{value['registry']}/{value['repository']}")
    if tag == "schema.GroupVersionResource":
        return ('{"Group":' + marshal_string(value["group"]) + ',"Version":'
                + marshal_string(value["version"]) + ',"Resource":' + marshal_string(value["resource"]) + "}")
    return None
