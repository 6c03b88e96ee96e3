"""JSON input: one value, or several concatenated (`kubectl get -o json` per object), with the json module.

Numbers follow what reaches Kubernetes: kubectl re-encodes the object, so `1.0` arrives as `1` (an int),
and NaN or Infinity, which Go's encoding/json rejects, are errors here too. Strings are Go's too: a lone
surrogate escape (`"\\ud800"`) is U+FFFD (golang.json.as_go_decodes, which every value read here goes
through).
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, BinaryIO

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.golang.json import as_go_decodes
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


def _decoder(share: bool = True, *, whole: bool = False) -> json.JSONDecoder:
    """A decoder for one input whose objects share their keys and short string values (`share`: else
    each value decoded as the C scanner makes it, which is two thirds of the time: for values that are
    looked at and dropped).

    The C scanner shares the keys within one call only, and a List is decoded item by item (to know where
    each starts): every item would hold its own copy of "apiVersion", "metadata", "name"... Measured on
    bench/coverage.py's 107 MB state (109,000 objects): 760 MiB resident after loading, 413 MiB with
    keys and short strings shared, in about the same time. Strings are immutable, so sharing is unseen.

    `whole`: for a text decoded by one `raw_decode`, whose single pass of the C scanner shares the keys itself
    (its memo lasts one call): only the short values are left to share, in place, which is less than half the
    hook's time (an API server's LIST page of 500 Namespaces: 12 ms with the keys too, 5 ms, 0.9 ms without a
    hook; the same memory as with the keys, a seventh less than without a hook).
    """
    if not share:
        return json.JSONDecoder(parse_float=_parse_float, parse_constant=_parse_constant)
    shared: dict[str, str] = {}
    one = shared.setdefault

    def hook(obj: dict[str, Any]) -> dict[str, Any]:
        return {one(k, k): (one(v, v) if type(v) is str and len(v) <= _SHARED_MAX else v)
                for k, v in obj.items()}

    def values_hook(obj: dict[str, Any]) -> dict[str, Any]:
        for k, v in obj.items():
            if type(v) is str and len(v) <= _SHARED_MAX:
                obj[k] = one(v, v)      # a key's value replaced: the dict does not change size while iterated
        return obj

    return json.JSONDecoder(parse_float=_parse_float, parse_constant=_parse_constant,
                            object_hook=values_hook if whole else hook)


def looks_like_json(text: str) -> bool:
    """True when the first non-blank character opens a JSON object or array (kubectl's own test)."""
    start = _SPACE.match(text.lstrip("\ufeff"))
    end = start.end() if start else 0
    return end < len(text) and text[end] in "{["


def iter_json_documents(text: str, file: str, *, lines: bool = True) -> Iterator[tuple[Any, int]]:
    """(value, line) for each top-level value; the line is that of an object's first key (`lines`:
    iter_json_documents_with_items')."""
    for value, line, _ in iter_json_documents_with_items(text, file, lines=lines):
        yield value, line


def iter_json_documents_with_items(text: str, file: str, *, lines: bool = True
                                   ) -> Iterator[tuple[Any, int, list[int] | None]]:
    """(value, line, item lines) for each top-level value: when the value is an object with an `items`
    array (a List, as `kubectl get -o json` writes it), the line of each item's first key, else None.

    The lines come from the positions where the C decoder starts each item: the newlines before them are
    counted once, in order, so a List of 10,000 objects costs one pass over the text, not one per item.
    `lines=False`: the same values, each decoded whole by the C decoder, with line 0 and no item lines, for
    text no location is ever given in (an API server's answer: a LIST of 3,000 Namespaces was walked item by
    item to know where each starts, and each written object's answer key by key, bench/apply_prewrite.py);
    an error is still at its line.
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
    decoder = _decoder(whole=not lines)
    while pos < len(text):
        try:
            with gc_paused():
                if lines:
                    value, end, starts = _decode(text, pos, decoder)
                else:
                    (value, end), starts = decoder.raw_decode(text, pos), None
                value = as_go_decodes(value, text, pos, end)
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
        if lines:
            first = line_at(_first_key(text, pos))
            yield value, first, None if starts is None else [line_at(_first_key(text, p)) for p in starts]
        else:
            yield value, 0, None
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


class NotAList(ValueError):
    """A JSON text `iter_list_parts` does not read piece by piece: not one top-level object with an `items`
    array, or not valid JSON (`iter_json_documents_with_items`, reading it whole, says what is wrong)."""


# a stream's text is decoded this many bytes at a time; an item longer than what is held is read further
_PIECE = 1 << 20


def iter_list_parts(stream: BinaryIO, *, share: bool = True) -> Iterator[tuple[str, Any, int]]:
    """The top-level object of a JSON stream (`kubectl get -o json`'s List) as it is read, a piece at a time,
    never held whole: ("item", value, line) for each element of its `items` array, at the line of its first key,
    and ("key", (name, value), line) for each other member, at the line of the object's first key (the lines
    `iter_json_documents_with_items` gives them).

    Raises NotAList (at any point: the caller may have used what came before) for anything else: another
    top-level value, text after the object, `items` twice or not an array, invalid JSON or UTF-8.

    `share`: the values of the objects share their keys and short strings (`_decoder`), for a caller that
    keeps them; a pass that looks at each and keeps few of them (state.peek_state) reads faster without."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    scan = _decoder(share).scan_once  # type: ignore[attr-defined]
    text, ended = "", False
    counted_to, line = 0, 1

    def more() -> bool:
        """The next piece read onto `text`; False at the end of the stream."""
        nonlocal text, ended
        if ended:
            return False
        data = stream.read(_PIECE)
        try:
            text += decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise NotAList("not UTF-8") from None
        ended = not data
        return True

    def char(pos: int) -> tuple[str, int]:
        """The first character at or after `pos` that is no white space, and where it is."""
        while True:
            pos = _skip(text, pos)
            if pos < len(text):
                return text[pos], pos
            if not more():
                raise NotAList("the text ends early")

    def parsed(read: Any, pos: int) -> tuple[Any, int]:
        """`read(text, pos)`, read further while the held text ends inside the value (or right after it: a
        number may go on)."""
        while True:
            try:
                with gc_paused():
                    value, end = read(text, pos)
                if end < len(text) or ended:
                    return as_go_decodes(value, text, pos, end), end
            except (StopIteration, ValueError) as err:
                if isinstance(err, _BadNumber) or ended:
                    raise NotAList("invalid JSON") from None
            more()

    def line_at(pos: int) -> int:
        nonlocal counted_to, line
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        return line

    def drop(pos: int) -> int:
        """`pos` in the held text once what comes before it is forgotten, when that is more than a piece (so
        that the text held stays about two pieces long, and is copied once per piece)."""
        nonlocal text, counted_to, scan
        if pos < _PIECE:
            return pos
        line_at(pos)
        text, counted_to = text[pos:], 0
        # a decoder per piece: one for the whole stream would keep every short string it met (names, uids)
        scan = _decoder(share).scan_once  # type: ignore[attr-defined]
        return 0

    def key_at(pos: int) -> tuple[str, int]:
        return parsed(lambda t, p: scanstring(t, p + 1, True), pos)  # type: ignore[no-any-return]

    more()
    c, i = char(0)
    if c != "{":
        raise NotAList("not an object")
    c, i = char(i + 1)
    top = line_at(i)
    seen_items = False
    while c != "}":
        if c != '"':
            raise NotAList("expected a key")
        key, i = key_at(i)
        c, i = char(i)
        if c != ":":
            raise NotAList("expected ':'")
        c, i = char(i + 1)
        if key != "items":
            value, i = parsed(scan, i)
            yield "key", (key, value), top
        elif seen_items or c != "[":
            raise NotAList("items is not one array")
        else:
            seen_items = True
            c, i = char(i + 1)
            while c != "]":
                i = drop(i)
                value, end = parsed(scan, i)
                yield "item", value, line_at(_first_key(text, i))
                c, i = char(end)
                if c == ",":
                    c, i = char(i + 1)
                    if c == "]":
                        raise NotAList("expected a value")
                elif c != "]":
                    raise NotAList("expected ',' or ']'")
            i += 1
        c, i = char(i)
        if c == ",":
            c, i = char(i + 1)
            if c == "}":
                raise NotAList("expected a key")
        elif c != "}":
            raise NotAList("expected ',' or '}'")
    i += 1
    while True:
        i = _skip(text, i)
        if i < len(text):
            raise NotAList("more than one top-level value")
        if not more():
            return
