"""mutateExisting MutatingPolicies on their targets, as Kyverno's CLI runs them on a test's targetResources.

kk 111e07bb: cmd/cli/kubectl-kyverno/processor/policy_processor.go ApplyPoliciesOnResource ("mutateExisting
MutatingPolicies - process target resources"), targetMatchPredicate, discoverCELTargets; pkg/cel/policies/
mpol/engine/engine.go Evaluate (no matcher) and compiler/policy.go EvaluateTarget. For each resource (the
trigger), after the MutatingPolicies' admission pass:

- a policy whose targetMatchConstraints has an `expression` evaluates it once per trigger, with `object` the
  trigger as the admission pass left it and `variables`; the answer (an object, or a List's `items`) names
  its targets by namespace/name, whatever their kind. Any error there fails the CLI's whole run.
- every targetResource is then offered to every mutateExisting policy in load order (autogen copies too):
  one with an expression takes the targets it named; one without takes those its targetMatchConstraints'
  resourceRules match (its matchConstraints when it has none), every operation accepted, no namespace.
- a taken target is mutated as the policy mutates at admission, but with the target as `object` (no
  oldObject), the trigger's admission request (before the admission pass) as `request`, and
  targetMatchConditions in place of matchConditions; each policy sees the previous one's output, and every
  passing policy's response carries the target after all of them (`evalResponse.PatchedResource`).

The trigger is not matched against the policy at all: the CLI runs the targets for any resource it is
given (the background controller only does so for a trigger its matchConstraints admit; docs/compatibility.md,
"Mutating policies").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.evaluate.admission_chain import mutation_of
from kubectl_kyrec.evaluate.classic.mutator import TargetChange
from kubectl_kyrec.evaluate.exceptions import conditions_hold
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.mutating.engine import CompiledMutatingPolicy, evaluate_mutating, with_object
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.vocabulary import MatchResources
from kubectl_kyrec.model import UNDETERMINED, Obj, Source, Subject, object_identity


class TargetDiscoveryError(EngineError):
    """discoverCELTargets failed: the CLI's run for the resource fails ("failed to discover CEL targets")."""

    def __init__(self, message: str, source: Source | None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    return f"{namespace}/{name}" if namespace else name


def discover_targets(cp: CompiledMutatingPolicy, trigger: SubjectContext) -> set[str] | None:
    """The namespace/name keys the policy's targetMatchConstraints.expression names for `trigger` (None
    without an expression). Raises TargetDiscoveryError as discoverCELTargets fails."""
    if cp.target_expression is None:
        return None
    # discoverCELTargets binds `object` (and `variables`) alone
    outcome = cp.target_expression.evaluate(trigger.activation(cp.env, extra={
        "request": None, "oldObject": None, "namespaceObject": None}))
    name, source = cp.policy.meta.name, cp.policy.meta.source
    if not outcome.ok:
        raise TargetDiscoveryError(f"failed to evaluate CEL expression for policy {name}: {outcome.error}", source)
    value = outcome.value
    if not isinstance(value, Mapping):
        raise TargetDiscoveryError(f"output type of the target selector expression must be a map for policy {name}",
                                   source)
    items = value.get("items")
    if isinstance(items, list):
        return {_key(item) for item in items if isinstance(item, Mapping)}
    return {_key(value)}


def _wildcard_operations(match: MatchResources) -> MatchResources:
    rules = tuple(dataclasses.replace(r, operations=("*",)) for r in match.resource_rules)
    return dataclasses.replace(match, resource_rules=rules)


def takes_target(cp: CompiledMutatingPolicy, target: SubjectContext, named: Mapping[str, set[str]]) -> bool:
    """targetMatchPredicate: whether the policy mutates this target."""
    policy = cp.policy
    if policy.target_expression:
        keys = named.get(policy.meta.name)
        return keys is not None and _key(target.request.obj or {}) in keys
    match = policy.target_match_constraints or policy.match_constraints
    if match is None:
        return False
    try:
        return matches_constraints(_wildcard_operations(match), target.request, None)
    except MatchError:
        return False


def target_context(subject: Subject, trigger: SubjectContext) -> SubjectContext:
    """The target as the CLI's attributes record makes it: no operation, no oldObject, no namespace object;
    `request` is the trigger's."""
    request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced, operation="")
    return SubjectContext(subject, request, None, cel_request=trigger.request.as_cel_request())


def mutate_targets(compiled: Sequence[CompiledMutatingPolicy], trigger: SubjectContext, admitted: Obj,
                   targets: Sequence[Subject]) -> list[TargetChange]:
    """Every target change the CLI's mutateExisting pass makes for one trigger: `trigger` is the trigger's
    request (before the admission pass), `admitted` the trigger after it. Raises TargetDiscoveryError."""
    existing = [cp for cp in compiled if cp.policy.mutate_existing]
    if not existing or not targets:
        return []
    named: dict[str, set[str]] = {}
    for cp in existing:
        keys = discover_targets(cp, with_object(trigger, admitted))
        if keys is not None:
            named[cp.policy.meta.name] = keys       # keyed by name: an autogen copy's answer replaces it
    out: list[TargetChange] = []
    for subject in targets:
        ctx = target_context(subject, trigger)
        before = ctx.request.obj or {}
        current: Obj = dict(before)
        answered: list[tuple[CompiledMutatingPolicy, list[Any]]] = []
        for cp in existing:
            if not takes_target(cp, ctx, named):
                continue
            outcome = evaluate_mutating(cp, with_object(ctx, current), target=True)
            answered.append((cp, outcome.results))
            if outcome.undetermined:
                # a merge that needs the kind's schema: the target's change is not known
                out.append(TargetChange(cp.key, cp.policy.meta.kind, "", object_identity(before), UNDETERMINED,
                                        outcome.undetermined, before))
            if outcome.obj is not None:
                current = outcome.obj
        for cp, results in answered:
            for r in results:
                after = current if r.result == "pass" else None
                patch: tuple[Mapping[str, Any], ...] = ()
                if after is not None:
                    m = mutation_of(cp.key, cp.policy.meta.kind, r.rule, before, after, cp.policy.meta.source)
                    patch = m.patch if m is not None else ()
                out.append(TargetChange(cp.key, cp.policy.meta.kind, r.rule, object_identity(before), r.result,
                                        r.message, before, after, patch))
    return out



def triggers_policy(cp: CompiledMutatingPolicy, trigger: SubjectContext) -> bool:
    """Whether Kyverno's webhook creates the policy's UpdateRequest for this admission request (kk: mpol
    engine/reconciler.go MatchesMutateExisting: the policy's namespace, matchConstraints, then matchConditions,
    whose error or false answer leaves the request alone)."""
    policy = cp.policy
    if policy.meta.kind == "NamespacedMutatingPolicy" and trigger.request.namespace != policy.meta.namespace:
        return False
    try:
        if not matches_constraints(policy.match_constraints, trigger.request, trigger.namespace_obj):
            return False
    except MatchError:
        return False
    if not cp.conditions:
        return True
    ok, failed = conditions_hold(cp.conditions, trigger.activation(cp.env), False)
    return ok and failed is None


def background_target_changes(compiled: Sequence[CompiledMutatingPolicy], trigger: SubjectContext,
                              targets: Sequence[Subject]) -> list[TargetChange]:
    """What Kyverno's background controller changes on `targets` for one admitted trigger (kk: pkg/background/
    mpol/processor.go Process): one UpdateRequest per mutateExisting policy the trigger matches, each
    processed on its own, every target it selects mutated from the target as it is (no policy sees another's
    output: their UpdateRequests run in no fixed order). Target selection and evaluation are mutate_targets'
    (the CLI's), one policy at a time. Raises TargetDiscoveryError."""
    out: list[TargetChange] = []
    admitted = dict(trigger.request.obj or {})
    for cp in compiled:
        if cp.policy.mutate_existing and triggers_policy(cp, trigger):
            out.extend(mutate_targets([cp], trigger, admitted, targets))
    return out
