"""The producer-neutral engine on its own: keeper choice, precedence, leftovers, exclusions, completeness."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.claims import (
    IGNORED,
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


def test_integrity_is_a_second_axis_and_counts_orphans_too() -> None:
    def judge(_e: Expectation, c: Claim) -> Judgement:
        if c.ref.name == "claim-a":
            return Judgement(integrity=Integrity.SPLIT)
        if c.ref.name == "claim-b":
            return Judgement(pairing=Pairing(False, _ref("m"), "not-found", ("kubescape",)))
        return Judgement(integrity=Integrity.UNDETERMINED)

    out = classify([_exp("a"), _exp("b"), _exp("c")],
                   [_claim("a", "claim-a"), _claim("b", "claim-b"), _claim("c", "claim-c"), _claim("o", "o")],
                   judge, _orphans, inspect=lambda c: Judgement(integrity=Integrity.SPLIT))
    assert [str(v.status) for v in out.verdicts] == ["current", "current", "current"]
    assert [v.complete for v in out.verdicts] == [False, False, False]
    assert out.count_claims(ClaimClass.SPLIT) == 2          # claim-a and the orphan
    assert out.count_claims(ClaimClass.UNPAIRED) == 1
    assert out.count_undetermined() == 1
    rows, _ = cover(out.verdicts, lambda v: [])
    done = completeness(rows)
    assert (done.complete, done.incomplete_subjects, dict(done.reasons)) == (
        False, 3, {"split": 1, "unpaired": 1, "split-undetermined": 1})


def test_exclusions_cover_gaps_only_and_keep_their_evidence() -> None:
    out = classify([_exp("a"), _exp("b")], [_claim("a", "claim-a")], lambda e, c: Judgement(), _orphans)
    rows, used = cover(out.verdicts, lambda v: [Acceptance(3, "why", "proof")])
    assert [(r.status, r.gap, r.reason, r.evidence, r.excluded_by) for r in rows] == [
        ("current", None, None, None, None), ("excluded", "missing", "why", "proof", 3)]
    assert used == {3}
    done = completeness(rows)
    assert (done.complete_subjects, done.in_scope, done.complete) == (1, 2, False)


def test_undetermined_pairing_is_neither_paired_nor_counted_unpaired() -> None:
    out = classify([_exp("a")], [_claim("a", "claim-a")],
                   lambda e, c: Judgement(pairing=Pairing(None, None, "not-read")), _orphans)
    [verdict] = out.verdicts
    assert verdict.status == ClaimClass.CURRENT and not verdict.complete
    assert out.count_claims(ClaimClass.UNPAIRED) == 0
    rows, _ = cover(out.verdicts, lambda v: [])
    assert dict(completeness(rows).reasons) == {"pairing-undetermined": 1}
