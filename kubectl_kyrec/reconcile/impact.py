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

Admission, per manifest (when the manifests went through the admission chain): `rejected` (the base
admits it, the head's policies would deny the request), `admitted` (the other way round), and
`mutated-differently` (admitted both ways, stored differently: a mutate rule or MutatingPolicy changed; with
the diff). A request is denied when a result is `fail` from a policy whose validationActions hold Deny
(a classic policy in Enforce mode), or `error` from one whose failurePolicy is Fail and which either denies
or mutates (an admission webhook's failure blocks the request; kk: pkg/webhooks/resource/vpol and
mutation handlers, `failurePolicy`). A change of `validationActions` from Audit to Deny, or of
`failurePolicy`, leaves every result as it was and changes this.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.evaluate.generating.downstreams import LABEL_SOURCE_UID, identity, labels_of
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome, TriggerOutcome, TriggerStatus
from kubectl_kyrec.load.policy.generating import GeneratingPolicy
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


REJECTED, ADMITTED, MUTATED_DIFFERENTLY = "rejected", "admitted", "mutated-differently"


@dataclass(frozen=True)
class AdmissionChange:
    change: str
    subject: Ref
    operation: str
    denied_by: tuple[str, ...]      # the policies that deny the request where it is denied (head, else base)
    location: Source | None
    shown: DiffPair | None = None   # a mutated-differently row's two stored objects

    def to_json(self, diff_text: DiffText) -> dict[str, Any]:
        return {"domain": "admission", "change": self.change, "subject": self.subject.to_json(),
                "operation": self.operation, "deniedBy": list(self.denied_by), "diff": diff_text(self.shown),
                "location": _loc(self.location)}


@dataclass(frozen=True)
class Impact:
    downstreams: tuple[DownstreamImpact, ...]
    results: tuple[ResultFlip, ...]
    admission: tuple[AdmissionChange, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.downstreams or self.results or self.admission)

    def introduced(self, head_results: Sequence[Result], counts: Callable[[Sequence[Result]], bool]) -> bool:
        """Whether the change introduces what fails a run: a result it makes or changes (new, pass-to-fail,
        changed) that `counts` (the command's --fail-on) counts, a downstream it creates, removes or changes,
        a request it makes the cluster deny or store differently. What it fixes (fail-to-pass, gone, a request
        now admitted) fails nothing. `head_results`: the run's results, whose validationActions `counts`
        may weigh (a flip carries only the outcomes)."""
        made = {(f.policy, f.rule, f.subject) for f in self.results if f.change in (NEW, PASS_TO_FAIL, CHANGED)}
        if made and counts([r for r in head_results if (r.policy, r.rule, r.subject) in made]):
            return True
        return bool(self.downstreams) or any(a.change != ADMITTED for a in self.admission)

    def to_json(self, diff_text: DiffText) -> dict[str, Any]:
        """`diff_text` renders each changed downstream's pair (render/unified_diff.py)."""
        counts: dict[str, int] = {k: 0 for k in (APPEAR, DISAPPEAR, ORPHANED, CHANGE, UNDETERMINED)}
        for d in self.downstreams:
            counts[d.change] += 1
        flips: dict[str, int] = {k: 0 for k in (PASS_TO_FAIL, FAIL_TO_PASS, NEW, GONE, CHANGED)}
        for r in self.results:
            flips[r.change] += 1
        admitted: dict[str, int] = {k: 0 for k in (REJECTED, ADMITTED, MUTATED_DIFFERENTLY)}
        for a in self.admission:
            admitted[a.change] += 1
        return {"downstreams": [d.to_json(diff_text) for d in self.downstreams],
                "results": [r.to_json() for r in self.results],
                "admission": [a.to_json(diff_text) for a in self.admission],
                "summary": {"downstream": counts, "result": flips, "admission": admitted}}


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
               if o.status in (TriggerStatus.ERROR, TriggerStatus.NEEDS_REQUEST, TriggerStatus.NEEDS_REGISTRY,
                               TriggerStatus.ADMISSION_UNKNOWN, TriggerStatus.READ_FAILED,
                               TriggerStatus.KIND_NOT_CAPTURED)}
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


# a policy (report source, name) -> its failurePolicy, for the policies that deny or mutate at admission
FailurePolicies = Mapping[tuple[str, str], str]


@dataclass(frozen=True)
class AdmissionSide:
    """One side (base or head) of a run through the admission chain: its results, the stored object of each
    manifest (by subject uid; None for a DELETE), and its policies' failurePolicy."""

    results: Sequence[Result]
    stored: Mapping[str, tuple[Ref, str, Mapping[str, Any] | None, Source | None]]
    failure: FailurePolicies
    mutating_sources: frozenset[str] = frozenset()


def denied_by(results: Sequence[Result], failure: FailurePolicies, mutating_sources: frozenset[str]
              ) -> dict[str, list[str]]:
    """Subject uid -> the policies that would deny its request."""
    out: dict[str, list[str]] = {}
    for r in results:
        if r.result == "fail":
            denies = "Deny" in r.validation_actions
        elif r.result == "error":
            denies = failure.get((r.source, r.policy), "Fail") == "Fail" and (
                "Deny" in r.validation_actions or r.source in mutating_sources)
        else:
            continue
        if denies:
            found = out.setdefault(r.subject.uid, [])
            if r.policy not in found:
                found.append(r.policy)
    return out


def compare_admission(base: AdmissionSide, head: AdmissionSide) -> list[AdmissionChange]:
    before = denied_by(base.results, base.failure, base.mutating_sources)
    after = denied_by(head.results, head.failure, head.mutating_sources)
    out: list[AdmissionChange] = []
    for uid, (ref, operation, obj, location) in head.stored.items():
        was, now = before.get(uid), after.get(uid)
        if now and not was:
            out.append(AdmissionChange(REJECTED, ref, operation, tuple(now), location))
        elif was and not now:
            out.append(AdmissionChange(ADMITTED, ref, operation, tuple(was), location))
        elif not now and uid in base.stored:
            old = base.stored[uid][2]
            if old is not None and obj is not None and old != obj:
                masked_before, masked_after = mask_pair(old, obj)
                out.append(AdmissionChange(MUTATED_DIFFERENTLY, ref, operation, (), location,
                                           DiffPair(diff_name(obj), masked_before, masked_after,
                                                    before_dir="base", after_dir="head")))
    out.sort(key=lambda a: (a.subject.kind, a.subject.namespace, a.subject.name, a.change))
    return out


def compute_impact(base_results: Sequence[Result], head_results: Sequence[Result],
                   base_generated: GeneratingOutcome, head_generated: GeneratingOutcome,
                   admission: tuple[AdmissionSide, AdmissionSide] | None = None) -> Impact:
    """`admission`: the base and head sides when the manifests went through the admission chain."""
    return Impact(tuple(compare_downstreams(base_generated, head_generated)),
                  tuple(compare_results(base_results, head_results)),
                  tuple(compare_admission(*admission)) if admission is not None else ())
