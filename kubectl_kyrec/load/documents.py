"""Policies, exceptions and manifests as Documents, each with the file and line it starts on.

Reading follows kubectl: files, directories (recursive) and `-`; multi-document YAML read as YAML 1.1 with
go-yaml's scalar rules (`yaml_scalars`); content that starts with `{` or `[` is read as JSON; `List`
objects are flattened into their items. Every problem is an InputError with `file:line` and one line of
text. Pass `errors=[]` to collect them and keep going instead of stopping at the first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.files import STDIN_NAME, expand_paths, read_text
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.json_stream import iter_json_documents, looks_like_json
from kubectl_kyrec.load.line_index import LineIndex
from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents, node_line
from kubectl_kyrec.model import Document, Source

__all__ = [
    "LocatedDocument", "documents_from_text", "iter_objects", "load_documents", "load_documents_with_lines",
]


@dataclass(frozen=True)
class LocatedDocument:
    """A Document and the lines of its nested fields."""

    document: Document
    lines: LineIndex


@dataclass(frozen=True)
class _Raw:
    value: Any
    line: int
    node: Node | None


def load_documents(paths: Sequence[str], *, stdin: TextIO | None = None,
                   errors: list[InputError] | None = None) -> list[Document]:
    """Every object in `paths` (files, directories, `-` for `stdin`), in reading order."""
    return [located.document for located in _load(paths, stdin, errors, keep_nodes=False)]


def load_documents_with_lines(paths: Sequence[str], *, stdin: TextIO | None = None,
                              errors: list[InputError] | None = None) -> list[LocatedDocument]:
    """Like `load_documents`, keeping the YAML nodes needed to find the line of any field later."""
    return _load(paths, stdin, errors, keep_nodes=True)


def _load(paths: Sequence[str], stdin: TextIO | None, errors: list[InputError] | None,
          keep_nodes: bool) -> list[LocatedDocument]:
    out: list[LocatedDocument] = []
    for given in paths:
        try:
            files = expand_paths([given])
        except InputError as err:
            if errors is None:
                raise
            errors.append(err)
            continue
        for path in files:
            try:
                name, text = read_text(path, stdin)
            except InputError as err:
                if errors is None:
                    raise
                errors.append(err)
                continue
            out.extend(_located_from_text(text, name, errors, keep_nodes))
    return out


def documents_from_text(text: str, file: str, *, errors: list[InputError] | None = None) -> list[Document]:
    """The objects in one text already read; `file` is the name messages use."""
    return [located.document for located in _located_from_text(text, file, errors, keep_nodes=False)]


def _located_from_text(text: str, file: str, errors: list[InputError] | None,
                       keep_nodes: bool) -> list[LocatedDocument]:
    # See gc_pause: the whole file, so that the collector never walks a half-built tree. Nodes not kept
    # are freed before the collector is back, which then never has to walk them at all.
    with gc_paused():
        return _located_documents(text, file, errors, keep_nodes)


def _located_documents(text: str, file: str, errors: list[InputError] | None,
                       keep_nodes: bool) -> list[LocatedDocument]:
    out: list[LocatedDocument] = []
    try:
        for raw in _raw_documents(text, file):
            try:
                for obj, line, node in iter_objects(raw.value, raw.line, raw.node, file):
                    lines = LineIndex(line, node if keep_nodes else None)
                    out.append(LocatedDocument(Document(obj, Source(file, line)), lines))
            except InputError as err:
                if errors is None:
                    raise
                errors.append(err)  # one bad document; the rest of the file is still good
    except InputError as err:
        if errors is None:
            raise
        errors.append(err)  # a syntax error: nothing after it in this file can be trusted
    return out


def _raw_documents(text: str, file: str) -> Iterator[_Raw]:
    if looks_like_json(text):
        try:
            docs = [_Raw(value, line, None) for value, line in iter_json_documents(text, file)]
        except InputError as json_error:
            # A .json file is JSON. Other text that merely starts with `{` may be flow-style YAML, which
            # Kyverno's CLI reads as YAML; if it is neither, stdin gets the JSON complaint, files the
            # YAML one.
            if file.endswith(".json"):
                raise
            try:
                docs = [_Raw(d.value, d.line, d.node) for d in iter_yaml_documents(text, file)]
            except InputError as yaml_error:
                raise (json_error if file == STDIN_NAME else yaml_error) from None
        yield from docs
        return
    for doc in iter_yaml_documents(text, file):
        yield _Raw(doc.value, doc.line, doc.node)


def iter_objects(value: Any, line: int, node: Node | None,
                 file: str) -> Iterator[tuple[dict[str, Any], int, Node | None]]:
    """(object, line, node) for the Kubernetes objects of one document: itself, or a List's items.

    Lists nest (kubectl flattens them recursively). Raises InputError for a document that is not an
    object: not a mapping, or without apiVersion or kind.
    """
    if not isinstance(value, dict):
        raise InputError(f"document is {_describe(value)}, not a mapping (a Kubernetes object)",
                         Source(file, line))
    kind = value.get("kind")
    items = value.get("items")
    if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and isinstance(items, list)):
        if items is None:
            return
        if not isinstance(items, list):
            raise InputError(f"items of a {kind} must be a list, not {_describe(items)}", Source(file, line))
        item_nodes = _item_nodes(node, len(items))
        for index, item in enumerate(items):
            item_node = item_nodes[index] if item_nodes else None
            item_line = node_line(item_node) if item_node is not None else line
            bare = isinstance(item, dict) and not item.get("apiVersion") and not item.get("kind")
            if kind != "List" and bare:
                # A typed list straight from the API (DeploymentList) leaves the kind to the list, as
                # Kubernetes' UnstructuredList decoding does.
                item = {"apiVersion": value.get("apiVersion"), "kind": kind[: -len("List")], **item}
            yield from iter_objects(item, item_line, item_node, file)
        return
    _require_string(value, "apiVersion", file, line)
    _require_string(value, "kind", file, line)
    yield value, line, node


def _require_string(obj: dict[str, Any], field: str, file: str, line: int) -> None:
    present = obj.get(field)
    if present is None or present == "":
        raise InputError(f"missing {field}", Source(file, line))
    if not isinstance(present, str):
        raise InputError(f"{field} must be a string, not {_describe(present)}", Source(file, line))


def _item_nodes(node: Node | None, count: int) -> list[Node] | None:
    """The YAML nodes of a List's items, when they can be matched one to one (no merges in the way)."""
    if not isinstance(node, MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and key_node.value == "items":
            if isinstance(value_node, SequenceNode) and len(value_node.value) == count:
                return list(value_node.value)
            return None
    return None


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a sequence"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string"
