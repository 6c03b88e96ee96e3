"""Block-style YAML for JSON-shaped data (dicts, lists, strings, numbers, booleans, null), written fast.

PyYAML's dumper represents every scalar through Python-level node objects: even with libyaml's emitter
it wrote about 1,000 eval results a second, and an `-o yaml` of 240,000 results took minutes. kyrec's
documents are JSON-shaped, so this emitter writes them directly, in PyYAML's layout (block mappings,
sequences not indented under their key, `{}`/`[]` for empty ones, multi-line strings as literal blocks so
diffs stay readable), and quotes every string that a YAML 1.1 reader (kubectl's, PyYAML's) could take for
anything else. Plain scalars are never folded: long lines stay one line. `yaml.safe_load` of the output
gives back the data exactly; tests/render/test_yaml_emit.py holds it to that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from itertools import chain
from typing import Any

from kubectl_kyrec.render.items import Items
from kubectl_kyrec.render.joined import Joined

# A string written plain must start with a letter, `_` or `/` (no indicator, no number, no date, no `.inf`),
# hold no `:` or `#` (no key, no comment), and end on a non-space.
_PLAIN = re.compile(r"[A-Za-z_/](?:[A-Za-z0-9_./,()@+=;<>~$^ -]*[A-Za-z0-9_./,()@+=;<>~$^-])?\Z")
# YAML 1.1 words a plain scalar must not be (booleans and null, as PyYAML's and go-yaml's resolvers read them)
_RESERVED = frozenset(("y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
                       "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL"))
# characters YAML cannot hold as they are (non-printable, or line breaks in YAML 1.1): escaped in quotes
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]")
_BLOCK_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff\r\t]| \n| \\Z")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _quoted(text: str) -> str:
    # JSON's string escapes (\" \\ \n \t \uXXXX) are YAML double-quoted escapes too
    return _UNPRINTABLE.sub(_escape, json.dumps(text, ensure_ascii=False)[1:-1]).join('""')


# Documents repeat the same strings (keys, policy names, kinds, messages): each is examined once. The cache
# is emptied when it grows large, so a document of unique strings costs no more than without it.
_SCALARS: dict[str, str] = {}
_SCALARS_MAX = 100_000


def scalar(text: str) -> str:
    """A string as a one-line YAML scalar: plain when nothing could misread it, else quoted."""
    found = _SCALARS.get(text)
    if found is None:
        if len(_SCALARS) >= _SCALARS_MAX:
            _SCALARS.clear()
        found = _SCALARS[text] = _scalar(text)
    return found


def _scalar(text: str) -> str:
    if _PLAIN.match(text) and text not in _RESERVED:
        return text
    if "\n" in text or _UNPRINTABLE.search(text):
        return _quoted(text)
    return "'" + text.replace("'", "''") + "'"   # as PyYAML quotes: no escapes to read


def _literal(text: str, indent: str) -> str | None:
    """A multi-line string as a literal block (`|`), or None when a block could not hold it exactly."""
    if _BLOCK_UNSAFE.search(text) or text.startswith((" ", "\n")):
        return None
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    inner = indent + "  "
    lines = body.split("\n") + [""] * (trailing - 1 if trailing > 1 else 0)
    return f"|{chomp}" + "".join(f"\n{inner}{line}" if line else "\n" for line in lines)


def _leaf(value: Any, indent: str) -> str | None:
    """The text of a scalar or an empty collection after `key: ` or `- `; None for a non-empty collection."""
    kind = type(value)
    if kind is str and "\n" not in value:
        return scalar(value)
    if kind is dict or kind is list:
        return None if value else ("{}" if kind is dict else "[]")
    if kind is Joined:
        return None if value else "{}"
    if isinstance(value, str):
        if "\n" in value:
            block = _literal(value, indent)
            if block is not None:
                return block
        return scalar(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Mapping):
        return None if value else "{}"
    if isinstance(value, (list, tuple)):
        return None if value else "[]"
    return scalar(str(value))


def _float(value: float) -> str:
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    # YAML 1.1 reads a float only with a dot: 1e+16 would be a string
    if "e" in text and "." not in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _key(key: Any) -> str:
    return scalar(key if type(key) is str else str(key))


# the text of a Joined part or of a nested sequence item by (id, indent), with the value it was written
# from (kept alive, so its id stays its own)
Blocks = dict[tuple[int, str], tuple[Any, str]]
_BLOCKS_MAX = 50_000


def _store(value: Any, indent: str, blocks: Blocks, write: Callable[[list[str]], None]) -> str:
    """The text `write` makes of `value`, kept in `blocks` under (id, `indent`) (the callers look there
    first, inline: a hit is the common case)."""
    lines: list[str] = []
    write(lines)
    if len(blocks) >= _BLOCKS_MAX:
        blocks.clear()
    text = "".join(lines)
    blocks[(id(value), indent)] = (value, text)
    return text


def emit(value: Any, out: list[str], indent: str = "", blocks: Blocks | None = None) -> None:
    """Append the block YAML of a non-empty mapping or sequence (each line ends with a newline) to `out`.

    `indent` is where its lines start. Scalars at the top are written as one line. `blocks`: the value's
    Joined parts and nested sequence items are shared and never change; their text is kept there and
    reused (render/items.py's Items.shared).
    """
    kind = type(value)
    if kind is Joined:
        _joined(value, out, indent, blocks)
        return
    # exact types first: isinstance against the Mapping ABC costs more than the rest of a line
    if (kind is dict or (kind is not list and isinstance(value, Mapping))) and value:
        scalars = _SCALARS
        for key, item in value.items():
            # the common cases inline (a one-line string seen before, a number, a boolean): this loop is
            # where a large document spends its time
            kind = type(item)
            if kind is str:
                leaf = scalars.get(item) or _leaf(item, indent)
            elif kind is bool:
                leaf = "true" if item else "false"
            elif kind is int:
                leaf = str(item)
            else:
                leaf = _leaf(item, indent)
            if leaf is not None:
                out.append(f"{indent}{scalars.get(key) or _key(key)}: {leaf}\n")
                continue
            if kind is dict or kind is Joined or isinstance(item, Mapping):
                out.append(f"{indent}{_key(key)}:\n")
                emit(item, out, indent + "  ", blocks)
            else:
                # PyYAML's layout: a sequence under a key is not indented
                out.append(f"{indent}{_key(key)}:\n")
                emit(item, out, indent, blocks)
    elif (kind is list or isinstance(value, (list, tuple))) and value:
        scalars = _SCALARS
        for item in value:
            leaf = (scalars.get(item) if type(item) is str else None) or _leaf(item, indent)
            if leaf is not None:
                out.append(f"{indent}- {leaf}\n")
            elif blocks is not None:
                # a nested item shared between items (a report entry in many reports): written once
                dash = f"{indent}- "
                found = blocks.get((id(item), dash))
                out.append(found[1] if found is not None else
                           _store(item, dash, blocks, partial(_item, item, indent=indent, blocks=blocks)))
            else:
                _item(item, out, indent, blocks)
    else:
        leaf = _leaf(value, indent)
        out.append(f"{indent}{leaf}\n")


def _item(item: Any, out: list[str], indent: str, blocks: Blocks | None) -> None:
    """A non-empty mapping or list as an item of a sequence at `indent`: its first line goes after "- ",
    the rest indented to line up with it."""
    start = len(out)
    emit(item, out, indent + "  ", blocks)
    out[start] = f"{indent}- {out[start][len(indent) + 2:]}"


def _joined(value: Joined, out: list[str], indent: str, blocks: Blocks | None, item: bool = False) -> None:
    """A Joined's lines at `indent`, each part's from `blocks` when written there before. `item`: as a
    non-empty sequence item (`- ` before its first line, the rest two spaces further in)."""
    if blocks is None:
        if item:
            _item(value, out, indent, None)
        else:
            for part in value:
                emit(part, out, indent)
        return
    inner = indent + "  " if item else indent
    parts = iter(value)
    get = blocks.get
    if item:
        # the first part of an item is kept with its "- " (a key no plain indent can have)
        first = next(parts)
        dash = f"{indent}- "
        found = get((id(first), dash))
        out.append(found[1] if found is not None else
                   _store(first, dash, blocks, partial(_item, first, indent=indent, blocks=None)))
    for part in parts:
        found = get((id(part), inner))
        out.append(found[1] if found is not None else
                   _store(part, inner, blocks, partial(emit, part, indent=inner)))


def block(value: Any, indent: str) -> str:
    """The lines of a non-empty mapping or sequence at `indent` (emit's), as one text."""
    out: list[str] = []
    emit(value, out, indent)
    return "".join(out)


def item(value: Any, indent: str = "") -> str:
    """The lines of a non-empty mapping or sequence as an item of a sequence at `indent`, as one text."""
    out: list[str] = []
    _item(value, out, indent, None)
    return "".join(out)


# a stand-in for a value in a template's text: written plain wherever it stands
_SLOT = re.compile(r"kyrecslot(\d+)")


def slot(index: int) -> str:
    """The stand-in for the `index`th value of a template (`template`)."""
    return f"kyrecslot{index}"


def slot_values(values: Iterable[str]) -> list[str] | None:
    """The scalars of strings that go into a template's slots, or None when one holds a new line: a literal
    block's text depends on where it stands, so such a value is written whole, not by a template."""
    values = list(values)
    if any("\n" in value for value in values):
        return None
    return list(map(scalar, values))


def template(text: str) -> Callable[[Sequence[str]], str]:
    """`text`, written of a value with `slot(i)` stand-ins in place of some of its one-line strings, as a
    function of those strings' scalars (`scalar(s)`, or `str(n)` for a number in a slot): a one-line string's
    text is its scalar wherever it stands, so every value of that shape is written by joining texts, not line
    by line (a report's head, a result's subject: one of each per subject)."""
    cut = _SLOT.split(text)
    texts, slots, last = cut[0:-1:2], list(map(int, cut[1::2])), cut[-1]

    def fill(values: Sequence[str]) -> str:
        return "".join(chain.from_iterable(zip(texts, map(values.__getitem__, slots)))) + last

    return fill


def to_yaml(value: Any, blocks: Blocks | None = None) -> str:
    """`value` as block YAML; `blocks` (shared between calls): its nested parts are shared and never
    change, and their text is reused (see emit)."""
    out: list[str] = []
    emit(value, out, "", blocks)
    return "".join(out)


def write_sequence(key: str, items: Iterable[Any], write: Callable[[str], object], *, chunk: int = 2000) -> int:
    """`key:` and its sequence, item by item, in chunks of text; returns how many items were written.
    An Items part: its shared parts written once (Items.shared)."""
    if isinstance(items, Items) and items.yaml is not None:
        # the items as text already (render/result_entries.py)
        if not items.count:
            write(f"{_key(key)}: []\n")
            return 0
        write(f"{_key(key)}:\n")
        for text in items.yaml():
            write(text)
        return items.count
    if isinstance(items, Items) and items.parts is not None:
        items = Items(items.count, items.parts, shared=True)
    shared = isinstance(items, Items) and items.shared
    count = _write_items(items, write, chunk, shared, head=f"{_key(key)}:\n")
    if not count:
        write(f"{_key(key)}: []\n")
    return count


def _write_items(items: Iterable[Any], write: Callable[[str], object], chunk: int, shared: bool,
                 head: str = "") -> int:
    """The sequence's `- ` items (`head` before the first), in chunks of text."""
    count = 0
    out: list[str] = []
    blocks: Blocks | None = {} if shared else None
    for item in items:
        if not count and head:
            out.append(head)
        # not through emit's list: the top-level items are new each time, never worth keeping in `blocks`
        if type(item) is Joined and blocks is not None and item:
            _joined(item, out, "", blocks, True)
        else:
            leaf = _leaf(item, "")
            if leaf is not None:
                out.append(f"- {leaf}\n")
            else:
                _item(item, out, "", blocks)
        count += 1
        if len(out) >= chunk:
            write("".join(out))
            out.clear()
    if out:
        write("".join(out))
    return count
