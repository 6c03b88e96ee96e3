"""Table for `kyrec coverage`: the counts lead, then totals with what they are made of, then the gaps."""

from __future__ import annotations

import io
import json
import textwrap
from collections.abc import Collection, Sequence
from typing import Any

from kubectl_kyrec.expect.reports import STATUSES
from kubectl_kyrec.model import Ref
from kubectl_kyrec.producers.kubescape_coverage import VulnerabilityCoverage
from kubectl_kyrec.reconcile.claims import ClaimClass, Completeness
from kubectl_kyrec.reconcile.coverage import Coverage
from kubectl_kyrec.render.fit import (
    REF,
    TEXT,
    Column,
    cause_header,
    cause_lines,
    render_table,
    with_causes,
    wrap_counts,
)
from kubectl_kyrec.render.text_table import write_rows

_COUNT_LABELS = (("inScope", "in scope"), ("current", "current"), ("missing", "missing"), ("stale", "stale"),
                 ("duplicate", "duplicate"), ("misnamed", "misnamed"), ("excluded", "excluded"),
                 ("orphan", "orphan reports"))


def _ref(ref: Ref | None) -> str:
    return ref.display() if ref is not None else "-"


def _value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


BASELINED = " (baselined)"


def _fitted(rows: Sequence[Sequence[Any]], columns: Sequence[Column], *, wide: bool, width: int | None) -> str:
    """A table of the cells as text, fitted to `width` (render/fit.py) unless `wide`."""
    return render_table(columns, [[str(cell) for cell in row] for row in rows], None if wide else width)


def _counts(headers: Sequence[str], rows: Sequence[Sequence[object]], right: range) -> str:
    """A small table of counts, never fitted: `right` holds the count columns, each at least 2 wider than
    its header (the layout the goldens were recorded with)."""
    out = io.StringIO()
    write_rows(out, headers, [[str(cell) for cell in row] for row in rows], right=right, pad=2)
    return out.getvalue().rstrip("\n")


def _counts_columns(first: str) -> list[Column]:
    return [Column(first), *(Column(s.upper(), right=True) for s in STATUSES)]


def _sentence(text: str, *, wide: bool, width: int | None) -> str:
    # wrapped at spaces only: a name in the sentence is never broken
    return text if wide or width is None else textwrap.fill(text, width, break_long_words=False,
                                                           break_on_hyphens=False)


def _names(names: Sequence[str]) -> str:
    """An indented list of names, each whole."""
    return "\n".join("  " + name for name in names)


def render_coverage(cov: Coverage, wide: bool = False, width: int | None = None,
                    baselined: Collection[int] = ()) -> str:
    """The counts, the totals, the subjects without a current report. Fitted to `width` (render/fit.py;
    None: no limit) unless `wide`. `baselined`: the ids of the subject rows `--baseline` accepts, whose
    STATUS reads `missing (baselined)`."""
    counts = dict(cov.counts)
    sections = [_counts(["SUBJECTS", "COUNT"], [[label, counts[key]] for key, label in _COUNT_LABELS], range(1, 2))]

    done = cov.derived_from
    if done.complete:
        where = _complete(done)
    else:
        where = (f"Totals from {done.current} of {done.in_scope} subjects in scope; {_gaps(done)}: not "
                 f"cluster-wide." + (f" {_excluded(done)}." if done.excluded else ""))
    totals = cov.totals.to_json()
    sections.append(_sentence(where, wide=wide, width=width) + "\n" + _counts(
        [s.upper() for s in STATUSES], [[totals[s] for s in STATUSES]], range(len(STATUSES))))
    if cov.per_policy:
        rows = [[policy, *(c.to_json()[s] for s in STATUSES)] for policy, c in cov.per_policy]
        sections.append(_fitted(rows, _counts_columns("POLICY"), wide=wide, width=width))

    gaps = [s for s in cov.subjects if s.status != "current"]
    if gaps:
        gap_rows = [[str(s.status) + (BASELINED if baselined and id(s) in baselined else ""),
                     s.gap or "", s.reason or "", _ref(s.subject), _ref(s.report)] for s in gaps]
        # each gap's cause (reconcile/causes.py), as `diff` shows a change's: a CAUSE column in -o wide,
        # a line under its row otherwise
        causes = [s.cause.text if s.cause else "" for s in gaps]
        if wide:
            table = _fitted(with_causes(gap_rows, causes), [*_GAP_COLUMNS, *(Column(h) for h in cause_header(causes))],
                            wide=True, width=width)
        else:
            table = render_table(_GAP_COLUMNS, gap_rows, width, cause_lines(causes))
        sections.append("Subjects without a current report:\n" + table)
    if cov.orphans:
        sections.append("Orphan reports:\n" + _names([_ref(r) for r in cov.orphans]))
    if cov.unused_exclusions:
        sections.append(_unused_exclusions(cov.unused_exclusions, wide=wide, width=width))
    return "\n\n".join(sections) + "\n"


_GAP_COLUMNS = (Column("STATUS"), Column("COVERS"), Column("REASON", TEXT, label="reason"), Column("SUBJECT", REF),
                Column("REPORT", REF))
# the match is a list of key=value words (kind, name, selector): wrapped at its spaces, never inside a word
_UNUSED_COLUMNS = (Column("INDEX", right=True), Column("LOCATION"), Column("MATCH", TEXT, label="match"),
                   Column("REASON", TEXT, label="reason"))


def _complete(done: Completeness) -> str:
    """The line over complete totals: every subject in scope current, or excluded (then how many and why)."""
    if not done.excluded:
        return f"Totals from all {done.in_scope} subjects in scope:"
    return f"Totals complete: from {done.current} current subjects of {done.in_scope} in scope, {_excluded(done)}:"


def _gaps(done: Completeness, whole: bool = False) -> str:
    """`4 are neither current nor excluded (missing 1, stale 3)`; `whole`: `4 of 9 subjects in scope are ...`."""
    who = f"{done.incomplete_subjects} of {done.in_scope} subjects in scope" if whole else str(done.incomplete_subjects)
    return f"{who} are neither current nor excluded ({', '.join(f'{status} {n}' for status, n in done.gaps)})"


def _excluded(done: Completeness) -> str:
    """`2 excluded: <reason> (1); <reason> (1)`: the exclusions' reasons, each with the number of subjects it
    excuses."""
    return f"{done.excluded_subjects} excluded: " + "; ".join(f"{reason} ({n})" for reason, n in done.excluded)


def _unused_exclusions(unused: Sequence[Any], *, wide: bool, width: int | None) -> str:
    rows = [[u.index, str(u.source), " ".join(f"{k}={_value(v)}" for k, v in u.match), u.reason] for u in unused]
    return "Unused exclusions (match no subject in scope):\n" + _fitted(rows, _UNUSED_COLUMNS, wide=wide,
                                                                         width=width)


_VULN_COUNT_LABELS = (("inScope", "in scope"), ("current", "current"), ("missing", "missing"), ("stale", "stale"),
                      ("duplicate", "duplicate"), ("misnamed", "misnamed"), ("split", "split"),
                      ("unpaired", "unpaired"), ("excluded", "excluded"), ("orphan", "orphan summaries"),
                      ("splitSummaries", "split summaries"), ("unpairedSummaries", "unpaired summaries"),
                      ("splitUndetermined", "split undetermined"))


def render_vulnerability_coverage(cov: VulnerabilityCoverage, wide: bool = False,
                                  width: int | None = None) -> str:
    """Subjects are containers; totals are stated only from a complete set, else refused with the count.
    Fitted to `width` as `render_coverage` is, unless `wide`."""
    counts = dict(cov.counts)
    sections = [_counts(["SUBJECTS", "COUNT"], [[label, counts[key]] for key, label in _VULN_COUNT_LABELS],
                        range(1, 2))]
    totals = cov.totals.to_json()
    done = cov.totals.done
    if done.complete:
        relevant = totals["relevant"]
        sections.append(_sentence(_complete(done), wide=wide, width=width) + "\n" + _counts(
            ["CRITICAL", "HIGH", "RELEVANT CRITICAL", "RELEVANT HIGH"],
            [[totals["critical"], totals["high"], relevant["critical"], relevant["high"]]], range(4)))
    else:
        partial = totals["partial"]
        sections.append(_sentence(
            f"Totals refused: incomplete, {_gaps(done, whole=True)}."
            + (f" {_excluded(done)}." if done.excluded else ""), wide=wide, width=width) + "\n" + _sentence(
            f"Partial sums from {partial['subjects']} current subjects (not cluster-wide): "
            f"critical {partial['critical']}, high {partial['high']}, relevant critical "
            f"{partial['relevant']['critical']}, relevant high {partial['relevant']['high']}.",
            wide=wide, width=width))
    rows = []
    for s in cov.subjects:
        if s.row.status == ClaimClass.CURRENT:
            continue
        pairing = s.verdict.pairing
        paired = "" if pairing is None or pairing.paired is True else (
            (pairing.reason or "") + (f" (resolves in {','.join(pairing.resolves_in)})"
                                      if pairing.resolves_in else ""))
        claim = s.verdict.claim
        integrity = str(s.verdict.integrity or "")
        reasons = [s.row.reason or "", integrity, paired]
        if not wide:
            # fewer columns: the reason, a summary that is not intact and why it is unpaired share one column,
            # each said once (the STATUS split or unpaired already says which axis); -o wide shows the three
            own = "" if s.row.status == ClaimClass.UNPAIRED else reasons[0]
            shown = "" if integrity == "intact" or s.row.status == ClaimClass.SPLIT else integrity
            reasons = [", ".join(part for part in (own, shown, paired) if part)]
        rows.append([s.row.status, s.row.gap or "", *reasons, _ref(s.verdict.subject.subject), s.container,
                     claim.ref.name if claim else "-"])
    if rows:
        headers = ["STATUS", "COVERS", "REASON", "INTEGRITY", "UNPAIRED", "WORKLOAD", "CONTAINER", "SUMMARY"]
        if not wide:
            headers[2:5] = ["REASON"]
        columns = [Column(h, TEXT, label=h.lower()) if h in ("REASON", "INTEGRITY", "UNPAIRED")
                   else Column(h, REF) if h == "WORKLOAD" else Column(h) for h in headers]
        sections.append("Subjects without a current summary:\n" + _fitted(rows, columns, wide=wide, width=width))
    evidence = [[s.row.excluded_by, _ref(s.verdict.subject.subject), s.container, s.row.evidence]
                for s in cov.subjects if s.row.evidence]
    if evidence:
        sections.append("Evidence recorded with the exclusions:\n" + _fitted(
            evidence, (Column("INDEX", right=True), Column("WORKLOAD", REF), Column("CONTAINER"),
                       Column("EVIDENCE", TEXT, label="evidence")), wide=wide, width=width))
    if cov.orphans:
        sections.append("Orphan summaries:\n" + _names([f"{_ref(r)}  {why}" for r, why in cov.orphans]))
    if cov.split:
        sections.append("Split summaries (listed metadata behind the stored payload):\n"
                        + _names([_ref(r) for r in cov.split]))
    if cov.out_of_scope:
        counts_text = [f"{k} {v}" for k, v in cov.out_of_scope]
        head = "Out of scope by rule (containers):"
        sections.append(head + " " + ", ".join(counts_text) if wide else wrap_counts(head, counts_text, width))
    if cov.unused_exclusions:
        sections.append(_unused_exclusions(cov.unused_exclusions, wide=wide, width=width))
    return "\n\n".join(sections) + "\n"
