"""JSON input: one value, or several concatenated (`kubectl get -o json` per object), with the json module.

Numbers follow what reaches Kubernetes: kubectl re-encodes the object, so `1.0` arrives as `1` (an int),
and NaN or Infinity, which Go's encoding/json rejects, are errors here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.yaml_scalars import json_number
from kubectl_kyrec.model import Source

_SPACE = re.compile(r"[ \t\n\r]*")


class _BadNumber(ValueError):
    pass


def _parse_float(text: str) -> int | float:
    try:
        return json_number(float(text))
    except ValueError:
        raise _BadNumber(f"number {text} is out of range") from None


def _parse_constant(text: str) -> Any:
    raise _BadNumber(f"{text} is not valid JSON")


_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_constant=_parse_constant)


def looks_like_json(text: str) -> bool:
    """True when the first non-blank character opens a JSON object or array (kubectl's own test)."""
    start = _SPACE.match(text.lstrip("\ufeff"))
    end = start.end() if start else 0
    return end < len(text) and text[end] in "{["


def iter_json_documents(text: str, file: str) -> Iterator[tuple[Any, int]]:
    """(value, line) for each top-level value; the line is that of an object's first key."""
    text = text.lstrip("\ufeff")
    counted_to, line = 0, 1   # newlines are counted incrementally so many values stay linear

    def line_at(pos: int) -> int:
        nonlocal counted_to, line
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        return line

    m = _SPACE.match(text, 0)
    pos = m.end() if m else 0
    while pos < len(text):
        try:
            with gc_paused():
                value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise InputError(f"invalid JSON: {err.msg} (column {err.colno})",
                             Source(file, err.lineno)) from None
        except _BadNumber as err:
            raise InputError(f"invalid JSON: {err}", Source(file, line_at(pos))) from None
        first = pos
        if text[pos] == "{":
            inner = _SPACE.match(text, pos + 1)
            first = inner.end() if inner else pos
        yield value, line_at(first)
        m = _SPACE.match(text, end)
        pos = m.end() if m else end
