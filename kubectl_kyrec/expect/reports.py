"""Expected policy reports: one per subject, named by its uid (docs/semantics/reports.md#report-objects).

Only what the background scan would write: results of policies with background enabled, no
matchConditions skips (the scan filters them), nothing from policies labelled reports.kyverno.io/disabled.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress, groupby
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, overload

from kubectl_kyrec.model import OPENREPORTS, WGPOLICY, Ref, Result

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.pipeline import PairsColumns

REPORT_KINDS: dict[str, tuple[str, str]] = {
    WGPOLICY: ("PolicyReport", "ClusterPolicyReport"),
    OPENREPORTS: ("Report", "ClusterReport"),
}
STATUSES = ("pass", "fail", "warn", "error", "skip")
SYNTHETIC_UID_ANNOTATION = "kyrec.io/uid-synthetic"


def report_result(result: Result, now: datetime.datetime,
                  timestamp: dict[str, int] | None = None) -> dict[str, Any]:
    """One `results[]` entry as Kyverno's ToPolicyReportResult writes it (empty fields omitted).

    Entries share `timestamp` and the result's properties mapping: reports are built in bulk and never
    modified afterwards.
    """
    out: dict[str, Any] = {"source": result.source, "policy": result.policy}
    if result.rule:
        out["rule"] = result.rule
    out["result"] = result.result
    out["message"] = result.message
    out["scored"] = result.scored
    if result.category:
        out["category"] = result.category
    if result.severity:
        out["severity"] = result.severity
    if result.properties:
        out["properties"] = result.properties
    out["timestamp"] = timestamp if timestamp is not None else {"seconds": int(now.timestamp()), "nanos": 0}
    return out


def summary(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return status_summary(str(entry.get("result", "")) for entry in entries)


def status_summary(statuses: Iterable[str]) -> dict[str, int]:
    """A report's `summary` of its entries' `result`s (a writer that knows them counts them at C speed)."""
    counts = dict.fromkeys(STATUSES, 0)
    for status, n in Counter(statuses).items():
        if status in counts:
            counts[status] += n
    return counts


def reported(results: Iterable[Result]) -> list[Result]:
    """The results a report carries, in its order: one per key (later wins), sorted as Kyverno sorts them.

    CEL sources are keyed by source/policy/uid: one result per policy per resource. Classic policies
    (source kyverno) by source/policy/rule/uid: one per rule.
    """
    results = list(results)
    return [results[i] for i in report_order([(r.source, r.policy, r.rule) for r in results])]


def report_order(heads: Sequence[tuple[str, str, str]]) -> list[int]:
    """`reported`'s rule on the (source, policy, rule) of each result: the positions of the results a report
    carries, in its order."""
    keyed: dict[tuple[str, str, str], int] = {}
    for i, (source, policy, rule) in enumerate(heads):
        keyed[(source, policy, rule if source == "kyverno" else "")] = i
    # by (policy, rule, source) of the entries, where an entry without a rule sorts as rule ""
    return sorted(keyed.values(), key=lambda i: (heads[i][1], heads[i][2] or "", heads[i][0]))


def report_entries(results: Iterable[Result], now: datetime.datetime) -> list[dict[str, Any]]:
    """A report's `results[]`: `reported(results)` as entries sharing one timestamp."""
    stamp = {"seconds": int(now.timestamp()), "nanos": 0}
    return [report_result(r, now, stamp) for r in reported(results)]


def build_report(subject: Ref, results: Sequence[Result], now: datetime.datetime,
                 api: str = WGPOLICY, entries: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The report of `subject`: `entries` are its `results[]` when already made from `results`."""
    if entries is None:
        entries = report_entries(results, now)
    return {**report_head(subject, api), "summary": summary(entries), "results": entries}


def report_head(subject: Ref, api: str = WGPOLICY) -> dict[str, Any]:
    """The report of `subject` up to its `summary` and `results` (which come after, in that order)."""
    namespaced_kind, cluster_kind = REPORT_KINDS[api]
    metadata: dict[str, Any] = {"name": subject.uid}
    if subject.namespace:
        metadata["namespace"] = subject.namespace
    metadata["labels"] = {"app.kubernetes.io/managed-by": "kyverno"}
    if subject.synthetic:
        # the subject came from a manifest without a uid: the name is kyrec's stand-in, not a real uid
        metadata["annotations"] = {SYNTHETIC_UID_ANNOTATION: "true"}
    metadata["ownerReferences"] = [{"apiVersion": subject.api_version, "kind": subject.kind,
                                    "name": subject.name, "uid": subject.uid}]
    scope: dict[str, Any] = {"apiVersion": subject.api_version, "kind": subject.kind, "name": subject.name}
    if subject.namespace:
        scope["namespace"] = subject.namespace
    scope["uid"] = subject.uid
    return {
        "apiVersion": api,
        "kind": namespaced_kind if subject.namespace else cluster_kind,
        "metadata": metadata,
        "scope": scope,
    }


def expected_reports(results: Iterable[tuple[Result, bool]], now: datetime.datetime,
                     api: str = WGPOLICY) -> list[dict[str, Any]]:
    """Reports for every subject with at least one reportable result; input pairs (result, reportable)."""
    return list(iter_expected_reports(results, now, api))


def iter_expected_reports(results: Iterable[tuple[Result, bool]], now: datetime.datetime,
                          api: str = WGPOLICY) -> Iterator[dict[str, Any]]:
    """`expected_reports` one report at a time, so a writer never holds them all (one pass to group)."""
    for ref, rs in _by_subject(results).values():
        yield build_report(ref, rs, now, api)


def _by_subject(results: Iterable[tuple[Result, bool]]) -> dict[str, tuple[Ref, list[Result]]]:
    """The reportable results grouped by subject uid, in the order subjects first appear."""
    by_subject: dict[str, tuple[Ref, list[Result]]] = {}
    for result, ok in results:
        if not ok:
            continue
        found = by_subject.get(result.subject.uid)
        if found is None:
            by_subject[result.subject.uid] = (result.subject, [result])
        else:
            found[1].append(result)
    return by_subject


# the shared entries ExpectedReports keeps at most: a run whose every outcome is its own costs no more memory
# than building each report's entries apart
_SHARED_MAX = 20_000


class SharedEntries:
    """Report entries made once per policy outcome: an entry holds nothing of its subject, so the same
    outcome in 10,000 reports is one mapping (reports are never modified, report_result), made once, and
    written once by the YAML writer. Kept up to _SHARED_MAX."""

    def __init__(self, now: datetime.datetime) -> None:
        self.now = now
        self._stamp = {"seconds": int(now.timestamp()), "nanos": 0}
        self._shared: dict[tuple[Any, ...], dict[str, Any]] = {}

    def entries(self, results: list[Result]) -> list[dict[str, Any]]:
        """The entries of `results`, already in report order."""
        shared, now, stamp = self._shared, self.now, self._stamp
        out = []
        for r in results:
            props = r.properties
            key: tuple[Any, ...] = (r.source, r.policy, r.rule, r.result, r.message, r.scored, r.category,
                                    r.severity, *props.items())
            try:
                entry = shared.get(key)
            except TypeError:   # a property value that cannot be hashed: this mapping's own entry
                key = (id(props),)
                entry = shared.get(key)
            if entry is None:
                if len(shared) >= _SHARED_MAX:     # outcomes unique to their subject (a message naming it)
                    shared.clear()
                entry = shared[key] = report_result(r, now, stamp)
            out.append(entry)
        return out


def spilled_reports(records: Iterable[PairsColumns], later: Iterable[tuple[Result, bool]],
                    now: datetime.datetime, api: str = WGPOLICY) -> Iterator[dict[str, Any]]:
    """The reports of `spilled_groups`, each built as its subject's group is done."""
    for subject, entries in spilled_groups(records, later, now):
        yield build_report(subject, (), now, api, entries)


def spilled_groups(records: Iterable[PairsColumns], later: Iterable[tuple[Result, bool]],
                   now: datetime.datetime) -> Iterator[tuple[Ref, list[dict[str, Any]]]]:
    """Each report's subject and `results[]`, of results whose reportable ones of a subject come one after
    another (a run's, whose records hold whole subjects; evaluate/pipeline.py read_columns), a group given as
    it is done: `_by_subject`'s groups, `later` (pairs held apart: a GeneratingPolicy's, which Kyverno reports
    in the trigger's report too) joined to their subject's group, or reported after the others as
    `_by_subject` would group them. ExpectedReports' entries, made without a Result per result: each entry is
    found by the columns of its result (an entry holds nothing of its subject: SharedEntries, the same mapping
    in every report that has it, which render/report_text.py encodes once), and a report's order by the
    (source, policy, rule) of its group, the same for most subjects (kept)."""
    extra = _by_subject(later)
    shared = SharedEntries(now)
    entries: dict[tuple[Any, ...], dict[str, Any]] = {}
    orders: dict[tuple[tuple[str, str, str], ...], list[int]] = {}
    uid: str | None = None
    ref: Ref | None = None
    heads: list[tuple[str, str, str]] = []
    made: list[dict[str, Any]] = []

    def group() -> tuple[Ref, list[dict[str, Any]]]:
        assert ref is not None
        more = extra.pop(uid, None) if extra and uid is not None else None
        if more is not None:
            heads.extend((r.source, r.policy, r.rule) for r in more[1])
            made.extend(shared.entries(more[1]))
        key = tuple(heads)
        order = orders.get(key)
        if order is None:
            if len(orders) >= _SHARED_MAX:
                orders.clear()
            order = orders[key] = report_order(key)
        return ref, list(map(made.__getitem__, order))

    for record in records:
        columns = record.columns
        flags = record.reportable
        at = list(compress(range(len(flags)), flags))
        if not at:
            continue
        source, policy, rule = columns[1], columns[0], columns[2]
        record_heads = list(zip(source, policy, rule))
        record_entries = _record_entries(record, record_heads, entries, shared)
        refs = record.refs
        subjects = columns[5]
        uids = map(attrgetter("uid"), map(refs.__getitem__, map(subjects.__getitem__, at)))
        for subject_uid, run in groupby(zip(uids, at), key=itemgetter(0)):
            positions = list(map(itemgetter(1), run))
            if subject_uid != uid:
                if ref is not None:
                    yield group()
                uid, ref = subject_uid, refs[subjects[positions[0]]]
                heads, made = [], []
            heads.extend(map(record_heads.__getitem__, positions))
            made.extend(map(record_entries.__getitem__, positions))
    if ref is not None:
        yield group()
    for subject, rs in extra.values():
        yield subject, shared.entries(reported(rs))


def _record_entries(record: PairsColumns, heads: list[tuple[str, str, str]],
                    entries: dict[tuple[Any, ...], dict[str, Any]], shared: SharedEntries) -> list[dict[str, Any]]:
    """The report entry of each result of a record (SharedEntries' mappings), by its columns: `entries` keeps
    them by what an entry holds, across records."""
    columns = record.columns
    props = []
    for p in record.properties:
        key: Any = tuple(p.items())
        try:
            hash(key)
        except TypeError:       # a property value that cannot be hashed: this mapping's own entries
            key = object()
        props.append(key)
    keys = list(zip(heads, columns[3], columns[4], columns[6], columns[7], columns[8],
                    map(props.__getitem__, columns[9])))
    missing = set(keys).difference(entries)
    if missing:
        if len(entries) + len(missing) > _SHARED_MAX:
            entries.clear()
            missing = set(keys)
        first = dict(zip(keys, range(len(keys))))
        for key in missing:
            entries[key] = shared.entries([_result_at(record, first[key])])[0]
    return list(map(entries.__getitem__, keys))


def _result_at(record: PairsColumns, i: int) -> Result:
    """The record's result at `i`, made whole."""
    (policy, kind, rule, status, message, subject, scored, category, severity, properties, actions, location,
     policy_location, binding) = (column[i] for column in record.columns)
    sources = record.sources
    return Result(policy, kind, rule, status, message, record.refs[subject], scored, category, severity,
                  record.properties[properties], actions, sources[location], sources[policy_location], binding)


class ExpectedReports(Sequence[dict[str, Any]]):
    """`expected_reports` as a sequence whose reports are built when read.

    The report checks (`coverage`, `diff --reports`) compare one subject's results at a time
    (`reported`, `entries`): on 50,000 subjects, holding every report document cost about 120 MiB
    (three quarters of it the metadata, scope and summary around the results) for nothing they read.
    """

    def __init__(self, results: Iterable[tuple[Result, bool]], now: datetime.datetime, api: str = WGPOLICY):
        self.now = now
        self.api = api
        # each subject's results already in report order (reported() of them is themselves)
        self._groups = {uid: (ref, reported(rs)) for uid, (ref, rs) in _by_subject(results).items()}
        self._uids = list(self._groups)
        self._shared = SharedEntries(now)

    def __len__(self) -> int:
        return len(self._uids)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._report(uid) for uid in self._uids[index]]
        return self._report(self._uids[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self._report(uid) for uid in self._uids)

    def _report(self, uid: str) -> dict[str, Any]:
        ref, rs = self._groups[uid]
        return build_report(ref, rs, self.now, self.api, self._entries(rs))

    def _entries(self, results: list[Result]) -> list[dict[str, Any]]:
        return self._shared.entries(results)

    def uids(self) -> list[str]:
        """The subjects owed a report (each report is named by, and describes, its subject's uid)."""
        return self._uids

    def reported(self, uid: str) -> list[Result]:
        """The results behind the uid's report entries, in their order; [] when it is owed none."""
        group = self._groups.get(uid)
        return group[1] if group is not None else []

    def entries(self, uid: str) -> list[dict[str, Any]]:
        """The `results[]` of the uid's report, built now (the report checks drop them once compared)."""
        group = self._groups.get(uid)
        # not through the shared entries: a check drops them once compared, where the cache would keep them
        return report_entries(group[1], self.now) if group is not None else []
