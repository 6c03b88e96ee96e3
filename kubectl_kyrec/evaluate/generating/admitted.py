"""Generation on the admitted trigger (`eval` on manifests): which object each trigger is, and what to say
when admission cannot tell.

Kyverno generates from the object the API server admitted, not from the manifest as written. Its classic
generate rules are decided in its validating webhook (kk: pkg/webhooks/resource/handlers.go `Validate` ->
`handleBackgroundApplies`), GeneratingPolicies in a validating webhook of their own (`/gpol`, built by
pkg/controllers/webhook/controller.go `buildForJSONPoliciesValidation`, served by
pkg/webhooks/resource/gpol/handler.go): the API server calls validating webhooks after every mutating one.
The background controller then reads the trigger as stored (pkg/background/common/resource.go `GetTrigger`:
the cluster's object for a CREATE, the admission request's object for an UPDATE), the mutated object either
way. So `eval` evaluates the generating policies on the objects its admission chain admitted
(evaluate/admission_chain.py); objects read from a cluster were admitted already and go in as they are.

Where the chain cannot tell the admitted object (`Admission.undetermined`), generation is evaluated on each
object it can name: its own (load order) and the others the unfixed orders admit (`Admission.alternatives`)
or, when the unknown is another one (a webhook error, a registry, a schema), the manifest before mutation.
When the orders are the only unknown, an outcome every one of those objects agrees on stands. Otherwise a
(policy, trigger) that does anything on any of them (generates, skips with a result, errs) is
ADMISSION_UNKNOWN: its result `undetermined` with the reason, nothing generated. A policy that does nothing
on every object tried is taken to do nothing (an object no order tried could differ: docs/admission.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence

from kubectl_kyrec.evaluate.admission_chain import ORDER_DEPENDENT, Admission
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome, TriggerOutcome, TriggerStatus
from kubectl_kyrec.model import UNDETERMINED, Document, Obj, Subject


class AdmittedTriggers:
    """The triggers of a run on manifests, each as admitted (`triggers`), and the candidate objects of those
    whose admitted object is not known (`passes`: the trigger lists of the extra runs, `in_pass`: which
    triggers each one evaluates)."""

    def __init__(self, documents: Sequence[Document], admissions: Sequence[Admission]) -> None:
        # a manifest's admission by its Source object: the chain's subjects carry the document's own
        by_source = {id(a.subject.source): a for a in admissions
                     if a.subject.source is not None and a.operation != "DELETE"}
        self.admission_of: dict[int, Admission] = {}
        self.triggers: list[Document] = []
        candidates: dict[int, list[Obj]] = {}
        for doc in documents:
            admission = by_source.get(id(doc.source))
            if admission is None or admission.subject.ref.kind != doc.kind:
                # not admitted (filtered out by the selection, or --no-mutate): as written
                self.triggers.append(doc)
                continue
            self.triggers.append(Document(admission.subject.obj, doc.source))
            if admission.undetermined:
                self.admission_of[id(doc.source)] = admission
                candidates[id(doc.source)] = _candidates(admission)
        self.passes: list[list[Document]] = []
        self.in_pass: list[frozenset[int]] = []
        for k in range(max((len(c) for c in candidates.values()), default=0)):
            # every trigger stays in the list (a Namespace among them labels its namespace); only those with a
            # k-th candidate object are evaluated in pass k, on it
            self.passes.append([Document(candidates[id(d.source)][k], d.source)
                                if len(candidates.get(id(d.source), ())) > k else d for d in self.triggers])
            self.in_pass.append(frozenset(s for s, c in candidates.items() if len(c) > k))

    def pass_filter(self, k: int, keep: Callable[[Subject], bool]) -> Callable[[Subject], bool]:
        chosen = self.in_pass[k]
        return lambda subject: id(subject.source) in chosen and keep(subject)

    def decide(self, outcome: GeneratingOutcome, passes: Sequence[GeneratingOutcome]) -> None:
        """`outcome` (the run on `triggers`) with the outcomes of every trigger whose admission is not known
        decided over its candidate objects (`passes`: the runs on `self.passes`, in order; pass k evaluated
        the triggers of `in_pass[k]` only)."""
        if not self.admission_of:
            return
        triggers = {id(s.source): s for s in outcome.triggers if id(s.source) in self.admission_of}
        firsts = {_key(o): i for i, o in enumerate(outcome.outcomes) if id(o.trigger.source) in self.admission_of}
        found = [{_key(o): o for o in run.outcomes} for run in passes]
        sources = {key: id(outcome.outcomes[i].trigger.source) for key, i in firsts.items()}
        for run in passes:
            sources.update((_key(o), id(o.trigger.source)) for o in run.outcomes if _key(o) not in sources)
        for key, source in sources.items():
            admission = self.admission_of[source]
            first = outcome.outcomes[firsts[key]] if key in firsts else None
            # the trigger's own candidates: the passes that evaluated it
            seen = [first, *(f.get(key) for k, f in enumerate(found) if source in self.in_pass[k])]
            signatures = [_signature(o) for o in seen]
            if all(s is None for s in signatures) or (
                    admission.alternatives and all(s == signatures[0] for s in signatures)):
                continue
            # (a -l selector can pass the trigger on another candidate object only: that object's subject then)
            trigger = triggers.get(source) or next(o.trigger for o in seen if o is not None)
            decided = _unknown(seen, admission, trigger)
            if key in firsts:
                outcome.outcomes[firsts[key]] = decided
            else:
                outcome.outcomes.append(decided)


def _key(outcome: TriggerOutcome) -> tuple[str, str, str]:
    """A (policy, trigger)'s outcome, per rule for a classic policy (each generate rule answers on its own)."""
    return (*outcome.key, str(getattr(outcome.policy, "rule_name", "")))


def _candidates(admission: Admission) -> list[Obj]:
    """The objects besides the chain's own that the trigger may be admitted as."""
    if admission.alternatives:
        return list(admission.alternatives)
    before = admission.before_mutations
    return [before] if before is not None and before != admission.subject.obj else []


def _signature(outcome: TriggerOutcome | None) -> tuple[str, str, str] | None:
    """What an outcome decides (None: nothing: no match, or a skip without a result)."""
    if outcome is None or (outcome.status is TriggerStatus.SKIPPED and outcome.result is None):
        return None
    verdict = outcome.result.result if outcome.result is not None else ""
    return outcome.status.value, json.dumps(outcome.objects, sort_keys=True, default=str), verdict


def _describe(outcome: TriggerOutcome | None) -> str:
    if outcome is None:
        return "no match"
    if outcome.status is TriggerStatus.GENERATED:
        return f"generated {len(outcome.objects)} object(s)"
    return outcome.status.value


def _unknown(candidates: Iterable[TriggerOutcome | None], admission: Admission, trigger: Subject
             ) -> TriggerOutcome:
    """The ADMISSION_UNKNOWN outcome of a (policy, trigger) whose candidate objects disagree."""
    seen = list(candidates)
    reason = "; ".join(dict.fromkeys(admission.undetermined))
    in_order = _describe(seen[0])
    if admission.alternatives:
        kinds = ", ".join(dict.fromkeys(_describe(o) for o in seen))
        message = (f"{ORDER_DEPENDENT}: the policy gives {kinds} on the {len(seen)} objects that "
                   f"{admission.orders_tried} orders of the mutations admit ({reason}); in load order: {in_order}")
    else:
        message = (f"the admitted trigger is not known ({reason}); on the object admitted in load order: "
                   f"{in_order}")
    base = next(o for o in seen if o is not None and o.result is not None)
    assert base.result is not None
    result = base.result._replace(result=UNDETERMINED, message=message, subject=trigger.ref)
    return dataclasses.replace(base, trigger=trigger, status=TriggerStatus.ADMISSION_UNKNOWN, objects=(),
                               message=message, result=result)
