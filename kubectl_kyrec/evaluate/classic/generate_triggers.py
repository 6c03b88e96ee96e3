"""Every classic generate rule of a run over its triggers: one TriggerOutcome per (policy, rule, trigger)
whose rule matches (kk: engine/background.go filterRule for the match, exceptions and preconditions, then
background/generate ApplyGeneratePolicy; see evaluate/classic/generate_objects.py for the objects).

Decisions kyrec makes where Kyverno acts at admission (as for GeneratingPolicies, evaluate/generating/engine.py):
the operation is `--values`' (CREATE by default); a rule whose variables read request.userInfo (or the
service account, roles) is `needs-request` unless `--values` gives a userInfo; a trigger created before the
policy is owed nothing unless the rule's generateExisting (else the spec's) is on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.evaluate.classic.generate_objects import (
    ClassicGenerateRule,
    ObjectStore,
    RuleRun,
    evaluate_rule,
    generate_rules,
    matches_delete,
    outcome,
    trigger_labels,
    uses_user_info,
)
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions, age_unknown_notice, is_owed, policy_created
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome, TriggerStatus
from kubectl_kyrec.evaluate.namespaces import namespace_object, namespace_objects
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext, SubjectSet, as_admitted, make_subject
from kubectl_kyrec.load.policy.classic import ClassicException, ClassicPolicy
from kubectl_kyrec.model import Document, Notice, Subject

if TYPE_CHECKING:
    from kubectl_kyrec.classic.context_loader import ContextSources


def _namespaced(kinds: KindLookup | None) -> Callable[[str, str], bool]:
    def namespaced(api_version: str, kind: str) -> bool:
        # isNamespacedResource: true whenever the mapping is unknown
        if kinds is None or not kind:
            return True
        info = kinds.by_kind(api_version, kind) if api_version else None
        return True if info is None else bool(getattr(info, "namespaced", True))
    return namespaced


def _json_context(subject: Subject, operation: str, user_info: Mapping[str, Any], engine: Any) -> Any:
    """The trigger's policy context: request.object, oldObject on UPDATE and DELETE (on DELETE the trigger
    is the deleted object and both name it), userInfo, namespace, images, operation (kk:
    common.NewBackgroundContext)."""
    from kubectl_kyrec.classic.json_context import EvalContext
    from kubectl_kyrec.classic.request import images

    obj = subject.obj
    ctx = EvalContext(engine=engine)
    ctx.add_resource(obj)
    if operation in ("UPDATE", "DELETE"):
        ctx.add_old_resource(obj)
    ctx.add_user_info({"userInfo": {k: v for k, v in user_info.items() if v not in (None, "", [], {})}})
    ctx.add_service_account(str(user_info.get("username") or ""))
    ctx.add_namespace(str((obj.get("metadata") or {}).get("namespace") or ""))
    found = images(obj)
    if found is not None:
        ctx.add_json({"images": found})
    ctx.add_operation(operation)
    return ctx


def _subjects(triggers: Sequence[Document], kinds: KindLookup,
              uid_from: Mapping[tuple[str, str, str, str], str] | None, gate: Any) -> SubjectSet:
    """evaluate.subjects.make_subjects, except that a trigger of a kind no rule can match keeps its object as
    read: as_admitted (a full copy) only changes what a policy sees, and no policy looks at it."""
    subjects: list[Subject] = []
    notices: list[Notice] = []
    unknown_seen: set[tuple[str, str]] = set()
    for doc in triggers:
        obj = as_admitted(doc.obj) if gate.for_object(doc.obj) else doc.obj
        subject, notice = make_subject(obj, doc.source, kinds, uid_from=uid_from)
        subjects.append(subject)
        if notice is not None and (doc.api_version, doc.kind) not in unknown_seen:
            unknown_seen.add((doc.api_version, doc.kind))
            notices.append(notice)
    return SubjectSet(subjects, notices)


def run_classic_generate(policies: Sequence[ClassicPolicy], triggers: Sequence[Document],
                         state: Sequence[Document], *, kinds: KindLookup, options: GenerateOptions,
                         exceptions: Sequence[ClassicException] = (),
                         trigger_filter: Callable[[Subject], bool] | None = None,
                         sources: ContextSources | None = None,
                         resource_values: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                         registry: Any = None) -> GeneratingOutcome:
    """The desired downstreams of every classic generate rule for every trigger.

    `sources`: the context sources (default: the state answers, as `options.state_lookups` says);
    `resource_values`: a test's variables by (policy name, resource name), ("", "") the global ones
    (evaluate/classic/engine.py ClassicOptions);
    `registry`: the run's `--registry` (a load.registry.Registry), which imageRegistry entries are fetched
    from, as the classic evaluator fetches them."""
    from kubectl_kyrec.classic.context_loader import ContextLoader
    from kubectl_kyrec.classic.core_adapter import Core
    from kubectl_kyrec.classic.jmespath_eval import Engine
    from kubectl_kyrec.classic.match import KindGate, RequestFacts, rule_matches
    from kubectl_kyrec.evaluate.classic.engine import (
        ClassicOptions,
        classic_sources,
        matching_exceptions,
        refused_by_kyverno,
        unanswerable_message,
    )

    out = GeneratingOutcome()
    units: list[ClassicGenerateRule] = []
    for policy in policies:
        if not options.selection.holds_policy(policy.meta.key):
            continue
        if refused_by_kyverno(policy) is not None:
            # Kyverno's webhook never admits it, so it generates nothing; the refusal is reported by the run
            # (run/generate.py) and by the validate evaluator, once
            continue
        units.extend(generate_rules(policy))
    if not units:
        return out
    out.policies.extend(units)
    sources = classic_sources(state, kinds, ClassicOptions(sources=sources, state_lookups=options.state_lookups))
    if registry is not None:
        sources = dataclasses.replace(sources, registry=True, image_registry=registry)
    core = Core()
    engine = Engine(now=lambda: options.now)
    namespaced = _namespaced(kinds)
    store = ObjectStore([*(d.obj for d in state), *(d.obj for d in triggers)])
    state_uids = {str((d.obj.get("metadata") or {}).get("uid")) for d in state
                  if (d.obj.get("metadata") or {}).get("uid")}
    uid_from = None
    if any(not (d.obj.get("metadata") or {}).get("uid") for d in triggers):
        # a trigger without a uid takes the state copy's (needed only then)
        uid_from = {(d.api_version, d.kind, d.namespace, d.name): str((d.obj.get("metadata") or {}).get("uid"))
                    for d in state if (d.obj.get("metadata") or {}).get("uid")}
    # most objects of a state are of kinds no generate rule names: rejected once per kind, they are still
    # evaluated triggers (a downstream of one no longer matches), only not turned into admitted objects
    gate = KindGate([(u.rule.raw.get("match") or {}) if u.rule is not None else {} for u in units])
    subject_set = _subjects(triggers, kinds, uid_from, gate)
    out.notices.extend(subject_set.notices)
    namespaces = namespace_objects([*state, *triggers, *options.namespaces], options.namespace_labels)
    created = {key: policy_created(u, state) for key, u in {u.meta.key: u for u in units}.items()}
    needs_user = {id(u): uses_user_info(u.rule) for u in units if u.rule is not None}
    delete_rules = {id(u): matches_delete(u.rule) for u in units if u.rule is not None}
    unknown_age: dict[str, int] = {}
    user = dict(options.user_info)
    for subject in subject_set.subjects:
        if trigger_filter is not None and not trigger_filter(subject):
            continue
        out.triggers.append(subject)
        out.evaluated_uids.add(subject.ref.uid)
        candidates = gate.for_object(subject.obj)
        if not candidates:
            continue
        request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced,
                                operation=options.operation, user_info=user)
        ns_obj = None
        if request.namespace and subject.namespaced:
            ns_obj = namespace_object(request.namespace, namespaces)
        sctx = SubjectContext(subject, request, ns_obj)
        ns_labels = (ns_obj.get("metadata") or {}).get("labels") or {} if ns_obj is not None else None
        facts = RequestFacts(obj=subject.obj, group=request.group, version=request.version, kind=request.kind,
                             subresource=request.subresource, operation=request.operation,
                             namespace_labels=ns_labels, user_info=user)
        in_state = subject.ref.uid in state_uids
        labels = trigger_labels(subject.obj, request.kind, subject.ref.uid)
        ctx = None
        for unit in (units[i] for i in candidates):
            assert unit.rule is not None
            policy_ns = unit.meta.namespace if unit.namespaced else ""
            if policy_ns and policy_ns != request.namespace:
                continue
            if request.operation == "DELETE" and not delete_rules[id(unit)]:
                continue    # on a deletion only a rule naming DELETE generates; the others clean up
            raw = unit.rule.raw
            if not rule_matches(raw.get("match") or {}, raw.get("exclude"), facts, policy_ns):
                continue
            if ctx is None:
                ctx = _json_context(subject, request.operation, user, engine)
            owed = is_owed(unit, subject, in_state, created[unit.meta.key])
            ctx.checkpoint()
            try:
                values = {**(resource_values or {}).get(("", ""), {}),
                          **(resource_values or {}).get((unit.meta.name, subject.ref.name), {})}
                for name, value in values.items():
                    ctx.add_variable(name, value)
                matched = matching_exceptions(exceptions, core, unit.meta.key, unit.rule_name, facts, ctx)
                if matched:
                    keys = ", ".join(e.key for e in matched)
                    run = RuleRun(TriggerStatus.EXEMPT, message=f"rule is skipped due to policy exception {keys}")
                elif needs_user[id(unit)] and not options.user_info_known:
                    run = RuleRun(TriggerStatus.NEEDS_REQUEST,
                                  message="the rule reads request.userInfo, which --values does not give")
                else:
                    loader = ContextLoader(core, sources, unit.meta.name, policy_ns, unit.rule_name)
                    run = evaluate_rule(unit, ctx, core, loader, labels, store, namespaced)
                    if loader.unanswerable_reason and run.status is not TriggerStatus.GENERATED:
                        # a lookup the state read cannot answer: the reason names the status, as the
                        # GeneratingPolicy engine gives it
                        run = RuleRun(TriggerStatus(loader.unanswerable_reason), message=unanswerable_message(loader))
                    elif loader.unanswerable_needs_registry and run.status is not TriggerStatus.GENERATED:
                        # the reason every other kind gives for data only a registry has (imageRegistry)
                        run = RuleRun(TriggerStatus.NEEDS_REGISTRY, message=unanswerable_message(loader))
                    elif loader.unanswerable and run.status is not TriggerStatus.GENERATED:
                        run = RuleRun(TriggerStatus.NEEDS_REQUEST, message=f"{loader.unanswerable}, which kyrec "
                                      "cannot answer offline")
            finally:
                ctx.restore()
            result = outcome(unit, sctx, run, owed=owed is not False, age_known=owed is not None)
            if owed is None:
                unknown_age[unit.meta.key] = unknown_age.get(unit.meta.key, 0) + 1
            out.outcomes.append(result)
    out.notices.extend(age_unknown_notice(key, count) for key, count in unknown_age.items())
    return out


def merge(into: GeneratingOutcome, classic: GeneratingOutcome) -> GeneratingOutcome:
    """GeneratingPolicy and classic outcomes in one: eval lists both, the report checks read both."""
    into.policies.extend(classic.policies)
    into.outcomes.extend(classic.outcomes)
    seen = {s.ref.uid for s in into.triggers}
    into.triggers.extend(s for s in classic.triggers if s.ref.uid not in seen)
    into.evaluated_uids |= classic.evaluated_uids
    into.errors.extend(classic.errors)
    into.notices.extend(n for n in classic.notices if n not in into.notices)
    return into
