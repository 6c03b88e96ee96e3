"""JSON input: one value, or several concatenated (`kubectl get -o json` per object), with the json module.

Numbers follow what reaches Kubernetes: kubectl re-encodes the object, so `1.0` arrives as `1` (an int),
and NaN or Infinity, which Go's encoding/json rejects, are errors here too.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
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


# strings up to this length are shared between the objects of one input (keys, kinds, namespaces, statuses)
_SHARED_MAX = 64


def _decoder() -> json.JSONDecoder:
    """A decoder for one input whose objects share their keys and short string values.

    The C scanner shares the keys within one call only, and a List is decoded item by item (to know where
    each starts): every item would hold its own copy of "apiVersion", "metadata", "name"... Measured on
    bench/coverage.py's 107 MB state (109,000 objects): 760 MiB resident after loading, 413 MiB with
    keys and short strings shared, in about the same time. Strings are immutable, so sharing is unseen.
    """
    shared: dict[str, str] = {}
    share = shared.setdefault

    def hook(obj: dict[str, Any]) -> dict[str, Any]:
        return {share(k, k): (share(v, v) if type(v) is str and len(v) <= _SHARED_MAX else v)
                for k, v in obj.items()}

    return json.JSONDecoder(parse_float=_parse_float, parse_constant=_parse_constant, object_hook=hook)


def looks_like_json(text: str) -> bool:
    """True when the first non-blank character opens a JSON object or array (kubectl's own test)."""
    start = _SPACE.match(text.lstrip("\ufeff"))
    end = start.end() if start else 0
    return end < len(text) and text[end] in "{["


def iter_json_documents(text: str, file: str) -> Iterator[tuple[Any, int]]:
    """(value, line) for each top-level value; the line is that of an object's first key."""
    for value, line, _ in iter_json_documents_with_items(text, file):
        yield value, line


def iter_json_documents_with_items(text: str, file: str) -> Iterator[tuple[Any, int, list[int] | None]]:
    """(value, line, item lines) for each top-level value: when the value is an object with an `items`
    array (a List, as `kubectl get -o json` writes it), the line of each item's first key, else None.

    The lines come from the positions where the C decoder starts each item: the newlines before them are
    counted once, in order, so a List of 10,000 objects costs one pass over the text, not one per item.
    """
    text = text.lstrip("\ufeff")
    counted_to, line = 0, 1   # newlines are counted incrementally so many values stay linear

    def line_at(pos: int) -> int:
        nonlocal counted_to, line
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        return line

    m = _SPACE.match(text, 0)
    pos = m.end() if m else 0
    decoder = _decoder()
    while pos < len(text):
        try:
            with gc_paused():
                value, end, starts = _decode(text, pos, decoder)
        except json.JSONDecodeError as err:
            raise InputError(f"invalid JSON: {err.msg} (column {err.colno})",
                             Source(file, err.lineno)) from None
        except _BadNumber as err:
            raise InputError(f"invalid JSON: {err}", Source(file, line_at(pos))) from None
        except ValueError:
            # the int parser's digit limit (a number of thousands of digits, which Kubernetes' decoder
            # refuses as out of range too); a parse_int hook would slow every number of a large state
            raise InputError(f"invalid JSON: a number of more than {sys.get_int_max_str_digits()} digits is out of "
                             "range", Source(file, line_at(pos))) from None
        except RecursionError:
            raise InputError("invalid JSON: nested too deeply", Source(file, line_at(pos))) from None
        first = line_at(_first_key(text, pos))
        yield value, first, None if starts is None else [line_at(_first_key(text, p)) for p in starts]
        m = _SPACE.match(text, end)
        pos = m.end() if m else end


def _first_key(text: str, pos: int) -> int:
    """Where an object's first key starts (an object's line is that of its first key); other values: pos."""
    if text[pos] == "{":
        inner = _SPACE.match(text, pos + 1)
        return inner.end() if inner else pos
    return pos


def _decode(text: str, pos: int, decoder: json.JSONDecoder) -> tuple[Any, int, list[int] | None]:
    """The value at `pos`, where it ends, and the start of each element of its `items` array (or None).

    The top-level object is walked key by key with the C scanner decoding each value, so the items'
    positions are known; anything unexpected is handed to `raw_decode`, whose errors are the json module's.
    """
    if text[pos] == "{":
        try:
            return _decode_object(text, pos, decoder)
        except (StopIteration, IndexError, ValueError) as exc:
            if isinstance(exc, _BadNumber):
                raise
    value, end = decoder.raw_decode(text, pos)
    return value, end, None


def _skip(text: str, pos: int) -> int:
    m = _SPACE.match(text, pos)
    return m.end() if m else pos


def _decode_object(text: str, pos: int, decoder: json.JSONDecoder
                   ) -> tuple[dict[str, Any], int, list[int] | None]:
    scan = decoder.scan_once  # type: ignore[attr-defined]
    obj: dict[str, Any] = {}
    starts: list[int] | None = None
    i = _skip(text, pos + 1)
    if text[i] == "}":
        return obj, i + 1, None
    while True:
        if text[i] != '"':
            raise ValueError("expected a key")
        key, i = scanstring(text, i + 1, True)
        i = _skip(text, i)
        if text[i] != ":":
            raise ValueError("expected ':'")
        i = _skip(text, i + 1)
        if key == "items" and text[i] == "[":
            value, i, starts = _decode_array(text, i, scan)
        else:
            value, i = scan(text, i)
        obj[key] = value   # a repeated key: the last one wins, as in json.loads
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i] == "}":
            return obj, i + 1, starts
        raise ValueError("expected ',' or '}'")


def _decode_array(text: str, pos: int, scan: Any) -> tuple[list[Any], int, list[int]]:
    items: list[Any] = []
    starts: list[int] = []
    i = _skip(text, pos + 1)
    if text[i] == "]":
        return items, i + 1, starts
    while True:
        starts.append(i)
        value, i = scan(text, i)
        items.append(value)
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i] == "]":
            return items, i + 1, starts
        raise ValueError("expected ',' or ']'")
