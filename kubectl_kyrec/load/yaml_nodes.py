"""Multi-document YAML to plain Python values, with the line each node starts on.

Parsing uses libyaml through PyYAML's C composer: go-yaml v2, which kubectl and Kyverno use, is a port of
libyaml, so both accept and reject the same texts; and composing in C is several times faster than a
pure-Python parser, which matters for large manifest sets. Only composing is delegated: every plain scalar
reaches Python untyped (see `_PlainMarkingLoader`) and is resolved by `yaml_scalars` with go-yaml's rules.

Guards, each an InputError naming the line: duplicate keys (kubectl refuses them), non-scalar or null keys,
NaN and infinities (not representable in JSON), anchors that contain themselves, and alias expansion
bounded by go-yaml's own "excessive aliasing" rule, so a billion-laughs document is refused after a few
hundred thousand nodes instead of exhausting memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.yaml_scalars import (
    MERGE_TAG,
    STR_TAG,
    json_number,
    key_string,
    resolve_plain,
    resolve_tagged,
)
from kubectl_kyrec.model import Source

PLAIN_TAG = "!kyrec/plain"  # private tag of untagged plain scalars
_UNSEEN = object()
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _PlainMarkingLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Composes nodes only; untagged plain scalars get a private tag so resolution happens in Python."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return PLAIN_TAG if implicit[0] else STR_TAG
        # Collections keep the default tags; the converter goes by node class, not tag.
        return "tag:yaml.org,2002:seq" if kind is SequenceNode else "tag:yaml.org,2002:map"


@dataclass(frozen=True)
class YamlDocument:
    """One non-empty document: its value, its node (for lines of nested fields) and its first line."""

    value: Any
    node: Node
    line: int


def node_line(node: Node) -> int:
    """1-based line of a node; for a mapping, the line of its first key."""
    if isinstance(node, MappingNode) and node.value:
        node = node.value[0][0]
    return int(node.start_mark.line) + 1


def iter_yaml_documents(text: str | BinaryIO, file: str) -> Iterator[YamlDocument]:
    """Yield the non-empty documents of `text`; raises InputError at the first problem.

    `text` may be a binary stream (see `AnchorWatch`): it is then read a chunk at a time as the documents
    are composed, so a document is yielded once its text (and the next `---`) has been read, and the file
    is never held whole. A stream libyaml cannot decode raises `UndecodableStream` instead, so that the
    caller can give the same message the text would (it knows how to read the file again)."""
    if isinstance(text, str):
        try:
            loader = _PlainMarkingLoader(text)  # libyaml takes UTF-8: encoding fails on lone surrogates
        except UnicodeEncodeError as err:
            line = text.count("\n", 0, err.start) + 1
            raise InputError("invalid text: a lone surrogate character", Source(file, line)) from None
        # Without an anchor in the text there can be no alias; skip the bookkeeping aliases need.
        has_anchor = "&" in text
        yield from _documents(loader, file, lambda: has_anchor, text)
        return
    watch = AnchorWatch(text)
    yield from _documents(_PlainMarkingLoader(watch), file, lambda: watch.seen, None)


class Scalars:
    """The scalars of one stream already resolved, shared between its documents.

    libyaml hands every scalar over as a new str: 50,000 Pods carry 50,000 copies of "apiVersion",
    "containers", "v1"... each resolved again. Resolving depends on the text (and its style) alone and gives
    immutable values, so the first result is reused: measured on bench/yaml_loaders.py's 50,000 Pods, the
    conversion after composing takes about 30% less time (the whole load 4.64 -> 4.01 s) and the documents
    share their keys and common values, as json_stream's decoder shares them (peak 361 -> 230 MiB).
    Bounded, so that a stream of unique names does not grow it without end."""

    LIMIT = 4096     # entries per table
    LONGEST = 64     # characters: names, kinds, images, quantities; not free text

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}       # a plain key's text -> its JSON key
        self.plain: dict[str, Any] = {}      # a plain scalar's text -> its value
        self.quoted: dict[str, str] = {}     # a quoted (or !!str) scalar's text, shared


class UndecodableStream(Exception):
    """libyaml could not read a stream (bad encoding, a control character, a failed read): the caller reads
    the file whole and decodes it again, for the message with its line."""


class AnchorWatch:
    """A binary stream as libyaml reads it, noting whether an `&` (an anchor) has been read so far.

    A node is composed only after all of its text has been read, and an anchor comes before its aliases:
    while no `&` has been read, the document at hand holds no alias and needs no alias bookkeeping.
    `read1` (at most one read of the file) so that a pipe's documents arrive as they are written."""

    def __init__(self, stream: BinaryIO) -> None:
        self._read = getattr(stream, "read1", stream.read)
        self.seen = False

    def read(self, size: int = -1) -> bytes:
        chunk: bytes = self._read(size)
        if not self.seen and b"&" in chunk:
            self.seen = True
        return chunk


def _documents(loader: Any, file: str, has_anchor: Any, text: str | None) -> Iterator[YamlDocument]:
    scalars = Scalars()
    try:
        while True:
            with gc_paused():
                try:
                    if not loader.check_node():
                        return
                    node = loader.get_node()
                except yaml.MarkedYAMLError as err:
                    raise _syntax_error(err, file) from None
                except yaml.reader.ReaderError as err:  # a character position instead of a mark
                    if text is None:
                        raise UndecodableStream(str(err)) from None
                    line = text.count("\n", 0, err.position) + 1
                    raise InputError(f"invalid YAML: unacceptable character #x{err.character:04x}: "
                                     f"{err.reason}", Source(file, line)) from None
                except OSError as err:
                    raise UndecodableStream(str(err)) from None
                except yaml.YAMLError as err:
                    raise InputError(f"invalid YAML: {str(err).splitlines()[0]}", Source(file)) from None
                if node is None:
                    continue
                if (isinstance(node, ScalarNode) and node.tag == PLAIN_TAG
                        and resolve_plain(node.value) is None):
                    continue  # `---` followed by nothing, or by a bare null
                value = _Converter(file, has_anchor(), scalars).convert_document(node)
            yield YamlDocument(value, node, node_line(node))
    finally:
        loader.dispose()


def _syntax_error(err: yaml.MarkedYAMLError, file: str) -> InputError:
    mark = err.problem_mark or err.context_mark
    line = mark.line + 1 if mark is not None else 0
    message = f"invalid YAML: {err.problem or err.context}"
    if mark is not None:
        message += f" at column {mark.column + 1}"
    if err.context and err.problem and err.context_mark is not None:
        message += f" ({err.context} started at line {err.context_mark.line + 1})"
    return InputError(message, Source(file, line))


# go-yaml v2 decode.go: aliases may account for 99% of decoded nodes in documents of up to 400,000
# nodes, falling linearly to 10% at 4,000,000; past that the document is refused.
def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decoded - 400_000) / 3_600_000


class _Converter:
    def __init__(self, file: str, track_aliases: bool, scalars: Scalars | None = None) -> None:
        self.file = file
        self.track = track_aliases
        shared = scalars if scalars is not None else Scalars()
        self.keys, self.plain, self.quoted = shared.keys, shared.plain, shared.quoted
        self.seen: set[int] = set()      # ids of nodes already converted once: meeting one again is an alias
        self.active: set[int] = set()    # ids of collections being converted, to catch self-reference
        self.alias_depth = 0
        self.document: Node | None = None
        self.decoded = 0
        self.aliased = 0

    def fail(self, message: str, node: Node) -> InputError:
        return InputError(message, Source(self.file, int(node.start_mark.line) + 1))

    def convert_document(self, node: Node) -> Any:
        self.document = node
        try:
            return self.value(node)
        except RecursionError:
            raise self.fail("document nests too deeply", node) from None

    def value(self, node: Node) -> Any:
        if self.track:
            return self._tracked(node)
        return self._untracked(node)

    # Not `self.value = self._untracked` in __init__ (one call fewer per node): a bound method kept on its
    # own instance is a reference cycle, and with the collector paused (as the command runs) every
    # document's converter, and the node tree it holds, would stay in memory.

    def _untracked(self, node: Node) -> Any:
        cls = node.__class__
        if cls is ScalarNode:
            return self.scalar(node)
        if cls is MappingNode:
            return self.mapping(node)
        return [self.value(child) for child in node.value]

    def _tracked(self, node: Node) -> Any:
        key = id(node)
        is_alias = key in self.seen
        if key in self.active:
            raise self.fail("anchor value contains an alias to itself", node)
        self.seen.add(key)
        self.decoded += 1
        if is_alias or self.alias_depth:
            self.aliased += 1
        if (self.aliased > 100 and self.decoded > 1000
                and self.aliased / self.decoded > _allowed_alias_ratio(self.decoded)):
            # Reported at the document: the node at hand is an anchor's, defined possibly far away.
            raise self.fail(
                f"document contains excessive aliasing ({self.aliased} of {self.decoded} nodes come from "
                "aliases); refusing to expand it", self.document or node)
        if is_alias:
            self.alias_depth += 1
        self.active.add(key)
        try:
            return self._untracked(node)
        finally:
            self.active.discard(key)
            if is_alias:
                self.alias_depth -= 1

    def scalar(self, node: Node) -> Any:
        tag = node.tag
        text = node.value
        if tag == PLAIN_TAG:
            value = self.plain.get(text, _UNSEEN)
            if value is not _UNSEEN:
                return value
            value = resolve_plain(text)
        elif tag == STR_TAG:
            if len(text) > Scalars.LONGEST:
                return text
            shared = self.quoted.get(text)
            if shared is None and len(self.quoted) < Scalars.LIMIT:
                self.quoted[text] = shared = text
            return shared if shared is not None else text
        else:
            try:
                value = resolve_tagged(tag, text)
            except ValueError as err:
                raise self.fail(str(err), node) from None
        if value.__class__ is float:
            try:
                value = json_number(value)
            except ValueError:
                raise self.fail(f"`{text}` is not a JSON number (NaN and infinities are not)",
                                node) from None
        if tag == PLAIN_TAG and len(text) <= Scalars.LONGEST and len(self.plain) < Scalars.LIMIT:
            self.plain[text] = value
        return value

    def key(self, node: Node) -> str:
        if node.__class__ is not ScalarNode:
            raise self.fail("a mapping key must be a scalar, not a collection", node)
        text = node.value
        if node.tag == PLAIN_TAG:
            found = self.keys.get(text)
            if found is not None:
                return found
        elif node.tag == STR_TAG:
            return str(text)
        try:
            if node.tag == PLAIN_TAG:
                found = key_string(resolve_plain(text))
                if len(self.keys) < Scalars.LIMIT:
                    self.keys[text] = found
                return found
            return key_string(resolve_tagged(node.tag, text))
        except ValueError as err:
            raise self.fail(str(err), node) from None

    def mapping(self, node: Node) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merged: set[str] | None = None  # keys that came from `<<` and may be overridden
        for key_node, value_node in node.value:
            if (key_node.__class__ is ScalarNode and key_node.value == "<<"
                    and key_node.tag in (PLAIN_TAG, MERGE_TAG)):
                merged = merged if merged is not None else set()
                self.merge(value_node, out, merged)
                continue
            key = self.key(key_node)
            if key in out and (merged is None or key not in merged):
                first = self.first_line(node, key)
                raise self.fail(f'duplicate key "{key}" (first at line {first})', key_node)
            if merged is not None:
                merged.discard(key)
            out[key] = self.value(value_node)
        return out

    def first_line(self, node: Node, key: str) -> int:
        for key_node, _ in node.value:
            if key_node.__class__ is ScalarNode and self.key(key_node) == key:
                return int(key_node.start_mark.line) + 1
        return 0

    def merge(self, node: Node, out: dict[str, Any], merged: set[str]) -> None:
        # go-yaml v2 applies merges in place, in order; the maps of a sequence are applied last to first
        # so that earlier ones win.
        sources = list(reversed(node.value)) if isinstance(node, SequenceNode) else [node]
        for source in sources:
            if not isinstance(source, MappingNode):
                raise self.fail("map merge requires a map or a sequence of maps as the value", source)
            for key, value in self.value(source).items():
                out[key] = value
                merged.add(key)
