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

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol, cast

from kubectl_kyrec.errors import FailedRead, InputError
from kubectl_kyrec.golang import json as go_json
from kubectl_kyrec.load.documents import iter_objects
from kubectl_kyrec.load.files import expand_paths, read_text
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.json_stream import NotAList, iter_json_documents_with_items, looks_like_json
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
        entries = go_json.loads(text) if isinstance(text, str) else None
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


def peek_state(paths: Sequence[str], keep: Callable[[str, str], bool], beside: Beside | None = None
               ) -> StateStream | None:
    """The state files `paths` read once, a piece at a time, for `StateStream`: None when they cannot be read
    as they are evaluated, and the whole read (`read_state`) is left to read them or say what is wrong. Each
    file must be one JSON List (`kubectl get -o json`, `kubectl kyrec capture`) of valid objects whose record
    reads, each path must give an object or a record, and no Secret may hold digests (their salt's check and
    notice count them). The record may come after the items: it is complete once the pass ends.

    `beside`: where a large file's second half can be read in another process meanwhile (`_scan_file`): this
    pass comes before anything is evaluated, the other cores idle."""
    from kubectl_kyrec.load.files import STDIN, opened

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
                recorded = read.records
                scan = _scan_file(path, keep, beside)
                if scan.digests:
                    return None
                count += scan.count
                managed = managed or scan.managed
                read.objects.extend(scan.kept)
                top = scan.top
                if top.get("kind") != "List":
                    return None
                top["items"] = [None] if scan.items else []      # _read_records asks only whether it has items
                _read_records(top, scan.top_line, path, read)
                # as read_state: a file with a capture's record says itself where each kind was listed
                kinds.update(scan.own)
                if read.records == recorded:
                    dumped.update(scan.own)
            if (count, read.records) == before:
                return None
    except _NOT_SPLIT:
        return None
    listed = read.listed | _listed_everywhere(read, kinds, dumped)
    served = read.served | kinds if read.served is not None else None
    state = ClusterState.from_objects(read.objects, listed=listed, unreadable=read.unreadable, source="files",
                                      has_managed_fields=managed, served=served, secret_salts=read.salts,
                                      evidence_unread=read.evidence_unread)
    return StateStream(state, count, files)


class Beside(Protocol):
    """Runs `work()` in another process while this one goes on (evaluate/fan_out.py call_beside, handed in by
    the command): a handle whose `answer()` waits for what it returned, or None where no process can be had."""

    def __call__(self, work: Callable[[], Any]) -> BesideCall | None: ...


class BesideCall(Protocol):
    def answer(self) -> Any: ...

    def stop(self) -> None: ...


@dataclass
class _Scan:
    """What the first pass takes from one JSON List (or a part of one, `_scan_file`)."""

    top: dict[str, Any] = field(default_factory=dict)       # the List's members but `items`
    top_line: int = 1           # the line of the List's first key (where its record's errors point)
    items: int = 0
    count: int = 0              # the objects of its items (a List among them counts its own)
    own: set[tuple[str, str]] = field(default_factory=set)
    managed: bool = False
    digests: bool = False       # a Secret holds digests: the state is read whole
    kept: list[Document] = field(default_factory=list)
    key_after_items: bool = False


def _scan(stream: BinaryIO, path: str, keep: Callable[[str, str], bool], lines: int = 0) -> _Scan:
    """The first pass over one List (`lines`: how many lines come before `stream`'s text in the file)."""
    from kubectl_kyrec.load.json_stream import iter_list_parts

    scan = _Scan()
    own = scan.own
    # the objects looked at and dropped, but the few kept: decoded without sharing their strings
    for what, value, line in iter_list_parts(stream, share=False):
        if what == "key":
            scan.top[value[0]], scan.top_line = value[1], line + lines
            scan.key_after_items = scan.items > 0
            continue
        scan.items += 1
        for obj, obj_line, _ in iter_objects(value, line + lines, None, path):
            scan.count += 1
            api_version, kind = obj["apiVersion"], obj["kind"]
            own.add((api_version, kind))
            scan.managed = scan.managed or bool((obj.get("metadata") or {}).get("managedFields"))
            if has_digests(obj):
                scan.digests = True
                return scan
            if keep(api_version, kind):
                scan.kept.append(Document(obj, Source(path, obj_line)))
    return scan


# what makes the first pass give up (the whole read says why), and a half of a cut file be scanned again whole
_NOT_SPLIT = (OSError, NotAList, InputError, RecursionError)
# a file at least this large has its second half read beside (below, the fork and the answer cost more)
SPLIT_MIN = 4 << 20
# how far from the middle a place to cut it is looked for
_CUT_WINDOW = 1 << 20
_ITEMS = re.compile(rb'"items"[ \t\r\n]*:[ \t\r\n]*\[([ \t\r\n]*)\{')


def _scan_file(path: str, keep: Callable[[str, str], bool], beside: Beside | None) -> _Scan:
    """`_scan` of one file; a large one is cut in two between two of its items, the second half scanned in
    another process (`beside`) while this one scans the first. The cut is where the text between two items
    is the same as before the first (`},` then a newline and the items' indentation, `{`): a newline is never
    inside a JSON string, and an object deeper down is indented further. Each half is read as a List of its
    own (the first closed with `]}`, the second opened with `{"items":[`), and checked: the cut must fall in
    `items` (no member of the List after the first half's items). Anything else, and the file is scanned
    whole here, as without `beside`."""
    import os

    size = os.path.getsize(path)
    cut = _item_cut(path, size) if beside is not None and size >= SPLIT_MIN else None
    if cut is not None:
        assert beside is not None
        at, lines = cut
        call = beside(lambda: _scan_tail(path, at, keep, lines))
        if call is not None:
            try:
                with open(path, "rb") as file:
                    head = _scan(_Spliced.of(b"", file, 0, at, b"]}"), path, keep)
                if head.digests:
                    return head
                if not head.key_after_items and head.items:
                    tail = call.answer()
                    call = None
                    if tail is not None:
                        return _joined(head, tail, file_top_line(path) if tail.top and not head.top else head.top_line)
            except _NOT_SPLIT:
                pass
            finally:
                if call is not None:
                    call.stop()
    with open(path, "rb") as file:
        return _scan(file, path, keep)


def _scan_tail(path: str, at: int, keep: Callable[[str, str], bool], lines: int) -> _Scan | None:
    """In the other process: `_scan` of the items from `at` on, and the List's members after them; None where
    that text is no List's tail (the whole scan says what is wrong)."""
    try:
        with open(path, "rb") as file:
            # `at` is the comma after an item: the text after it, opened as a List, starts on the comma's line
            return _scan(_Spliced.of(b'{"items":[', file, at + 1, None, b""), path, keep, lines)
    except _NOT_SPLIT:
        return None


def _joined(head: _Scan, tail: _Scan, top_line: int) -> _Scan:
    """The two halves' scans as the whole file's; `top_line`: the List's first key's (the second half's are its
    own text's)."""
    if tail.digests:
        return tail
    return _Scan({**head.top, **tail.top}, top_line, head.items + tail.items, head.count + tail.count,
                 head.own | tail.own, head.managed or tail.managed, False, head.kept + tail.kept, False)


def _item_cut(path: str, size: int) -> tuple[int, int] | None:
    """Where to cut a List between two items, near the middle of the file: the comma after an item, and how many
    lines come before it; None where there is no such place (the items not indented on lines of their own)."""
    with open(path, "rb") as file:
        start = file.read(_CUT_WINDOW)
        found = _ITEMS.search(start)
        if found is None or b"\n" not in found.group(1):
            return None
        between = b"}," + found.group(1) + b"{"
        middle = max(found.end(), size // 2)
        file.seek(middle)
        window = file.read(_CUT_WINDOW)
        where = window.find(between)
        if where < 0:
            return None
        at = middle + where + 1
        file.seek(0)
        lines, read = 0, 0
        while read < at:
            piece = file.read(min(_CUT_WINDOW, at - read))
            if not piece:
                return None
            lines += piece.count(b"\n")
            read += len(piece)
    return at, lines


def file_top_line(path: str) -> int:
    """The line of the first key of the JSON object a file starts with (iter_list_parts's line of its members)."""
    with open(path, "rb") as file:
        start = file.read(_CUT_WINDOW).removeprefix(b"\xef\xbb\xbf")
    opening = re.match(rb"[ \t\r\n]*\{[ \t\r\n]*", start)
    return 1 + (start.count(b"\n", 0, opening.end()) if opening else 0)


class _Spliced:
    """A binary stream of `prefix`, the bytes of `file` from `start` to `stop` (None: its end), and `suffix`."""

    def __init__(self, prefix: bytes, file: BinaryIO, start: int, stop: int | None, suffix: bytes) -> None:
        self.pending = prefix
        self.file = file
        self.left = stop - start if stop is not None else None
        self.suffix = suffix
        file.seek(start)

    @classmethod
    def of(cls, prefix: bytes, file: BinaryIO, start: int, stop: int | None, suffix: bytes) -> BinaryIO:
        # (a stream iter_list_parts reads with `read` alone)
        return cast(BinaryIO, cls(prefix, file, start, stop, suffix))

    def read(self, size: int = -1) -> bytes:
        if self.pending:
            out, self.pending = self.pending, b""
            return out
        if self.left is None or self.left > 0:
            want = size if self.left is None else min(size, self.left) if size >= 0 else self.left
            data = self.file.read(want)
            if data:
                if self.left is not None:
                    self.left -= len(data)
                return data
            self.left = 0
        out, self.suffix = self.suffix, b""
        return out
