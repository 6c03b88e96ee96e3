"""The impact of a policy change (GitOps pre-merge): the same resources evaluated under the base policies
and under the head policies, compared.

Downstreams, keyed by (policy, trigger uid, object identity):
- `appear`: only the head generates it;
- `disappear`: only the base did, and Kyverno deletes it: the head policy still exists with sync on (it
  cleans up what it no longer generates), or the policy is gone, had sync on, did not orphan its
  downstreams and the object is a data downstream (no `source-uid`: clones always stay, #17596);
- `orphaned`: only the base did, and Kyverno leaves it where it is (sync off, orphanDownstreamOnPolicyDelete,
  or a clone);
- `change`: both generate it, differently (with a masked unified diff);
- `undetermined`: the base generated it and the head's evaluation failed or needs request data.
A sync-off head policy generates on admission only: its `appear` and `change` rows apply to triggers
created or updated from now on, which the row's note says.

Validation results, keyed by (policy, source, rule, subject uid): `pass-to-fail`, `fail-to-pass`, `new`,
`gone`, or `changed` for any other change of result (e.g. pass to error), with the subject's file:line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.evaluate.downstreams import LABEL_SOURCE_UID, identity, labels_of
from kubectl_kyrec.evaluate.generating import GeneratingOutcome, TriggerOutcome, TriggerStatus
from kubectl_kyrec.load.generating_policies import GeneratingPolicy
from kubectl_kyrec.model import Ref, Result, Source, ref_of
from kubectl_kyrec.reconcile.diff_pair import DiffPair, DiffText
from kubectl_kyrec.reconcile.downstreams import diff_name
from kubectl_kyrec.reconcile.masking import mask_pair

APPEAR, DISAPPEAR, ORPHANED, CHANGE = "appear", "disappear", "orphaned", "change"
UNDETERMINED = "undetermined"
PASS_TO_FAIL, FAIL_TO_PASS, NEW, GONE, CHANGED = "pass-to-fail", "fail-to-pass", "new", "gone", "changed"


def _loc(source: Source | None) -> dict[str, Any] | None:
    return source.as_location() if source is not None else None


@dataclass(frozen=True)
class DownstreamImpact:
    change: str
    policy: str
    trigger: Ref
    object: Ref
    shown: DiffPair | None = None       # a `change` row's two versions (rendered at the edge)
    note: str = ""
    location: Source | None = None          # the trigger's manifest
    policy_location: Source | None = None

    def to_json(self, diff_text: DiffText) -> dict[str, Any]:
        return {"domain": "downstream", "change": self.change, "policy": self.policy,
                "trigger": self.trigger.to_json(), "object": self.object.to_json(), "diff": diff_text(self.shown),
                "note": self.note or None, "location": _loc(self.location),
                "policyLocation": _loc(self.policy_location)}


@dataclass(frozen=True)
class ResultFlip:
    change: str
    policy: str
    rule: str
    subject: Ref
    before: str | None
    after: str | None
    message: str
    location: Source | None
    policy_location: Source | None

    def to_json(self) -> dict[str, Any]:
        return {"domain": "result", "change": self.change, "policy": self.policy, "rule": self.rule,
                "subject": self.subject.to_json(), "before": self.before, "after": self.after,
                "message": self.message, "location": _loc(self.location),
                "policyLocation": _loc(self.policy_location)}


@dataclass(frozen=True)
class Impact:
    downstreams: tuple[DownstreamImpact, ...]
    results: tuple[ResultFlip, ...]

    @property
    def changed(self) -> bool:
        return bool(self.downstreams or self.results)

    def to_json(self, diff_text: DiffText) -> dict[str, Any]:
        """`diff_text` renders each changed downstream's pair (render/unified_diff.py)."""
        counts: dict[str, int] = {k: 0 for k in (APPEAR, DISAPPEAR, ORPHANED, CHANGE, UNDETERMINED)}
        for d in self.downstreams:
            counts[d.change] += 1
        flips: dict[str, int] = {k: 0 for k in (PASS_TO_FAIL, FAIL_TO_PASS, NEW, GONE, CHANGED)}
        for r in self.results:
            flips[r.change] += 1
        return {"downstreams": [d.to_json(diff_text) for d in self.downstreams],
                "results": [r.to_json() for r in self.results],
                "summary": {"downstream": counts, "result": flips}}


Key = tuple[str, str, tuple[str, str, str, str]]


def _generated(outcome: GeneratingOutcome) -> dict[Key, tuple[TriggerOutcome, dict[str, Any]]]:
    out: dict[Key, tuple[TriggerOutcome, dict[str, Any]]] = {}
    for o in outcome.outcomes:
        if o.status is TriggerStatus.GENERATED:
            for obj in o.objects:
                out[(o.policy.key, o.trigger.ref.uid, identity(obj))] = (o, obj)
    return out


def object_pair(before: Mapping[str, Any], after: Mapping[str, Any]) -> DiffPair:
    """A downstream as the base and the head policies generate it, masked."""
    masked_before, masked_after = mask_pair(before, after)
    return DiffPair(diff_name(after), masked_before, masked_after, before_dir="base", after_dir="head")


def _disappearance(obj: Mapping[str, Any], head: GeneratingPolicy | None, base: GeneratingPolicy) -> tuple[str, str]:
    if head is not None:
        if head.synchronize:
            return DISAPPEAR, ""
        return ORPHANED, "sync is off: Kyverno leaves downstreams it no longer generates"
    clone = LABEL_SOURCE_UID in labels_of(obj)
    if base.orphan_on_policy_delete:
        return ORPHANED, "policy removed with orphanDownstreamOnPolicyDelete: downstreams stay"
    if not base.synchronize:
        return ORPHANED, "policy removed; sync was off, so Kyverno tracks nothing to delete"
    if clone:
        return ORPHANED, "policy removed; Kyverno leaves cloned downstreams (#17596)"
    return DISAPPEAR, "policy removed"


def compare_downstreams(base: GeneratingOutcome, head: GeneratingOutcome) -> list[DownstreamImpact]:
    before = _generated(base)
    after = _generated(head)
    head_policies = {p.key: p for p in head.policies}
    out: list[DownstreamImpact] = []
    for key, (o, obj) in after.items():
        note = "" if o.policy.synchronize else "sync is off: applies to triggers created or updated from now on"
        if key not in before:
            out.append(DownstreamImpact(APPEAR, o.policy.key, o.trigger.ref, ref_of(obj), note=note,
                                        location=o.trigger.source, policy_location=o.policy.meta.source))
            continue
        old = before[key][1]
        if old != obj:
            out.append(DownstreamImpact(CHANGE, o.policy.key, o.trigger.ref, ref_of(obj), object_pair(old, obj),
                                        note=note, location=o.trigger.source,
                                        policy_location=o.policy.meta.source))
    unknown = {o.key: o.message for o in head.outcomes
               if o.status in (TriggerStatus.ERROR, TriggerStatus.NEEDS_REQUEST)}
    for key, (o, obj) in before.items():
        if key in after:
            continue
        if (key[0], key[1]) in unknown:
            change, note = UNDETERMINED, unknown[(key[0], key[1])]
        else:
            change, note = _disappearance(obj, head_policies.get(key[0]), o.policy)
        head_policy = head_policies.get(key[0])
        out.append(DownstreamImpact(change, o.policy.key, o.trigger.ref, ref_of(obj), note=note,
                                    location=o.trigger.source,
                                    policy_location=(head_policy or o.policy).meta.source))
    out.sort(key=lambda d: (d.policy, d.trigger.namespace, d.trigger.name, d.object.kind, d.object.namespace,
                            d.object.name, d.change))
    return out


def _result_key(r: Result) -> tuple[str, str, str, str]:
    return r.policy, r.source, r.rule, r.subject.uid


def compare_results(base: Sequence[Result], head: Sequence[Result]) -> list[ResultFlip]:
    before = {_result_key(r): r for r in base}
    after = {_result_key(r): r for r in head}
    out: list[ResultFlip] = []
    for key, r in after.items():
        old = before.get(key)
        if old is None:
            out.append(ResultFlip(NEW, r.policy, r.rule, r.subject, None, r.result, r.message, r.location,
                                  r.policy_location))
        elif old.result != r.result:
            change = (PASS_TO_FAIL if (old.result, r.result) == ("pass", "fail")
                      else FAIL_TO_PASS if (old.result, r.result) == ("fail", "pass") else CHANGED)
            out.append(ResultFlip(change, r.policy, r.rule, r.subject, old.result, r.result, r.message,
                                  r.location, r.policy_location))
    for key, r in before.items():
        if key not in after:
            out.append(ResultFlip(GONE, r.policy, r.rule, r.subject, r.result, None, r.message, r.location,
                                  r.policy_location))
    out.sort(key=lambda f: (f.policy, f.subject.kind, f.subject.namespace, f.subject.name, f.rule, f.change))
    return out


def compute_impact(base_results: Sequence[Result], head_results: Sequence[Result],
                   base_generated: GeneratingOutcome, head_generated: GeneratingOutcome) -> Impact:
    return Impact(tuple(compare_downstreams(base_generated, head_generated)),
                  tuple(compare_results(base_results, head_results)))
