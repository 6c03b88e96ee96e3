"""GitHub Actions: workflow-command annotations at file:line, and the whole list in the step summary.

GitHub shows at most 10 annotations of each level (error, warning, notice) per step and drops the rest
silently. So kyrec prints the first 10 of each level, most severe first, ends with a notice saying how many
were left out, and, when `$GITHUB_STEP_SUMMARY` is set, appends every finding to that file as a Markdown
table with the counts (`step_summary`; the file is written by cli.ci_outputs, renderers write no files).
GitHub refuses a step summary over 1 MiB, so the table stops below it; its last line says how many rows it
left out.

Levels. A `fail` of a policy whose validationActions hold `Deny` (or that has none, as in Kyverno's CLI)
is an `::error`: Kyverno would refuse the change. A `fail` of an Audit-only or Warn-only policy is a
`::warning`: at admission Kyverno lets such a request through (Audit records it in a report, Warn returns
an admission warning), so the reviewer sees it as what it will be in the cluster. The exit code is not
changed by this: it follows `--fail-on` and `--fail-on-actions`, as Kyverno's CLI does. Findings accepted by
a `--baseline`, and results kyrec cannot decide offline (`undetermined`), are `::notice`s.

A read the run needed that failed is an `::error` of its own, before the findings' (they cover only what was
read), and the step summary says the run is incomplete before its counts.
"""

from __future__ import annotations

import heapq
import io
from collections.abc import Collection, Iterable, Sequence
from itertools import compress, repeat
from operator import eq
from typing import IO, TYPE_CHECKING

from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.model import Result
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.reconcile.findings import summary as count_findings

if TYPE_CHECKING:
    from kubectl_kyrec.render.result_spill import SpilledFindings

GITHUB_LIMIT = 10          # annotations shown per level and step
LEVEL_ORDER = ("error", "warning", "notice")


def escape_data(text: str) -> str:
    """The message part of a workflow command (after `::`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file, title): also `:` and `,`, which would end the value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def level_of(f: Finding) -> str | None:
    if f.undetermined:
        return "notice"
    if not f.is_finding:
        return None
    if f.baselined:
        return "notice"
    return f.level


def _sort_key(f: Finding) -> tuple[int, str, str, str]:
    return (LEVEL_ORDER.index(level_of(f) or "notice"), f.policy, f.subject_display(), f.where)


def annotation(f: Finding, level: str) -> str:
    props = []
    if f.location is not None:
        props.append(f"file={escape_property(f.location.file)}")
        if f.location.line:
            props.append(f"line={f.location.line}")
    title = ": ".join(p for p in (f.policy or f.command, f.subject_display()) if p)
    if f.baselined:
        title += " (baselined)"
    props.append(f"title={escape_property(title)}")
    message = f.message or f.message_class
    if f.undetermined:
        message = f"{f.outcome}: {message}"
    return f"::{level} {','.join(props)}::{escape_data(message)}"


def read_annotation(read: FailedRead) -> str:
    """A read that failed: an `::error` with no file (it is about the cluster, not a line of the repository)."""
    return (f"::error title={escape_property('kyrec: read failed: ' + read.short())}::"
            f"{escape_data(read.line().removeprefix('error: '))}")


def annotation_lines(findings: Iterable[Finding], limit: int = GITHUB_LIMIT,
                     failed_reads: Sequence[FailedRead] = ()) -> list[str]:
    """The annotations, most severe first: the failed reads, then the findings by level, at most `limit`
    of each level (the failed reads count among the errors). Of the findings, only the first `limit` of
    each level are kept as they pass (_First), and how many there are: a run's findings are never held."""
    by_level: dict[str, list[Finding | FailedRead]] = {level: [] for level in LEVEL_ORDER}
    by_level["error"].extend(failed_reads)
    from kubectl_kyrec.render.result_spill import SpilledFindings

    first = {level: _First(limit) for level in LEVEL_ORDER}
    if isinstance(findings, SpilledFindings):
        _first_spilled(findings, first)
    else:
        for f in findings:
            level = level_of(f)
            if level is not None:
                first[level].add(f)
    for level, kept in first.items():
        by_level[level].extend(kept.sorted())
    sizes = {level: kept.count for level, kept in first.items()}
    sizes["error"] += len(failed_reads)
    left_out = {level: max(0, size - limit) for level, size in sizes.items()}
    # the closing notice is itself a notice: keep room for it among the 10
    notice_room = limit - 1 if any(left_out.values()) else limit
    if sizes["notice"] > notice_room:
        left_out["notice"] = sizes["notice"] - notice_room
    lines: list[str] = []
    for level in LEVEL_ORDER:
        room = notice_room if level == "notice" else limit
        lines.extend(read_annotation(f) if isinstance(f, FailedRead) else annotation(f, level)
                     for f in by_level[level][:room])
    total = sum(left_out.values())
    if total:
        parts = ", ".join(f"{n} {level}{'s' if n > 1 else ''}" for level, n in left_out.items() if n)
        lines.append(f"::notice title=kyrec::{total} more finding{'s' if total > 1 else ''} not annotated "
                     f"({parts}): GitHub shows {limit} annotations per level and step; the step summary "
                     "lists them all")
    return lines


class _First:
    """The first `limit` findings in `_sort_key`'s order, ties in the order they came (as a stable sort of
    them all would put them), kept as they pass: sorted and cut whenever the kept grow past four times
    `limit`; `count`: how many passed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.kept: list[tuple[tuple[int, str, str, str], int, Finding]] = []

    def add(self, f: Finding) -> None:
        self.kept.append((_sort_key(f), self.count, f))
        self.count += 1
        if len(self.kept) > 4 * self.limit + 64:
            self.kept.sort(key=_by_key)
            del self.kept[self.limit:]

    def extend(self, kept: list[tuple[tuple[int, str, str, str], int, Finding]], count: int) -> None:
        """`count` findings passed, of which these (with their keys and places) are all that could be kept."""
        self.kept.extend(kept)
        self.count += count
        if len(self.kept) > 4 * self.limit + 64:
            self.kept.sort(key=_by_key)
            del self.kept[self.limit:]

    def sorted(self) -> list[Finding]:
        self.kept.sort(key=_by_key)
        del self.kept[self.limit:]
        return [f for _, _, f in self.kept]


_F = {name: i for i, name in enumerate(Result._fields)}
_POLICY, _SOURCE, _RESULT, _SUBJECT, _ACTIONS, _LOCATION = (_F[n] for n in (
    "policy", "source", "result", "subject", "validation_actions", "location"))


def _first_spilled(findings: SpilledFindings, first: dict[str, _First]) -> None:
    """`annotation_lines`' pass over spilled findings (never baselined), from their records' columns: each
    result's level and `_sort_key` made by C-level maps, and a Finding only of each record's first `limit`
    of a level in that order (what `_First` could keep of them)."""
    labels = findings.labels
    levels: dict[tuple[str, tuple[str, ...]], str | None] = {}
    for record in findings.records():
        columns = record.columns
        keys = list(zip(columns[_RESULT], columns[_ACTIONS]))
        for outcome, actions in set(keys).difference(levels):
            # the level is the finding's: one made of what it depends on
            levels[outcome, actions] = level_of(Finding(findings.command, "", "", "", None, outcome, "", outcome,
                                                        validation_actions=tuple(actions)))
        of = list(map(levels.__getitem__, keys))
        names: list[str] = list(map(labels.get, zip(columns[_SOURCE], columns[_POLICY]),  # type: ignore[arg-type]
                                    columns[_POLICY]))
        refs, sources = record.refs, record.sources
        displays = {i: refs[i].display() for i in set(columns[_SUBJECT])}
        wheres = {i: "" if sources[i] is None else str(sources[i]) for i in set(columns[_LOCATION])}
        for level, kept in first.items():
            at = list(compress(range(len(of)), map(eq, repeat(level), of)))  # (str.__eq__(None) is truthy)
            if not at:
                continue
            order = LEVEL_ORDER.index(level)
            sort_keys = zip(repeat(order), map(names.__getitem__, at),
                            map(displays.__getitem__, map(columns[_SUBJECT].__getitem__, at)),
                            map(wheres.__getitem__, map(columns[_LOCATION].__getitem__, at)))
            # (key, place among the level's results of the record): ties in the order they came
            chosen = heapq.nsmallest(kept.limit, zip(sort_keys, range(len(at))))
            made = findings.findings_at(record, [at[place] for _, place in chosen])
            kept.extend([(key, kept.count + place, f) for (key, place), f in zip(chosen, made)], len(at))


def _by_key(entry: tuple[tuple[int, str, str, str], int, Finding]) -> tuple[tuple[int, str, str, str], int]:
    return entry[0], entry[1]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


# GitHub refuses a step summary over 1 MiB (and shows none of it); kyrec stays this far below
STEP_SUMMARY_BYTES = 1024 * 1024 - 64 * 1024


def step_summary(findings: Collection[Finding], *, title: str, fixed: Sequence[str] = (),
                 limit: int = STEP_SUMMARY_BYTES, failed_reads: Sequence[FailedRead] = ()) -> str:
    """Markdown for `$GITHUB_STEP_SUMMARY`: whether the run is incomplete (`failed_reads`), counts, then every
    finding (and baseline entries now fixed), in at most `limit` bytes of UTF-8: rows that would pass it are
    left out, and a last line says how many."""
    counts = count_findings(findings)
    out = [f"### {title}", ""]
    if failed_reads:
        out += [f"**Incomplete**: {len(failed_reads)} read(s) failed; the results below cover only what was read.",
                "", *(f"- {_cell(r.short())}: {_cell(r.message)}" for r in failed_reads), ""]
    out += ["| outcome | count |", "|---|---:|"]
    out += [f"| {key} | {value} |" for key, value in counts.items()]
    out.append("")
    used = sum(len(line.encode()) + 1 for line in out)
    # the closing line's room is kept from the start: it is written when anything is left out
    room = limit - used - 200
    fitting = _Fitting(room)
    for f in findings:
        if f.is_finding or f.undetermined:
            fitting.add(f)
    shown = fitting.lines()
    rows = fitting.count + len(fixed)
    written = 0

    def add(line: str) -> bool:
        nonlocal room
        size = len(line.encode()) + 1
        if size > room:
            return False
        room -= size
        out.append(line)
        return True

    if shown:
        if add("| level | policy | subject | file:line | message |") and add("|---|---|---|---|---|"):
            for line in shown:
                if not add(line):
                    break
                written += 1
    else:
        out.append("No findings.")
    heading = f"Baseline entries no longer found ({len(fixed)}), which the baseline file can drop:"
    if fixed and written == fitting.count and add("") and add(heading) and add(""):
        for entry in fixed:
            if not add(f"- {_cell(entry)}"):
                break
            written += 1
    if written < rows:
        out += ["", f"{rows - written} of {rows} rows left out: GitHub takes at most 1 MiB of step summary "
                "(-o sarif or -o junit to a file holds them all)."]
    return "\n".join(out) + "\n"


def _summary_row(f: Finding) -> str:
    return (f"| {level_of(f)} | {_cell(f.policy or f.command)} | {_cell(f.subject_display())} | {_cell(f.where)} | "
            f"{_cell(f.message or f.message_class)} |")


class _Fitting:
    """The step summary's rows as findings pass, in `_sort_key`'s order (ties in the order they came, as a
    stable sort puts them), holding only a bounded number: the summary shows a prefix of that order that fits
    in `room` bytes, so whenever the kept findings grow past twice the rows that fitted at the last cut
    (and 4,096) they are sorted, their rows made from the first on (each row once: kept with its finding) and
    cut after the first row that passes `room`, whose key then turns away every later finding at or past it;
    the writer cuts again, exactly, on what room is left. A run's
    failing findings are never all held (eval's spilled results would be made Findings and kept, one per
    result), and rows are made only of findings that reach a prefix."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.count = 0
        self.fitted = 0
        self.beyond: tuple[int, str, str, str] | None = None
        self.kept: list[tuple[tuple[int, str, str, str], int, Finding, str | None]] = []

    def add(self, f: Finding) -> None:
        key = _sort_key(f)
        self.count += 1
        # at or past the first row that did not fit at the last cut: in no prefix that fits (a tie comes later)
        if self.beyond is not None and key >= self.beyond:
            return
        self.kept.append((key, self.count, f, None))
        if len(self.kept) > 2 * self.fitted + 4096:
            self._cut()

    def _cut(self) -> None:
        kept = self.kept
        kept.sort(key=_row_order)
        total = 0
        for i, (key, place, f, row) in enumerate(kept):
            if row is None:
                row = _summary_row(f)
                kept[i] = key, place, f, row
            total += len(row.encode()) + 1
            if total > self.room:
                del kept[i + 1:]
                self.beyond = key
                break
        self.fitted = len(kept)

    def lines(self) -> list[str]:
        self._cut()
        return [row for _, _, _, row in self.kept if row is not None]


def _row_order(entry: tuple[tuple[int, str, str, str], int, Finding, str | None]
               ) -> tuple[tuple[int, str, str, str], int]:
    return entry[0], entry[1]


def write(findings: Iterable[Finding], stream: IO[str], failed_reads: Sequence[FailedRead] = ()) -> None:
    """The annotations; the caller appends `step_summary` to `$GITHUB_STEP_SUMMARY` (cli.ci_outputs)."""
    for line in annotation_lines(findings, failed_reads=failed_reads):
        stream.write(line + "\n")


def render(findings: Iterable[Finding], failed_reads: Sequence[FailedRead] = ()) -> str:
    out = io.StringIO()
    write(findings, out, failed_reads)
    return out.getvalue()
