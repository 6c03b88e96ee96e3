"""Table for `kyrec coverage`: the counts lead, then totals with what they are made of, then the gaps."""

from __future__ import annotations

import io
import json
import textwrap
from collections.abc import Container, Mapping, Sequence
from typing import Any

from tabulate import tabulate

from kubectl_kyrec.expect.reports import STATUSES
from kubectl_kyrec.model import Ref
from kubectl_kyrec.producers.kubescape_coverage import VulnerabilityCoverage
from kubectl_kyrec.reconcile.coverage import Coverage
from kubectl_kyrec.render.fit import END, MIDDLE, START, TABLE_WIDTH, cut_middle, fit_rows, wrap_counts
from kubectl_kyrec.render.text_table import write_rows

_COUNT_LABELS = (("inScope", "in scope"), ("current", "current"), ("missing", "missing"), ("stale", "stale"),
                 ("duplicate", "duplicate"), ("misnamed", "misnamed"), ("excluded", "excluded"),
                 ("orphan", "orphan reports"))


def _ref(ref: Ref | None) -> str:
    return ref.display() if ref is not None else "-"


def _value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _fitted(rows: Sequence[Sequence[Any]], headers: Sequence[str], cuttable: Mapping[int, str],
            floors: Mapping[int, int], *, wide: bool, width: int, right: Container[int] = ()) -> str:
    """A table of the cells as text, its `cuttable` columns fitted to `width` unless `wide`."""
    cells = [[str(cell) for cell in row] for row in rows]
    if not wide:
        cells = fit_rows(headers, cells, cuttable, floors=floors, width=width, header_pad=0)
    out = io.StringIO()
    write_rows(out, headers, cells, right=right)
    return out.getvalue().rstrip("\n")


def _sentence(text: str, *, wide: bool, width: int) -> str:
    return text if wide else textwrap.fill(text, width, break_on_hyphens=False)


def _names(names: Sequence[str], *, wide: bool, width: int) -> str:
    """An indented list of names, each cut in the middle to `width` unless `wide`."""
    return "\n".join("  " + (name if wide else cut_middle(name, width - 2)) for name in names)


def render_coverage(cov: Coverage, wide: bool = False, width: int = TABLE_WIDTH) -> str:
    """The counts, the totals, the subjects without a current report. Fitted to `width` (names cut in the
    middle, reasons and matches at the end, paths kept at their end) unless `wide`."""
    counts = dict(cov.counts)
    sections = [tabulate([[label, counts[key]] for key, label in _COUNT_LABELS],
                         headers=["SUBJECTS", "COUNT"], tablefmt="plain", colalign=("left", "right"))]

    current, of = cov.derived_from
    if current == of:
        where = f"Totals from all {of} subjects in scope:"
    else:
        where = (f"Totals from {current} of {of} subjects in scope; {of - current} have no current "
                 f"report (excluded included): not cluster-wide.")
    totals = cov.totals.to_json()
    sections.append(_sentence(where, wide=wide, width=width) + "\n" + tabulate([[totals[s] for s in STATUSES]],
                                            headers=[s.upper() for s in STATUSES], tablefmt="plain"))
    if cov.per_policy:
        rows = [[policy, *(c.to_json()[s] for s in STATUSES)] for policy, c in cov.per_policy]
        sections.append(_fitted(rows, ["POLICY", *(s.upper() for s in STATUSES)], {0: MIDDLE}, {0: 16},
                                wide=wide, width=width, right=range(1, len(STATUSES) + 1)))

    gaps = [s for s in cov.subjects if s.status != "current"]
    if gaps:
        rows = [[s.status, s.gap or "", s.reason or "", _ref(s.subject), _ref(s.report)] for s in gaps]
        headers = ["STATUS", "COVERS", "REASON", "SUBJECT", "REPORT"]
        sections.append("Subjects without a current report:\n" + _fitted(
            rows, headers, {2: END, 3: MIDDLE, 4: MIDDLE}, {2: 12, 3: 20, 4: 16}, wide=wide, width=width))
    if cov.orphans:
        sections.append("Orphan reports:\n" + _names([_ref(r) for r in cov.orphans], wide=wide, width=width))
    if cov.unused_exclusions:
        sections.append(_unused_exclusions(cov.unused_exclusions, wide=wide, width=width))
    return "\n\n".join(sections) + "\n"


def _unused_exclusions(unused: Sequence[Any], *, wide: bool, width: int) -> str:
    rows = [[u.index, str(u.source), " ".join(f"{k}={_value(v)}" for k, v in u.match), u.reason] for u in unused]
    # the match is cut at its end: its start (kind, name) is what to look for in the file the location names
    return "Unused exclusions (match no subject in scope):\n" + _fitted(
        rows, ["INDEX", "LOCATION", "MATCH", "REASON"], {1: START, 2: END, 3: END}, {1: 20, 2: 20, 3: 12},
        wide=wide, width=width, right=(0,))


_VULN_COUNT_LABELS = (("inScope", "in scope"), ("current", "current"), ("missing", "missing"), ("stale", "stale"),
                      ("duplicate", "duplicate"), ("misnamed", "misnamed"), ("excluded", "excluded"),
                      ("orphan", "orphan summaries"), ("split", "split summaries"),
                      ("unpaired", "unpaired summaries"), ("splitUndetermined", "split undetermined"))


def render_vulnerability_coverage(cov: VulnerabilityCoverage, wide: bool = False,
                                  width: int = TABLE_WIDTH) -> str:
    """Subjects are containers; totals are stated only from a complete set, else refused with the count.
    Fitted to `width` as `render_coverage` is, unless `wide`."""
    counts = dict(cov.counts)
    sections = [tabulate([[label, counts[key]] for key, label in _VULN_COUNT_LABELS],
                         headers=["SUBJECTS", "COUNT"], tablefmt="plain", colalign=("left", "right"))]
    totals = cov.totals.to_json()
    derived = totals["derivedFrom"]
    if totals["complete"]:
        relevant = totals["relevant"]
        sections.append(f"Totals from all {derived['of']} subjects in scope:\n" + tabulate(
            [[totals["critical"], totals["high"], relevant["critical"], relevant["high"]]],
            headers=["CRITICAL", "HIGH", "RELEVANT CRITICAL", "RELEVANT HIGH"], tablefmt="plain"))
    else:
        why = ", ".join(f"{k} {v}" for k, v in totals["incompleteBy"].items())
        partial = totals["partial"]
        sections.append(_sentence(
            f"Totals refused: incomplete, {totals['incompleteSubjects']} of {derived['of']} subjects in scope "
            f"are not current, intact and paired ({why}).", wide=wide, width=width) + "\n" + _sentence(
            f"Partial sums from {partial['subjects']} complete subjects (not cluster-wide): "
            f"critical {partial['critical']}, high {partial['high']}, relevant critical "
            f"{partial['relevant']['critical']}, relevant high {partial['relevant']['high']}.",
            wide=wide, width=width))
    rows = []
    for s in cov.subjects:
        if s.verdict.complete:
            continue
        pairing = s.verdict.pairing
        paired = "" if pairing is None or pairing.paired is True else (
            (pairing.reason or "") + (f" (resolves in {','.join(pairing.resolves_in)})"
                                      if pairing.resolves_in else ""))
        claim = s.verdict.claim
        integrity = str(s.verdict.integrity or "")
        reasons = [s.row.reason or "", integrity, paired]
        if not wide:
            # eight columns do not fit 80: the reason, a summary that is not intact and why it is unpaired
            # share one column (a current row is listed only for the last two)
            reasons = [", ".join(part for part in (reasons[0], "" if integrity == "intact" else integrity, paired)
                                 if part)]
        rows.append([s.row.status, s.row.gap or "", *reasons, _ref(s.verdict.subject.subject), s.container,
                     claim.ref.name if claim else "-"])
    if rows:
        headers = ["STATUS", "COVERS", "REASON", "INTEGRITY", "UNPAIRED", "WORKLOAD", "CONTAINER", "SUMMARY"]
        if not wide:
            headers[2:5] = ["REASON"]
        sections.append("Subjects without a complete result:\n" + _fitted(
            rows, headers, {2: END, 3: MIDDLE, 4: MIDDLE, 5: MIDDLE}, {2: 16, 3: 16, 4: 9, 5: 12},
            wide=wide, width=width))
    evidence = [[s.row.excluded_by, _ref(s.verdict.subject.subject), s.container, s.row.evidence]
                for s in cov.subjects if s.row.evidence]
    if evidence:
        sections.append("Evidence recorded with the exclusions:\n" + _fitted(
            evidence, ["INDEX", "WORKLOAD", "CONTAINER", "EVIDENCE"], {1: MIDDLE, 2: MIDDLE, 3: END},
            {1: 16, 2: 9, 3: 20}, wide=wide, width=width, right=(0,)))
    if cov.orphans:
        sections.append("Orphan summaries:\n" + _names([f"{_ref(r)}  {why}" for r, why in cov.orphans],
                                                       wide=wide, width=width))
    if cov.split:
        sections.append("Split summaries (listed metadata behind the stored payload):\n"
                        + _names([_ref(r) for r in cov.split], wide=wide, width=width))
    if cov.out_of_scope:
        counts_text = [f"{k} {v}" for k, v in cov.out_of_scope]
        head = "Out of scope by rule (containers):"
        sections.append(head + " " + ", ".join(counts_text) if wide else wrap_counts(head, counts_text, width))
    if cov.unused_exclusions:
        sections.append(_unused_exclusions(cov.unused_exclusions, wide=wide, width=width))
    return "\n\n".join(sections) + "\n"
