"""Policies, exceptions and manifests as Documents, each with the file and line it starts on.

Reading follows kubectl: files, directories (recursive) and `-`; multi-document YAML read as YAML 1.1 with
go-yaml's scalar rules (`yaml_scalars`); content that starts with `{` or `[` is read as JSON; `List`
objects are flattened into their items. Every problem is an InputError with `file:line` and one line of
text. Pass `errors=[]` to collect them and keep going instead of stopping at the first.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TextIO

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.files import STDIN, STDIN_NAME, decode_text, expand_paths, opened, read_text
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.json_stream import iter_json_documents, looks_like_json
from kubectl_kyrec.load.line_index import LineIndex
from kubectl_kyrec.load.yaml_nodes import UndecodableStream, iter_yaml_documents, node_line
from kubectl_kyrec.load.yaml_peek import KYREC_API_VERSION, blank_plain_non_policies, kyrec_output
from kubectl_kyrec.model import Document, Source

__all__ = [
    "LocatedDocument", "PolicyFiles", "documents_from_text", "iter_manifests", "iter_objects", "load_documents",
    "load_documents_with_lines", "load_manifests", "load_policy_documents",
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


def load_manifests(given: str, *, stdin: TextIO | None = None) -> tuple[list[Document], list[str]]:
    """The -r documents of one path, and `file (what)` for each of kyrec's own outputs passed over below it
    (`iter_manifests`, read whole)."""
    passed_over: list[str] = []
    with gc_paused():  # see gc_pause: the collector never walks the list while it grows
        docs = list(iter_manifests(given, stdin=stdin, passed_over=passed_over))
    return docs, passed_over


def iter_manifests(given: str, *, stdin: TextIO | None = None,
                   passed_over: list[str] | None = None) -> Iterator[Document]:
    """The -r documents of one path, one at a time, each decoded when it is asked for: a consumer can
    evaluate the first document of a large file before the last one is read, and a file is read in chunks
    as its documents are composed rather than held whole as text (`_file_documents`).

    kyrec's outputs (`-o json=FILE`, `-o yaml=FILE`, `-o sarif=FILE`, a `--write-baseline`) are no manifests:
    one written into an -r directory would otherwise be read back as a resource on the next run (or, a
    SARIF log having no apiVersion, refuse it). Below a directory they are passed over, by their first
    lines (not parsed) or, written by hand in another key order, by their apiVersion, and `file (what)` is
    appended to `passed_over`; a file named explicitly is the user's choice of input and is an InputError at
    its line instead. Errors are raised where they are met: the documents before them have been yielded."""
    in_directory = given != STDIN and os.path.isdir(given)
    for path in expand_paths([given]):
        name, head, raws = _file_documents(path, stdin)
        what = kyrec_output(head)
        if what is None:
            own: Document | None = None
            for doc in _documents_of(raws, name):
                if doc.api_version != KYREC_API_VERSION:
                    yield doc
                elif own is None:
                    own = doc
            if own is None:
                continue
            what, where = f"{KYREC_API_VERSION} {own.kind}", own.source
        else:
            where = Source(name, 1)
        if not in_directory:
            raise InputError(f"this is kyrec's own output ({what}), not a manifest: give -r the manifests", where)
        if passed_over is not None:
            passed_over.append(f"{name} ({what})")


def _documents_of(raws: Iterator[_Raw], name: str) -> Iterator[Document]:
    for raw in raws:
        for obj, line, _ in iter_objects(raw.value, raw.line, raw.node, name):
            yield Document(obj, Source(name, line))


# enough of a file's start for kyrec_output (4,096 characters) and for telling JSON from YAML
_HEAD_BYTES = 65536


def _file_documents(path: str, stdin: TextIO | None) -> tuple[str, str, Iterator[_Raw]]:
    """(name, the text the file starts with, its raw documents) of one file or of `-`.

    YAML is handed to libyaml as a binary stream: read in chunks as documents are composed, never held
    whole as text (which also spares decoding it to a str that libyaml encodes back to UTF-8); from `-`, a
    document is yielded as soon as it has arrived. JSON (json_stream reads text), UTF-16 and a text-only
    stdin are read whole. Should libyaml fail to read the stream (bad UTF-8, a control character, a failed
    read), the input is read whole and the same message as for the text is raised, after the documents
    already yielded."""
    raw_stdin = getattr(stdin if stdin is not None else sys.stdin, "buffer", None) if path == STDIN else None
    if path == STDIN and raw_stdin is None:
        name, text = read_text(path, stdin)
        return name, text, _raw_documents(text, name)
    try:
        opened(path)
        if raw_stdin is not None:
            stream = _Recorded(raw_stdin, owned=False)
        else:  # closed by the generator, or by _whole
            stream = _Recorded(open(path, "rb", buffering=_HEAD_BYTES), owned=True)  # noqa: SIM115
        start = stream.head(_HEAD_BYTES)
    except OSError:
        # the same message as any unreadable file (read_text counts it again: it is not read, the run ends)
        name, text = read_text(path, stdin)
        return name, text, _raw_documents(text, name)
    name = STDIN_NAME if path == STDIN else path
    if start.startswith(codecs.BOM_UTF8):
        start = start[len(codecs.BOM_UTF8):]
    head = start.decode("utf-8", "ignore")
    if (start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or not head.strip()
            or looks_like_json(head)):
        text = _whole(stream, name)
        return name, text, _raw_documents(text, name)
    return name, head, _streamed_documents(stream, name)


class _Recorded:
    """A binary input as libyaml reads it, its first bytes read ahead (`head`: one read, so that a pipe's
    first document is not held back waiting for more). Standard input, which cannot be read twice, keeps
    what was read, for the message should libyaml fail on it; a file is read again from its start."""

    def __init__(self, raw: BinaryIO, *, owned: bool) -> None:
        self.raw = raw
        self.owned = owned
        self._read = getattr(raw, "read1", raw.read)
        self.pending = b""
        self.kept: list[bytes] | None = None if owned and raw.seekable() else []

    def head(self, size: int) -> bytes:
        self.pending = bytes(self._read(size))
        if self.kept is not None:
            self.kept.append(self.pending)
        return self.pending

    def read(self, size: int = -1) -> bytes:
        if self.pending:
            chunk, self.pending = self.pending, b""
            return chunk
        chunk = bytes(self._read(size))
        if self.kept is not None:
            self.kept.append(chunk)
        return chunk

    def everything(self) -> bytes:
        """The whole input, from its start."""
        if self.kept is None:
            self.raw.seek(0)
            return bytes(self.raw.read())
        return b"".join(self.kept) + bytes(self.raw.read())

    def close(self) -> None:
        if self.owned:
            self.raw.close()


def _whole(stream: _Recorded, name: str) -> str:
    try:
        data = stream.everything()
    except OSError as err:
        reason = err.strerror or str(err)
        raise InputError(f"cannot read: {reason.lower() if stream.owned else reason}", Source(name)) from None
    finally:
        stream.close()
    return decode_text(data, name)


def _streamed_documents(stream: _Recorded, name: str) -> Iterator[_Raw]:
    yielded = 0
    try:
        for doc in iter_yaml_documents(stream, name):  # type: ignore[arg-type]
            yield _Raw(doc.value, doc.line, doc.node)
            yielded += 1
    except UndecodableStream:
        # the text path says what and where; it meets the same documents first, and they were yielded
        for index, raw in enumerate(_raw_documents(_whole(stream, name), name)):
            if index >= yielded:
                yield raw
    finally:
        stream.close()


@dataclass
class PolicyFiles:
    """What `-p` named: the policy documents, and what was passed over in its directories."""

    documents: list[LocatedDocument] = field(default_factory=list)
    skipped: int = 0                                   # documents below directories that are no policies
    skipped_kinds: set[str] = field(default_factory=set)


def load_policy_documents(paths: Sequence[str], is_policy: Callable[[Document], bool], *,
                          stdin: TextIO | None = None, pass_over: bool = False) -> PolicyFiles:
    """Policy documents with their lines. A file named explicitly (or `-`) must hold policies only: any
    other document is an InputError at its line. Below a directory (a checkout of a policy library),
    hidden folders are not read, and documents that are not policies (other kinds, YAML that is no
    Kubernetes object such as artifacthub-pkg.yml) are counted in `skipped` and passed over; a YAML
    document whose own apiVersion and kind say it is no policy is passed over without being composed
    (load/yaml_peek.py: a multi-MB `-o yaml` or state in the directory costs no parse). `pass_over`: files
    named explicitly are read as a directory's are (`lint --skip-non-policies`: a pre-commit hook hands every
    changed YAML file, policies or not)."""
    out = PolicyFiles()

    def policy_kind(api_version: str, kind: str) -> bool:
        return is_policy(Document({"apiVersion": api_version, "kind": kind}, Source("")))

    for given in paths:
        in_directory = pass_over or (given != STDIN and os.path.isdir(given))
        for path in expand_paths([given], skip_hidden=True):
            name, text = read_text(path, stdin)
            if in_directory:
                text, blanked = blank_plain_non_policies(text, policy_kind)
                out.skipped += len(blanked)
                out.skipped_kinds.update(blanked)
            with gc_paused():
                for raw in _raw_documents(text, name):
                    try:
                        objects = list(iter_objects(raw.value, raw.line, raw.node, name))
                    except InputError:
                        if not in_directory:
                            raise
                        out.skipped += 1
                        out.skipped_kinds.add("not a Kubernetes object")
                        continue
                    for obj, line, node in objects:
                        doc = Document(obj, Source(name, line))
                        if is_policy(doc):
                            out.documents.append(LocatedDocument(doc, LineIndex(line, node)))
                        elif in_directory:
                            out.skipped += 1
                            out.skipped_kinds.add(f"{doc.api_version}/{doc.kind}")
                        else:
                            raise InputError(f"{doc.kind} {doc.name!r} is not a policy (a file named with -p "
                                             "holds policies and exceptions only; give resources with -r)",
                                             doc.source)
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


def iter_objects(value: Any, line: int, node: Node | None, file: str,
                 item_lines: Sequence[int] | None = None) -> Iterator[tuple[dict[str, Any], int, Node | None]]:
    """(object, line, node) for the Kubernetes objects of one document: itself, or a List's items.

    `item_lines`: the line of each of a JSON List's items (json_stream), where no YAML node gives it.

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
            if item_node is not None:
                item_line = node_line(item_node)
            elif item_lines is not None and index < len(item_lines):
                item_line = item_lines[index]
            else:
                item_line = line
            bare = isinstance(item, dict) and not item.get("apiVersion") and not item.get("kind")
            if kind != "List" and bare:
                # A typed list straight from the API (DeploymentList) leaves the kind to the list, as
                # Kubernetes' UnstructuredList decoding does.
                item = {"apiVersion": value.get("apiVersion"), "kind": kind[: -len("List")], **item}
            yield from iter_objects(item, item_line, item_node, file)
        return
    _require_string(value, "apiVersion", file, line)
    _require_string(value, "kind", file, line)
    _require_metadata(value.get("metadata"), file, line)
    yield value, line, node


def _require_metadata(metadata: Any, file: str, line: int) -> None:
    """The ObjectMeta fields every stage reads: the API server (and kubectl) reject any other shape when
    decoding, so a document with them is no object any cluster could hold."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise InputError(f"metadata must be a mapping, not {_describe(metadata)}", Source(file, line))
    for key in ("name", "namespace", "generateName", "uid", "resourceVersion"):
        # A scalar of another type (`namespace: n`, a boolean to YAML 1.1) reads as its text, as it does in
        # Kyverno's CLI; a mapping or a list has no text at all.
        present = metadata.get(key)
        if isinstance(present, (dict, list)):
            raise InputError(f"metadata.{key} must be a string, not {_describe(present)}", Source(file, line))
    for key in ("labels", "annotations"):
        present = metadata.get(key)
        if present is not None and not isinstance(present, dict):
            raise InputError(f"metadata.{key} must be a mapping, not {_describe(present)}", Source(file, line))


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
