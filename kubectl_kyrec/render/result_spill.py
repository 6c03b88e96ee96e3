"""Every result of a run, handed on as it is decided and kept on disk, for the outputs that print them all
(issue 36): `-o json`, `-o yaml`, `-o reports`, and the CI formats. With the manifests read as they are
evaluated, the documents' `admission` entries are kept on disk beside them, each as it will be written (the
stored object with it): what of the input objects `-o json|yaml` still need once their results are decided.

The run hands its results here a chunk of whole subjects at a time (run/eval.py run_eval's `on_results`);
each chunk goes to an unlinked temporary file as one record of plain rows (evaluate/pipeline.py
encode_pairs, the codec a worker's answer crosses the pipe in), and is read back, a record at a time, when the
document is written. What stays in memory is what the outputs need before that: the counts (`summary`), how
many subjects are owed a report, and the subjects seen with a reportable result (to tell whether each
subject's reportable results came together, as the reports writer reads them: expect/reports.py
iter_spilled_reports).
"""

from __future__ import annotations

import datetime
import pickle
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import compress, groupby
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from kubectl_kyrec.evaluate.pipeline import (
    AdmissionPairs,
    EncodedPairs,
    PairsColumns,
    PairsReader,
    encode_pairs,
    read_columns,
)
from kubectl_kyrec.model import Ref, Result, ResultPairs
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.render import report_text
from kubectl_kyrec.render.eval_output import SUMMARY_KEYS, admission_json
from kubectl_kyrec.render.items import Items
from kubectl_kyrec.render.spill_file import SpillFile

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.admission_chain import Admission

_POLICY, _SOURCE, _STATUS = (itemgetter(Result._fields.index(name)) for name in ("policy", "source", "result"))
_UID = attrgetter("subject.uid")
_SUBJECT, _PROPERTIES, _LOCATION, _POLICY_LOCATION, _RESULT = (Result._fields.index(name) for name in (
    "subject", "properties", "location", "policy_location", "result"))
T = TypeVar("T")


class ResultSpill:
    """The results handed on, in order, with whether the background scan reports each (ResultPairs)."""

    def __init__(self) -> None:
        self.count = 0
        self.counts = dict.fromkeys(SUMMARY_KEYS, 0)
        # subjects with a reportable result, in order of their first; `scattered`: one of them had results
        # apart from one another (two manifests of one uid), so a report cannot be made as its records pass
        self.reported_subjects = 0
        self.scattered = False
        self._reporting: set[str] = set()
        # every (source, policy) of the results: their labels name the CI formats' suites and rules
        self.policies: set[tuple[str, str]] = set()
        # the first result of each (source, policy) and of each status of results of no policy (`_policyless`:
        # some were met), in order, of the others' records and of the admission chain's (`first_results`):
        # SARIF's rules are made of them before the results are read back; `_seen`: the (source, policy)
        # pairs of each
        self._firsts: tuple[dict[tuple[str, str, str], Result], dict[tuple[str, str, str], Result]] = ({}, {})
        self._seen: tuple[set[tuple[str, str]], set[tuple[str, str]]] = (set(), set())
        self._policyless = False
        self._last_uid: str | None = None
        self._file: SpillFile | None = None
        # the admission chain's results (AdmissionPairs), read back before the rest as a whole run orders them
        self._ahead: SpillFile | None = None
        # the `admission` entries handed on (add_admissions), a pickled list of them per slice
        self.admission_count = 0
        self._admitted: SpillFile | None = None

    def add(self, pairs: ResultPairs) -> None:
        if not len(pairs):
            return
        results = pairs.results
        counts = self.counts
        # counted and collected by C-level iteration: a chunk is thousands of results, each of them counted
        for status, n in Counter(map(_STATUS, results)).items():
            counts[status] = counts.get(status, 0) + n
        reporting, last = self._reporting, self._last_uid
        # the reportable results' subjects, a run of one subject's at a time
        for uid, _ in groupby(map(_UID, compress(results, pairs.reportable))):
            if uid != last:
                if uid in reporting:
                    self.scattered = True
                else:
                    reporting.add(uid)
                    self.reported_subjects += 1
                last = uid
        self._last_uid = last
        ahead = isinstance(pairs, AdmissionPairs)
        # a chunk's first results are looked for only when it holds a (source, policy) its spill had not, or
        # results of no policy (whose rules go by status): most chunks hold neither, and cost a set update
        seen = self._seen[ahead]
        known = len(seen)
        seen.update(zip(map(_SOURCE, results), map(_POLICY, results)))
        if len(seen) > known or self._policyless:
            self._keep_firsts(results, self._firsts[ahead])
        self.count += len(pairs)
        if ahead:
            if self._ahead is None:
                self._ahead = SpillFile()
            self._ahead.write(encode_pairs(pairs))
            return
        if self._file is None:
            self._file = SpillFile()
        # a worker's chunk as it crossed: the same record, not encoded again
        record = pairs.record if isinstance(pairs, EncodedPairs) else None
        self._file.write(record if record is not None else encode_pairs(pairs))

    def _keep_firsts(self, results: list[Result], firsts: dict[tuple[str, str, str], Result]) -> None:
        keys = list(zip(map(_SOURCE, results), map(_POLICY, results), map(_STATUS, results)))
        new = set(keys).difference(firsts)
        if new:
            # each new key's first index: the dict keeps the last value it is given, and the keys come last to first
            at = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))
            for i in sorted(map(at.__getitem__, new)):
                firsts[keys[i]] = results[i]
            self.policies.update((source, policy) for source, policy, _ in new)
            self._policyless = self._policyless or any(not policy for _, policy, _ in new)

    def first_results(self) -> list[Result]:
        """The first result of each (source, policy), and of each status of results of no policy, in the order
        the results are read back (those of the admission chain first): with others maybe, all SARIF's rules
        are made of (render/sarif.py)."""
        rest, ahead = self._firsts
        return [*ahead.values(), *(result for key, result in rest.items() if key not in ahead)]

    def add_admissions(self, admissions: Sequence[Admission]) -> None:
        """A slice's admissions, as the documents' `admission` entries (render/eval_output.admission_json),
        made now: the slice's objects are dropped once its results are handed on."""
        if not admissions:
            return
        if self._admitted is None:
            self._admitted = SpillFile()
        # pickled: the stored objects are the loaders' values (and what mutations put in them) as they are
        self._admitted.write(pickle.dumps([admission_json(a) for a in admissions], protocol=pickle.HIGHEST_PROTOCOL))
        self.admission_count += len(admissions)

    def admission_items(self) -> Items:
        """The `admission` entries handed on, in order, read back a slice's record at a time."""
        def make(start: int, stop: int) -> Iterator[dict[str, Any]]:
            assert (start, stop) == (0, self.admission_count), "spilled admissions are read whole, in order"
            if self._admitted is None:
                return
            spill = self._admitted
            at = 0
            while at < spill.tell_end():
                file = spill.file
                file.seek(at)
                record = pickle.load(file)
                at = file.tell()
                yield from record

        return Items(self.admission_count, make)

    def uids(self) -> set[str]:
        """The subjects owed a report by the results handed on."""
        return self._reporting

    def chunks(self) -> Iterator[ResultPairs]:
        """The results in the whole run's order, a record at a time (read anew on each call): the admission
        chain's, then the rest as they were handed on."""
        return self._records(lambda: PairsReader().read)

    def columns(self) -> Iterator[PairsColumns]:
        """The same records as `chunks`, each as its columns (no Result made: render/result_entries.py)."""
        return self._records(lambda: read_columns)

    def _records(self, reader: Callable[[], Callable[[BinaryIO], T | None]]) -> Iterator[T]:
        for spill in (self._ahead, self._file):
            if spill is None:
                continue
            read = reader()
            at = 0
            while True:
                # each reader at its own place: two of them may be part-way at once (a document's results and
                # the reports after them are two reads)
                file = spill.file
                file.seek(at)
                record = read(file)
                if record is None:
                    break
                at = file.tell()
                yield record

    def results(self, status: str | None = None) -> Iterator[Result]:
        """The results in order; `status`: only those of it, each made from its record's columns (the
        others never made: `-o reports` reads the undetermined ones for its notes)."""
        if status is None:
            for pairs in self.chunks():
                yield from pairs.results
            return
        for record in self.columns():
            statuses = record.columns[_RESULT]
            for i in compress(range(len(statuses)), map(status.__eq__, statuses)):
                yield result_at(record, i)

    def close(self) -> None:
        for file in (self._ahead, self._file, self._admitted):
            if file is not None:
                file.close()
        self._ahead = self._file = self._admitted = None


def spilled_report_items(spill: ResultSpill, later: Sequence[tuple[Result, bool]], now: datetime.datetime,
                         api: str) -> Items:
    """The expected reports of the spilled results and of `later` (pairs the run held apart: a
    GeneratingPolicy's), as expect/reports.py ExpectedReports makes them of all of them in that order,
    each built as it is written."""
    from kubectl_kyrec.expect.reports import ExpectedReports, spilled_groups, spilled_reports

    if spill.scattered:
        # a subject's results apart from one another: grouped as ExpectedReports groups them, held
        pairs = ResultPairs()
        for chunk in spill.chunks():
            pairs.extend(chunk)
        pairs.extend(later)
        held = ExpectedReports(pairs, now, api)
        return Items(len(held), lambda start, stop: (held[i] for i in range(start, stop)), shared=True)
    owed = spill.uids()
    count = spill.reported_subjects + len({r.subject.uid for r, ok in later if ok and r.subject.uid not in owed})

    def make(start: int, stop: int) -> Iterator[dict[str, Any]]:
        assert (start, stop) == (0, count), "the spilled reports are read whole, in order"
        return spilled_reports(spill.columns(), later, now, api)

    def groups() -> Iterator[tuple[Ref, list[dict[str, Any]]]]:
        return spilled_groups(spill.columns(), later, now)

    # the reports share their entries and timestamp, and are never changed: each entry's text is made once
    return Items(count, make, shared=True, json=lambda indent: report_text.json_reports(groups(), api, indent),
                 yaml=lambda: report_text.yaml_reports(groups(), api),
                 documents=lambda: report_text.yaml_documents(groups(), api))


class SpilledFindings(Collection[Finding]):
    """The spilled results as findings (reconcile/findings.py result_findings), made a record at a time each
    time they are iterated: what the CI formats read (`-o junit|sarif|github`), which read them in passes
    (counts first, then the cases), never all at once."""

    def __init__(self, spill: ResultSpill, command: str = "eval") -> None:
        self.spill = spill
        self.command = command
        self._labels: dict[tuple[str, str], str] | None = None

    def __len__(self) -> int:
        return self.spill.count

    def __contains__(self, item: object) -> bool:
        return any(f == item for f in self)

    @property
    def labels(self) -> dict[tuple[str, str], str]:
        """Each (source, policy) shared by two kinds, its label (load/policy/policies.policy_labels)."""
        from kubectl_kyrec.load.policy.policies import policy_labels

        if self._labels is None:
            # two policies of one name and different kinds are two suites, rules and baseline keys
            self._labels = policy_labels(self.spill.policies)
        return self._labels

    def __iter__(self) -> Iterator[Finding]:
        from kubectl_kyrec.reconcile.findings import result_findings

        labels = self.labels
        for pairs in self.spill.chunks():
            yield from result_findings(pairs.results, self.command, labels)

    def records(self) -> Iterator[PairsColumns]:
        """The findings' results as their records' columns (no Finding made): what the CI formats write
        their entries from (render/sarif.py, junit.py, github.py), each record's entries joined at C speed."""
        return self.spill.columns()

    def first_findings(self) -> list[Finding]:
        """The findings of the first result of each (source, policy), in order
        (ResultSpill.first_results): all a rule of a policy or an outcome is made of."""
        from kubectl_kyrec.reconcile.findings import result_findings

        return result_findings(self.spill.first_results(), self.command, self.labels)

    def findings_at(self, record: PairsColumns, indexes: Iterable[int]) -> list[Finding]:
        """The findings of a record's results at `indexes`: the few a writer reads whole (a rule's first)."""
        from kubectl_kyrec.reconcile.findings import result_findings

        return result_findings([result_at(record, i) for i in indexes], self.command, self.labels)


def result_at(record: PairsColumns, index: int) -> Result:
    """The Result at `index` of a record's columns, its tables' values in place of their indexes."""
    fields = [column[index] for column in record.columns]
    fields[_SUBJECT] = record.refs[fields[_SUBJECT]]
    fields[_PROPERTIES] = record.properties[fields[_PROPERTIES]]
    fields[_LOCATION] = record.sources[fields[_LOCATION]]
    fields[_POLICY_LOCATION] = record.sources[fields[_POLICY_LOCATION]]
    return Result(*fields)
