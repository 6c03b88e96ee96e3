"""State files (`--state`): what exists, as `kubectl get -o json|yaml` wrote it; often tens of thousands of
objects, so this is the fast path.

JSON goes through the json module (a List, one object, several concatenated objects, or a top-level array
of objects). YAML goes through libyaml's C composer with go-yaml's scalar rules (`yaml_nodes`); timestamps
stay strings and `yes`/`on` are booleans, as kubectl reads them. No YAML nodes are kept after a document is
converted. Errors are InputErrors with file:line, as for manifests.

`read_state` builds the run's ClusterState: a kind with at least one object counts as listed cluster-wide
(`kubectl get` lists whole kinds) unless only capture files hold it and their record names it, and a capture
file (`kyrec.io/listed`, `kyrec.io/unreadable` on its List) records the kinds it listed and where (a
namespace, or cluster-wide), including those that came back empty, and (`kyrec.io/served`) the kinds the
server served.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import FailedRead, InputError
from kubectl_kyrec.load.documents import iter_objects
from kubectl_kyrec.load.files import expand_paths, read_text
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.json_stream import iter_json_documents_with_items, looks_like_json
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind, failed_list
from kubectl_kyrec.load.run_inputs.secret_digests import PREFIX, SALT_ANNOTATION, SALT_DIGITS, has_digests, parse_salt
from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents
from kubectl_kyrec.model import Document, Source

__all__ = ["LISTED_ANNOTATION", "SERVED_ANNOTATION", "UNREADABLE_ANNOTATION", "StateStream", "load_state",
           "peek_state", "read_state", "state_from_text"]

LISTED_ANNOTATION = "kyrec.io/listed"
UNREADABLE_ANNOTATION = "kyrec.io/unreadable"
SERVED_ANNOTATION = "kyrec.io/served"
EVIDENCE_UNREAD_ANNOTATION = "kyrec.io/evidence-unread"


@dataclass
class _Read:
    objects: list[Document] = field(default_factory=list)
    listed: set[ListedKind] = field(default_factory=set)
    unreadable: dict[ListedKind, FailedRead] = field(default_factory=dict)
    evidence_unread: dict[ListedKind, str] = field(default_factory=dict)
    records: int = 0        # entries of capture records read (listed and unreadable kinds)
    empty_lists: int = 0    # top-level Lists with no items and no record: kubectl get's answer for an empty kind
    served: set[tuple[str, str]] | None = None      # (apiVersion, kind) a capture recorded as served
    salts: list[bytes] = field(default_factory=list)    # of the captures whose Secrets hold digests


def read_state(paths: Sequence[str]) -> ClusterState:
    """The ClusterState of the state files and directories `paths` (objects in reading order).

    A path that gives no object and no record of a listing is an input error: an empty file is what
    `kubectl get ... > state.json` leaves when it fails, and a run over it would check nothing and pass.
    A capture of an empty cluster is no such case: its record says which kinds were listed and found empty."""
    read = _Read()
    dumped: set[tuple[str, str]] = set()
    for given in paths:
        objects, records, empty_lists = len(read.objects), read.records, read.empty_lists
        for path in expand_paths([given]):
            name, text = read_text(path)
            first, recorded = len(read.objects), read.records
            with gc_paused():  # see gc_pause: the whole file, so that the collector never walks a half-built tree
                _read_text(text, name, read)
            if read.records == recorded:
                dumped.update((d.api_version, d.kind) for d in read.objects[first:])
        if len(read.objects) == objects and read.records == records:
            named = "standard input" if given == "-" else given
            if read.empty_lists > empty_lists:
                # kubectl's List of a kind with no objects carries no kind, so it cannot say what was listed:
                # accepting it would let any empty file stand for any kind
                raise InputError(f"{named} is an empty List, which names no kind (kubectl get writes one for a kind "
                                 "with no objects): nothing would be checked. Capture the kinds with kubectl kyrec "
                                 "capture --kind KIND... -o FILE, which records each kind it lists, even when empty")
            raise InputError(f"no objects in {named} and no record of what was listed (kubectl kyrec capture "
                             "writes one): nothing would be checked")
    kinds = {(d.api_version, d.kind) for d in read.objects}
    listed = read.listed | _listed_everywhere(read, kinds, dumped)
    # a kind with objects is served, whichever file holds them
    served = read.served | kinds if read.served is not None else None
    return ClusterState.from_objects(read.objects, listed=listed, unreadable=read.unreadable, source="files",
                                     served=served, secret_salts=read.salts, evidence_unread=read.evidence_unread)


def _listed_everywhere(read: _Read, kinds: set[tuple[str, str]], dumped: set[tuple[str, str]]
                       ) -> set[ListedKind]:
    """The kinds whose objects stand for the kind listed everywhere: `kubectl get` lists whole kinds, so any
    object of a kind `dumped` (read from a file without a capture's record), and of a kind no record names;
    where a capture's record names the kind, it says where it was listed (a LIST in one namespace holds only
    that namespace's objects), as the live run that wrote it knew."""
    recorded = {(k.api_version.rpartition("/")[0], k.kind) for k in (*read.listed, *read.unreadable)}
    return {ListedKind(a, k, "") for a, k in kinds
            if (a, k) in dumped or (a.rpartition("/")[0], k) not in recorded}


def load_state(paths: Sequence[str]) -> list[Document]:
    """Every object in the state files and directories `paths`, in reading order."""
    return read_state(paths).objects


def state_from_text(text: str, file: str) -> list[Document]:
    """The objects of one state file already read; `file` is the name messages use."""
    read = _Read()
    with gc_paused():
        _read_text(text, file, read)
    return read.objects


def _read_text(text: str, file: str, read: _Read) -> None:
    first, salts = len(read.objects), len(read.salts)
    _read_documents(text, file, read)
    if len(read.salts) == salts:
        # digests with no salt beside them cannot be compared with anything: a Secret would read as drifted
        digested = next((d for d in read.objects[first:] if has_digests(d.obj)), None)
        if digested is not None:
            raise InputError(f"Secret {digested.namespace}/{digested.name} holds digests of its values "
                             f"({PREFIX}...) but the file has no {SALT_ANNOTATION} record to compare them with",
                             digested.source)


def _read_documents(text: str, file: str, read: _Read) -> None:
    out = read.objects
    if looks_like_json(text):
        for value, line, item_lines in iter_json_documents_with_items(text, file):
            _read_records(value, line, file, read)
            for item in _top_level_items(value, line, file):
                # each item of a List at its own line (json_stream found where each starts)
                out.extend(Document(obj, Source(file, obj_line)) for obj, obj_line, _ in
                           iter_objects(item, line, None, file, item_lines if item is value else None))
    else:
        for doc in iter_yaml_documents(text, file):
            _read_records(doc.value, doc.line, file, read)
            out.extend(Document(obj, Source(file, obj_line)) for obj, obj_line, _ in
                       iter_objects(doc.value, doc.line, doc.node, file))


def _read_records(value: Any, line: int, file: str, read: _Read) -> None:
    """The capture file's record of what was listed: annotations on the top-level List."""
    if not isinstance(value, dict) or value.get("kind") != "List":
        return
    if not value.get("items"):
        read.empty_lists += 1
    annotations = (value.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, dict):
        return
    if SALT_ANNOTATION in annotations:
        salt = parse_salt(annotations[SALT_ANNOTATION])
        if salt is None:
            raise InputError(f"annotation {SALT_ANNOTATION} must be {SALT_DIGITS} hex digits",
                             Source(file, line))
        read.salts.append(salt)
    served = annotations.get(SERVED_ANNOTATION)
    if served is not None:
        read.served = read.served or set()
        read.served.update((entry["apiVersion"], entry["kind"]) for entry in _entries(SERVED_ANNOTATION, served,
                                                                                        Source(file, line)))
    for key in (LISTED_ANNOTATION, UNREADABLE_ANNOTATION, EVIDENCE_UNREAD_ANNOTATION):
        text = annotations.get(key)
        if text is None:
            continue
        entries = _entries(key, text, Source(file, line))
        read.records += len(entries)
        for entry in entries:
            kind = ListedKind(entry["apiVersion"], entry["kind"], entry.get("namespace") or "")
            if key == UNREADABLE_ANNOTATION:
                read.unreadable[kind] = _recorded_failure(kind, entry)
            elif key == EVIDENCE_UNREAD_ANNOTATION:
                read.evidence_unread[kind] = str(entry.get("message") or "")
            else:
                read.listed.add(kind)


def _recorded_failure(kind: ListedKind, entry: dict[str, Any]) -> FailedRead:
    """A capture's record of a LIST that failed (run/capture_state.py writes it); a capture written before
    the record carried the read's status says only its message."""
    status = entry.get("status")
    return failed_list(kind, str(entry.get("message") or ""), recorded=True,
                       status=status if isinstance(status, int) and not isinstance(status, bool) else None,
                       reason=str(entry.get("reason") or ""), resource=str(entry.get("resource") or ""))


def _entries(key: str, text: Any, where: Source) -> list[dict[str, Any]]:
    """A record annotation's entries: a JSON array of {apiVersion, kind, namespace} (namespace optional)."""
    try:
        entries = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        entries = None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("apiVersion"), str) and isinstance(e.get("kind"), str)
            and isinstance(e.get("namespace", ""), str) for e in entries):
        raise InputError(f"annotation {key} must be a JSON array of {{apiVersion, kind, namespace}}", where)
    return entries


def _top_level_items(value: Any, line: int, file: str) -> Iterator[Any]:
    # `jq -s`, and some exporters, write a bare array of objects.
    if isinstance(value, list):
        if not all(isinstance(item, dict) for item in value):
            raise InputError("a top-level JSON array must hold only objects", Source(file, line))
        yield from value
    else:
        yield value


@dataclass
class StateStream:
    """The state files read as they are evaluated (eval's table, issue 36): `state` holds the whole read's
    record of what was listed (`read_state`'s) but only the objects `keep` chose, what the run looks up before
    or while it evaluates; `objects()` reads every object again, in reading order, one at a time."""

    state: ClusterState
    count: int                  # how many objects the files hold
    files: list[str]

    def objects(self) -> Iterator[Document]:
        from kubectl_kyrec.load.json_stream import NotAList, iter_list_parts

        for path in self.files:
            with open(path, "rb") as stream:
                try:
                    # shared, though the hook is over a third of this pass's instructions: unshared, the
                    # slices held raised the peak at 10,000 Pods from 123-127 to 146-147 MiB (-o json, --jobs 2)
                    for what, value, line in iter_list_parts(stream):
                        if what == "item":
                            yield from (Document(obj, Source(path, obj_line))
                                        for obj, obj_line, _ in iter_objects(value, line, None, path))
                except NotAList:
                    # the first pass read it whole as a List: only a file changed since then gets here
                    raise InputError("the state file changed while it was read", Source(path)) from None


def peek_state(paths: Sequence[str], keep: Callable[[str, str], bool]) -> StateStream | None:
    """The state files `paths` read once, a piece at a time, for `StateStream`: None when they cannot be read
    as they are evaluated, and the whole read (`read_state`) is left to read them or say what is wrong. Each
    file must be one JSON List (`kubectl get -o json`, `kubectl kyrec capture`) of valid objects whose record
    reads, each path must give an object or a record, and no Secret may hold digests (their salt's check and
    notice count them). The record may come after the items: it is complete once the pass ends."""
    from kubectl_kyrec.load.files import STDIN, opened
    from kubectl_kyrec.load.json_stream import NotAList, iter_list_parts

    read = _Read()
    kinds: set[tuple[str, str]] = set()
    dumped: set[tuple[str, str]] = set()
    managed = False
    files: list[str] = []
    count = 0
    try:
        for given in paths:
            if given == STDIN:
                return None
            before = (count, read.records)
            for path in expand_paths([given]):
                opened(path)
                files.append(path)
                top: dict[str, Any] = {}
                top_line, items = 1, 0
                recorded, own = read.records, set[tuple[str, str]]()
                # the objects looked at and dropped, but the few kept: decoded without sharing their strings
                with open(path, "rb") as stream:
                    for what, value, line in iter_list_parts(stream, share=False):
                        if what == "key":
                            top[value[0]], top_line = value[1], line
                            continue
                        items += 1
                        for obj, obj_line, _ in iter_objects(value, line, None, path):
                            count += 1
                            api_version, kind = obj["apiVersion"], obj["kind"]
                            own.add((api_version, kind))
                            managed = managed or bool((obj.get("metadata") or {}).get("managedFields"))
                            if has_digests(obj):
                                return None
                            if keep(api_version, kind):
                                read.objects.append(Document(obj, Source(path, obj_line)))
                if top.get("kind") != "List":
                    return None
                top["items"] = [None] if items else []      # _read_records asks only whether it has items
                _read_records(top, top_line, path, read)
                # as read_state: a file with a capture's record says itself where each kind was listed
                kinds.update(own)
                if read.records == recorded:
                    dumped.update(own)
            if (count, read.records) == before:
                return None
    except (OSError, NotAList, InputError, RecursionError):
        return None
    listed = read.listed | _listed_everywhere(read, kinds, dumped)
    served = read.served | kinds if read.served is not None else None
    state = ClusterState.from_objects(read.objects, listed=listed, unreadable=read.unreadable, source="files",
                                      has_managed_fields=managed, served=served, secret_salts=read.salts,
                                      evidence_unread=read.evidence_unread)
    return StateStream(state, count, files)
