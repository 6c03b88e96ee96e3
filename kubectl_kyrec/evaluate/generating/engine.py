"""GeneratingPolicy evaluation, step for step as Kyverno's gpol engine (docs/semantics/generating.md).

kk: pkg/cel/policies/gpol/engine/engine.go (matchConstraints first, then the compiled policy; result
messages), compiler/policy.go (exceptions, matchConditions, every `generate` entry in order, templates
grouped by their rendered namespace, auditAnnotations). Each (policy, trigger) gives a TriggerOutcome:
the downstreams Kyverno would write, or why there are none.

Where kyrec decides what Kyverno leaves to the moment of admission:
- the operation is `--values`' (CREATE by default); a policy whose rules list UPDATE but not CREATE is
  evaluated as an UPDATE of the trigger onto itself, since an existing trigger can only have been updated;
- output that depends on `request.userInfo` (in matchConditions, or in the variables and expressions
  that build the downstreams) is `needs-request` unless `--values` gives a userInfo: it is not guessed;
- a trigger created before the policy is not owed downstreams unless `generateExisting` is on (`owed`).
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl, variable_references
from kubectl_kyrec.cel.context import LibraryContext
from kubectl_kyrec.cel.engine import Activation, Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.generator_lib import (
    GENERATOR_VALUE,
    GENERATOR_VARIABLE,
    GenerateRefused,
    GeneratorSink,
    generator_extra,
)
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.exceptions import CompiledException, applicable, compile_exceptions, conditions_hold
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NONE,
    NOT_MATCHED,
    conditions_node,
    constraints_node,
    one_line,
    request_text,
    result_node,
)
from kubectl_kyrec.evaluate.generating.downstreams import Owner, TriggerInfo, generate_downstreams, identity
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome, TriggerOutcome, TriggerStatus
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.namespaces import namespace_object, namespace_objects
from kubectl_kyrec.evaluate.request import RequestInfo, build_request, request_namespace
from kubectl_kyrec.evaluate.subjects import NO_EXCEPTIONS, KindLookup, SubjectContext, make_subjects
from kubectl_kyrec.evaluate.validating.engine import evaluate_audit_annotations, make_result
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policy.generating import GeneratingPolicy
from kubectl_kyrec.load.policy.policies import PolicyException
from kubectl_kyrec.load.policy.vocabulary import REPORT_SOURCE
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import UNDETERMINED, Document, EvalError, Notice, Result, Subject
from kubectl_kyrec.recording import Step, Trace

if TYPE_CHECKING:
    from kubectl_kyrec.cel.template import Template

# `request.userInfo`, `request.?userInfo`, `request["userInfo"]`
_USER_INFO = re.compile(r"\brequest\s*(?:\.\s*\??\s*userInfo\b|\[\s*['\"]userInfo['\"]\s*\])")
# `generator` named at all (a string that holds the word too: then the conditions only keep their own activation)
_GENERATOR = re.compile(r"\bgenerator\b")
# what `generator` is bound to: the same for every trigger and policy (the calls go to the sink bound meanwhile)
_GENERATOR_BINDING: Mapping[str, Any] = {GENERATOR_VARIABLE: GENERATOR_VALUE}


@dataclass(frozen=True)
class CompiledGeneration:
    index: int
    program: Program | None = None
    template: Template | None = None


@dataclass(frozen=True)
class CompiledGeneratingPolicy:
    policy: GeneratingPolicy
    env: Environment
    conditions: tuple[Program, ...]
    generations: tuple[CompiledGeneration, ...]
    audit_annotations: tuple[tuple[str, Program], ...]
    exceptions: tuple[CompiledException, ...]
    conditions_use_user_info: bool
    generation_uses_user_info: bool
    # False: the matchConditions never name `generator`, so they are evaluated in the activation the generate
    # entries use (one per trigger, not two); True: in one without it, as Kyverno binds it only after them
    # (a condition naming it fails with "No value with name \"generator\" found in Activation")
    conditions_use_generator: bool


@dataclass(frozen=True)
class GenerateOptions:
    now: datetime.datetime
    operation: str = "CREATE"
    user_info: Mapping[str, Any] = field(default_factory=dict)
    user_info_known: bool = False
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    namespaces: tuple[Document, ...] = ()       # Namespace objects a values file adds to the cluster
    selection: Selection = Selection()          # its policy names (the triggers are chosen by the caller)
    # classic generate rules' lookups in the state: evaluate/classic/engine.py ClassicOptions.state_lookups
    state_lookups: tuple[Any, Any] | None = None


# ---- compiling --------------------------------------------------------------------------------------------

def _uses(pattern: re.Pattern[str], texts: Sequence[str], variables: Mapping[str, str]) -> bool:
    """Whether `pattern` is in one of `texts` or in a variable they reference (the compiler binds those in)."""
    seen: set[str] = set()
    stack = list(texts)
    while stack:
        text = stack.pop()
        if pattern.search(text):
            return True
        for ref in variable_references(text):
            if ref.name not in seen and ref.name in variables:
                seen.add(ref.name)
                stack.append(variables[ref.name])
    return False


def compile_generating_policy(policy: GeneratingPolicy, envs: Environments,
                              exceptions: Sequence[PolicyException],
                              now: datetime.datetime) -> CompiledGeneratingPolicy:
    """Compile every expression and template once; InputError (file:line, field) on the first bad one."""
    meta = policy.meta
    env, check_env = envs.get(meta.kind, meta.namespace)
    label = meta.label
    compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in policy.variables],
                              meta.source, label)
    conditions = tuple(compiler.compile(m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                       for i, m in enumerate(policy.match_conditions))
    generations = []
    texts: list[str] = []
    for gen in policy.generate:
        if gen.template is None:
            texts.append(gen.expression)
            generations.append(CompiledGeneration(gen.index, program=compiler.compile(
                gen.expression, f"{gen.path}.expression", ("bool",))))
            continue
        path = f"{gen.path}.template.value"
        # the template engine is imported for a policy with a template: most generate with an expression
        from kubectl_kyrec.cel.template import TemplateError, compile_template, extract_expressions

        def compile_placeholder(expression: str, line: int, path: str = path) -> Program:
            return compiler.compile(expression, f"{path}: line {line}: placeholder {expression!r}")

        try:
            template = compile_template(gen.template.value, gen.template.interpolate, compile_placeholder)
        except TemplateError as exc:
            raise InputError(f"{label}: {path}: {exc}", meta.source) from None
        if gen.template.interpolate == "cel":
            texts.extend(extract_expressions(gen.template.value))
        generations.append(CompiledGeneration(gen.index, template=template))
    audits = tuple((a.key, compiler.compile(a.value_expression, f"spec.auditAnnotations[{i}].valueExpression",
                                            ("string", "null")))
                   for i, a in enumerate(policy.audit_annotations))
    texts.extend(a.value_expression for a in policy.audit_annotations)
    exc_env, exc_check = envs.get("PolicyException")
    # the in-cluster gpol exception provider does not look at expiresAt (docs/semantics/exceptions.md)
    candidates = applicable(exceptions, meta.name, meta.kind, now, check_expiry=False)
    variables = {v.name: v.expression for v in policy.variables}
    condition_texts = [m.expression for m in policy.match_conditions]
    return CompiledGeneratingPolicy(
        policy, env, conditions, tuple(generations), audits,
        tuple(compile_exceptions(candidates, exc_env, exc_check)),
        conditions_use_user_info=_uses(_USER_INFO, condition_texts, variables),
        generation_uses_user_info=_uses(_USER_INFO, texts, variables),
        conditions_use_generator=_uses(_GENERATOR, condition_texts, variables))


# ---- evaluating one trigger -------------------------------------------------------------------------------

def trigger_info(request: RequestInfo, uid: str) -> TriggerInfo:
    """The trigger labels: request name and kind, the object's namespace (docs/semantics/generating.md#evaluation) and
    uid."""
    obj = request.obj or {}
    namespace = str((obj.get("metadata") or {}).get("namespace") or "") if request.obj is not None else ""
    return TriggerInfo(name=request.name, namespace=namespace, uid=uid if request.obj is not None else "",
                       kind=request.kind, group=request.group, version=request.version)


def _gvk_string(obj: Mapping[str, Any]) -> str:
    api_version = str(obj.get("apiVersion") or "")
    group, version = api_version.split("/", 1) if "/" in api_version else ("", api_version)
    return f"{group}/{version}, Kind={obj.get('kind', '')}"


def generated_resources_property(objects: Sequence[Mapping[str, Any]]) -> str:
    """`properties.generated-resources` of the report result (docs/semantics/generating.md#report-results)."""
    parts = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        text = f"{_gvk_string(obj)} Name={meta.get('name', '')}"
        if meta.get("namespace"):
            text += f" Namespace={meta['namespace']}"
        parts.append(text)
    return "; ".join(parts)


def dedupe(objects: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    # a second write of one identity (within one GeneratingPolicy, or one classic rule) updates the first in
    # place: last content, first position
    if len(objects) < 2:
        # one object (a trigger's usual answer) has no other to update: its identity is not needed here
        return tuple(objects)
    index: dict[tuple[str, str, str, str], int] = {}
    out: list[dict[str, Any]] = []
    for obj in objects:
        key = identity(obj)
        if key in index:
            out[index[key]] = obj
        else:
            index[key] = len(out)
            out.append(obj)
    return tuple(out)


class _Collector:
    """The handler bound to the generator sink for one evaluation."""

    def __init__(self, owner: Owner, kinds: KindLookup | None, namespaced_policy: bool) -> None:
        self.owner = owner
        self.kinds = kinds
        self.namespaced_policy = namespaced_policy
        self.objects: list[dict[str, Any]] = []

    def __call__(self, namespace: str, items: list[dict[str, Any]]) -> None:
        # generator.Apply's objects, as the CEL engine gives them: keys in a fixed order first (its results'
        # in_key_order), while they are written
        self.add(namespace, items, sort_keys=True)

    def add(self, namespace: str, items: list[dict[str, Any]], *, sort_keys: bool = False) -> None:
        self.objects.extend(generate_downstreams(namespace, items, self.owner, kinds=self.kinds,
                                                 namespaced_policy=self.namespaced_policy, sort_keys=sort_keys))


def _apply_template(cp: CompiledGeneratingPolicy, template: Template, activation: Activation,
                    collect: _Collector) -> str | None:
    """compiler/policy.go applyTemplate: render, group by rendered namespace, generate per group."""
    from kubectl_kyrec.cel.template import TemplateError

    try:
        resources = template.render(activation)
    except TemplateError as exc:
        return f"failed to render generation template: {exc}"
    policy_ns = cp.policy.meta.namespace if cp.policy.namespaced else ""
    order: list[str] = []
    grouped: dict[str, list[dict[str, Any]]] = {}
    for resource in resources:
        meta = resource.get("metadata")
        namespace = str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""
        if policy_ns:
            if not namespace:
                namespace = policy_ns
            elif namespace != policy_ns:
                return (f"cross-namespace generation denied: a policy in namespace {policy_ns!r} cannot "
                        f"generate resources into namespace {namespace!r}")
        if namespace not in grouped:
            order.append(namespace)
            grouped[namespace] = []
        grouped[namespace].append(resource)
    for namespace in order:
        try:
            collect.add(namespace, grouped[namespace])
        except GenerateRefused as exc:
            return f"failed to generate resources: {exc}"
    return None


def _exceptions(cp: CompiledGeneratingPolicy, ctx: SubjectContext
                ) -> tuple[list[CompiledException], bool, dict[str, list[str]], str | None]:
    """compiler/policy.go: a later exception's error is ignored once a full exemption is found."""
    matched: list[CompiledException] = []
    full = False
    images: list[str] = []
    values: list[str] = []
    for exc in cp.exceptions:
        ok, error = conditions_hold(exc.conditions, ctx.activation(exc.env), False)
        if error is not None:
            if full:
                continue
            return [], False, {}, error
        if not ok:
            continue
        matched.append(exc)
        if not exc.exception.images and not exc.exception.allowed_values:
            full = True
        elif not full:
            images.extend(exc.exception.images)
            values.extend(exc.exception.allowed_values)
    return matched, full, {"allowedImages": images, "allowedValues": values}, None


def evaluate_trigger(cp: CompiledGeneratingPolicy, ctx: SubjectContext, sink: GeneratorSink, *,
                     kinds: KindLookup | None, user_info_known: bool, owed: bool = True,
                     recorder: Trace | None = None) -> TriggerOutcome:
    """The policy's response to one trigger (engine.go generate + compiler/policy.go Evaluate).

    `recorder` (explain's): the explain nodes of the namespace and matchConstraints decisions, with the
    result when the policy does not apply (run_generating records the rest once it keeps the outcome)."""
    policy = cp.policy
    meta = policy.meta
    operation = ctx.request.operation

    def outcome(status: TriggerStatus, message: str = "", objects: Sequence[dict[str, Any]] = (),
                result: Result | None = None) -> TriggerOutcome:
        return TriggerOutcome(policy, ctx.subject, status, tuple(objects), message, result, owed, operation)

    def result(rule: str, status: str, message: str, props: Mapping[str, str] | None = None) -> Result:
        return make_result(meta, REPORT_SOURCE[meta.kind], ctx, rule, status, message, props or {}, (), False)

    def failed(where: str, error: str) -> TriggerOutcome:
        # an error only a registry, or a read of the cluster kyrec lacks, could have avoided is no error of the
        # policy: the answer is not known; the message starts with the reason, which names the status.
        # Imported here, on an error only: the admission chain's module is of no other use to generating
        from kubectl_kyrec.evaluate.admission_chain import undetermined_reason

        reason = undetermined_reason(where, error)
        if reason is not None:
            return outcome(TriggerStatus(reason.partition(":")[0]), reason,
                           result=result(meta.name, UNDETERMINED, reason))
        message = f"failed to evaluate policy: {error}"
        return outcome(TriggerStatus.ERROR, message, result=result(meta.name, "error", message))

    if policy.namespaced and ctx.request.namespace != meta.namespace:
        # a namespaced policy only sees requests in its own namespace (as the validating engine does)
        if recorder is not None:
            recorder.add("namespace", NOT_MATCHED, f"a {meta.kind} sees only triggers in its own namespace "
                                                   f"{meta.namespace!r}")
            recorder.node(result_node(None))
        return outcome(TriggerStatus.NO_MATCH)
    try:
        if not matches_constraints(policy.match_constraints, ctx.request, ctx.namespace_obj):
            if recorder is not None:
                _record_no_match(recorder, policy, ctx, (NOT_MATCHED, request_text(ctx.request)))
            return outcome(TriggerStatus.NO_MATCH)
    except MatchError as exc:
        message = f"failed to execute matching: {exc}"
        if recorder is not None:
            recorder.node(constraints_node(policy.match_constraints, ctx, decided=(ERROR, message)))
        return outcome(TriggerStatus.ERROR, message, result=result(meta.name, "error", message))
    if recorder is not None:
        recorder.node(constraints_node(policy.match_constraints, ctx, decided=(MATCHED, request_text(ctx.request))))
    exceptions: Mapping[str, Any] = NO_EXCEPTIONS
    if cp.exceptions:
        matched, full, partial, error = _exceptions(cp, ctx)
        if error is not None:
            return failed("a PolicyException", error)
        if full:
            keys = ", ".join(e.key for e in matched)
            best = 0
            index = 0
            for i, candidate in enumerate(matched):
                if candidate.exception.priority > best:
                    best, index = candidate.exception.priority, i
            verdict = "pass" if matched[index].exception.report_result == "pass" else "skip"
            word = "passed" if verdict == "pass" else "skipped"
            message = f"rule is {word} due to policy exception: {keys}"
            names = ",".join(e.exception.meta.name for e in matched)
            return outcome(TriggerStatus.EXEMPT, message,
                           result=result("exception", verdict, message, {"exceptions": names}))
        if matched:
            exceptions = partial
    if cp.conditions_use_user_info and not user_info_known:
        message = "matchConditions read request.userInfo, which --values does not give"
        return outcome(TriggerStatus.NEEDS_REQUEST, message, result=result(meta.name, UNDETERMINED, message))
    # the generate entries' activation (cached for the trigger's other policies, as the one without
    # `generator` is): the conditions' too when they cannot tell it apart, so a trigger's variables are
    # converted once, not twice (bench/apply_prewrite.py)
    activation = ctx.activation(cp.env, exceptions=exceptions, extra=_GENERATOR_BINDING, shared=GENERATOR_VARIABLE)
    ok, error = conditions_hold(cp.conditions, ctx.activation(cp.env, exceptions=exceptions)
                                if cp.conditions_use_generator else activation, False)
    if error is not None:
        return failed("a matchCondition", error)
    if not ok:
        return outcome(TriggerStatus.SKIPPED)
    if cp.generation_uses_user_info and not user_info_known:
        message = "the generated objects depend on request.userInfo, which --values does not give"
        return outcome(TriggerStatus.NEEDS_REQUEST, message, result=result(meta.name, UNDETERMINED, message))
    owner = Owner(meta.name, meta.namespace if policy.namespaced else "",
                  trigger_info(ctx.request, ctx.subject.ref.uid))
    collect = _Collector(owner, kinds, policy.namespaced)
    sink.bind(collect)
    try:
        for gen in cp.generations:
            if gen.template is not None:
                error = _apply_template(cp, gen.template, activation, collect)
                if error is not None:
                    return failed(f"generate[{gen.index}]", error)
                continue
            assert gen.program is not None
            evaluated = gen.program.evaluate(activation)
            if not evaluated.ok:
                return failed(f"generate[{gen.index}]", str(evaluated.error))
    finally:
        sink.release()
    audits, audit_error = evaluate_audit_annotations(cp.audit_annotations, activation, quote='"')
    if audit_error is not None:
        return failed("an auditAnnotation", audit_error)
    objects = dedupe(collect.objects)
    props = dict(audits)
    if objects:
        props["generated-resources"] = generated_resources_property(objects)
    return outcome(TriggerStatus.GENERATED, "policy evaluated successfully", objects,
                   result(meta.name, "pass", "policy evaluated successfully", props))


def _record_no_match(recorder: Trace, policy: GeneratingPolicy, ctx: SubjectContext,
                     decided: tuple[str, str] | None) -> None:
    """A policy that does not apply to the trigger (`decided`: as matchConstraints decided; None for one the
    run could not compile, whose matchConstraints are only matched to be shown)."""
    if decided is None:
        try:
            decided = (MATCHED if matches_constraints(policy.match_constraints, ctx.request, ctx.namespace_obj)
                       else NOT_MATCHED, request_text(ctx.request))
        except MatchError as exc:
            decided = (ERROR, f"failed to execute matching: {exc}")
    recorder.node(constraints_node(policy.match_constraints, ctx, decided=decided))
    recorder.node(result_node(None, "no downstreams: the policy does not apply"))


_STATUS = {
    TriggerStatus.GENERATED: "the policy was evaluated: its generate entries give the downstreams below",
    TriggerStatus.SKIPPED: "a matchCondition is not true: nothing is generated",
    TriggerStatus.EXEMPT: "a PolicyException exempts the trigger: nothing is generated",
    TriggerStatus.ERROR: "the evaluation failed: Kyverno writes nothing and cleans nothing up",
    TriggerStatus.NEEDS_REQUEST: "it depends on request data --values does not give",
    TriggerStatus.NEEDS_REGISTRY: "it reads image data only a registry gives: nothing is generated or cleaned up",
    TriggerStatus.READ_FAILED: "it rests on a lookup whose LIST failed: nothing is generated or cleaned up",
    TriggerStatus.KIND_NOT_CAPTURED: "it rests on a lookup of a kind not read: nothing is generated or cleaned up",
}


def _record_outcome(recorder: Trace, cp: CompiledGeneratingPolicy, ctx: SubjectContext, kept: TriggerOutcome) -> None:
    """The rest of the tree of an outcome the run keeps (`ctx`: the request it was evaluated on): the
    matchConditions' values, the evaluation, the downstreams each with why it is owed, the result."""
    policy = cp.policy
    if policy.match_conditions:
        # evaluated without the `exceptions` a partial PolicyException binds (the conditions seldom read it)
        recorder.node(conditions_node(policy.match_conditions, cp.conditions, ctx.activation(cp.env),
                                      "nothing is generated"))
    recorder.add("evaluation", kept.status.value, kept.message or _STATUS.get(kept.status, ""))
    if kept.status is TriggerStatus.GENERATED:
        entries = "; ".join(f"generate[{g.index}] " + (one_line(g.expression) if g.expression else "template")
                            for g in policy.generate)
        node = recorder.add("downstreams", str(len(kept.objects)) if kept.objects else NONE,
                            f"from {entries}" if entries else "")
        owed = "owed" if kept.owed else "not owed"
        why_owed = ("generateExisting is on, or the trigger is new to the policy" if kept.owed
                    else "generateExisting is off and the trigger existed before the policy: Kyverno generates "
                         "nothing for it")
        if not kept.age_known:
            why_owed = "the policy's age is unknown (no creationTimestamp): whether the trigger predates it is too"
        ref = ctx.subject.ref
        trigger = f"{ref.kind} {ref.namespace + '/' if ref.namespace else ''}{ref.name}"
        sync = "kept in sync with the policy (synchronize)" if policy.synchronize else "created once"
        for obj in kept.objects:
            meta = obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "")
            name = f"{namespace + '/' if namespace else ''}{meta.get('name')}"
            node.children.append(Step(f"{obj.get('apiVersion')} {obj.get('kind')} {name}", owed,
                                      f"generated for trigger {trigger}; {sync}; {why_owed}"))
    recorder.node(result_node(kept.result, "no result"))


# ---- a whole run ------------------------------------------------------------------------------------------

def generating_environments(context: LibraryContext) -> tuple[Environments, GeneratorSink]:
    """Environments with every library a generating policy gets, `generator` bound to a new sink."""
    sink = GeneratorSink()
    return Environments(library_factory(context, extra=generator_extra(sink))), sink


def policy_created(policy: GeneratingPolicy, state: Sequence[Document]) -> str:
    """The policy's creationTimestamp: its own, else the state's copy's; "" when neither says."""
    if policy.meta.creation_timestamp:
        return policy.meta.creation_timestamp
    for doc in state:
        if doc.kind == policy.meta.kind and doc.name == policy.meta.name and (
                not policy.namespaced or doc.namespace == policy.meta.namespace):
            created = (doc.obj.get("metadata") or {}).get("creationTimestamp")
            if created:
                return str(created)
    return ""


def is_owed(policy: GeneratingPolicy, trigger: Subject, in_state: bool, created: str) -> bool | None:
    """generateExisting off: a trigger that existed before the policy is owed nothing (docs/semantics/downstreams.md).

    None when that cannot be told: the trigger exists and the policy's creation time is unknown (a
    manifest from git has none, and the state holds no copy). It is never taken to be now: that would
    make every existing trigger predate the policy and hide every missing downstream."""
    if policy.generate_existing or not in_state:
        return True
    trigger_created = parse_rfc3339(str((trigger.obj.get("metadata") or {}).get("creationTimestamp") or ""))
    if trigger_created is None:
        return True
    if not created:
        return None
    policy_time = parse_rfc3339(created)
    return policy_time is None or trigger_created >= policy_time


def _contexts(subject: Subject, options: GenerateOptions, namespaces: Mapping[str, Mapping[str, Any]],
              needs_update: bool) -> tuple[SubjectContext, SubjectContext | None]:
    def make(operation: str) -> SubjectContext:
        request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced,
                                operation=operation, user_info=options.user_info)
        ns_obj = None
        if request.namespace and subject.namespaced:
            ns_obj = namespace_object(request.namespace, namespaces)
        return SubjectContext(subject, request, ns_obj)

    create = make(options.operation)
    update = make("UPDATE") if needs_update and options.operation == "CREATE" else None
    return create, update


def _update_only(policy: GeneratingPolicy) -> bool:
    rules = policy.match_constraints.resource_rules if policy.match_constraints else ()
    return any("UPDATE" in r.operations and "CREATE" not in r.operations and "*" not in r.operations
               for r in rules)


def run_generating(policies: Sequence[GeneratingPolicy], triggers: Sequence[Document],
                   state: Sequence[Document], *, kinds: KindLookup, envs: Environments, sink: GeneratorSink,
                   options: GenerateOptions, exceptions: Sequence[PolicyException] = (),
                   trigger_filter: Callable[[Subject], bool] | None = None,
                   locate: Callable[[InputError], InputError] | None = None,
                   recorder: Trace | None = None) -> GeneratingOutcome:
    """Every policy against every trigger: the desired downstreams of each (policy, trigger).

    `locate` moves an error to the line of the field it names (PolicySet.locate). `recorder` (explain's): a
    tree per (trigger, policy selected) (Trace.tree), of the evaluation whose outcome the run keeps (its
    retry as an UPDATE when that is kept), ending in its result; a policy that does not compile shows its
    rules.
    """
    out = GeneratingOutcome()
    compiled: list[CompiledGeneratingPolicy] = []
    # what explain shows a tree for: every policy selected, compiled (None when it does not)
    shown: list[tuple[GeneratingPolicy, CompiledGeneratingPolicy | None]] = []
    for policy in policies:
        try:
            if not options.selection.holds_policy(policy.key):
                continue
            out.policies.append(policy)
            shown.append((policy, None))
            compiled.append(compile_generating_policy(policy, envs, exceptions, options.now))
            shown[-1] = (policy, compiled[-1])
        except InputError as exc:
            located = locate(exc) if locate is not None else exc
            out.errors.append(EvalError(located.message, located.source))
    if not compiled and recorder is None:
        return out
    # one pass over the state for both, each object's uid read once, not four times (two scans of 3,000 live
    # Namespaces were 15,000 of apply's calls before its first write, bench/apply_prewrite.py)
    state_uids: set[str] = set()
    uid_from: dict[tuple[str, str, str, str], str] = {}
    for d in state:
        uid = (d.obj.get("metadata") or {}).get("uid")
        if uid:
            text = str(uid)
            state_uids.add(text)
            uid_from[(d.api_version, d.kind, d.namespace, d.name)] = text
    subject_set = make_subjects(triggers, kinds, uid_from=uid_from)
    out.notices.extend(subject_set.notices)
    # the Namespaces of the namespaced triggers' requests are the only ones read (their namespaceObject, _contexts):
    # the others are not built (3,000 live Namespaces were each copied with their labels for two kube-system
    # ConfigMaps)
    namespaces = namespace_objects([*state, *triggers, *options.namespaces], options.namespace_labels,
                                   only={request_namespace(s.obj, True) for s in subject_set.subjects if s.namespaced})
    created = {cp.policy.key: policy_created(cp.policy, state) for cp in compiled}
    any_update_only = any(_update_only(cp.policy) for cp in compiled)
    unknown_age: dict[str, int] = {}
    for subject in subject_set.subjects:
        if trigger_filter is not None and not trigger_filter(subject):
            continue
        out.triggers.append(subject)
        out.evaluated_uids.add(subject.ref.uid)
        ctx, update_ctx = _contexts(subject, options, namespaces, any_update_only)
        in_state = subject.ref.uid in state_uids
        for policy, maybe in shown:
            tree = None
            if recorder is not None:
                tree = recorder.tree(f"{policy.meta.kind} {policy.meta.key}", (policy.meta, subject.ref, []))
            if maybe is None:
                if recorder is not None:
                    _record_no_match(recorder, policy, ctx, None)
                continue
            cp = maybe
            owed = is_owed(cp.policy, subject, in_state, created[cp.policy.key])
            result = evaluate_trigger(cp, ctx, sink, kinds=kinds, user_info_known=options.user_info_known,
                                      owed=owed is not False, recorder=recorder)
            kept_ctx = ctx
            if result.status is TriggerStatus.NO_MATCH and update_ctx is not None and _update_only(cp.policy):
                retry = Trace() if recorder is not None else None
                result = evaluate_trigger(cp, update_ctx, sink, kinds=kinds,
                                          user_info_known=options.user_info_known, owed=owed is not False,
                                          recorder=retry)
                if tree is not None and retry is not None and result.status is not TriggerStatus.NO_MATCH:
                    # the tree is the retry's, whose outcome the run keeps
                    kept_ctx = update_ctx
                    tree.children[:] = [Step("request", result.operation, "the policy matches UPDATE only: the "
                                                                          "trigger is taken as updated"),
                                        *retry.root.children]
            if result.status is not TriggerStatus.NO_MATCH:
                if owed is None:
                    result = dataclasses.replace(result, age_known=False)
                    unknown_age[cp.policy.key] = unknown_age.get(cp.policy.key, 0) + 1
                out.outcomes.append(result)
                if recorder is not None and tree is not None:
                    _record_outcome(recorder, cp, kept_ctx, result)
                    if result.result is not None:
                        tree.data[2].append(result.result)
    out.notices.extend(age_unknown_notice(key, count, f" (kubectl get generatingpolicy {key.rpartition('/')[2]} "
                                                      "-o yaml)") for key, count in unknown_age.items())
    return out


def age_unknown_notice(key: str, count: int, how: str = "") -> Notice:
    """Said once per policy whose age decides what it owes and is unknown (GeneratingPolicy and classic
    generate rule alike); `how`: how to get the policy as the cluster has it."""
    return Notice(f"{key}: the policy has no creationTimestamp and the state holds no copy of it, so whether "
                  f"{count} existing trigger(s) predate it is unknown (generateExisting is off); their downstreams "
                  f"are marked policy-age-unknown. Give the policy as the cluster has it{how} or include it in "
                  "--state")
