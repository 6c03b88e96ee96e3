"""YAML scalars resolved the way kubectl and Kyverno read them.

Both read manifests with sigs.k8s.io/yaml: go-yaml v2 (YAML 1.1) decodes the document, the result is
marshalled to JSON and Kubernetes decodes that JSON keeping integers as int64. That chain fixes what a
plain scalar means, and this module reproduces it rather than any Python YAML library's defaults:

- `y n yes no on off true false` (three spellings each) are booleans; `~ null Null NULL` and empty are null;
- integers follow Go's `ParseInt(s, 0, 64)` after removing `_`: `0x1F`, `0o17`, `017` (octal), `0b101`;
  `1:30` (YAML 1.1 sexagesimal) stays a string;
- floats need go-yaml's pattern (`1.5`, `.5`, `1e3`, `1.`); a float with an integral value becomes an int
  (`1.0` -> 1), because the JSON step writes it as `1`; integers beyond int64 become floats, as Kubernetes'
  JSON decoder makes them;
- timestamps stay the strings they were written as (go-yaml keeps them as strings when decoding into
  interface values).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from kubectl_kyrec.golang.strconv import format_float

STR_TAG = "tag:yaml.org,2002:str"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_TAG = "tag:yaml.org,2002:bool"
NULL_TAG = "tag:yaml.org,2002:null"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
BINARY_TAG = "tag:yaml.org,2002:binary"
MERGE_TAG = "tag:yaml.org,2002:merge"

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# go-yaml v2 resolve.go: the values looked up verbatim before any number parsing.
_WORDS: dict[str, Any] = {}
for _spellings, _value in (
    (("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    (("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    (("", "~", "null", "Null", "NULL"), None),
    ((".nan", ".NaN", ".NAN"), math.nan),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    (("-.inf", "-.Inf", "-.INF"), -math.inf),
):
    for _s in _spellings:
        _WORDS[_s] = _value

# Go's ParseInt with base 0: optional sign, then 0x / 0b / 0o prefixes, a leading 0 means octal.
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)\Z")
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")
_NUMBER_START = frozenset("0123456789+-")

_MISSING = object()


def _go_int(text: str) -> int | None:
    m = _GO_INT.match(text)
    if m is None:
        return None
    sign, digits = m.groups()
    try:
        if len(digits) > 1 and digits[0] == "0":
            base = {"x": 16, "X": 16, "b": 2, "B": 2, "o": 8, "O": 8}.get(digits[1])
            value = int(digits[2:], base) if base else int(digits[1:], 8)
        else:
            value = int(digits)
    except ValueError:
        # more digits than Python converts (sys.get_int_max_str_digits): far beyond float64, where
        # go-yaml's ParseFloat overflows too and keeps the text as a string (the float path says so)
        return None
    return -value if sign == "-" else value


def resolve_plain(text: str) -> Any:
    """The value of an untagged plain scalar, before the JSON step (floats stay floats here)."""
    value = _WORDS.get(text, _MISSING)
    if value is not _MISSING:
        return value
    first = text[0]
    if first in _NUMBER_START:
        plain = text.replace("_", "") if "_" in text else text
        number = _go_int(plain)
        if number is not None:
            # uint64 and big ints pass through JSON as numbers Kubernetes can only hold as float64.
            if _INT64_MIN <= number <= _INT64_MAX:
                return number
            try:
                return float(number)
            except OverflowError:   # beyond float64: go-yaml's ParseFloat fails and keeps the text
                return text
        if _GO_FLOAT.match(plain):
            f = float(plain)
            # Go's ParseFloat fails on overflow, and go-yaml then keeps the text as a string.
            return f if not math.isinf(f) else text
        return text
    if first == "." and _DOT_FLOAT.match(text):
        f = float(text)
        return f if not math.isinf(f) else text
    return text


def json_number(value: float) -> int | float:
    """A float as it comes back from Kubernetes' JSON: integral values within int64 become ints.

    Raises ValueError for NaN and infinities, which encoding/json refuses to write.
    """
    if not math.isfinite(value):
        raise ValueError(f"{value!r} cannot be represented in JSON")
    if value.is_integer() and _INT64_MIN <= value <= _INT64_MAX:
        return int(value)
    return value


def resolve_tagged(tag: str, text: str) -> Any:
    """A scalar with an explicit tag (`!!int "3"`); raises ValueError when the text does not fit it."""
    if tag == STR_TAG:
        return text
    if tag == BINARY_TAG:
        try:
            return base64.b64decode(text.encode("ascii"), validate=False).decode("utf-8", "replace")
        except (binascii.Error, UnicodeEncodeError) as err:
            raise ValueError(f"!!binary value is not valid base64: {err}") from None
    if tag == TIMESTAMP_TAG:
        return text
    if tag in (INT_TAG, FLOAT_TAG, BOOL_TAG, NULL_TAG):
        value = resolve_plain(text) if text else None
        if tag == INT_TAG and type(value) is int:
            return value
        if tag == FLOAT_TAG and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if tag == BOOL_TAG and type(value) is bool:
            return value
        if tag == NULL_TAG and value is None:
            return None
        raise ValueError(f"cannot decode `{text}` as a !!{tag.rsplit(':', 1)[1]}")
    # go-yaml keeps scalars with tags it does not know (`!Ref x`) as their text.
    return text


_YAML_NON_FINITE = {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}


def key_string(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml turns it into a JSON object key."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        # strconv.FormatFloat(key, 'g', -1, 32), the non-finite ones spelled as YAML spells them
        text = format_float(key, "g", 32)
        return _YAML_NON_FINITE.get(text, text)
    raise ValueError("a null mapping key cannot be converted to JSON")

