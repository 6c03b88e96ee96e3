"""Renderers for `eval`: table, wide, json/yaml (the contract), reports, GitHub annotations.

Each format is a `write_*(run, stream)` that writes as it goes: nothing builds a document the format does
not need, the JSON and YAML documents are written result by result (never held whole), the summary is
counted on the way, and the expected reports are built only by the formats that print them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import chain, compress
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TextIO

from kubectl_kyrec.load.policy.policies import policy_labels
from kubectl_kyrec.model import UNDETERMINED, Result, Source
from kubectl_kyrec.reconcile.masking import mask_object
from kubectl_kyrec.render import result_entries as entries
from kubectl_kyrec.render.envelope import error_entries
from kubectl_kyrec.render.fit import ID, REF, TEXT, Column
from kubectl_kyrec.render.fit import write_table as write_fitted
from kubectl_kyrec.render.items import Items
from kubectl_kyrec.render.joined import Joined
from kubectl_kyrec.render.text_table import write_rows
from kubectl_kyrec.render.yaml_emit import Blocks, to_yaml

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.admission_chain import Admission
    from kubectl_kyrec.evaluate.classic.mutate_existing_preview import TargetPreview
    from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
    from kubectl_kyrec.evaluate.pipeline import PairsColumns
    from kubectl_kyrec.model import EvalError, ResultPairs
    from kubectl_kyrec.reconcile.impact import Impact
    from kubectl_kyrec.render.spill_file import SpillFile


class HandedResults(Protocol):
    """A run's results as it handed them on, kept apart from it (render/result_spill.py ResultSpill)."""

    count: int
    counts: dict[str, int]

    def chunks(self) -> Iterator[ResultPairs]: ...
    def columns(self) -> Iterator[PairsColumns]: ...
    def results(self, status: str | None = None) -> Iterator[Result]: ...
    def admission_items(self) -> Items: ...


class EvalView(Protocol):
    """What the eval renderers read of a run (run/eval.py EvalResult is one): render sits below run, so it
    names the fields it needs instead of the run's type."""

    results: list[Result]
    generated: GeneratingOutcome
    errors: list[EvalError]
    notices: list[str]
    impact: Impact | None
    change_fails: bool
    only_changes: bool
    empty_reason: str
    admissions: list[Admission]
    target_changes: list[TargetPreview]
    # the admissions went where the results did, as they were decided (`admissions` holds only the mutated ones)
    admissions_handed: bool

    # the results as the run handed them on, spilled (render/result_spill.py), when it kept none itself
    @property
    def handed(self) -> HandedResults | None: ...

    def report_items(self) -> Items: ...

STATUS_ORDER = {"error": 0, "fail": 1, UNDETERMINED: 2, "warn": 3, "skip": 4, "pass": 5}
# what the default table lists: the results that need attention; passing and skipped ones are counted
ATTENTION = frozenset(("error", "fail", UNDETERMINED, "warn"))
SUMMARY_KEYS = ("pass", "fail", "warn", "error", "skip", UNDETERMINED)


def _loc(source: Source | None) -> dict[str, Any] | None:
    return source.as_location() if source is not None else None


def result_json(r: Result) -> dict[str, Any]:
    return {
        "policy": r.policy, "source": r.source, "rule": r.rule, "subject": r.subject.to_json(),
        "result": r.result, "message": r.message, "scored": r.scored, "category": r.category,
        "severity": r.severity, "validationActions": list(r.validation_actions),
        "properties": dict(r.properties), "location": _loc(r.location), "policyLocation": _loc(r.policy_location),
    }


class _ResultsJson:
    """`results` entries, result by result.

    A subject's ref and a location are shared by many results: their JSON is made once and reused (the
    encoders write a shared mapping like any other).
    """

    def __init__(self, results: Sequence[Result]) -> None:
        self.results = results

    def __iter__(self) -> Iterator[dict[str, Any]]:
        # by id, not by value: hashing a Ref or a Source runs dataclass code in Python, and the results
        # keep every one alive while this runs
        refs: dict[int, dict[str, Any]] = {}
        locations: dict[int, dict[str, Any] | None] = {id(None): None}
        for r in self.results:
            subject = refs.get(id(r.subject))
            if subject is None:
                subject = refs[id(r.subject)] = r.subject.to_json()
            loc = r.location
            location = locations.get(id(loc), False)
            if location is False:
                location = locations[id(loc)] = loc.as_location()       # type: ignore[union-attr]
            ploc = r.policy_location
            policy_location = locations.get(id(ploc), False)
            if policy_location is False:
                policy_location = locations[id(ploc)] = ploc.as_location()      # type: ignore[union-attr]
            properties = r.properties
            # the encoders write a tuple as a list and a shared dict as it is: no copies
            yield {"policy": r.policy, "source": r.source, "rule": r.rule, "subject": subject,
                   "result": r.result, "message": r.message, "scored": r.scored, "category": r.category,
                   "severity": r.severity, "validationActions": r.validation_actions,
                   "properties": properties if type(properties) is dict else dict(properties),
                   "location": location, "policyLocation": policy_location}


_PARTS_MAX = 20_000


class _ResultsParts:
    """The `results` entries of `_ResultsJson` for the YAML writer: each a Joined of its six parts
    (render/result_entries.py's `*_part` functions), each part one object per distinct value, shared by every result
    that has it. A result's text is then six reused texts (yaml_emit writes a part once): most results differ
    from the others only in which subject, outcome and properties they join."""

    def __init__(self, results: Sequence[Result]) -> None:
        self.results = results

    def __iter__(self) -> Iterator[Joined]:
        heads: dict[tuple[str, str, str], dict[str, Any]] = {}
        refs: dict[int, dict[str, Any]] = {}
        outcomes: dict[tuple[Any, ...], dict[str, Any]] = {}
        properties: dict[Any, dict[str, Any]] = {}
        locations: dict[int, dict[str, Any]] = {}
        policy_locations: dict[int, dict[str, Any]] = {}
        # the id-keyed parts are of objects the results hold (alive while this runs: no id is reused);
        # the outcome and property parts are kept up to _PARTS_MAX, for runs whose messages are all unique
        for r in self.results:
            key = (r.policy, r.source, r.rule)
            head = heads.get(key)
            if head is None:
                head = heads[key] = entries.head_part(*key)
            subject = refs.get(id(r.subject))
            if subject is None:
                subject = refs[id(r.subject)] = entries.subject_part(r.subject)
            okey = (r.result, r.message, r.scored, r.category, r.severity, r.validation_actions)
            outcome = outcomes.get(okey)
            if outcome is None:
                if len(outcomes) >= _PARTS_MAX:
                    outcomes.clear()
                outcome = outcomes[okey] = entries.outcome_part(*okey)
            props = r.properties
            # the shared mappings of a result without properties of its own by id, others by content
            pkey: Any = id(props) if len(props) == 1 else tuple(props.items())
            try:
                prop = properties.get(pkey)
            except TypeError:   # a value that cannot be hashed: by id
                pkey = id(props)
                prop = properties.get(pkey)
            if prop is None:
                if len(properties) >= _PARTS_MAX:
                    properties.clear()
                prop = properties[pkey] = entries.properties_part(props)
            loc = r.location
            location = locations.get(id(loc))
            if location is None:
                location = locations[id(loc)] = entries.location_part(loc)
            loc = r.policy_location
            policy_location = policy_locations.get(id(loc))
            if policy_location is None:
                policy_location = policy_locations[id(loc)] = entries.policy_location_part(loc)
            yield Joined((head, subject, outcome, prop, location, policy_location))


def summary(results: Iterable[Result]) -> dict[str, int]:
    counts = dict.fromkeys(SUMMARY_KEYS, 0)
    for r in results:
        counts[r.result] = counts.get(r.result, 0) + 1
    return counts


def downstreams_json(generated: GeneratingOutcome) -> list[dict[str, Any]]:
    """`eval`'s `downstreams`: {policy, trigger, object}, objects masked (no Secret value, no last-applied).
    Here, not beside diff's renderers: every `-o json|yaml` writes the key, and diff_output's import (the
    report, deletion and cause domains) is of no use to an eval that generates nothing."""
    return [{"policy": o.policy.key, "trigger": o.trigger.ref.to_json(), "object": mask_object(obj)}
            for o, obj in generated.downstreams]


def eval_parts(run: EvalView, baseline: dict[str, Any] | None = None) -> Iterator[tuple[str, Any]]:
    """The EvalResult document's keys after the envelope, in contract order; the results are made as they
    are written, so `summary` is counted from them apart. `baseline`: render/baseline_state.py's key."""
    results = run.results
    handed = run.handed
    # a subject's ref and the locations are shared by many results (_ResultsJson), never changed
    if handed is None:
        yield "results", Items(len(results), lambda start, stop: _ResultsJson(results[start:stop]),
                                shared=True, parts=lambda start, stop: _ResultsParts(results[start:stop]))
    else:
        yield "results", _spilled_items(handed)
    if run.admissions_handed:
        assert handed is not None, "the admissions were handed on with the results"
        yield "admission", handed.admission_items()
    else:
        admissions = run.admissions
        yield "admission", Items(len(admissions),
                                 lambda start, stop: (admission_json(a) for a in admissions[start:stop]))
    yield "downstreams", downstreams_json(run.generated)
    if run.target_changes:
        # only with --state/--live and a mutate-existing rule: what applying this changes on existing targets
        yield "mutateExisting", [t.to_json() for t in run.target_changes]
    yield "reports", run.report_items()
    yield "errors", error_entries(run.errors)
    yield "notices", list(dict.fromkeys(run.notices))      # each once, as on stderr (cli emit_notices)
    yield "summary", summary(results) if handed is None else dict(handed.counts)
    if run.impact is not None:
        # imported here: only an impact (--base-policy) shows unified diffs
        from kubectl_kyrec.render import unified_diff as unified

        # what the exit code counted (`exitOn`) and whether the change itself fails the run (`introduced`)
        yield "impact", {**run.impact.to_json(unified.unified_diff), "exitOn": exit_on(run),
                         "introduced": run.change_fails}
    if baseline is not None:
        yield "baseline", baseline


def _spilled_items(handed: HandedResults) -> Items:
    """The `results` entries of results spilled as the run handed them on, read back a record at a time:
    each record's entries made as the held ones are (_ResultsJson, _ResultsParts), which share what they
    make by the ids of the record's objects, alive while it is written."""
    def make(kind: Callable[[Sequence[Result]], Iterable[Any]]) -> Callable[[int, int], Iterator[Any]]:
        def records(start: int, stop: int) -> Iterator[Any]:
            assert (start, stop) == (0, handed.count), "spilled results are read whole, in order"
            for pairs in handed.chunks():
                yield from kind(pairs.results)
        return records

    return Items(handed.count, make(_ResultsJson), shared=True, parts=make(_ResultsParts),
                 json=lambda indent: entries.json_entries(handed.columns(), indent),
                 yaml=lambda: entries.yaml_entries(handed.columns()))


def admission_json(admission: Admission) -> dict[str, Any]:
    """One `admission` entry: what the API server's admission chain made of a manifest (docs/output.md)."""
    subject = admission.subject
    return {
        "subject": subject.ref.to_json(),
        "operation": admission.operation,
        "location": _loc(subject.source),
        "defaulted": admission.defaulted,
        "mutations": [m.as_dict() for m in admission.mutations],
        "undetermined": list(admission.undetermined),
        # as it would be stored; a DELETE stores nothing
        "object": None if admission.operation == "DELETE" else subject.obj,
    }


# _sort_key's order among results of one status, by a C-level key (a run may have tens of thousands of notes)
_NOTE_ORDER = attrgetter("policy", "subject.kind", "subject.namespace", "subject.name")


def _undetermined_notes(results: Iterable[Result]) -> Iterator[str]:
    for r in sorted((r for r in results if r.result == UNDETERMINED), key=_NOTE_ORDER):
        yield (f"# {UNDETERMINED}: {r.policy} for {r.subject.display()}: {' '.join(r.message.split())} "
               "(the report holds a result for it that kyrec cannot decide)\n")


def write_reports(run: EvalView, stream: TextIO) -> None:
    """`-o reports`: the expected reports as a YAML stream, built and written one at a time."""
    handed = run.handed
    # the spilled results are read for their notes only when they were counted to have one
    if handed is None or handed.counts.get(UNDETERMINED):
        for note in _undetermined_notes(run.results if handed is None else handed.results(UNDETERMINED)):
            stream.write(note)
    # a mutate-existing rule's entry in its trigger's report that kyrec cannot decide (the preview says why)
    for note in _undetermined_notes(e[0] for p in run.target_changes
                                    for e in ((p.report,) if p.report is not None else ()) + p.trigger_entries):
        stream.write(note)
    _write_report_stream(run.report_items(), stream.write)


def _write_report_stream(reports: Iterable[dict[str, Any]], write: Callable[[str], object]) -> int:
    """Reports as YAML documents, `---` between them (none before the first); returns how many."""
    texts: Iterable[str]
    if isinstance(reports, Items) and reports.documents is not None:
        texts = reports.documents()     # the reports as text already (render/report_text.py)
    else:
        blocks: Blocks = {}     # the reports share their entries (ExpectedReports): each written once
        texts = (to_yaml(report, blocks) for report in reports)
    out: list[str] = []
    count = 0
    for text in texts:
        if count:
            out.append("---\n")
        out.append(text)
        count += 1
        if len(out) >= 200:
            write("".join(out))
            out.clear()
    write("".join(out))
    return count


def _sort_key(r: Result) -> tuple[int, str, str, str, str]:
    return (STATUS_ORDER.get(r.result, 9), r.policy, r.subject.kind, r.subject.namespace, r.subject.name)


def _summary_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items() if v or k != UNDETERMINED)


BASELINED = " (baselined)"


# with `spill`, the listed rows are sorted and written to a temporary file this many at a time
SPILL_ROWS = 50_000
_SPILL_RECORD = 1_000       # rows per record of a spilled run, read back one record at a time


class TableTally:
    """What the results table needs of a run's results, taken as they come (`add`, a chunk at a time): the
    counts in all and per policy, the rows it lists (those that need attention; every one with `show_all`)
    and whether a ClusterPolicy/Policy answered (the RULE column). A run whose output is the table alone
    hands its results here as they are decided and keeps no other (issue 36).

    `spill` (a table not fitted to a width: on a pipe or in a file): the listed rows are kept as their text,
    sorted SPILL_ROWS at a time into an unlinked temporary file, and merged back in order as the table is
    written, so that memory does not grow with the rows either; else they are kept as results."""

    def __init__(self, show_all: bool = False, spill: bool = False, wide: bool = False) -> None:
        self.show_all = show_all
        self.wide = wide                    # spilled rows are written as -o wide's
        self.count = 0
        self.counts = dict.fromkeys(SUMMARY_KEYS, 0)
        # by (source, policy), labelled once every result is in (load/policy/policies.policy_labels)
        self.per_policy: dict[tuple[str, str], dict[str, int]] = {}
        self.shown: list[Result] = []
        self.rules = False
        self.spill = spill
        self.listed = 0                     # rows listed, spilled or not
        self._rows: list[tuple[Any, ...]] = []
        self._runs: list[SpillFile] = []
        self._flat: dict[str, str] = {}
        self._prefixes: dict[tuple[str, str, str, str], str] = {}
        # of the spilled rows: the (source, policy) keys listed, the rules, and the longest cell of each
        # column after the rule (index in a row - _MEASURED_FROM): the table's widths without reading them
        self._spilled_keys: set[tuple[str, str]] = set()
        self._spilled_rules: set[str] = set()
        self._spilled_longest: list[int] = []

    @classmethod
    def of(cls, results: Iterable[Result], show_all: bool = False) -> TableTally:
        tally = cls(show_all)
        tally.add(results)
        return tally

    def add(self, results: Iterable[Result]) -> None:
        """Count a chunk of results and keep the rows it lists. Counted a chunk at a time by C-level
        iteration (a large run hands 100,000s of results here, a few thousand at a time), in the order
        the results came: the counts' first keys and the rows are those one result at a time gives."""
        chunk = results if isinstance(results, list) else list(results)
        statuses = list(map(_STATUS, chunk))
        self.count += len(chunk)
        counts, per_policy = self.counts, self.per_policy
        for status, n in Counter(statuses).items():
            counts[status] = counts.get(status, 0) + n
        for (source, name, status), n in Counter(zip(map(_SOURCE, chunk), map(_POLICY, chunk), statuses)).items():
            policy = per_policy.get((source, name))
            if policy is None:
                policy = per_policy[(source, name)] = dict.fromkeys(SUMMARY_KEYS, 0)
                self.rules = self.rules or source == "kyverno"
            policy[status] = policy.get(status, 0) + n
        listed = chunk if self.show_all else list(compress(chunk, map(ATTENTION.__contains__, statuses)))
        self.listed += len(listed)
        if not self.spill:
            self.shown.extend(listed)
        elif listed:
            self._keep_rows(listed)

    def _keep_rows(self, listed: list[Result]) -> None:
        """The rows of `listed` as the table's text (_SpilledTable's fields), spilled SPILL_ROWS at a time.
        A subject's results share its Ref and Source: each is made text once per chunk."""
        flat, rows, wide, prefixes = self._flat, self._rows, self.wide, self._prefixes
        displays: dict[int, str] = {}
        locations: dict[int, str] = {}
        for r in listed:
            message = flat.get(r.message)
            if message is None:
                if len(flat) > SPILL_ROWS:
                    flat.clear()
                message = flat[r.message] = " ".join(r.message.split())
            ref = r.subject
            display = displays.get(id(ref))
            if display is None:
                display = displays[id(ref)] = ref.display()
            where = r.location
            location = locations.get(id(where))
            if location is None:
                location = locations[id(where)] = str(where) if where else ""
            # the sort key first (_sort_key's fields as one string), then what _write_plain makes a row of, then
            # -o wide's own cells (the rule cell as the table shows it: no rule is "-")
            prefix = prefixes.get((r.result, r.policy, ref.kind, ref.namespace))
            if prefix is None:
                if len(prefixes) > SPILL_ROWS:
                    prefixes.clear()
                prefix = prefixes[(r.result, r.policy, ref.kind, ref.namespace)] = _key_prefix(
                    STATUS_ORDER.get(r.result, 9), r.policy, ref.kind, ref.namespace)
            row = (prefix + ref.name, r.policy, r.source, r.rule or "-", display, r.result, message, location)
            rows.append((*row, ",".join(r.validation_actions), r.severity or "-") if wide else row)
            if len(rows) >= SPILL_ROWS:
                self._spill_rows()
                rows = self._rows

    def _spill_rows(self) -> None:
        import pickle

        from kubectl_kyrec.render.spill_file import SpillFile

        rows = self._rows
        keys, rules, longest = self._measured(rows)
        self._spilled_keys |= keys
        self._spilled_rules |= rules
        self._spilled_longest = longest
        rows.sort(key=_SPILLED_KEY)
        file = SpillFile()      # kept until the table is written
        for start in range(0, len(rows), _SPILL_RECORD):
            file.write(pickle.dumps(rows[start:start + _SPILL_RECORD], protocol=pickle.HIGHEST_PROTOCOL))
        self._runs.append(file)
        self._rows = []

    def _measured(self, rows: list[tuple[Any, ...]]) -> tuple[set[tuple[str, str]], set[str], list[int]]:
        """What the table's widths need of `rows`, and of the rows spilled before them (by C-level
        iteration: a large run lists 100,000s of rows)."""
        longest = self._spilled_longest or [0] * (len(rows[0]) - _MEASURED_FROM if rows else 0)
        if rows:
            longest = [max(known, max(map(len, map(itemgetter(i), rows))))
                       for i, known in enumerate(longest, _MEASURED_FROM)]
        return set(map(itemgetter(2, 1), rows)), set(map(itemgetter(3), rows)), longest

    def spilled_widths(self, labels: Mapping[tuple[str, str], str], rules: bool) -> list[int]:
        """The longest cell of each column of the spilled table (`_SpilledTable`'s rows), as write_rows's
        first pass over them would find it."""
        keys, rule_cells, longest = self._measured(self._rows)
        keys |= self._spilled_keys
        rule_cells |= self._spilled_rules
        names = max((len(labels.get(key, key[1]) if labels else key[1]) for key in keys), default=0)
        rule = max((len(r or "-") for r in rule_cells), default=0)
        subject, result, message, location = longest[:4]
        if self.wide:
            actions, severity = longest[4:]
            return [names, rule, subject, result, message, actions, severity, location]
        return [names, rule, subject, result, message, location] if rules else \
            [names, subject, result, message, location]

    def spilled_rows(self) -> Iterator[tuple[Any, ...]]:
        """The rows kept with `spill`, in the table's order: the runs in the file merged with those held
        (each run sorted, stably, and merged in the order made: the order of one stable sort of them all)."""
        self._rows.sort(key=_SPILLED_KEY)
        runs = [_read_run(run.file) for run in self._runs]
        runs.append(iter((self._rows,)))
        return chain.from_iterable(_merged(runs))

    def close(self) -> None:
        for file in self._runs:
            file.close()
        self._runs = []


# a spilled row's cells from the subject on (display, result, message, location, -o wide's actions and
# severity) are measured as they are; the policy and rule cells are written changed (a label, "-")
_MEASURED_FROM = 4


_STATUS, _SOURCE, _POLICY = itemgetter(3), itemgetter(1), itemgetter(0)     # Result's fields


# a spilled row's sort key, first in the row: _sort_key's fields as one string (_key_prefix), so that sorting
# and merging the rows compares one string per pair of rows, not a tuple of five (the table's tail at 50,000
# Pods sorts and merges 100,000s of rows)
_SPILLED_KEY = itemgetter(0)


def _key_prefix(order: int, policy: str, kind: str, namespace: str) -> str:
    """The start of a spilled row's sort key, the subject's name after it: strings of these order as the tuples
    (order, policy, kind, namespace, name) do. Each field but the last ends with NUL NUL, a NUL in it written
    NUL \\x01: a field that is the start of another then sorts first, as in a tuple, whatever follows."""
    return "".join((chr(0x30 + order), *(field.replace("\0", "\0\1") + "\0\0" for field in (policy, kind, namespace))))


def _read_run(file: BinaryIO) -> Iterator[list[tuple[Any, ...]]]:
    """A spilled run's records (_SPILL_RECORD rows each), one at a time."""
    import pickle

    file.seek(0)
    while True:
        try:
            yield pickle.load(file)
        except EOFError:
            return


def _merged(runs: list[Iterator[list[tuple[Any, ...]]]]) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of `runs` (each sorted on _SPILLED_KEY, read a record at a time) in the order of one stable
    sort of them all, the runs in the order given, a block at a time. The table's serial tail: heapq.merge
    took a Python step and a key per row (100,000s of rows after the last result, on one core); here each
    block is a C-level sort of a few sorted pieces, one piece of each run. Every row below the smallest
    last key of the records in hand (`bound`) of the runs still read is in hand: those rows, the pieces
    concatenated in the runs' order, are the next block once stably sorted. Rows equal to `bound` wait
    (more may follow in a record not yet read); the runs whose last row in hand is `bound` read their
    next record, so each round reads at least one."""
    key = _SPILLED_KEY
    sources: list[Iterator[list[tuple[Any, ...]]] | None] = list(runs)
    held: list[list[tuple[Any, ...]]] = [[] for _ in runs]
    start = [0] * len(runs)             # the first row of held[i] not yet given
    reading = list(range(len(runs)))    # the runs whose records are not all read
    bound: Any = None
    while True:
        for i in reading:
            # a run out of rows in hand, or whose last row in hand is `bound`, reads its next record (on while
            # that holds: a record may be empty, or all of it `bound`)
            while (source := sources[i]) is not None and (start[i] == len(held[i]) or key(held[i][-1]) == bound):
                record = next(source, None)
                if record is None:
                    sources[i] = None
                else:
                    held[i], start[i] = held[i][start[i]:] + record, 0
        reading = [i for i in reading if sources[i] is not None]
        if not reading:
            pieces = [rows[at:] for rows, at in zip(held, start, strict=True) if at < len(rows)]
            if pieces:
                yield _block(pieces)
            return
        bound = min(key(held[i][-1]) for i in reading)
        pieces = []
        for i, rows in enumerate(held):
            at = start[i]
            cut = bisect_left(rows, bound, at, key=key)
            if cut > at:
                pieces.append(rows[at:cut])
                start[i] = cut
        if pieces:
            yield _block(pieces)


def _block(pieces: list[list[tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
    """One block of `_merged`: its sorted pieces, in the runs' order, as one stable sort of them."""
    return pieces[0] if len(pieces) == 1 else sorted(chain.from_iterable(pieces), key=_SPILLED_KEY)


# a spilled row's cells in the order of the table's columns: -o wide's, the plain table's with and without RULE
_WIDE_CELLS, _RULE_CELLS, _PLAIN_CELLS = itemgetter(1, 3, 4, 5, 6, 8, 9, 7), itemgetter(1, 3, 4, 5, 6, 7), \
    itemgetter(1, 4, 5, 6, 7)


class _SpilledTable:
    """The spilled rows as the plain table's cells, made anew each time they are iterated (write_rows
    reads them twice: the widths, then the lines)."""

    def __init__(self, tally: TableTally, labels: Mapping[tuple[str, str], str], rules: bool) -> None:
        self.tally, self.labels, self.rules = tally, labels, rules

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        labels, rules = self.labels, self.rules
        if not labels:
            # no policy relabelled: each row's cells picked by a C-level call (100,000s of rows, one core)
            cells = _WIDE_CELLS if self.tally.wide else _RULE_CELLS if rules else _PLAIN_CELLS
            return map(cells, self.tally.spilled_rows())
        return self._labelled()

    def _labelled(self) -> Iterator[tuple[str, ...]]:
        labels, rules = self.labels, self.rules
        if self.tally.wide:
            for (_, policy, source, rule, subject, result, message, location, actions,
                 severity) in self.tally.spilled_rows():
                yield (labels.get((source, policy), policy), rule, subject, result, message, actions, severity,
                       location)
            return
        for (_, policy, source, rule, subject, result, message, location) in self.tally.spilled_rows():
            name = labels.get((source, policy), policy)
            yield (name, rule, subject, result, message, location) if rules else (name, subject, result, message,
                                                                                   location)


def write_table(run: EvalView, stream: TextIO, *, wide: bool = False, show_all: bool = False,
                width: int | None = None, baselined: Collection[int] = (), tally: TableTally | None = None) -> None:
    """The results that need attention (error, fail, undetermined, warn), one row each; then the counts
    per policy and in all. Passing and skipped rows too with `-o wide` or `--show-all`. Fitted to `width`
    (render/fit.py; None: no limit) unless `wide`. `baselined`: the ids of the results `--baseline`
    accepts, whose RESULT reads `fail (baselined)`. `tally`: the results as the run handed them on, when
    it kept none (`run.results` is then empty)."""
    if tally is None:
        tally = TableTally.of(run.results, show_all or wide)
    if not tally.count:
        stream.write(run.empty_reason + "\n")
    else:
        _write_results_table(tally, stream, wide=wide, width=width, baselined=baselined)
    if any(a.mutations for a in run.admissions):
        stream.write("\n")
        _write_mutations(run.admissions, stream, width=None if wide else width)
    if run.target_changes:
        stream.write("\n")
        _write_target_changes(run.target_changes, stream, width=None if wide else width)
    # their renderers are imported only for a run that has such tables (the import costs 0.06 s)
    if run.generated.downstreams:
        from kubectl_kyrec.render.diff_output import render_downstreams

        stream.write("\n" + render_downstreams(run.generated, wide=wide, width=width))
    if run.impact is not None:
        from kubectl_kyrec.render.impact_output import render_impact_table

        extra = render_impact_table(run.impact, wide=wide, width=width)
        if extra:
            stream.write("\n" + extra)
        stream.write("\n" + exit_rule(run) + "\n")


def exit_on(run: EvalView) -> str:
    """With --base-policy, what the exit code counts: `changes` (--only-changes) or `results-and-changes`."""
    return "changes" if run.only_changes else "results-and-changes"


def exit_rule(run: EvalView) -> str:
    """The table's last line with --base-policy: which rule decided the exit code, and what it found."""
    found = "the change introduces some" if run.change_fails else "the change introduces none"
    if run.only_changes:
        return f"Exit code: only the policy change's failures count (--only-changes); {found}."
    return f"Exit code: failing results (--fail-on) and the policy change's failures count; {found}."


_MUTATION_COLUMNS = (Column("MUTATED", REF), Column("POLICY"), Column("RULE"), Column("CHANGE", TEXT, label="change"))


def _write_mutations(admissions: Sequence[Admission], stream: TextIO, *, width: int | None) -> None:
    """One row per mutation, in admission order: the subject, the policy (and rule or binding), and the
    patch's ops as `op path` (the values are in -o json)."""
    rules = any(m.rule for a in admissions for m in a.mutations)
    cells = []
    for a in admissions:
        for m in a.mutations:
            ops = ", ".join(f"{op.get('op')} {op.get('path')}" for op in m.patch)
            cells.append((a.subject.ref.display(), m.policy, *((m.rule or "-",) if rules else ()), ops))
    # RULE only when a classic rule or a binding mutated: the CEL kinds have none
    write_fitted(stream, _MUTATION_COLUMNS if rules else tuple(c for c in _MUTATION_COLUMNS if c.header != "RULE"),
                 cells, width)


_TARGET_COLUMNS = (Column("MUTATE-EXISTING TARGET", REF), Column("POLICY"), Column("RULE"), Column("TRIGGER", REF),
                   Column("RESULT"), Column("CHANGE", TEXT, label="change"))


def _write_target_changes(previews: Sequence[TargetPreview], stream: TextIO, *, width: int | None) -> None:
    """One row per target a mutate-existing rule would change (or skip, or fail on): the patch's ops as `op
    path` for a pass (the values are in -o json), else the message."""
    cells = []
    for t in previews:
        c = t.change
        api_version, kind, namespace, name = c.target
        target = (f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}") if kind else "-"
        change = ", ".join(f"{op.get('op')} {op.get('path')}" for op in c.patch) if c.patch else c.message or "-"
        cells.append((target, c.policy, c.rule or "-", t.trigger.display(), c.result, change))
    write_fitted(stream, _TARGET_COLUMNS, cells, width)


# ClusterPolicy/Policy answer per rule, so RULE is a column when any of them answered. The message goes
# under its row when the row does not fit whole; then LOCATION, the file:line a terminal user opens in an
# editor, goes under it too, on a line of its own (never dropped: the row's most useful cell there).
_COLUMNS = (Column("POLICY"), Column("RULE"), Column("SUBJECT", REF), Column("RESULT"), Column("MESSAGE", TEXT),
            Column("LOCATION", ID, drop=1, under=True))
_NO_RULES = tuple(c for c in _COLUMNS if c.header != "RULE")


def _write_plain(shown: Sequence[Result], stream: TextIO, *, width: int | None, rules: bool,
                 baselined: Collection[int], labels: Mapping[tuple[str, str], str]) -> None:
    """The results table, fitted to `width` (render/fit.py): no name or path is ever cut."""
    # messages and locations recur (one message per failing validation, one file for many rows): each
    # distinct one is flattened or formatted once
    # (by id: the results hold their subjects and locations alive, and many rows share each)
    flat: dict[str, str] = {}
    where: dict[int, str] = {id(None): ""}
    named: dict[int, str] = {}
    cells = []
    for r in shown:
        message = flat.get(r.message)
        if message is None:
            message = flat[r.message] = " ".join(r.message.split())
        location = where.get(id(r.location))
        if location is None:
            location = where[id(r.location)] = str(r.location)
        subject = named.get(id(r.subject))
        if subject is None:
            subject = named[id(r.subject)] = r.subject.display()
        result = r.result + BASELINED if baselined and id(r) in baselined else r.result
        policy = labels.get((r.source, r.policy), r.policy) if labels else r.policy
        cells.append((policy, *((r.rule or "-",) if rules else ()), subject, result, message, location))
    write_fitted(stream, _COLUMNS if rules else _NO_RULES, cells, width)


_WIDE_HEADERS = ("POLICY", "RULE", "SUBJECT", "RESULT", "MESSAGE", "ACTIONS", "SEVERITY", "LOCATION")


def _write_results_table(tally: TableTally, stream: TextIO, *, wide: bool, width: int | None,
                         baselined: Collection[int]) -> None:
    counts, shown = tally.counts, tally.shown
    # a ValidatingPolicy and a ClusterPolicy of one name are two rows of counts (load/policy/policies.policy_labels)
    labels = policy_labels(set(tally.per_policy))
    per_policy: dict[str, dict[str, int]] = {}
    for (source, name), policy_counts in tally.per_policy.items():
        label = labels.get((source, name), name) if labels else name
        into = per_policy.setdefault(label, dict.fromkeys(SUMMARY_KEYS, 0))
        for key, count in policy_counts.items():
            into[key] = into.get(key, 0) + count
    if tally.spill and tally.listed:
        rows = _SpilledTable(tally, labels, tally.rules)
        widths = tally.spilled_widths(labels, tally.rules)
        try:
            if tally.wide:
                write_rows(stream, _WIDE_HEADERS, rows, cell_widths=widths)
            else:
                write_fitted(stream, _COLUMNS if tally.rules else _NO_RULES, rows, None,  # type: ignore[arg-type]
                             cell_widths=widths)
        finally:
            tally.close()
    elif shown:
        shown.sort(key=_sort_key)
        if wide:
            write_rows(stream, _WIDE_HEADERS, [
                (labels.get((r.source, r.policy), r.policy), r.rule or "-", r.subject.display(),
                 r.result + BASELINED if baselined and id(r) in baselined else r.result,
                 " ".join(r.message.split()), ",".join(r.validation_actions), r.severity or "-",
                 str(r.location) if r.location else "")
                for r in shown])
        else:
            _write_plain(shown, stream, width=width, rules=tally.rules, baselined=baselined, labels=labels)
    else:
        stream.write("No result fails, errs or warns.\n")
    keys = [k for k in SUMMARY_KEYS if k != UNDETERMINED or counts[k]]
    stream.write("\n")
    count_headers = ("POLICY", *(k.upper() for k in keys))
    count_rows: Sequence[Sequence[str]] = [(policy, *(str(c[k]) for k in keys))
                                           for policy, c in sorted(per_policy.items())]
    # nothing in it can be fitted: a policy's name is printed whole, whatever the width
    write_rows(stream, count_headers, count_rows, right=range(1, len(keys) + 1))
    hidden = tally.count - tally.listed
    stream.write("\n")
    if hidden:
        stream.write(f"({hidden} passing or skipped result(s) not listed: -o wide or --show-all lists them)\n")
    # a baselined result is a failing one: the table lists it
    accepted = sum(1 for r in shown if id(r) in baselined) if baselined else 0
    stream.write(_summary_line(counts) + (f"; baselined: {accepted}" if accepted else "") + "\n")
