"""`kyrec coverage --producer kubescape`: every running container has one current, paired summary, or says why.

Each subject (namespace, workload, container) has one status, by the claims engine's precedence
(`reconcile.claims.subject_status`, the same rule as for policy reports): missing > duplicate > misnamed >
stale > split > unpaired > current, or `excluded`. `current` means current, intact and paired: its numbers
are in the totals. The other axes stay as fields of the subject (`integrity`, `pairing`), so a stale
subject whose summary is also split says so.

Counts: `inScope` and one per status count subjects (they add up to `inScope`); `orphan` counts orphan
summaries; `splitSummaries`, `unpairedSummaries` and `splitUndetermined` count summaries of any class
(orphans included: the seed's 31 split are "among the summaries", not among the subjects).

Totals (`critical`, `high` from `spec.severities.*.all`; `relevant.critical`, `relevant.high` from
`*.relevant`, the reachable ones) are summed over the current subjects only. They are complete when every
subject in scope is current or excluded; `derivedFrom` says of how many subjects they are made and how many
were excluded, by reason. While any subject is neither, the totals are refused: `critical`, `high` and
`relevant` are null, `complete` is false, `incompleteSubjects` says how many and `incompleteBy` why;
`partial` carries the sums over the current subjects, labelled with of how many they are made.

Exclusions (the `--exclusions` file; `kind`, `namespace`, `name` match the top workload, `container` narrows
an entry to one container, `selector` matches the labels of the workload's first running Pod, `evidence` is
kept in the output next to the reason) replace the gap they excuse, whatever its status (a split or unpaired
summary too): the seed's "excluded with a narrow, evidence-backed reason".

Exit code 1 while any subject in scope is neither current nor excluded.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.load.run_inputs.exclusions import Exclusion
from kubectl_kyrec.model import Ref
from kubectl_kyrec.producers.kubescape import (
    ANNOTATION_IMAGE_ID,
    ANNOTATION_STATUS,
    ANNOTATION_TIMESTAMP,
    KubescapeClassification,
    KubescapeOptions,
    Severities,
    classify_vulnerabilities,
)
from kubectl_kyrec.reconcile.claims import (
    Acceptance,
    ClaimClass,
    Completeness,
    Covered,
    Integrity,
    Verdict,
    completeness,
    cover,
)
from kubectl_kyrec.reconcile.coverage import UnusedExclusion

PRODUCER = "kubescape"
# subjects (in scope, one per status: split and unpaired after orphan, where they have always been), and
# summaries: orphan, split or unpaired (of any class, orphans included), with one read only
COUNT_KEYS = ("inScope", "current", "missing", "stale", "duplicate", "misnamed", "excluded", "orphan", "split",
              "unpaired", "splitSummaries", "unpairedSummaries", "splitUndetermined")


def _duration(delta: datetime.timedelta) -> str:
    seconds = int(delta.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n) or "0s"


@dataclass(frozen=True)
class VulnSubject:
    row: Covered
    container: str
    image_ids: tuple[str, ...]
    observed: tuple[tuple[str, str], ...]       # the kept summary's image id, timestamp, status as read

    @property
    def verdict(self) -> Verdict:
        return self.row.verdict

    def to_json(self) -> dict[str, Any]:
        verdict = self.verdict
        claim = verdict.claim
        pairing = verdict.pairing
        out: dict[str, Any] = {
            "subject": {**verdict.subject.subject.to_json(), "container": self.container},
            "status": self.row.status,
            "reason": self.row.reason,
            "report": claim.ref.to_json() if claim is not None else None,
            "integrity": str(verdict.integrity) if verdict.integrity is not None else None,
            "pairing": None if pairing is None else {
                "paired": pairing.paired, "reason": pairing.reason,
                "ref": pairing.ref.to_json() if pairing.ref is not None else None,
                "resolvesIn": list(pairing.resolves_in)},
            "imageIds": list(self.image_ids),
            "observed": dict(self.observed) if claim is not None else None,
        }
        if self.row.excluded_by is not None:
            out.update(excludedBy=self.row.excluded_by, gap=self.row.gap, evidence=self.row.evidence)
        return out


@dataclass(frozen=True)
class VulnTotals:
    sums: Severities
    done: Completeness

    def to_json(self) -> dict[str, Any]:
        relevant = {"critical": self.sums.relevant_critical, "high": self.sums.relevant_high}
        complete = self.done.complete
        return {
            "critical": self.sums.critical if complete else None,
            "high": self.sums.high if complete else None,
            "relevant": relevant if complete else None,
            "complete": complete,
            "incompleteSubjects": self.done.incomplete_subjects,
            "incompleteBy": dict(self.done.gaps),
            "derivedFrom": self.done.to_json(),
            "partial": None if complete else {"critical": self.sums.critical, "high": self.sums.high,
                                              "relevant": relevant, "subjects": self.done.current},
        }


@dataclass(frozen=True)
class VulnerabilityCoverage:
    counts: tuple[tuple[str, int], ...]
    subjects: tuple[VulnSubject, ...]
    totals: VulnTotals
    unused_exclusions: tuple[UnusedExclusion, ...]
    orphans: tuple[tuple[Ref, str], ...]
    split: tuple[Ref, ...]
    ignored: tuple[Ref, ...]                    # summaries of out-of-scope containers (init, completed, ...)
    out_of_scope: tuple[tuple[str, int], ...]
    reads: tuple[tuple[str, bool], ...]
    scan: tuple[tuple[str, str], ...]

    def count(self, key: str) -> int:
        return dict(self.counts)[key]

    @property
    def gaps(self) -> tuple[VulnSubject, ...]:
        """Subjects neither current nor excluded: what fails the check."""
        return tuple(s for s in self.subjects if s.row.is_gap)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.gaps else ExitCode.CLEAN

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "subjects": [s.to_json() for s in self.subjects],
            "totals": self.totals.to_json(),
            "derivedFrom": self.totals.done.to_json(),
            "unusedExclusions": [u.to_json() for u in self.unused_exclusions],
            "producer": PRODUCER,
            "orphans": [{**r.to_json(), "reason": why} for r, why in self.orphans],
            "split": [r.to_json() for r in self.split],
            "ignoredSummaries": [r.to_json() for r in self.ignored],
            "outOfScope": dict(self.out_of_scope),
            "reads": dict(self.reads),
            "scan": dict(self.scan),
        }


def compute_vulnerability_coverage(result: KubescapeClassification,
                                   exclusions: Sequence[Exclusion] = ()) -> VulnerabilityCoverage:
    outcome = result.outcome

    def accepting(verdict: Verdict) -> list[Acceptance]:
        subject = result.subjects.get(verdict.subject.key)
        labels = subject.labels if subject is not None else {}
        return [Acceptance(e.index, e.reason, e.evidence) for e in exclusions
                if e.matches(verdict.subject.subject, labels, verdict.subject.facet)]

    rows, used = cover(outcome.verdicts, accepting)
    subjects: list[VulnSubject] = []
    for row in rows:
        verdict = row.verdict
        found = result.subjects.get(verdict.subject.key)
        observed: tuple[tuple[str, str], ...] = ()
        if verdict.claim is not None:
            ann = (result.summaries[verdict.claim.ref].shown.get("metadata") or {}).get("annotations") or {}
            observed = (("imageId", str(ann.get(ANNOTATION_IMAGE_ID) or "")),
                        ("timestamp", str(ann.get(ANNOTATION_TIMESTAMP) or "")),
                        ("status", str(ann.get(ANNOTATION_STATUS) or "")))
        subjects.append(VulnSubject(row, verdict.subject.facet, found.image_ids if found else (), observed))

    tallies = dict.fromkeys(COUNT_KEYS, 0)
    tallies["inScope"] = len(rows)
    for row in rows:
        tallies[row.status] += 1
    tallies["orphan"] = outcome.count_claims(ClaimClass.ORPHAN)
    tallies["splitSummaries"] = outcome.count_claims(ClaimClass.SPLIT)
    tallies["unpairedSummaries"] = outcome.count_claims(ClaimClass.UNPAIRED)
    tallies["splitUndetermined"] = outcome.count_undetermined()

    sums = Severities()
    for row in rows:
        claim = row.verdict.claim
        if row.status == ClaimClass.CURRENT and claim is not None and claim.ref in result.severities:
            s = result.severities[claim.ref]
            sums = Severities(sums.critical + s.critical, sums.high + s.high,
                              sums.relevant_critical + s.relevant_critical, sums.relevant_high + s.relevant_high)
    split = tuple(f.claim.ref for f in outcome.findings
                  if f.claim is not None and f.judgement is not None and f.judgement.integrity == Integrity.SPLIT)
    orphans = tuple((f.claim.ref, f.reason or "") for f in outcome.findings
                    if f.klass == ClaimClass.ORPHAN and f.claim is not None)
    unused = tuple(UnusedExclusion(e.index, tuple(e.match_json().items()), e.reason, e.source)
                   for e in exclusions if e.index not in used)
    schedule = result.schedule
    scan = (("period", _duration(schedule.period)), ("grace", _duration(schedule.grace)),
            ("source", schedule.source))
    return VulnerabilityCoverage(tuple(tallies.items()), tuple(subjects), VulnTotals(sums, completeness(rows)),
                                 unused, orphans, split, tuple(c.ref for c in outcome.ignored), result.out_of_scope,
                                 result.reads, scan)


def vulnerability_coverage(state: Sequence[dict[str, Any]], options: KubescapeOptions,
                           exclusions: Sequence[Exclusion] = ()) -> VulnerabilityCoverage:
    """classify_vulnerabilities + compute_vulnerability_coverage in one call."""
    return compute_vulnerability_coverage(classify_vulnerabilities(state, options), exclusions)
