"""`kyrec coverage`: does every subject in scope have exactly one current report?
(docs/semantics/reports.md#report-reconciliation)

Each subject in scope has one status, by the claims engine's precedence (`reconcile.claims.subject_status`,
shared with the other producers): `missing`, `duplicate`, `misnamed`, `stale` (its report status from
`reconcile.reports`), else `current`; or `excluded` by the first entry of the exclusions file that matches
it. A policy report has one read and no detail object, so `split` and `unpaired` never apply here (counted,
as zero, so both producers' counts have the same keys). An exclusion only ever covers a gap: a subject whose
report is current stays `current` (and counts in the totals) even when an entry matches it. An entry that
matches no subject in scope is listed as unused.

Totals (pass, fail, warn, error, skip; overall and per policy) are summed from the current subjects only,
and `derivedFrom` says of how many subjects in scope they are made, and whether that is complete: every
subject in scope current or excluded, the excluded ones counted by their exclusion's reason. Totals from an
incomplete set are labelled as such, never passed off as cluster-wide (seed 001).

Exit code: 1 (findings) while any subject in scope is neither current nor excluded, else 0. Orphan
reports are counted and listed but do not fail the check (no subject in scope lacks a report for them).
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.expect.reports import STATUSES
from kubectl_kyrec.load.run_inputs.exclusions import Exclusion
from kubectl_kyrec.load.run_inputs.kyverno_config import ResourceFilter
from kubectl_kyrec.model import Ref, Source, Subject
from kubectl_kyrec.reconcile.causes import Cause
from kubectl_kyrec.reconcile.claims import Acceptance, ClaimClass, Completeness, Verdict, completeness, cover
from kubectl_kyrec.reconcile.reports import (
    DEFAULT_SCAN_INTERVAL,
    ReportClass,
    ReportDiff,
    diff_reports,
)

# one per status (subjects) and orphan (reports); split and unpaired never apply to a policy report (one read,
# no detail object to pair): always zero here, present so both producers' counts have the same keys
COUNT_KEYS = ("inScope", "current", "missing", "stale", "duplicate", "misnamed", "excluded", "orphan", "split",
              "unpaired")


@dataclass(frozen=True)
class ResultCounts:
    """pass / fail / warn / error / skip."""

    passed: int = 0
    failed: int = 0
    warned: int = 0
    errored: int = 0
    skipped: int = 0

    def to_json(self) -> dict[str, int]:
        return dict(zip(STATUSES, (self.passed, self.failed, self.warned, self.errored, self.skipped),
                        strict=True))

    def total(self) -> int:
        return self.passed + self.failed + self.warned + self.errored + self.skipped


def _count(results: Sequence[str]) -> ResultCounts:
    tally = dict.fromkeys(STATUSES, 0)
    for r in results:
        if r in tally:
            tally[r] += 1
    return ResultCounts(*(tally[s] for s in STATUSES))


@dataclass(frozen=True, slots=True)
class CoverageSubject:
    subject: Ref
    status: str                   # current | missing | stale | duplicate | misnamed | excluded
    reason: str | None
    report: Ref | None
    excluded_by: int | None = None
    gap: str | None = None        # for excluded subjects: the status the exclusion covers
    evidence: str | None = None   # for excluded subjects: what the exclusion records as its evidence
    # why a gap (missing, stale, duplicate, misnamed) is one (reconcile/causes.py); None when current or
    # excluded, and until the run asks
    cause: Cause | None = None

    def to_json(self) -> dict[str, Any]:
        report = self.report.to_json() if self.report else None
        out: dict[str, Any] = {"subject": self.subject.to_json(), "status": self.status,
                               "reason": self.reason, "report": report,
                               "cause": self.cause.to_json() if self.cause else None}
        if self.excluded_by is not None:
            out["excludedBy"] = self.excluded_by
            out["gap"] = self.gap
            out["evidence"] = self.evidence
        return out


@dataclass(frozen=True)
class UnusedExclusion:
    index: int
    match: tuple[tuple[str, Any], ...]
    reason: str
    source: Source

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "match": dict(self.match), "reason": self.reason,
                "location": self.source.as_location()}


@dataclass(frozen=True)
class Coverage:
    counts: tuple[tuple[str, int], ...]
    subjects: tuple[CoverageSubject, ...]
    totals: ResultCounts
    per_policy: tuple[tuple[str, ResultCounts], ...]
    derived_from: Completeness               # current subjects of those in scope; excluded by reason
    unused_exclusions: tuple[UnusedExclusion, ...]
    report_api: str
    filtered_subjects: int = 0
    orphans: tuple[Ref, ...] = ()

    def count(self, key: str) -> int:
        return dict(self.counts)[key]

    @property
    def gaps(self) -> tuple[CoverageSubject, ...]:
        return tuple(s for s in self.subjects if s.status not in (ClaimClass.CURRENT, ClaimClass.EXCLUDED))

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.gaps else ExitCode.CLEAN

    def to_json(self) -> dict[str, Any]:
        """The CoverageResult body (docs/output.md); `reportAPI`, `filteredSubjects`, `orphans` are additions."""
        return {
            "counts": dict(self.counts),
            "subjects": [s.to_json() for s in self.subjects],
            "totals": self.totals.to_json(),
            "perPolicy": {policy: counts.to_json() for policy, counts in self.per_policy},
            "derivedFrom": self.derived_from.to_json(),
            "unusedExclusions": [u.to_json() for u in self.unused_exclusions],
            "reportAPI": self.report_api,
            "filteredSubjects": self.filtered_subjects,
            "orphans": [r.to_json() for r in self.orphans],
        }


def _labels(subject: Subject) -> Mapping[str, str]:
    meta = subject.obj.get("metadata") or {}
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def compute_coverage(diff: ReportDiff, subjects: Sequence[Subject],
                     exclusions: Sequence[Exclusion] = ()) -> Coverage:
    """Coverage from a report diff; `subjects` give the labels exclusion selectors look at."""
    by_uid = {s.ref.uid: s for s in subjects} if exclusions else {}
    owed = {status.subject.uid: status.results for status in diff.subjects}

    def accepting(verdict: Verdict) -> list[Acceptance]:
        if not exclusions:
            return []
        subject = by_uid.get(verdict.subject.key)
        labels = _labels(subject) if subject is not None else {}
        return [Acceptance(e.index, e.reason, e.evidence) for e in exclusions
                if e.matches(verdict.subject.subject, labels)]

    covered, used = cover(diff.verdicts, accepting)
    rows = [CoverageSubject(c.verdict.subject.subject, c.status, c.reason,
                            c.verdict.claim.ref if c.verdict.claim is not None else None,
                            excluded_by=c.excluded_by, gap=c.gap, evidence=c.evidence) for c in covered]
    current_results = [r for c in covered if c.status == ClaimClass.CURRENT for r in owed[c.verdict.subject.key]]

    tallies = dict.fromkeys(COUNT_KEYS, 0)
    tallies["inScope"] = len(rows)
    for row in rows:
        tallies[row.status] += 1
    orphans = tuple(c.report for c in diff.changes if c.klass == ReportClass.ORPHAN)
    tallies["orphan"] = len(orphans)

    per_policy: dict[str, list[str]] = {}
    for policy, result in current_results:
        per_policy.setdefault(policy, []).append(result)
    unused = tuple(UnusedExclusion(e.index, tuple(e.match_json().items()), e.reason, e.source)
                   for e in exclusions if e.index not in used)
    return Coverage(
        counts=tuple(tallies.items()),
        subjects=tuple(rows),
        totals=_count([r for _, r in current_results]),
        per_policy=tuple((p, _count(rs)) for p, rs in sorted(per_policy.items())),
        derived_from=completeness(covered),
        unused_exclusions=unused,
        report_api=diff.report_api,
        filtered_subjects=len(diff.filtered_subjects),
        orphans=orphans,
    )


def coverage(expected: Sequence[Mapping[str, Any]], subjects: Sequence[Subject],
             state: Sequence[Mapping[str, Any]], *, now: datetime.datetime,
             exclusions: Sequence[Exclusion] = (), report_api: str | None = None,
             resource_filters: Sequence[ResourceFilter] = (), policies: Collection[str] | None = None,
             policy_versions: Mapping[str, str] | None = None,
             scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL,
             evaluated_uids: Collection[str] | None = None) -> Coverage:
    """diff_reports + compute_coverage in one call."""
    diff = diff_reports(expected, subjects, state, now=now, policy_versions=policy_versions,
                        scan_interval=scan_interval, report_api=report_api,
                        resource_filters=resource_filters, policies=policies, evaluated_uids=evaluated_uids)
    return compute_coverage(diff, subjects, exclusions)
