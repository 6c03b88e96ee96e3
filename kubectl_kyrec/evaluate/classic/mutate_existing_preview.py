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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.evaluate.admission_chain import Admission
from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator, TargetChange, has_mutate_standard
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.model import UNDETERMINED, Document, Ref, Result, Source, Subject

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import Environments
    from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
    from kubectl_kyrec.evaluate.pipeline import EvalOptions


# (apiVersion, kind, namespace) -> whether the state listed that kind there: True listed, False unreadable,
# None no record (load/run_inputs/cluster_state.py ClusterState.is_listed)
Listed = Callable[[str, str, str], "bool | None"]


@dataclass(frozen=True)
class TargetPreview:
    """One target change and the trigger whose UpdateRequest makes it; `report`: the entry the background
    controller writes in the trigger's report for the change's rule, with whether it is reportable
    (report_results), on the change whose response that entry is; None on the others."""

    trigger: Ref
    trigger_source: Source | None
    change: TargetChange
    report: tuple[Result, bool] | None = None
    # the entries of the policy's plain mutate rules, which the same engine.Mutate run reports on the trigger
    # (plain_rule_entries), on the policy's first change for the trigger
    trigger_entries: tuple[tuple[Result, bool], ...] = ()

    def to_json(self) -> dict[str, Any]:
        c = self.change
        api_version, kind, namespace, name = c.target
        return {"policy": c.policy, "kind": c.policy_kind, "rule": c.rule, "trigger": self.trigger.to_json(),
                "location": self.trigger_source.as_location() if self.trigger_source is not None else None,
                "target": {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name},
                "result": c.result, "message": c.message, "patch": [dict(op) for op in c.patch]}


def _mutate_existing_rules(policy: ClassicPolicy) -> list[ClassicRule]:
    return [r for r in policy.rules if r.type == "mutate" and (r.raw.get("mutate") or {}).get("targets")]


def mutate_existing_rule_keys(policies: Sequence[ClassicPolicy]) -> frozenset[tuple[str, str]]:
    """(policy key, rule name) of every mutate rule, autogen ones included, of the policies with a
    mutate-existing rule: the entries the background controller writes when it processes the trigger (it runs
    the whole policy, engine.Mutate, and reports every mutate rule's response), which record the targets (and
    the trigger) as they were then (docs/semantics/reports.md, "Mutate-existing entries")."""
    from kubectl_kyrec.classic.autogen import compute_rules_every_controller

    return frozenset((p.meta.key, r.name) for p in policies if _mutate_existing_rules(p)
                     for r in compute_rules_every_controller(p) if r.type == "mutate")


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
                    sources: Any, options: ClassicOptions, admissions: Sequence[Admission] = (),
                    listed: Listed | None = None, whole: Mapping[str, ClassicPolicy] | None = None
                    ) -> list[TargetPreview]:
    """Every target change `policies` make for `triggers` (`contexts`: each trigger's request, by id), the
    targets among `state`, with the report entries they give (report_results, plain_rule_entries; `listed`:
    what the state listed; `whole`: the policies by key with all their rules, as the cluster holds them, when
    `policies` were cut to the rules a request starts); a trigger whose admission is not known gives
    undetermined changes."""
    mutator = ClassicMutator(policies, exceptions, state=state, now=now, sources=sources, options=options)
    unknown = {id(a.subject.ref): "; ".join(dict.fromkeys(a.undetermined)) for a in admissions if a.undetermined}
    rules = _Rules({p.meta.key: p for p in policies})
    out: list[TargetPreview] = []
    for trigger in triggers:
        reason = unknown.get(id(trigger.ref))
        changes = []
        for change in mutator.mutate_existing(contexts[id(trigger)], state):
            if reason is not None:
                change = dataclasses.replace(change, result=UNDETERMINED, message=(
                    f"the admitted trigger is not known ({reason}); on the object admitted in load order: "
                    f"{change.result}" + (f" ({change.message})" if change.message else "")))
            elif listed is not None and change.triggered:
                # the targets are the state's: what it did not read, it cannot say is there or not
                unread = _unread_target(rules.get(change), change, listed)
                if unread is not None:
                    change = dataclasses.replace(change, result=UNDETERMINED, message=(
                        f"{unread}; on the state as read: {change.result}"
                        + (f" ({change.message})" if change.message else "")))
            changes.append(change)
        reports = report_results(changes, rules, contexts[id(trigger)])
        plain = plain_rule_entries(mutator, changes, whole or rules.policies, contexts[id(trigger)], reason)
        firsts = {c.policy: i for i, c in reversed(list(enumerate(changes)))}
        out.extend(TargetPreview(trigger.ref, trigger.source, c, reports.get(i),
                                 plain.get(c.policy, ()) if firsts[c.policy] == i else ())
                   for i, c in enumerate(changes))
    return out


def plain_rule_entries(mutator: ClassicMutator, changes: Sequence[TargetChange],
                       policies: Mapping[str, ClassicPolicy], sctx: SubjectContext, unknown: str | None
                       ) -> dict[str, tuple[tuple[Result, bool], ...]]:
    """The entries of the plain mutate rules (no `targets`) of each policy the trigger's UpdateRequest is
    made for, by policy key: ProcessUR runs the whole policy (engine.Mutate, outside admission, so the plain
    rules' handler runs too: pkg/engine/mutation.go) on the trigger as the cluster holds it (the admitted object;
    on a policy update, the stored one) and BuildMutateExistingReport reports every rule response, these too
    (no `patched-target`: only mutate-existing responses have one). The rules chain on the trigger as at
    admission (ClassicMutator.run_policy), so a rule the trigger's admission already applied usually answers
    `skip` `no patches applied`. `unknown`: why the admitted trigger is not known (every entry undetermined)."""
    triggered = list(dict.fromkeys(c.policy for c in changes if c.triggered))
    req = sctx.request
    obj = req.obj if req.obj is not None else req.old_obj
    out: dict[str, tuple[tuple[Result, bool], ...]] = {}
    if obj is None:
        return out
    for key in triggered:
        policy = policies.get(key)
        if policy is None or not has_mutate_standard(policy):
            continue
        run = mutator.background_run(policy, sctx, obj)
        reportable = "reports.kyverno.io/disabled" not in policy.meta.labels
        entries = []
        for result in run.results:
            if unknown is not None and result.result != UNDETERMINED:
                result = result._replace(result=UNDETERMINED, message=(
                    f"the admitted trigger is not known ({unknown}); on the object admitted in load order: "
                    f"{result.result}" + (f" ({result.message})" if result.message else "")))
            entries.append((result, reportable and result.result != UNDETERMINED))
        out[key] = tuple(entries)
    return out


class _Rules:
    """The run's mutate-existing policies by key, and each one's rules (autogen ones too) by name."""

    def __init__(self, policies: Mapping[str, ClassicPolicy]) -> None:
        self.policies = policies
        self._rules: dict[str, dict[str, ClassicRule]] = {}

    def get(self, change: TargetChange) -> ClassicRule | None:
        from kubectl_kyrec.classic.autogen import compute_rules_every_controller

        policy = self.policies.get(change.policy)
        if policy is None:
            return None
        if change.policy not in self._rules:
            self._rules[change.policy] = {r.name: r for r in compute_rules_every_controller(policy)}
        return self._rules[change.policy].get(change.rule)


def report_results(changes: Sequence[TargetChange], rules: _Rules, sctx: SubjectContext
                   ) -> dict[int, tuple[Result, bool]]:
    """The entries the background controller writes in the trigger's report for its mutate-existing rules
    (kk: pkg/background/mutate/mutate.go ProcessUR -> createReports -> pkg/utils/report BuildMutateExistingReport,
    MutationEngineResponseToReportResults), by the index in `changes` (one trigger's, in the engine's order) of
    the change each entry is made from:

    - a policy gets an UpdateRequest only when one of its rules passes the webhook's background checks on the
      trigger (match, the rule's context, preconditions and exceptions: `triggered`); the controller then runs
      the whole policy (engine.Mutate) and reports every rule response: a policy none of whose rules got that far
      reports nothing;
    - one entry per rule response, ToPolicyReportResult's fields (source `kyverno`, the rule, its message,
      `process`, the rule's reportProperties) plus `patched-target` (getResourceInfo of the patched target) on a
      pass;
    - the aggregator keys classic results by (policy, rule, subject) and keeps the first of equal timestamps
      (pkg/controllers/report/aggregate/utils.go mergeReports): of a rule's responses (one per target, the
      target-loading error first) the first is the entry.

    Reportable unless the policy is labelled `reports.kyverno.io/disabled` (IsPolicyReportable; the background
    flag does not matter: the background controller reports mutate-existing rules whatever it says), and never
    when `undetermined` (the admitted trigger, or a target kind, was not known: preview_targets)."""
    from kubectl_kyrec.evaluate.generating.engine import generated_resources_property
    from kubectl_kyrec.evaluate.validating.engine import make_result

    triggered = {c.policy for c in changes if c.triggered}
    # the last pass of each rule: a rule with reportProperties hands every response that one map, and
    # MutationEngineResponseToReportResults adds `patched-target` to it in place, so every entry of the rule
    # carries the last patched target, a skip or an error too (Kyverno v1.17.2's background controller wrote
    # `skip` `no patches applied` with the other target's `patched-target`: tests/consistency)
    last_pass = {(c.policy, c.rule): c.after for c in changes if c.result == "pass" and c.after is not None}
    seen: set[tuple[str, str]] = set()
    out: dict[int, tuple[Result, bool]] = {}
    for index, change in enumerate(changes):
        policy = rules.policies.get(change.policy)
        if policy is None or change.policy not in triggered or (change.policy, change.rule) in seen:
            continue
        seen.add((change.policy, change.rule))
        rule = rules.get(change)
        props = dict(rule.report_properties) if rule is not None else {}
        patched = last_pass.get((change.policy, change.rule)) if props else None
        if change.result == "pass" and change.after is not None and patched is None:
            patched = change.after
        if patched is not None:
            props["patched-target"] = generated_resources_property([patched])
        result = make_result(policy.meta, "kyverno", sctx, change.rule, change.result, change.message, props, (),
                             policy.background)
        out[index] = (result, change.result != UNDETERMINED
                      and "reports.kyverno.io/disabled" not in policy.meta.labels)
    return out


def _unread_target(rule: ClassicRule | None, change: TargetChange, listed: Listed) -> str | None:
    """Why the rule's targets cannot be known from the state: a target kind it did not list (unreadable, or
    never read); None when every kind the rule's target specs name was listed where they look."""
    for spec in () if rule is None else (rule.raw.get("mutate") or {}).get("targets") or []:
        if not isinstance(spec, Mapping):
            continue
        api_version, kind = str(spec.get("apiVersion") or ""), str(spec.get("kind") or "")
        if "{{" in api_version + kind:
            if not change.target[1]:
                return "the rule's target kind is a variable: kyrec cannot tell which kind to have read"
            api_version, kind = change.target[0], change.target[1]
        namespace = str(spec.get("namespace") or "")
        if "{{" in namespace:
            # the namespace the variable gave, when a target was found there; else the kind listed everywhere
            namespace = change.target[2] if change.target[1] == kind else ""
        answer = listed(api_version, kind, namespace)
        if answer is not True:
            where = f" in namespace {namespace}" if namespace else ""
            how = "could not be read" if answer is False else "was not read"
            return f"the target kind {kind} ({api_version}){where} {how}"
    return None


def mutate_existing_preview(policies: PolicySet, subjects: Sequence[Subject], admissions: Sequence[Admission],
                            state: Sequence[Document], kinds: Any, options: EvalOptions, envs: Environments, *,
                            manifests: bool, state_given: bool, listed: Listed | None = None
                            ) -> tuple[list[TargetPreview], list[str]]:
    """eval's preview: the target changes of the run's mutate-existing rules (`manifests`: the subjects are
    the applied manifests, as admitted; else the state's objects, and only rules that act on a policy
    update), and the notices saying what was not previewed. `listed`: what the state listed: a target change
    (and its report entry) whose rule names a target kind the state did not list is undetermined."""
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
    # the state's lookups refuse a kind it could not read, or did not (the rule's change is then undetermined)
    sources = classic_sources(state, kinds, classic)
    previews = preview_targets(selected, policies.classic_exceptions, triggers, contexts, state, now=options.now,
                               sources=sources, options=classic, admissions=admissions, listed=listed,
                               whole={p.meta.key: p for p in policies.classic}) if selected else []
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
    # TargetChange.target: (apiVersion, kind, namespace, name), as the targets' refs name them
    by_identity = {(t.ref.api_version, t.ref.kind, t.ref.namespace, t.ref.name): t for t in targets}
    unknown = {id(a.subject.ref): "; ".join(dict.fromkeys(a.undetermined)) for a in admissions if a.undetermined}
    out: list[TargetPreview] = []
    notices: list[str] = []
    reported: set[tuple[str, tuple[str, str, str, str]]] = set()
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
            report = None
            if (change.policy, change.target) not in reported:
                report = _mutating_entry(change, by_identity.get(change.target), contexts[id(trigger)], compiled)
                if report is not None:
                    reported.add((change.policy, change.target))
            out.append(TargetPreview(trigger.ref, trigger.source, change, report))
    return out, notices


def _mutating_entry(change: TargetChange, target: Subject | None, trigger: SubjectContext, compiled: Sequence[Any]
                    ) -> tuple[Result, bool] | None:
    """The entry the background controller writes on a target a MutatingPolicy's UpdateRequest patched (kk:
    pkg/background/mpol/processor.go Process -> audit -> BuildMutateExistingReport on the **target**): the
    engine's response when the policy patched it (handlePolicy's pass `success`, rule "": PatchedResource set,
    even when the patch changes nothing; the target updated, then audited). A skip, an error or an exception's
    response leaves PatchedResource nil: no update, no entry. The key is the background scan's own for the
    policy and the target (CEL results are keyed by source, policy and subject), the first per target kept
    here. Reportable unless the policy is labelled `reports.kyverno.io/disabled` or the change is undetermined
    (then the entry's result is undetermined, with the change's reason)."""
    from kubectl_kyrec.evaluate.mutating.engine import SOURCE
    from kubectl_kyrec.evaluate.mutating.mutate_existing import target_context
    from kubectl_kyrec.evaluate.validating.engine import make_result

    if target is None or change.rule != "" or change.result not in ("pass", UNDETERMINED):
        return None
    policy = next((cp.policy for cp in compiled if cp.key == change.policy), None)
    if policy is None:
        return None
    status, message = (change.result, change.message) if change.result == UNDETERMINED else ("pass", "success")
    result = make_result(policy.meta, SOURCE, target_context(target, trigger), "", status, message, {}, (),
                         policy.background)
    return result, status != UNDETERMINED and "reports.kyverno.io/disabled" not in policy.meta.labels
