"""`eval --state/--live`: what classic mutate-existing rules would change on existing targets once the manifests
(or the policies) are applied.

A mutate-existing rule (`mutate.targets`) changes nothing at admission: Kyverno's webhook creates an
UpdateRequest for a trigger its rule matches (pkg/webhooks/resource/handlers.go `handleBackgroundApplies`), and
the background controller later mutates the targets the rule selects, as the cluster holds them
(pkg/background/mutate/mutate.go `ProcessUR` -> engine `Mutate` -> handlers/mutation mutate_existing.go,
`loadTargets`). Two requests start that:

- applying manifests (`-r`): each admitted manifest is a trigger, for every mutate-existing rule matching it;
- applying the policies themselves (no `-r`: the state's objects are the triggers): only the rules with
  `mutateExistingOnPolicyUpdate` (the rule's own, else the spec's; pkg/policy/mutate.go `handleMutate`), for
  every existing object the rule matches.

The targets are the state's objects (a capture or the live cluster): without a state there is nothing to
preview, and the run says so. Each target change is the rule's response computed from the target as it is
(evaluate/classic/mutator.py `mutate_existing`): `pass` with the JSON patch, `skip`, `error`. A trigger whose
admitted object is not known gives `undetermined` target changes (the reason said), computed on the chain's
object for display only. MutatingPolicies with `mutateExisting` start only at admission (there is no
policy-update pass for them): with `-r`, each one a manifest triggers (its namespace, matchConstraints and
matchConditions: mpol engine/reconciler.go MatchesMutateExisting) is previewed on the state's objects, one
policy at a time (pkg/background/mpol/processor.go Process; evaluate/mutating/mutate_existing.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.evaluate.admission_chain import Admission
from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator, TargetChange
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.model import UNDETERMINED, Document, Ref, Source, Subject

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import Environments
    from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
    from kubectl_kyrec.evaluate.pipeline import EvalOptions


@dataclass(frozen=True)
class TargetPreview:
    """One target change and the trigger whose UpdateRequest makes it."""

    trigger: Ref
    trigger_source: Source | None
    change: TargetChange

    def to_json(self) -> dict[str, Any]:
        c = self.change
        api_version, kind, namespace, name = c.target
        return {"policy": c.policy, "kind": c.policy_kind, "rule": c.rule, "trigger": self.trigger.to_json(),
                "location": self.trigger_source.as_location() if self.trigger_source is not None else None,
                "target": {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name},
                "result": c.result, "message": c.message, "patch": [dict(op) for op in c.patch]}


def _mutate_existing_rules(policy: ClassicPolicy) -> list[ClassicRule]:
    return [r for r in policy.rules if r.type == "mutate" and (r.raw.get("mutate") or {}).get("targets")]


def _on_policy_update(policy: ClassicPolicy, rule: ClassicRule) -> bool:
    """pkg/policy/mutate.go handleMutate: the rule's mutateExistingOnPolicyUpdate, else the spec's."""
    own = (rule.raw.get("mutate") or {}).get("mutateExistingOnPolicyUpdate")
    if own is not None:
        return bool(own)
    return bool((policy.raw.get("spec") or {}).get("mutateExistingOnPolicyUpdate"))


def mutate_existing_policies(policies: PolicySet, *, on_policy_update: bool) -> list[ClassicPolicy]:
    """The classic policies with mutate-existing rules that a request starts: every such rule for applied
    manifests, only those with mutateExistingOnPolicyUpdate for applied policies (their other rules left out)."""
    out = []
    for policy in policies.classic:
        rules = _mutate_existing_rules(policy)
        if on_policy_update:
            rules = [r for r in rules if _on_policy_update(policy, r)]
        if rules:
            out.append(policy if len(rules) == len(policy.rules) else dataclasses.replace(policy, rules=tuple(rules)))
    return out


def preview_targets(policies: Sequence[ClassicPolicy], exceptions: Sequence[Any], triggers: Sequence[Subject],
                    contexts: Mapping[int, SubjectContext], state: Sequence[Document], *, now: Any,
                    sources: Any, options: ClassicOptions, admissions: Sequence[Admission] = ()
                    ) -> list[TargetPreview]:
    """Every target change `policies` make for `triggers` (`contexts`: each trigger's request, by id), the
    targets among `state`; a trigger whose admission is not known gives undetermined changes."""
    mutator = ClassicMutator(policies, exceptions, state=state, now=now, sources=sources, options=options)
    unknown = {id(a.subject.ref): "; ".join(dict.fromkeys(a.undetermined)) for a in admissions if a.undetermined}
    out: list[TargetPreview] = []
    for trigger in triggers:
        reason = unknown.get(id(trigger.ref))
        for change in mutator.mutate_existing(contexts[id(trigger)], state):
            if reason is not None:
                change = dataclasses.replace(change, result=UNDETERMINED, message=(
                    f"the admitted trigger is not known ({reason}); on the object admitted in load order: "
                    f"{change.result}" + (f" ({change.message})" if change.message else "")))
            out.append(TargetPreview(trigger.ref, trigger.source, change))
    return out


def mutate_existing_preview(policies: PolicySet, subjects: Sequence[Subject], admissions: Sequence[Admission],
                            state: Sequence[Document], kinds: Any, options: EvalOptions, envs: Environments, *,
                            manifests: bool, state_given: bool) -> tuple[list[TargetPreview], list[str]]:
    """eval's preview: the target changes of the run's mutate-existing rules (`manifests`: the subjects are
    the applied manifests, as admitted; else the state's objects, and only rules that act on a policy
    update), and the notices saying what was not previewed."""
    from kubectl_kyrec.evaluate.classic.engine import ClassicOptions, classic_sources
    from kubectl_kyrec.evaluate.namespaces import namespace_objects
    from kubectl_kyrec.evaluate.pipeline import subject_context

    notices: list[str] = []
    selected = [p for p in mutate_existing_policies(policies, on_policy_update=not manifests)
                if options.selection.holds_policy(p.meta.key)]
    # a MutatingPolicy's mutateExisting starts at admission only (no policy-update pass, unlike classic rules)
    mpols = [p for p in policies.mutating if p.mutate_existing and options.selection.holds_policy(p.meta.key)] \
        if manifests else []
    if not selected and not mpols:
        return [], notices
    if not state_given:
        rules = sum(len(_mutate_existing_rules(p)) for p in selected) + len(mpols)
        names = ", ".join([*(p.meta.key for p in selected), *(p.meta.key for p in mpols)])
        notices.append(f"{rules} mutate-existing rule(s) or policies ({names}): their targets are existing "
                       "objects; give --state or --live to preview what applying this changes on them")
        return [], notices
    namespaces = namespace_objects([*state, *(Document(s.obj, s.source or Source("")) for s in subjects),
                                    *options.namespaces], options.namespace_labels)
    triggers = [s for s in subjects if s.operation != "DELETE"]
    contexts = {id(s): subject_context(s, namespaces, options) for s in triggers}
    classic = options.classic if options.classic is not None else ClassicOptions()
    sources = classic_sources(state, kinds, classic)
    previews = preview_targets(selected, policies.classic_exceptions, triggers, contexts, state, now=options.now,
                               sources=sources, options=classic, admissions=admissions) if selected else []
    if mpols:
        more, errors = _mutating_previews(mpols, policies, triggers, contexts, state, kinds, options, envs, admissions)
        previews.extend(more)
        notices.extend(errors)
    return previews, notices


def _mutating_previews(mpols: Sequence[Any], policies: PolicySet, triggers: Sequence[Subject],
                       contexts: Mapping[int, SubjectContext], state: Sequence[Document], kinds: Any,
                       options: EvalOptions, envs: Environments, admissions: Sequence[Admission]
                       ) -> tuple[list[TargetPreview], list[str]]:
    """The MutatingPolicies' mutateExisting target changes (evaluate/mutating/mutate_existing.py
    background_target_changes); a policy that does not compile is reported by the run already."""
    from kubectl_kyrec.errors import InputError
    from kubectl_kyrec.evaluate.mutating.engine import compile_mutating_policy
    from kubectl_kyrec.evaluate.mutating.mutate_existing import TargetDiscoveryError, background_target_changes
    from kubectl_kyrec.evaluate.subjects import as_admitted, make_subject

    compiled = []
    for policy in mpols:
        try:
            compiled.append(compile_mutating_policy(policy, envs, policies.exceptions, options.now))
        except InputError:
            continue
    targets = [make_subject(as_admitted(d.obj), d.source, kinds)[0] for d in state]
    unknown = {id(a.subject.ref): "; ".join(dict.fromkeys(a.undetermined)) for a in admissions if a.undetermined}
    out: list[TargetPreview] = []
    notices: list[str] = []
    for trigger in triggers:
        try:
            changes = background_target_changes(compiled, contexts[id(trigger)], targets)
        except TargetDiscoveryError as exc:
            notices.append(f"{exc.source}: {trigger.ref.display()}: failed to discover CEL targets: {exc.message}")
            continue
        reason = unknown.get(id(trigger.ref))
        for change in changes:
            if reason is not None:
                change = dataclasses.replace(change, result=UNDETERMINED, message=(
                    f"the admitted trigger is not known ({reason}); on the object admitted in load order: "
                    f"{change.result}" + (f" ({change.message})" if change.message else "")))
            out.append(TargetPreview(trigger.ref, trigger.source, change))
    return out, notices
