"""Classic `mutate` rules (ClusterPolicy / Policy) at admission: the object after Kyverno's mutating webhook,
rule by rule (kk: pkg/engine/mutation.go mutate, engine.go invokeRuleHandler, handlers/mutation
mutate_resource.go and common.go forEachMutator, mutate/mutation.go Mutate/ForEach; the patches in
classic/mutate.py).

Per policy, per rule of ComputeRules(policy, "") (the rules plus every autogen controller's): match/exclude
on the object as the previous rule left it; rules without a mutate handler give nothing (validate,
generate; a mutate-existing rule at admission too); the rule's context entries and preconditions
(`preconditions not met[; msg]`, skip); reportProperties; PolicyExceptions (`rule is skipped due to policy
exceptions<keys>`); then either `foreach` or the whole rule's variables substituted and its
patchStrategicMerge (else patchesJson6902) applied: `pass` "mutated <Kind>/<name>[ in namespace <ns>]",
`skip` "no patches applied", or `error`. Each rule works on the previous rule's output, and the JSON
context's `request.object` follows it within the policy. `applyRules: One` stops after the first rule that
applied.

Across policies (pkg/webhooks/resource/mutation applyMutations): each policy works on the previous one's
output. The order comes from the policy cache (pkg/policycache/store.go get), which ranges over a Go map: the
failurePolicy Ignore webhook's policies, then the Fail one's (pkg/controllers/webhook buildForPoliciesMutation
registers them in that order), each group cluster-wide policies first, then the request namespace's, in no
fixed order within. When two or more policies of one such group answer the subject, every order is
evaluated (up to `MAX_PERMUTED` policies, 120 orders): one outcome is the answer; several make the step
ORDER_DEPENDENT (its `obj` is then the outcome of kyrec's listing order, for display only). As in the
webhook, a policy's rules read `request.object` as the request gave it until one of them has run (the JSON
context is the request's, restored after each policy), while patches apply to the chained object.

A policy whose rules end in an error: Kyverno keeps an empty object as that policy's output (mutate.go
NewErrorResponse), drops its patches, and either denies the request (failurePolicy Fail) or goes on
(Ignore) with that empty object as the next policy's resource; either way kyrec cannot give the admitted
object, and says so in `undetermined`.

`policy_responses` is the CLI's order instead (cmd/cli/kubectl-kyverno/processor ApplyPoliciesOnResource):
the policies as listed, each with a fresh JSON context on the previous policy's output (kyrec test).
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.classic.autogen import compute_rules_every_controller
from kubectl_kyrec.classic.context_loader import ContextLoader, ContextSources
from kubectl_kyrec.classic.core_adapter import Core
from kubectl_kyrec.classic.match import RequestFacts, match_state
from kubectl_kyrec.classic.mutate import ERROR, PASS, SKIP, Outcome, apply, same_json
from kubectl_kyrec.classic.mutate import error as mutate_error
from kubectl_kyrec.classic.validate import join_non_empty
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.evaluate.admission_chain import ORDER_DEPENDENT, Mutation, MutationStep, Reinvocation, mutation_of
from kubectl_kyrec.evaluate.classic.engine import (
    ClassicEvaluator,
    ClassicOptions,
    matching_exceptions,
    refused_by_kyverno,
    request_json_context,
    unanswerable_message,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.load.policy.classic import ClassicException, ClassicPolicy, ClassicRule
from kubectl_kyrec.model import UNDETERMINED, Document, Result, object_identity

# more policies than this answering one subject in one unordered group: their orders are not all tried
MAX_PERMUTED = 5
_ACTIONS: tuple[str, ...] = ()      # mutation results carry no validation action


def has_mutate_standard(policy: ClassicPolicy) -> bool:
    """kk: Spec.HasMutateStandard: a mutate rule without targets."""
    return any(r.type == "mutate" and not _targets(r) for r in policy.rules)


def has_mutate(policy: ClassicPolicy) -> bool:
    return any(r.type == "mutate" for r in policy.rules)


def _targets(rule: ClassicRule) -> bool:
    return bool((rule.raw.get("mutate") or {}).get("targets"))


def _failure_policy(policy: ClassicPolicy) -> str:
    """Spec.GetFailurePolicy: Fail unless the spec says Ignore."""
    return "Ignore" if (policy.raw.get("spec") or {}).get("failurePolicy") == "Ignore" else "Fail"


def success_message(obj: Mapping[str, Any] | None) -> str:
    """buildSuccessMessage."""
    if not obj:
        return "mutated resource"
    meta = obj.get("metadata") or {}
    kind, name, namespace = obj.get("kind") or "", meta.get("name") or "", meta.get("namespace") or ""
    if not namespace:
        return f"mutated {kind}/{name}"
    return f"mutated {kind}/{name} in namespace {namespace}"


@dataclass(frozen=True)
class TargetChange:
    """One target of a mutate-existing rule for one trigger: the background controller's rule response
    (`pass` with the patched target, `skip`, `error`) and the JSON patch it applies to the target."""

    policy: str
    policy_kind: str
    rule: str
    target: tuple[str, str, str, str]         # apiVersion, kind, namespace, name ("" x4: the rule's own error)
    result: str
    message: str
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    patch: tuple[Mapping[str, Any], ...] = ()
    # False: the rule's own context, preconditions or exceptions decided it on the trigger, before any target
    # was looked at; the webhook's background checks (engine ApplyBackgroundChecks) then make no UpdateRequest
    # for the rule (pkg/webhooks/resource/updaterequest.go handleMutateExisting)
    triggered: bool = True


def _select_targets(spec: Any, policy_namespace: str, objects: Sequence[Document]
                    ) -> tuple[list[Mapping[str, Any]], str]:
    """loadTargets/getTargets over `objects` (dclient.GetResources): a GET when namespace and name are both
    given without wildcards (not found: an error), else a LIST filtered by the label selector and by the
    namespace and name patterns (kk: load_targets.go match). A namespaced policy's targets are in its
    namespace."""
    from kubectl_kyrec.golang.wildcard import match as wildcard_match
    from kubectl_kyrec.k8s.labels import matches_selector

    if not isinstance(spec, Mapping):
        return [], "invalid target"
    api_version, kind = str(spec.get("apiVersion") or ""), str(spec.get("kind") or "")
    namespace, name = str(spec.get("namespace") or ""), str(spec.get("name") or "")
    if policy_namespace:
        namespace = policy_namespace
    of_kind = [d for d in objects if d.kind == kind and (not api_version or d.api_version == api_version)]
    if namespace and name and not any(c in namespace + name for c in "*?"):
        hit: list[Mapping[str, Any]] = [d.obj for d in of_kind if d.namespace == namespace and d.name == name]
        if not hit:
            return [], f'{kind.lower()}s "{name}" not found'
        return hit[:1], ""
    selector = spec.get("selector")
    out: list[Mapping[str, Any]] = []
    for d in of_kind:
        labels = (d.obj.get("metadata") or {}).get("labels") or {}
        if selector is not None and not matches_selector(selector, labels):
            continue
        if not namespace and not name:
            ok = True
        elif not namespace:
            ok = wildcard_match(name, d.name)
        else:
            ok = wildcard_match(namespace, d.namespace) and (not name or wildcard_match(name, d.name))
        if ok:
            out.append(d.obj)
    return out, ""


@dataclass
class PolicyRun:
    """engine.Mutate for one policy: its rule results, its output (None: an error left Kyverno's empty
    object) and the change each applying rule made."""

    policy: ClassicPolicy
    before: Mapping[str, Any]
    after: Mapping[str, Any] | None
    results: list[Result] = field(default_factory=list)
    mutations: list[Mutation] = field(default_factory=list)

    @property
    def errored(self) -> bool:
        return any(r.result == ERROR for r in self.results)

    @property
    def answered(self) -> bool:
        return bool(self.results)


class ClassicMutator:
    """The mutate rules of every classic policy of a run, one subject at a time (MutationEngine)."""

    def __init__(self, policies: Sequence[ClassicPolicy], exceptions: Sequence[ClassicException], *,
                 state: Sequence[Document], now: datetime.datetime, sources: ContextSources,
                 options: ClassicOptions | None = None) -> None:
        self.options = options or ClassicOptions()
        self.state = state
        self.sources = sources
        self.exceptions = list(exceptions)
        self.now = now
        self.core = Core()
        self._engine: Any = None
        # Kyverno's webhook never admits a policy it refuses; the validating evaluator reports the refusal
        self.policies = [p for p in policies if has_mutate(p) and refused_by_kyverno(p) is None]

    # -----------------------------------------------------------------------------------------------------
    # admission (the webhook's order)

    def mutate(self, ctx: SubjectContext) -> MutationStep:
        req = ctx.request
        obj = req.obj
        if obj is None or not self.policies:
            return MutationStep(obj)
        groups = self._groups(ctx)
        current: Mapping[str, Any] = obj
        step = MutationStep(obj)
        for label, group in groups:
            runs, outcomes = self._group(ctx, group, current)
            for run in runs:
                step.results.extend(run.results)
                step.mutations.extend(run.mutations)
            for run in runs:
                for result in run.results:
                    if result.result == UNDETERMINED:
                        step.undetermined.append(f"{run.policy.meta.kind} {run.policy.meta.key} rule "
                                                 f"{result.rule}: {result.message}")
            failed = [r for r in runs if r.errored]
            if failed:
                names = ", ".join(r.policy.meta.key for r in failed)
                step.undetermined.append(
                    f"{label}: {names} ended in an error; Kyverno then denies the request (failurePolicy Fail) "
                    "or goes on from an empty object (Ignore), so the admitted object is not known")
            if len(outcomes) > 1:
                answering = sorted(r.policy.meta.key for r in runs if r.answered)
                names = ", ".join(answering)
                why = (f"more than {MAX_PERMUTED} of them answer, so kyrec did not try every order"
                       if len(answering) > MAX_PERMUTED else "the order changes the object")
                step.undetermined.append(
                    f"{ORDER_DEPENDENT}: {label}: Kyverno applies {names} in an order it does not fix, and {why}")
            last = runs[-1].after if runs else current
            current = last if last is not None else current
        step.obj = current
        # Kyverno registers its ClusterPolicy/Policy mutate webhooks with reinvocationPolicy IfNeeded
        # (pkg/controllers/webhook/controller.go buildResourceMutatingWebhookRules, `ifNeeded`)
        step.reinvocation = Reinvocation(self.mutate, webhook=True)
        return step

    def _groups(self, ctx: SubjectContext) -> list[tuple[str, list[ClassicPolicy]]]:
        """The webhook's groups in order: Ignore then Fail; cluster-wide then the request namespace's."""
        namespace = ctx.request.namespace
        out = []
        for failure in ("Ignore", "Fail"):
            for scope in ("cluster", "namespaced"):
                group = [p for p in self.policies if has_mutate_standard(p) and _failure_policy(p) == failure
                         and (p.meta.kind != "Policy" if scope == "cluster" else
                              (p.meta.kind == "Policy" and p.meta.namespace == namespace))]
                if group:
                    label = f"failurePolicy {failure} {'ClusterPolicies' if scope == 'cluster' else 'Policies'}"
                    out.append((label, group))
        return out

    def _group(self, ctx: SubjectContext, group: list[ClassicPolicy], start: Mapping[str, Any]
               ) -> tuple[list[PolicyRun], list[Mapping[str, Any] | None]]:
        """The runs in listing order, and the distinct outcomes over every order of the answering ones."""
        runs = self._chain(ctx, group, start)
        answering = [r.policy for r in runs if r.answered]
        if len(answering) < 2:
            return runs, [runs[-1].after] if runs else []
        if len(answering) > MAX_PERMUTED:
            return runs, [runs[-1].after, None]
        outcomes: list[Mapping[str, Any] | None] = [runs[-1].after]
        others = [p for p in group if p not in answering]
        for order in itertools.permutations(answering):
            if list(order) == answering:
                continue
            chained = self._chain(ctx, [*order, *others], start)
            after = chained[-1].after
            if not any(_same_outcome(after, o) for o in outcomes):
                outcomes.append(after)
        return runs, outcomes

    def _chain(self, ctx: SubjectContext, policies: Sequence[ClassicPolicy], start: Mapping[str, Any]
               ) -> list[PolicyRun]:
        json_ctx = self._json_context(ctx, start)
        runs = []
        current = start
        for policy in policies:
            json_ctx.checkpoint()
            try:
                run = self.run_policy(policy, ctx, current, json_ctx)
            finally:
                json_ctx.restore()
            runs.append(run)
            if run.after is None:
                break
            current = run.after
        return runs

    # -----------------------------------------------------------------------------------------------------
    # the CLI's order

    def policy_responses(self, ctx: SubjectContext, policies: Sequence[ClassicPolicy] | None = None
                         ) -> list[PolicyRun]:
        """ApplyPoliciesOnResource's mutate loop: every policy with a mutate rule, in the given order (the
        run's by default), each on the previous one's output with a fresh JSON context (an error leaves the
        empty object Kyverno keeps: {} for the policies after it)."""
        current: Mapping[str, Any] = ctx.request.obj or {}
        runs = []
        for policy in self.policies if policies is None else policies:
            if not has_mutate(policy):
                continue
            json_ctx = self._json_context(ctx, current)
            run = self.run_policy(policy, ctx, current, json_ctx)
            runs.append(run)
            current = run.after if run.after is not None else {}
        return runs

    def background_run(self, policy: ClassicPolicy, sctx: SubjectContext, obj: Mapping[str, Any]) -> PolicyRun:
        """engine.Mutate outside admission for the plain mutate rules of `policy` on `obj` (the trigger as the
        background controller reads it): run_policy with a fresh JSON context; the mutate-existing rules,
        which leave the trigger as it is, are previewed by mutate_existing."""
        return self.run_policy(policy, sctx, obj, self._json_context(sctx, obj))

    # -----------------------------------------------------------------------------------------------------
    # mutate-existing rules: what the background controller would change on each target

    def mutate_existing(self, ctx: SubjectContext, targets: Sequence[Document]) -> list[TargetChange]:
        """The changes Kyverno's background controller makes for the trigger `ctx` (kk: pkg/background/
        mutate ProcessUR -> engine.Mutate outside admission -> handlers/mutation mutate_existing.go): per
        policy, per rule with `targets` matching the trigger, after the rule's context, preconditions and
        exceptions, each target the rule's target specs select among `targets` (the cluster's objects, for
        the state) gets its own result: `pass` with the patched target, `skip` (target preconditions, or
        "no patches applied"), or `error`. A target spec that selects nothing by exact name is the rule's
        error (the client's GET fails). Policies chain nothing here: each target change is computed from
        the target as it is."""
        req = ctx.request
        obj = req.obj if req.obj is not None else req.old_obj
        out: list[TargetChange] = []
        if obj is None:
            return out
        for policy in self.policies:
            if not any(_targets(r) for r in policy.rules):
                continue
            if policy.meta.kind == "Policy" and policy.meta.namespace != req.namespace:
                continue
            json_ctx = self._json_context(ctx, obj)
            facts = dataclasses.replace(self._request_facts(ctx), obj=obj)
            namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
            for rule in compute_rules_every_controller(policy):
                if rule.type != "mutate" or not _targets(rule):
                    continue
                if match_state(rule.raw.get("match") or {}, rule.raw.get("exclude"), facts, namespace) is False:
                    continue
                json_ctx.checkpoint()
                try:
                    out.extend(self._existing_rule(policy, rule, facts, json_ctx, targets))
                finally:
                    json_ctx.restore()
        return out

    def _existing_rule(self, policy: ClassicPolicy, rule: ClassicRule, facts: RequestFacts, ctx: Any,
                       targets: Sequence[Document]) -> list[TargetChange]:
        namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
        loader = ContextLoader(self.core, self.sources, policy.meta.name, namespace, rule.name)

        def change(status: str, message: str, target: Mapping[str, Any] | None = None,
                   after: Mapping[str, Any] | None = None, triggered: bool = True) -> TargetChange:
            patch: tuple[Mapping[str, Any], ...] = ()
            if target is not None and after is not None:
                m = mutation_of(policy.meta.key, policy.meta.kind, rule.name, target, after, policy.meta.source)
                patch = m.patch if m is not None else ()
            return TargetChange(policy.meta.key, policy.meta.kind, rule.name, object_identity(target), status, message,
                                target, after, patch, triggered)

        def unknown(target: Mapping[str, Any] | None = None) -> list[TargetChange] | None:
            # a context entry kyrec cannot answer (a lookup of a kind the state did not read, ...): whether the
            # rule triggers, and what it does, is not known (triggered: its policy's entries are undetermined)
            return [change(UNDETERMINED, unanswerable_message(loader), target)] if loader.unanswerable else None

        try:
            loader(rule.raw.get("context") or [], ctx)
        except EngineError as exc:
            return unknown() or [change(ERROR, f"failed to load context: {exc}", triggered=False)]
        try:
            ok, msg = self.core.conditions(ctx, rule.raw.get("preconditions"))
        except EngineError as exc:
            return unknown() or [change(ERROR, f"failed to evaluate preconditions: {exc}", triggered=False)]
        if not ok:
            return [change(SKIP, join_non_empty(["preconditions not met", msg], "; "), triggered=False)]
        matched = self._exceptions(policy, rule, facts, ctx)
        if matched:
            return [change(SKIP, "rule is skipped due to policy exceptions" + ", ".join(e.key for e in matched),
                           triggered=False)]
        out: list[TargetChange] = []
        found: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        for index, spec in enumerate((rule.raw.get("mutate") or {}).get("targets") or []):
            if not isinstance(spec, Mapping):
                continue
            try:
                selector = self.core.substitute(ctx, {k: v for k, v in spec.items()
                                                      if k not in ("context", "preconditions")})
            except EngineError as exc:
                out.append(change(ERROR, f": failed to substitute variables in target[{index}]: {exc}"))
                continue
            objs, problem = _select_targets(selector, namespace, targets)
            if problem:
                out.append(change(ERROR, f": {problem}"))
                continue
            found.extend((o, spec) for o in objs)
        for target, spec in found:
            ctx.replace_context_entry("target", dict(target))
            if not loader.unanswerable_reason:
                # this target's own context decides; but a lookup the state could not answer stays: the entry's
                # deferred loader is spent (as Kyverno's), so what a later target errs on may rest on it
                loader.unanswerable = ""
            try:
                loader(spec.get("context") or [], ctx)
            except EngineError as exc:
                out.extend(unknown(target) or [change(ERROR, f"failed to load context: {exc}", target)])
                continue
            try:
                ok, msg = self.core.conditions(ctx, spec.get("preconditions"))
            except EngineError as exc:
                out.extend(unknown(target) or [change(ERROR, f"failed to evaluate preconditions: {exc}", target)])
                continue
            if not ok:
                out.append(change(SKIP, join_non_empty(["preconditions not met", msg], "; "), target))
                continue
            mutate = rule.raw.get("mutate") or {}
            if mutate.get("foreach"):
                outcome = self._foreach(loader, list(mutate["foreach"]), ctx, target, 0)
            else:
                outcome = self._mutate(rule, ctx, target)
                if outcome.status == PASS:
                    # mutate.Mutate: a mutate-existing rule's patched target becomes `target`
                    ctx.replace_context_entry("target", dict(outcome.resource))
            if outcome.status == PASS:
                out.append(change(PASS, success_message(outcome.resource), target, outcome.resource))
            elif outcome.status == ERROR and loader.unanswerable:
                out.extend(unknown(target) or ())       # a lazily loaded entry kyrec cannot answer
            else:
                out.append(change(outcome.status, outcome.message, target))
        return out

    # -----------------------------------------------------------------------------------------------------
    # one policy

    def run_policy(self, policy: ClassicPolicy, sctx: SubjectContext, resource: Mapping[str, Any],
                   json_ctx: Any) -> PolicyRun:
        """engine.mutate for one policy on `resource` (the JSON context as the caller has it)."""
        run = PolicyRun(policy, resource, resource)
        if policy.meta.kind == "Policy" and policy.meta.namespace != sctx.request.namespace:
            return run
        values = {**self.options.resource_values.get(("", ""), {}),
                  **self.options.resource_values.get((policy.meta.name, sctx.subject.ref.name), {})}
        base_facts = self._request_facts(sctx)
        json_ctx.checkpoint()
        try:
            for key, value in values.items():
                json_ctx.add_variable(key, value)
            if values:
                base_facts = ClassicEvaluator._values_operation(values, base_facts, json_ctx)
            current: Mapping[str, Any] | None = resource
            namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
            applied = 0
            for rule in compute_rules_every_controller(policy):
                if current is None:
                    break
                facts = dataclasses.replace(base_facts, obj=current)
                state = match_state(rule.raw.get("match") or {}, rule.raw.get("exclude"), facts, namespace)
                if state is False:
                    continue
                if rule.type != "mutate" or _targets(rule):
                    continue        # no handler at admission
                json_ctx.checkpoint()
                try:
                    outcome, properties = self._rule(policy, rule, facts, current, json_ctx)
                finally:
                    json_ctx.restore()
                if outcome is None:
                    continue
                status, message = outcome.status, outcome.message
                if state is None:
                    status, message = UNDETERMINED, (
                        "whether the rule applies depends on the requesting user, which is not given (pass a "
                        f"UserInfo with --values); if it applies: {outcome.status}: {outcome.message}")
                elif outcome.status == PASS:
                    message = success_message(outcome.resource)
                run.results.append(make_result(policy.meta, policy.source_kind, sctx, rule.name, status, message,
                                               properties, _ACTIONS, policy.background))
                if state is None:
                    continue
                if outcome.status == PASS:
                    m = mutation_of(policy.meta.key, policy.meta.kind, rule.name, current, outcome.resource,
                                    policy.meta.source)
                    if m is not None:
                        run.mutations.append(m)
                    current = outcome.resource
                    applied += 1
                elif outcome.status == ERROR:
                    current = None
                if current is not None:
                    # invokeRuleHandler: the rule's output becomes request.object for the rules after it
                    json_ctx.add_resource(current)
                if policy.apply_rules == "One" and applied:
                    break
            run.after = current
        finally:
            json_ctx.restore()
        return run

    def _rule(self, policy: ClassicPolicy, rule: ClassicRule, facts: RequestFacts, resource: Mapping[str, Any],
              ctx: Any) -> tuple[Outcome | None, dict[str, str]]:
        properties = dict(rule.report_properties)
        namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
        loader = ContextLoader(self.core, self.sources, policy.meta.name, namespace, rule.name)
        try:
            loader(rule.raw.get("context") or [], ctx)
        except EngineError as exc:
            return mutate_error("failed to load context", exc), properties
        try:
            ok, msg = self.core.conditions(ctx, rule.raw.get("preconditions"))
        except EngineError as exc:
            return self._unanswerable(loader) or mutate_error("failed to evaluate preconditions", exc), properties
        if not ok:
            return Outcome(SKIP, resource, join_non_empty(["preconditions not met", msg], "; ")), properties
        if properties:
            try:
                substituted = self.core.substitute(ctx, properties)
                properties = {str(k): str(v) for k, v in substituted.items()}
            except EngineError:
                pass        # Kyverno logs the failure and keeps the properties as written
        matched = self._exceptions(policy, rule, facts, ctx)
        if matched:
            properties["exceptions"] = ",".join(e.meta.name for e in matched)
            keys = ", ".join(e.key for e in matched)
            return Outcome(SKIP, resource, f"rule is skipped due to policy exceptions{keys}"), properties
        mutate = rule.raw.get("mutate") or {}
        if mutate.get("foreach"):
            outcome = self._foreach(loader, list(mutate["foreach"]), ctx, resource, 0)
        else:
            outcome = self._mutate(rule, ctx, resource)
        unanswerable = self._unanswerable(loader)
        if unanswerable is not None:
            return unanswerable, properties
        return outcome, properties

    def _unanswerable(self, loader: ContextLoader) -> Outcome | None:
        if not loader.unanswerable:
            return None
        return Outcome(UNDETERMINED, None, unanswerable_message(loader))

    def _mutate(self, rule: ClassicRule, ctx: Any, resource: Mapping[str, Any]) -> Outcome:
        """mutate.Mutate: the whole rule substituted, then its patch."""
        try:
            substituted = self.core.substitute(ctx, dict(rule.raw))
        except EngineError as exc:
            return mutate_error("variable substitution failed", exc)
        mutation = substituted.get("mutate") if isinstance(substituted, Mapping) else None
        if not isinstance(mutation, Mapping):
            return mutate_error("empty mutate rule")
        json6902 = mutation.get("patchesJson6902")
        return apply(mutation.get("patchStrategicMerge"), json6902 if isinstance(json6902, str) else None,
                     resource)

    def _foreach(self, loader: ContextLoader, foreach: list[Any], ctx: Any, resource: Mapping[str, Any],
                 nesting: int) -> Outcome:
        """forEachMutator.mutateForEach."""
        applied = 0
        current = resource
        for entry in foreach:
            if not isinstance(entry, Mapping):
                continue
            expression = str(entry.get("list") or "")
            try:
                value = self.core.query(ctx, expression)
            except EngineError as exc:
                return mutate_error(f"failed to evaluate list {expression}: {exc}", exc)
            elements = value if isinstance(value, list) else [value]
            outcome = self._elements(loader, entry, elements, ctx, current, nesting)
            if outcome.status == ERROR:
                return mutate_error("failed to mutate elements", outcome.message)
            if outcome.status == UNDETERMINED:
                return outcome
            if outcome.status != SKIP:
                applied += 1
                if outcome.status == PASS:
                    current = outcome.resource
                ctx.add_resource(outcome.resource)
        message = f"{applied} elements processed"
        return Outcome(PASS if applied else SKIP, current, message)

    def _elements(self, loader: ContextLoader, entry: Mapping[str, Any], elements: list[Any], ctx: Any,
                  resource: Mapping[str, Any], nesting: int) -> Outcome:
        """forEachMutator.mutateElements: strategic merge patches go last element first unless `order`
        says otherwise."""
        ctx.checkpoint()
        try:
            patched: Mapping[str, Any] = resource
            reverse = entry.get("patchStrategicMerge") is not None
            if entry.get("order") is not None:
                reverse = entry.get("order") == "Descending"
            ordered = list(enumerate(elements))
            if reverse:
                ordered.reverse()
            for index, element in ordered:
                if element is None:
                    continue
                ctx.reset()
                ctx.add_element(element, index, nesting)
                try:
                    loader(entry.get("context") or [], ctx)
                except EngineError as exc:
                    return mutate_error(f"failed to load to mutate.foreach[{index}].context", exc)
                try:
                    ok, _ = self.core.conditions(ctx, entry.get("preconditions"))
                except EngineError as exc:
                    return self._unanswerable(loader) or \
                        mutate_error(f"failed to evaluate mutate.foreach[{index}].preconditions", exc)
                if not ok:
                    continue
                nested = entry.get("foreach")
                if isinstance(nested, list) and nested:
                    outcome = self._foreach(loader, nested, ctx, patched, nesting + 1)
                else:
                    outcome = self._foreach_patch(entry, ctx, patched)
                if outcome.status in (ERROR, "fail", UNDETERMINED):
                    return outcome
                if outcome.status == PASS:
                    patched = outcome.resource
            if not same_json(patched, resource):
                return Outcome(PASS, patched, "")
            return Outcome(SKIP, patched, "no patches applied")
        finally:
            ctx.restore()

    def _foreach_patch(self, entry: Mapping[str, Any], ctx: Any, resource: Mapping[str, Any]) -> Outcome:
        """mutate.ForEach: the entry's patches substituted, then applied."""
        patches = {"patchStrategicMerge": entry.get("patchStrategicMerge"),
                   "patchesJson6902": entry.get("patchesJson6902") or ""}
        try:
            substituted = self.core.substitute(ctx, patches)
        except EngineError as exc:
            return mutate_error("variable substitution failed", exc)
        json6902 = substituted.get("patchesJson6902")
        return apply(substituted.get("patchStrategicMerge"), json6902 if isinstance(json6902, str) else None,
                     resource)

    def _exceptions(self, policy: ClassicPolicy, rule: ClassicRule, facts: RequestFacts,
                    ctx: Any) -> list[ClassicException]:
        """kk: MatchesException (the handler's first step)."""
        return matching_exceptions(self.exceptions, self.core, policy.meta.key, rule.name, facts, ctx)

    # -----------------------------------------------------------------------------------------------------

    def _request_facts(self, sctx: SubjectContext) -> RequestFacts:
        """What match/exclude blocks read of the request (as the validating evaluator reads them)."""
        req = sctx.request
        ns_labels = None
        if sctx.namespace_obj is not None:
            ns_labels = (sctx.namespace_obj.get("metadata") or {}).get("labels") or {}
        facts = RequestFacts(obj=req.obj or {}, group=req.group, version=req.version, kind=req.kind,
                             subresource=req.subresource, operation=req.operation, namespace_labels=ns_labels,
                             roles=self.options.roles, cluster_roles=self.options.cluster_roles,
                             user_info=dict(req.user_info))
        return dataclasses.replace(facts, user_known=self.options.cli or self.options.user_info_known
                                   or facts.has_user_info)

    def _json_context(self, sctx: SubjectContext, obj: Mapping[str, Any]) -> Any:
        """The request's JSON context, with `obj` as request.object (as the validating evaluator builds it)."""
        if self._engine is None:
            from kubectl_kyrec.classic.jmespath_eval import Engine

            self._engine = Engine(now=lambda: self.now)
        req = sctx.request
        return request_json_context(self._engine, obj, req.old_obj, dict(req.user_info), obj, req.operation,
                                    self.options)


def _same_outcome(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return same_json(a, b)
