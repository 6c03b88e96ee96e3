"""Table for `kyrec coverage`: the counts lead, then totals with what they are made of, then the gaps."""

from __future__ import annotations

import json

from tabulate import tabulate

from kubectl_kyrec.expect.reports import STATUSES
from kubectl_kyrec.model import Ref
from kubectl_kyrec.producers.kubescape_coverage import VulnerabilityCoverage
from kubectl_kyrec.reconcile.coverage import Coverage
from kubectl_kyrec.render.fit import END, MIDDLE, fit_rows

_COUNT_LABELS = (("inScope", "in scope"), ("current", "current"), ("missing", "missing"), ("stale", "stale"),
                 ("duplicate", "duplicate"), ("misnamed", "misnamed"), ("excluded", "excluded"),
                 ("orphan", "orphan reports"))


def _ref(ref: Ref | None) -> str:
    return ref.display() if ref is not None else "-"


def _value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def render_coverage(cov: Coverage) -> str:
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
    sections.append(where + "\n" + tabulate([[totals[s] for s in STATUSES]],
                                            headers=[s.upper() for s in STATUSES], tablefmt="plain"))
    if cov.per_policy:
        rows = [[policy, *(c.to_json()[s] for s in STATUSES)] for policy, c in cov.per_policy]
        sections.append(tabulate(rows, headers=["POLICY", *(s.upper() for s in STATUSES)], tablefmt="plain"))

    gaps = [s for s in cov.subjects if s.status != "current"]
    if gaps:
        rows = [[s.status, s.gap or "", s.reason or "", _ref(s.subject), _ref(s.report)] for s in gaps]
        headers = ["STATUS", "COVERS", "REASON", "SUBJECT", "REPORT"]
        rows = fit_rows(headers, rows, {2: END, 3: MIDDLE, 4: MIDDLE}, floors={2: 12, 3: 20, 4: 16})
        sections.append("Subjects without a current report:\n" + tabulate(rows, headers=headers, tablefmt="plain"))
    if cov.orphans:
        sections.append("Orphan reports:\n" + "\n".join(f"  {_ref(r)}" for r in cov.orphans))
    if cov.unused_exclusions:
        rows = [[u.index, str(u.source), " ".join(f"{k}={_value(v)}" for k, v in u.match), u.reason]
                for u in cov.unused_exclusions]
        # not cut to fit: the match is what to look for in the exclusions file, and coverage has no `wide`
        sections.append("Unused exclusions (match no subject in scope):\n" + tabulate(
            rows, headers=["INDEX", "LOCATION", "MATCH", "REASON"], tablefmt="plain"))
    return "\n\n".join(sections) + "\n"


_VULN_COUNT_LABELS = (("inScope", "in scope"), ("current", "current"), ("missing", "missing"), ("stale", "stale"),
                      ("duplicate", "duplicate"), ("misnamed", "misnamed"), ("excluded", "excluded"),
                      ("orphan", "orphan summaries"), ("split", "split summaries"),
                      ("unpaired", "unpaired summaries"), ("splitUndetermined", "split undetermined"))


def render_vulnerability_coverage(cov: VulnerabilityCoverage) -> str:
    """Subjects are containers; totals are stated only from a complete set, else refused with the count."""
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
        sections.append(
            f"Totals refused: incomplete, {totals['incompleteSubjects']} of {derived['of']} subjects in scope "
            f"are not current, intact and paired ({why}).\n"
            f"Partial sums from {partial['subjects']} complete subjects (not cluster-wide): "
            f"critical {partial['critical']}, high {partial['high']}, relevant critical "
            f"{partial['relevant']['critical']}, relevant high {partial['relevant']['high']}.")
    rows = []
    for s in cov.subjects:
        if s.verdict.complete:
            continue
        pairing = s.verdict.pairing
        paired = "" if pairing is None or pairing.paired is True else (
            (pairing.reason or "") + (f" (resolves in {','.join(pairing.resolves_in)})"
                                      if pairing.resolves_in else ""))
        claim = s.verdict.claim
        rows.append([s.row.status, s.row.gap or "", s.row.reason or "", str(s.verdict.integrity or ""), paired,
                     _ref(s.verdict.subject.subject), s.container, claim.ref.name if claim else "-"])
    if rows:
        sections.append("Subjects without a complete result:\n" + tabulate(
            rows, headers=["STATUS", "COVERS", "REASON", "INTEGRITY", "UNPAIRED", "WORKLOAD", "CONTAINER",
                           "SUMMARY"], tablefmt="plain"))
    evidence = [[s.row.excluded_by, _ref(s.verdict.subject.subject), s.container, s.row.evidence]
                for s in cov.subjects if s.row.evidence]
    if evidence:
        sections.append("Evidence recorded with the exclusions:\n" + tabulate(
            evidence, headers=["INDEX", "WORKLOAD", "CONTAINER", "EVIDENCE"], tablefmt="plain"))
    if cov.orphans:
        sections.append("Orphan summaries:\n" + "\n".join(f"  {_ref(r)}  {why}" for r, why in cov.orphans))
    if cov.split:
        sections.append("Split summaries (listed metadata behind the stored payload):\n"
                        + "\n".join(f"  {_ref(r)}" for r in cov.split))
    if cov.out_of_scope:
        sections.append("Out of scope by rule (containers): "
                        + ", ".join(f"{k} {v}" for k, v in cov.out_of_scope))
    if cov.unused_exclusions:
        unused = [[u.index, str(u.source), " ".join(f"{k}={_value(v)}" for k, v in u.match), u.reason]
                  for u in cov.unused_exclusions]
        sections.append("Unused exclusions (match no subject in scope):\n" + tabulate(
            unused, headers=["INDEX", "LOCATION", "MATCH", "REASON"], tablefmt="plain"))
    return "\n\n".join(sections) + "\n"
