"""The producer-neutral engine on its own: keeper choice, precedence, leftovers, exclusions, completeness."""

from __future__ import annotations

import dataclasses
import datetime
import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.claims import (
    IGNORED,
    STATUS_PRECEDENCE,
    Acceptance,
    Claim,
    ClaimClass,
    Expectation,
    Integrity,
    Judgement,
    Leftover,
    Pairing,
    classify,
    completeness,
    cover,
    subject_status,
)

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _ref(name: str, kind: str = "Claim") -> Ref:
    return Ref("x/v1", kind, "ns", name, "")


def _exp(key: str, owed: bool = True) -> Expectation:
    return Expectation(key, Ref("v1", "Thing", "ns", key, key), _ref(f"claim-{key}"), owed=owed)


def _claim(key: str, name: str, days: int = 0) -> Claim:
    return Claim(key, _ref(name), T0 + datetime.timedelta(days=days))


def _orphans(key: str, claims: Sequence[Claim]) -> Leftover:
    return Leftover(orphan_reasons=tuple("subject-gone" for _ in claims))


def test_precedence_duplicate_then_misnamed_then_stale() -> None:
    stale = {"claim-b", "b-other"}

    def judge(_e: Expectation, c: Claim) -> Judgement:
        return Judgement(stale=("changed",)) if c.ref.name in stale else Judgement()

    out = classify([_exp("a"), _exp("b"), _exp("c"), _exp("d"), _exp("e", owed=False)],
                   [_claim("a", "claim-a"), _claim("b", "claim-b"), _claim("c", "c-old", 1),
                    _claim("c", "c-new", 2), _claim("d", "d-elsewhere"), _claim("zz", "gone")],
                   judge, _orphans)
    assert [(v.subject.key, str(v.status), v.reason) for v in out.verdicts] == [
        ("a", "current", None), ("b", "stale", "changed"), ("c", "duplicate", None),
        ("d", "misnamed", "expected-name"), ("e", "current", None)]
    # with no claim at the expected name, the newest is kept and the other is the duplicate
    c_findings = [(f.claim.ref.name, str(f.klass)) for f in out.findings
                  if f.subject is not None and f.subject.key == "c" and f.claim is not None]
    assert c_findings == [("c-new", "misnamed"), ("c-old", "duplicate")]
    assert [(f.claim.ref.name, f.reason) for f in out.findings
            if f.klass == ClaimClass.ORPHAN and f.claim is not None] == [("gone", "subject-gone")]


def test_missing_only_when_owed_and_leftovers_ignored_when_the_adapter_says() -> None:
    out = classify([_exp("a"), _exp("b", owed=False)], [_claim("q", "q")], lambda e, c: Judgement(),
                   lambda k, cs: IGNORED)
    assert [str(v.status) for v in out.verdicts] == ["missing", "current"]
    assert [c.ref.name for c in out.ignored] == ["q"]


def test_integrity_and_pairing_name_the_status_and_stay_fields() -> None:
    def judge(_e: Expectation, c: Claim) -> Judgement:
        if c.ref.name == "claim-a":
            return Judgement(integrity=Integrity.SPLIT)
        if c.ref.name == "claim-b":
            return Judgement(pairing=Pairing(False, _ref("m"), "not-found", ("kubescape",)))
        if c.ref.name == "claim-d":
            return Judgement(stale=("old",), integrity=Integrity.SPLIT, pairing=Pairing(False, None, "no-reference"))
        return Judgement(integrity=Integrity.UNDETERMINED)

    out = classify([_exp("a"), _exp("b"), _exp("c"), _exp("d")],
                   [_claim("a", "claim-a"), _claim("b", "claim-b"), _claim("c", "claim-c"), _claim("d", "claim-d"),
                    _claim("o", "o")],
                   judge, _orphans, inspect=lambda c: Judgement(integrity=Integrity.SPLIT))
    assert [(str(v.status), v.reason) for v in out.verdicts] == [
        ("split", None), ("unpaired", "not-found"), ("split", "undetermined"), ("stale", "old")]
    # a stale subject still says its claim is split and unpaired: the other axes are fields
    stale = out.verdicts[3]
    assert (stale.integrity, stale.pairing.paired if stale.pairing else None) == (Integrity.SPLIT, False)
    assert out.count_claims(ClaimClass.SPLIT) == 3          # claim-a, claim-d and the orphan
    assert out.count_claims(ClaimClass.UNPAIRED) == 2
    assert out.count_undetermined() == 1
    rows, _ = cover(out.verdicts, lambda v: [])
    done = completeness(rows)
    assert (done.complete, done.current, done.incomplete_subjects, done.gaps) == (
        False, 0, 4, (("stale", 1), ("split", 1), ("split-undetermined", 1), ("unpaired", 1)))


# each class of a subject with a claim, and what makes it apply: a change to the kept claim's judgement, or
# (`claim`) to its claims; `current` applies when nothing else does
_MAKES: dict[ClaimClass, dict[str, Any]] = {
    ClaimClass.DUPLICATE: {"claim": "second"},
    ClaimClass.MISNAMED: {"claim": "elsewhere"},
    ClaimClass.STALE: {"stale": ("changed",)},
    ClaimClass.SPLIT: {"integrity": Integrity.SPLIT},
    ClaimClass.UNPAIRED: {"pairing": Pairing(False, None, "not-found")},
    ClaimClass.CURRENT: {},
}
_WITH_A_CLAIM = [k for k in STATUS_PRECEDENCE if k != ClaimClass.MISSING]


def _status_of(*classes: ClaimClass) -> ClaimClass:
    changes = {key: value for klass in classes for key, value in _MAKES[klass].items() if key != "claim"}
    claimed = {str(_MAKES[klass]["claim"]) for klass in classes if "claim" in _MAKES[klass]}
    claims = [_claim("a", "elsewhere" if "elsewhere" in claimed else "claim-a", 2)]
    if "second" in claimed:
        claims.append(_claim("a", "a-copy", 1))
    judgement = dataclasses.replace(Judgement(), **changes)
    [verdict] = classify([_exp("a")], claims, lambda e, c: judgement, _orphans).verdicts
    return verdict.status


@pytest.mark.parametrize(("higher", "lower"), list(itertools.combinations(_WITH_A_CLAIM, 2)),
                         ids=lambda k: str(k))
def test_precedence_one_case_per_pair_of_classes(higher: ClaimClass, lower: ClaimClass) -> None:
    """missing > duplicate > misnamed > stale > split > unpaired > current: where two apply, the first names
    the status (missing applies alone: it is the one class of a subject without a claim)."""
    assert _status_of(lower) == lower
    assert _status_of(higher, lower) == higher


def test_missing_is_first_and_applies_only_without_a_claim() -> None:
    assert STATUS_PRECEDENCE[0] == ClaimClass.MISSING and STATUS_PRECEDENCE[-1] == ClaimClass.CURRENT
    [verdict] = classify([_exp("a")], [], lambda e, c: Judgement(), _orphans).verdicts
    assert (verdict.status, verdict.integrity, verdict.pairing) == (ClaimClass.MISSING, None, None)
    assert subject_status(_exp("a"), None, None) == (ClaimClass.MISSING, None)
    assert subject_status(_exp("a", owed=False), None, None) == (ClaimClass.CURRENT, None)


def test_exclusions_cover_gaps_only_and_keep_their_evidence() -> None:
    out = classify([_exp("a"), _exp("b")], [_claim("a", "claim-a")], lambda e, c: Judgement(), _orphans)
    rows, used = cover(out.verdicts, lambda v: [Acceptance(3, "why", "proof")])
    assert [(r.status, r.gap, r.reason, r.evidence, r.excluded_by) for r in rows] == [
        ("current", None, None, None, None), ("excluded", "missing", "why", "proof", 3)]
    assert used == {3}
    done = completeness(rows)
    # an exclusion replaces the gap it excuses: current or excluded is complete
    assert (done.current, done.in_scope, done.complete, done.excluded) == (1, 2, True, (("why", 1),))
    assert done.to_json() == {"subjects": 1, "of": 2, "complete": True, "excluded": 1,
                              "excludedFor": [{"reason": "why", "subjects": 1}]}


def test_exclusions_excuse_split_and_unpaired_too_and_group_by_reason() -> None:
    def judge(_e: Expectation, c: Claim) -> Judgement:
        return {"claim-a": Judgement(integrity=Integrity.SPLIT),
                "claim-b": Judgement(pairing=Pairing(False, None, "not-found"))}.get(c.ref.name, Judgement())

    out = classify([_exp("a"), _exp("b"), _exp("c"), _exp("d")],
                   [_claim("a", "claim-a"), _claim("b", "claim-b"), _claim("d", "claim-d")], judge, _orphans)
    reasons = {"a": "storage repair pending", "b": "storage repair pending", "c": "never scanned"}
    rows, _ = cover(out.verdicts, lambda v: [Acceptance(0, reasons[v.subject.key])] if v.subject.key in reasons
                    else [])
    assert [(r.status, r.gap) for r in rows] == [("excluded", "split"), ("excluded", "unpaired"),
                                                 ("excluded", "missing"), ("current", None)]
    done = completeness(rows)
    assert (done.complete, done.current, done.excluded_subjects) == (True, 1, 3)
    assert done.excluded == (("storage repair pending", 2), ("never scanned", 1))


def test_undetermined_pairing_is_neither_paired_nor_counted_unpaired() -> None:
    out = classify([_exp("a")], [_claim("a", "claim-a")],
                   lambda e, c: Judgement(pairing=Pairing(None, None, "not-read")), _orphans)
    [verdict] = out.verdicts
    assert (verdict.status, verdict.reason) == (ClaimClass.UNPAIRED, "not-read")
    assert out.count_claims(ClaimClass.UNPAIRED) == 0
    rows, _ = cover(out.verdicts, lambda v: [])
    assert completeness(rows).gaps == (("pairing-undetermined", 1),)
