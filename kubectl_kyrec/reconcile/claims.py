"""One comparison engine for every producer of claims about subjects (docs/semantics/reports.md#report-reconciliation).

A producer (a policy-report controller, a vulnerability scanner) writes *claims*: objects that say something
about a *subject* (an object in the cluster, or one facet of it such as a container). An adapter turns
its inputs into three things this module compares without knowing who produced them:

- `Expectation`: a subject, the claim identity its consumer looks up (`identity`), and whether it is owed a
  claim at all (`owed`);
- `Claim`: an object that says it describes the subject with key `key`;
- a `judge(expectation, claim) -> Judgement` the adapter supplies: why the kept claim is stale (reasons in
  the adapter's priority order), whether its stored payload and listed metadata agree (`integrity`), and
  whether the detail object it references resolves (`pairing`).

Classes, per claim (`Finding`) and per subject (`Verdict`):

=============  ==================================================================================
current        one claim for the subject, named as its consumer looks it up, nothing stale, intact, paired
missing        no claim for a subject that is owed one
stale          the kept claim differs from what is expected (adapter's reasons)
orphan         a claim whose subject is not there (adapter's reason)
duplicate      a second claim for one subject; kept: the one named as expected, else the newest
               (creation time, then name)
misnamed       the kept claim is not at the identity the consumer looks up, so the consumer misses it
split          the claim's stored payload and its listed metadata disagree (`Integrity.SPLIT`)
unpaired       the detail object the claim references does not resolve where the reference says
excluded       a gap an exclusion entry accepts, with its reason and evidence (`cover`)
=============  ==================================================================================

A subject has one `status`, by one rule (`subject_status`), the first that applies in this precedence:

    missing > duplicate > misnamed > stale > split > unpaired > current

(duplicate and misnamed, the identity classes of policy reports, rank with stale among the gaps of a claim
that exists, as they always did: the first of duplicate, misnamed, stale names the status). `current` thus
means the subject's numbers are in the totals: its claim is fresh, intact and paired. The other axes stay
on the verdict as fields (`integrity`, `pairing`), so a stale subject whose claim is split still says so.
A claim whose integrity or pairing could not be checked (one read missing) is never assumed intact or
paired: it is `split` (reason `undetermined`) or `unpaired` (the pairing's reason: `payload-not-read`,
`manifests-not-read`).

An exclusion replaces the gap it excuses (`cover`): totals are complete when every subject in scope is
current or excluded, and say how many were excluded and why (`completeness`).
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.diff_pair import DiffPair


class ClaimClass(enum.StrEnum):
    CURRENT = "current"
    MISSING = "missing"
    STALE = "stale"
    ORPHAN = "orphan"
    DUPLICATE = "duplicate"
    MISNAMED = "misnamed"
    SPLIT = "split"
    UNPAIRED = "unpaired"
    EXCLUDED = "excluded"


EXPECTED_NAME = "expected-name"


class Integrity(enum.StrEnum):
    """Whether two reads of one claim (listed metadata, stored payload) agree."""

    INTACT = "intact"
    SPLIT = "split"
    UNDETERMINED = "undetermined"     # only one of the two reads was available: never assumed intact


@dataclass(frozen=True, slots=True)
class Pairing:
    """The detail object a claim references: `ref` where the reference says, `resolves_in` where it is.

    `paired` None: undetermined (the read that would tell was not made); never assumed paired.
    """

    paired: bool | None = True
    ref: Ref | None = None
    reason: str | None = None
    resolves_in: tuple[str, ...] = ()


PAIRED = Pairing()


@dataclass(frozen=True, slots=True)
class Expectation:
    key: str
    subject: Ref
    identity: Ref                 # the claim its consumer looks up (uid "" : it need not exist)
    owed: bool = True
    in_scope: bool = True
    facet: str = ""               # a part of the subject the claim is about (a container), "" for the whole


@dataclass(frozen=True, slots=True)
class Claim:
    key: str                      # the subject key the claim says it describes
    ref: Ref
    created: datetime.datetime | None = None


@dataclass(frozen=True, slots=True)
class Judgement:
    stale: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()  # JSON pointers into the claim that differ
    shown: DiffPair | None = None  # what the claim's unified diff shows (rendered at the edge)
    integrity: Integrity = Integrity.INTACT
    pairing: Pairing = PAIRED


INTACT = Judgement()


@dataclass(frozen=True, slots=True)
class Finding:
    """One classified claim, or a missing one (`claim` None)."""

    klass: ClaimClass
    reason: str | None
    subject: Expectation | None
    claim: Claim | None
    judgement: Judgement | None = None

    @property
    def in_scope(self) -> bool:
        return self.subject is not None and self.subject.in_scope


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where one subject stands: its status, the kept claim and how that claim was judged."""

    subject: Expectation
    status: ClaimClass
    reason: str | None
    claim: Claim | None
    judgement: Judgement | None = None

    @property
    def integrity(self) -> Integrity | None:
        return self.judgement.integrity if self.judgement is not None and self.claim is not None else None

    @property
    def pairing(self) -> Pairing | None:
        return self.judgement.pairing if self.judgement is not None and self.claim is not None else None



@dataclass(frozen=True)
class Leftover:
    """What an adapter says about the claims for a key that is no subject in scope.

    `orphan_reasons` (one per claim, in order): their subject is not there. `subject`: it exists outside
    the scope; its claims are judged with `in_scope=False`. Neither: the claims are ignored (not looked at
    by this run).
    """

    orphan_reasons: tuple[str, ...] = ()
    subject: Expectation | None = None


IGNORED = Leftover()


@dataclass(frozen=True)
class Classification:
    findings: tuple[Finding, ...]
    verdicts: tuple[Verdict, ...]
    ignored: tuple[Claim, ...] = ()

    def count_claims(self, klass: ClaimClass) -> int:
        """Claims of a class; `split` and `unpaired` count claims of any class (orphans included)."""
        if klass == ClaimClass.SPLIT:
            return sum(1 for f in self.findings
                       if f.claim is not None and f.judgement is not None
                       and f.judgement.integrity == Integrity.SPLIT)
        if klass == ClaimClass.UNPAIRED:
            return sum(1 for f in self.findings
                       if f.claim is not None and f.judgement is not None and f.judgement.pairing.paired is False)
        return sum(1 for f in self.findings if f.klass == klass)

    def count_undetermined(self) -> int:
        return sum(1 for f in self.findings if f.claim is not None and f.judgement is not None
                   and f.judgement.integrity == Integrity.UNDETERMINED)


def _same_identity(ref: Ref, identity: Ref) -> bool:
    return (ref.api_version, ref.kind, ref.namespace, ref.name) == (
        identity.api_version, identity.kind, identity.namespace, identity.name)


_EPOCH = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def pick_keeper(claims: Sequence[Claim], identity: Ref) -> int:
    """The claim the consumer sees: the one at the expected identity, else the newest."""
    for i, claim in enumerate(claims):
        if _same_identity(claim.ref, identity):
            return i
    return max(range(len(claims)), key=lambda i: (claims[i].created or _EPOCH, claims[i].ref.name))


# the one precedence of a subject's status (module docstring); `subject_status` applies it
STATUS_PRECEDENCE = (ClaimClass.MISSING, ClaimClass.DUPLICATE, ClaimClass.MISNAMED, ClaimClass.STALE,
                     ClaimClass.SPLIT, ClaimClass.UNPAIRED, ClaimClass.CURRENT)
UNDETERMINED = "undetermined"


def subject_status(expectation: Expectation, claim: Claim | None, judgement: Judgement | None,
                   duplicated: bool = False) -> tuple[ClaimClass, str | None]:
    """The status and reason of a subject (or of its kept claim: `duplicated` False): the first class of
    `STATUS_PRECEDENCE` that applies."""
    if claim is None or judgement is None:
        return (ClaimClass.MISSING, None) if expectation.owed else (ClaimClass.CURRENT, None)
    integrity, pairing = judgement.integrity, judgement.pairing
    # each class of a claim that exists: (whether it applies, its reason)
    tests: dict[ClaimClass, tuple[bool, str | None]] = {
        ClaimClass.DUPLICATE: (duplicated, None),
        ClaimClass.MISNAMED: (not _same_identity(claim.ref, expectation.identity), EXPECTED_NAME),
        ClaimClass.STALE: (bool(judgement.stale), judgement.stale[0] if judgement.stale else None),
        ClaimClass.SPLIT: (integrity != Integrity.INTACT,
                           UNDETERMINED if integrity == Integrity.UNDETERMINED else None),
        ClaimClass.UNPAIRED: (pairing.paired is not True, pairing.reason),
    }
    for klass in STATUS_PRECEDENCE:
        applies, reason = tests.get(klass, (False, None))
        if applies:
            return klass, reason
    return ClaimClass.CURRENT, None


def judge_subject(expectation: Expectation, claims: Sequence[Claim],
                  judge: Callable[[Expectation, Claim], Judgement]) -> tuple[list[Finding], Verdict]:
    """Findings for one subject's claims (kept first, then duplicates) and the subject's verdict."""
    if not claims:
        klass, reason = subject_status(expectation, None, None)
        return [Finding(klass, reason, expectation, None)], Verdict(expectation, klass, reason, None)
    keeper_index = pick_keeper(claims, expectation.identity)
    keeper = claims[keeper_index]
    judgement = judge(expectation, keeper)
    klass, reason = subject_status(expectation, keeper, judgement)
    findings = [Finding(klass, reason, expectation, keeper, judgement)]
    duplicates = [Finding(ClaimClass.DUPLICATE, None, expectation, c, judge(expectation, c))
                  for i, c in enumerate(claims) if i != keeper_index]
    findings.extend(duplicates)
    if duplicates:
        klass, reason = subject_status(expectation, keeper, judgement, duplicated=True)
    return findings, Verdict(expectation, klass, reason, keeper, judgement)


def classify(expectations: Sequence[Expectation], claims: Iterable[Claim],
             judge: Callable[[Expectation, Claim], Judgement],
             leftover: Callable[[str, Sequence[Claim]], Leftover],
             inspect: Callable[[Claim], Judgement] | None = None) -> Classification:
    """Every subject in scope once (first expectation per key wins), then every claim no subject took.

    `inspect` judges an orphan on its own (its integrity still counts: a split orphan is a split claim).
    """
    by_key: dict[str, list[Claim]] = {}
    for claim in claims:
        by_key.setdefault(claim.key, []).append(claim)
    findings: list[Finding] = []
    verdicts: list[Verdict] = []
    seen: set[str] = set()
    for expectation in expectations:
        if expectation.key in seen:
            continue
        seen.add(expectation.key)
        subject_findings, verdict = judge_subject(expectation, by_key.pop(expectation.key, []), judge)
        findings.extend(subject_findings)
        verdicts.append(verdict)
    ignored: list[Claim] = []
    for key, rest in by_key.items():
        outcome = leftover(key, rest)
        if outcome.subject is not None:
            subject_findings, _ = judge_subject(outcome.subject, rest, judge)
            findings.extend(subject_findings)
        elif outcome.orphan_reasons:
            findings.extend(Finding(ClaimClass.ORPHAN, reason, None, c, inspect(c) if inspect is not None else None)
                            for c, reason in zip(rest, outcome.orphan_reasons, strict=True))
        else:
            ignored.extend(rest)
    return Classification(tuple(findings), tuple(verdicts), tuple(ignored))


# --- coverage: exclusions and totals' completeness -------------------------------------------------------


@dataclass(frozen=True)
class Acceptance:
    """An exclusion entry as the engine sees it: its number, why, and the evidence recorded with it."""

    index: int
    reason: str
    evidence: str | None = None


@dataclass(frozen=True, slots=True)
class Covered:
    """A subject in scope after exclusions: `status` is its verdict's, or `excluded` (then `gap`)."""

    verdict: Verdict
    status: str
    reason: str | None
    excluded_by: int | None = None
    gap: str | None = None
    evidence: str | None = None

    @property
    def is_gap(self) -> bool:
        return self.status not in (ClaimClass.CURRENT, ClaimClass.EXCLUDED)


def cover(verdicts: Iterable[Verdict],
          accepting: Callable[[Verdict], Sequence[Acceptance]]) -> tuple[list[Covered], set[int]]:
    """An exclusion replaces the gap it excuses (any status but current: a split or unpaired claim too); a
    current subject stays current even when an entry matches it.

    Returns the rows and the indexes of the entries that matched some subject (used), gap or not.
    """
    used: set[int] = set()
    rows: list[Covered] = []
    for verdict in verdicts:
        matching = accepting(verdict)
        used.update(a.index for a in matching)
        if verdict.status == ClaimClass.CURRENT or not matching:
            rows.append(Covered(verdict, str(verdict.status), verdict.reason))
            continue
        first = matching[0]
        rows.append(Covered(verdict, str(ClaimClass.EXCLUDED), first.reason, excluded_by=first.index,
                            gap=str(verdict.status), evidence=first.evidence))
    return rows, used


@dataclass(frozen=True)
class Completeness:
    """What totals are made of: the current subjects, of how many in scope. They are complete when every
    other subject in scope is excluded; `gaps` names the rest by status, `excluded` the exclusions by reason."""

    current: int
    in_scope: int
    gaps: tuple[tuple[str, int], ...] = ()
    excluded: tuple[tuple[str, int], ...] = ()     # (an exclusion's reason, the subjects it excuses)

    @property
    def incomplete_subjects(self) -> int:
        return sum(n for _, n in self.gaps)

    @property
    def excluded_subjects(self) -> int:
        return sum(n for _, n in self.excluded)

    @property
    def complete(self) -> bool:
        return not self.gaps

    def to_json(self) -> dict[str, Any]:
        """The `derivedFrom` object both producers' documents carry."""
        return {"subjects": self.current, "of": self.in_scope, "complete": self.complete,
                "excluded": self.excluded_subjects,
                "excludedFor": [{"reason": reason, "subjects": n} for reason, n in self.excluded]}


def _gap(row: Covered) -> tuple[int, str]:
    """A gap's place in `STATUS_PRECEDENCE` and its name: the status, the unproven ones apart (a read that
    was not given is a gap of the input, not yet one of the producer's storage)."""
    name = row.status
    pairing = row.verdict.pairing
    if row.status == ClaimClass.SPLIT and row.reason == UNDETERMINED:
        name = "split-undetermined"
    elif row.status == ClaimClass.UNPAIRED and pairing is not None and pairing.paired is None:
        name = "pairing-undetermined"
    return STATUS_PRECEDENCE.index(ClaimClass(row.status)), name


def completeness(rows: Sequence[Covered]) -> Completeness:
    """Gaps in the order of `STATUS_PRECEDENCE`; exclusions by reason, in the order they first excuse one."""
    gaps: dict[tuple[int, str], int] = {}
    excluded: dict[str, int] = {}
    for row in rows:
        if row.status == ClaimClass.EXCLUDED:
            excluded[row.reason or ""] = excluded.get(row.reason or "", 0) + 1
        elif row.is_gap:
            gaps[_gap(row)] = gaps.get(_gap(row), 0) + 1
    current = sum(1 for r in rows if r.status == ClaimClass.CURRENT)
    return Completeness(current, len(rows), tuple((name, n) for (_, name), n in sorted(gaps.items())),
                        tuple(excluded.items()))
