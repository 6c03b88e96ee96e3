"""ValidatingPolicy evaluation, step for step as Kyverno's vpol engine (docs/semantics/validating.md#evaluation).

kk: pkg/cel/policies/vpol/engine/engine.go (rule names and messages) and compiler/policy.go (order:
exceptions, matchConditions, validations stopping at the first false, auditAnnotations).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import Activation, Environment, Program, first_not_true
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.autogen import CONTROLLERS, Variant, variants
from kubectl_kyrec.evaluate.exceptions import (
    CompiledException,
    ExceptionOutcome,
    applicable,
    compile_exceptions,
    conditions_hold,
    evaluate_exceptions,
    selected_report_result,
)
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NONE,
    NOT_MATCHED,
    conditions_node,
    constraints_node,
    exception_node,
    request_text,
    result_node,
    show,
    validations_node,
    variables_node,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints, may_match, rules_decided_by_kind
from kubectl_kyrec.evaluate.request import RequestInfo, build_request
from kubectl_kyrec.evaluate.subjects import NO_EXCEPTIONS, SubjectContext
from kubectl_kyrec.k8s.labels import selector_is_empty
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policy.policies import PolicyException, ValidatingPolicy
from kubectl_kyrec.load.policy.vocabulary import PolicyMeta
from kubectl_kyrec.model import UNDETERMINED, Obj, Result, Subject, new_result
from kubectl_kyrec.recording import Step, Trace


@dataclass(frozen=True)
class CompiledValidation:
    program: Program
    message: str
    message_program: Program | None


@dataclass(frozen=True)
class CompiledVariant:
    variant: Variant
    conditions: tuple[Program, ...]
    validations: tuple[CompiledValidation, ...]
    audit_annotations: tuple[tuple[str, Program], ...]
    rules_by_kind: bool          # no resourceNames: the kind alone decides the rules (see may_match)
    # ... and no namespace or object selector: once the rules matched the kind, the variant matches
    kind_decides: bool = False

    @functools.cached_property
    def validation_programs(self) -> tuple[Program, ...]:
        return tuple(v.program for v in self.validations)


@dataclass(frozen=True)
class CompiledValidatingPolicy:
    policy: ValidatingPolicy
    env: Environment
    variants: tuple[CompiledVariant, ...]
    exceptions: tuple[CompiledException, ...]
    # for explain only: the check environment of the values it shows, every PolicyException of the run (to say
    # of each why it was considered or not) and the run's time (an exception's expiry)
    check_env: Environment | None = None
    run_exceptions: tuple[PolicyException, ...] = ()
    now: datetime.datetime | None = None

    @functools.cached_property
    def facts(self) -> tuple[str, bool, str, str]:
        return _facts(self.policy.meta)

    @functools.cached_property
    def source_kind(self) -> str:
        return self.policy.source_kind

    @functools.cached_property
    def fixed(self) -> _Fixed:
        return _Fixed(self)


class _Fixed:
    """What every result of one policy shares, worked out once: results are made per (subject, policy)."""

    __slots__ = ("key", "source_kind", "scored", "category", "severity", "actions", "policy_location",
                 "background", "process_only", "json_mode", "ignore", "own_namespace", "disabled", "failed",
                 "_index_properties")

    def __init__(self, cp: CompiledValidatingPolicy) -> None:
        policy = cp.policy
        self.key, self.scored, self.category, self.severity = cp.facts
        self.source_kind = cp.source_kind
        self.actions = tuple(policy.validation_actions)
        self.policy_location = policy.meta.source
        self.background = policy.background
        self.process_only = _PROCESS_ONLY[policy.background]
        self.json_mode = policy.mode == "JSON"
        self.ignore = policy.failure_policy == "Ignore"
        # a namespaced policy only ever sees requests in its own namespace
        self.own_namespace = policy.meta.namespace if policy.meta.kind.startswith("Namespaced") else None
        # reports.kyverno.io/disabled: the policy's results are never reported (pipeline.evaluate_policies)
        self.disabled = "reports.kyverno.io/disabled" in policy.meta.labels
        # a failed validation's status: warn where the policy is not scored (make_result)
        self.failed = "fail" if self.scored else "warn"
        self._index_properties: dict[int, dict[str, str]] = {}

    def index_properties(self, index: int) -> dict[str, str]:
        """The properties of a failed validation without audit annotations: `process` and
        `cel.validationIndex`, one mapping per index of this policy (what _shared_properties shares)."""
        props = self._index_properties.get(index)
        if props is None:
            props = self._index_properties[index] = _shared_properties(self.background,
                                                                       {"cel.validationIndex": str(index)})
        return props


def _compile_variant(policy: ValidatingPolicy, variant: Variant, env: Environment,
                     check_env: Environment) -> CompiledVariant:
    label = policy.meta.label + (f" (autogen {variant.name})" if variant.name else "")
    compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in variant.variables],
                              policy.meta.source, label)
    conditions = tuple(compiler.compile(m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                       for i, m in enumerate(variant.match_conditions))
    validations = []
    for i, v in enumerate(variant.validations):
        program = compiler.compile(v.expression, f"spec.validations[{i}].expression", ("bool",))
        message_program = (compiler.compile(v.message_expression, f"spec.validations[{i}].messageExpression",
                                            ("string",)) if v.message_expression else None)
        validations.append(CompiledValidation(program, v.message, message_program))
    audits = tuple((a.key, compiler.compile(a.value_expression, f"spec.auditAnnotations[{i}].valueExpression",
                                            ("string", "null")))
                   for i, a in enumerate(variant.audit_annotations))
    constraints = variant.match_constraints
    by_kind = constraints is not None and rules_decided_by_kind(constraints)
    kind_decides = (by_kind and constraints is not None and selector_is_empty(constraints.namespace_selector)
                    and selector_is_empty(constraints.object_selector))
    return CompiledVariant(variant, conditions, tuple(validations), audits, by_kind, kind_decides)


def compile_validating_policy(policy: ValidatingPolicy, envs: Environments,
                              exceptions: Sequence[PolicyException], now: datetime.datetime
                              ) -> CompiledValidatingPolicy:
    """Compile every expression once; raises InputError (file:line, field, column) on the first bad one."""
    env, check_env = envs.get(policy.meta.kind, policy.meta.namespace)
    compiled = tuple(_compile_variant(policy, v, env, check_env) for v in variants(policy))
    exc_env, exc_check = envs.get("PolicyException")
    candidates = applicable(exceptions, policy.meta.name, policy.meta.kind, now)
    return CompiledValidatingPolicy(policy, env, compiled,
                                    tuple(compile_exceptions(candidates, exc_env, exc_check)), check_env,
                                    tuple(exceptions), now)


_FACTS: dict[int, tuple[PolicyMeta, tuple[str, bool, str, str]]] = {}


def _facts(meta: PolicyMeta) -> tuple[str, bool, str, str]:
    """(key, scored, category, severity) of a policy, worked out once: results are made per subject."""
    cached = _FACTS.get(id(meta))
    if cached is None or cached[0] is not meta:
        cached = (meta, (meta.key, meta.scored, meta.category, meta.severity))
        _FACTS[id(meta)] = cached
    return cached[1]


_PROCESS = {True: "background scan", False: "admission review"}
# the properties of a result that has no others: one mapping per value, shared (results never modify them)
_PROCESS_ONLY = {background: {"process": process} for background, process in _PROCESS.items()}


# A result's properties and message, equal in many results (`cel.validationIndex`, an error's text), are one
# object each, not one per result: a run keeps its results until they are written, and these were a tenth
# of its memory (bench/scale.py, docs/performance.md). Results are never changed, so sharing is safe. Each
# table is bounded: audit annotations and messageExpressions can make every value distinct.
_SHARED_MAX = 4096
_SHARED_PROPERTIES: dict[tuple[bool, tuple[tuple[str, str], ...]], dict[str, str]] = {}
_SHARED_TEXT: dict[str, str] = {}


def _shared_properties(background: bool, properties: Mapping[str, str]) -> dict[str, str]:
    """`process` then `properties`: the one mapping of these values."""
    key = (background, tuple(properties.items()))
    try:
        props = _SHARED_PROPERTIES.get(key)
    except TypeError:       # a value that cannot be hashed: a mapping of its own
        return {"process": _PROCESS[background], **properties}
    if props is None:
        if len(_SHARED_PROPERTIES) >= _SHARED_MAX:
            _SHARED_PROPERTIES.clear()
        props = _SHARED_PROPERTIES[key] = {"process": _PROCESS[background], **properties}
    return props


def make_result(policy_meta: PolicyMeta, source: str, ctx: SubjectContext, rule: str, status: str,
                message: str, properties: Mapping[str, str], actions: Sequence[str], background: bool,
                binding: str = "", facts: tuple[str, bool, str, str] | None = None) -> Result:
    """A Result with Kyverno's report fields (ToPolicyReportResult, docs/semantics/reports.md#report-objects)."""
    key, scored, category, severity = facts or _facts(policy_meta)
    if properties:
        props = _shared_properties(background, properties)
        # properties named like a status override the message (reportutils ToPolicyReportResult)
        if "message" in props:
            message = props["message"]
        elif f"{status}Message" in props:
            message = props[f"{status}Message"]
    else:
        props = _PROCESS_ONLY[background]
    if status == "fail" and not scored:
        status = "warn"
    subject = ctx.subject
    return new_result(key, source, rule, status, _shared_text(message), subject.ref, scored, category, severity,
                      props, actions if type(actions) is tuple else tuple(actions), subject.source,
                      policy_meta.source, binding)


def _shared_text(message: str) -> str:
    """The one string of this message text (see _SHARED_TEXT)."""
    shared = _SHARED_TEXT.get(message)
    if shared is None:
        if len(_SHARED_TEXT) >= _SHARED_MAX:
            _SHARED_TEXT.clear()
        shared = _SHARED_TEXT[message] = message
    return shared


def evaluate_audit_annotations(audits: Sequence[tuple[str, Program]], activation: Activation, quote: str = "'"
                               ) -> tuple[dict[str, str], str | None]:
    """auditAnnotations as Kyverno evaluates them: empty values omitted, a non-string an error.

    `quote` wraps the key in error texts: the vpol compiler writes '%s', the gpol one "%s".
    """
    out: dict[str, str] = {}
    for key, program in audits:
        outcome = program.evaluate(activation)
        if not outcome.ok:
            return {}, f"failed to evaluate auditAnnotation {quote}{key}{quote}: {outcome.error}"
        if outcome.value is None or outcome.value == "":
            continue
        if not isinstance(outcome.value, str):
            return {}, (f"failed to convert auditAnnotation {quote}{key}{quote} expression: type conversion "
                        f"error from '{type(outcome.value).__name__}' to 'string'")
        out[key] = outcome.value
    return out, None


def candidate_variants(cp: CompiledValidatingPolicy, req: RequestInfo) -> tuple[CompiledVariant, ...]:
    """The variants whose rules can match a request of this kind (selectors and names still to check)."""
    return tuple(cv for cv in cp.variants if may_match(cv.variant.match_constraints, req))


class KindPlan(list[tuple[CompiledValidatingPolicy, tuple[CompiledVariant, ...]]]):
    """The run's ValidatingPolicies with their variants that may match one kind of request (candidate_variants),
    and the same as one flat tuple of `steps`, each a (policy, variant, its rules_by_kind, the policy's _Fixed):
    eval's loop (pipeline.evaluate_policies) walks the steps on every subject of the kind, calling
    evaluate_variant for each, where a pair took two calls (evaluate_validating's, then its variant's), a list
    and the policy's own-namespace test on the way."""

    def __init__(self, validating: Iterable[tuple[CompiledValidatingPolicy, tuple[CompiledVariant, ...]]]) -> None:
        super().__init__(validating)
        self.steps = tuple((cp, cv, cv.rules_by_kind, cp.fixed) for cp, candidates in self for cv in candidates)


def evaluate_validating(cp: CompiledValidatingPolicy, ctx: SubjectContext,
                        candidates: Sequence[CompiledVariant] | None = None,
                        recorder: Trace | None = None) -> list[Result]:
    """The policy's response for one subject: zero or one result per matching variant.

    `candidates` (from `candidate_variants` for this subject's kind) skips re-checking the rules.
    `recorder` (explain's): each variant evaluated is recorded as a rule (policy key, variant name) with its
    explain nodes, ending in its "result" node: the recording is the tree.
    """
    results: list[Result] = []
    own_namespace = cp.fixed.own_namespace
    if own_namespace is not None and ctx.request.namespace != own_namespace:
        if recorder is not None:
            recorder.add("namespace", NOT_MATCHED, f"a {cp.policy.meta.kind} sees only requests in its own "
                                                   f"namespace {own_namespace!r}")
            recorder.node(result_node(None))
        return results
    if recorder is not None:
        return _recorded(cp, ctx, candidates, recorder)
    checked = candidates is not None
    for variant in (candidates if candidates is not None else cp.variants):
        result = evaluate_variant(cp, variant, ctx, checked and variant.rules_by_kind)
        if result is not None:
            results.append(result)
    return results


def _recorded(cp: CompiledValidatingPolicy, ctx: SubjectContext, candidates: Sequence[CompiledVariant] | None,
              recorder: Trace) -> list[Result]:
    """evaluate_validating's loop, recording the explain nodes: every variant, those whose rules cannot
    match the subject's kind (not candidates) as such."""
    results: list[Result] = []
    if len(cp.variants) > 1:
        autogen = recorder.add("autogen", "expanded", "a Pod policy is also evaluated on the pod controllers, as "
                                                      "rewritten copies")
        autogen.children.extend(Step(cv.variant.name, "", ", ".join(_controller_kinds(cv))) for cv in cp.variants[1:])
    for cv in cp.variants:
        variant = cv.variant
        name = variant.name or cp.policy.meta.name
        kinds = f"autogen for {', '.join(_controller_kinds(cv))}" if variant.name else ""
        if candidates is not None and cv not in candidates and variant.name:
            # an autogen copy for other kinds: one line, its rules are the policy's, retargeted
            recorder.add(f"rule {name}", NOT_MATCHED, f"{kinds}; the subject is a {ctx.subject.ref.kind}")
            continue
        step = recorder.open(f"rule {name}", kinds)
        if candidates is not None and cv not in candidates:
            if cp.fixed.json_mode:
                recorder.add("matchConstraints", NONE, "evaluation mode JSON applies no matchConstraints")
                recorder.node(_exceptions_node(cp, ctx, None))
            else:
                recorder.node(constraints_node(variant.match_constraints, ctx,
                                               decided=(NOT_MATCHED, request_text(ctx.request))))
            result = None
        else:
            result = evaluate_variant(cp, cv, ctx, candidates is not None and cv.rules_by_kind, recorder)
        recorder.node(result_node(result))
        recorder.close(step, "")
        if result is not None:
            results.append(result)
    return results


def _controller_kinds(cv: CompiledVariant) -> list[str]:
    constraints = cv.variant.match_constraints
    rules = constraints.resource_rules if constraints is not None else ()
    return [CONTROLLERS[r][2] for rule in rules for r in rule.resources if r in CONTROLLERS]


def _exceptions_node(cp: CompiledValidatingPolicy, ctx: SubjectContext, outcome: ExceptionOutcome | None) -> Step:
    """Every PolicyException of the run, considered or not and why; `outcome`: the engine's, when it had
    exceptions to evaluate."""
    meta = cp.policy.meta
    node = Step("exceptions", NONE if not cp.run_exceptions else NOT_MATCHED)
    compiled = {id(c.exception): c for c in cp.exceptions}
    hit = {id(c.exception) for c in outcome.matched} if outcome is not None else set()
    for exc in cp.run_exceptions:
        key = f"{exc.meta.namespace}/{exc.meta.name}" if exc.meta.namespace else exc.meta.name
        ce = compiled.get(id(exc))
        if not any(r.name == meta.name and r.kind == meta.kind for r in exc.policy_refs):
            refs = ", ".join(f"{r.kind}/{r.name}" for r in exc.policy_refs) or "none"
            node.children.append(Step(key, "not considered", f"policyRefs name {refs}"))
        elif ce is None:
            expires = parse_rfc3339(exc.expires_at) if exc.expires_at else None
            expired = expires is not None and cp.now is not None and expires <= cp.now
            node.children.append(Step(key, "not considered", f"expired at {exc.expires_at}" if expired
                                      else "not applicable"))
        else:
            child = exception_node(ce, id(exc) in hit, ctx.activation(ce.env), "no matchConditions: every request")
            if id(exc) in hit and (exc.images or exc.allowed_values):
                child.detail = (f"allows images {show(list(exc.images))} values {show(list(exc.allowed_values))}: "
                                "the policy is still evaluated, with `exceptions` bound")
            node.children.append(child)
    if outcome is None:
        return node
    if outcome.error is not None:
        node.outcome, node.detail = ERROR, outcome.error
    elif outcome.full:
        node.outcome, node.detail = MATCHED, "a full exemption: the policy is not evaluated"
    elif outcome.matched:
        node.outcome = "partial"
    return node


def _shown_compiler(cp: CompiledValidatingPolicy, cv: CompiledVariant) -> PolicyCompiler:
    """A compiler as the policy's, for the sub-expressions and variables explain shows (never for decisions)."""
    meta = cp.policy.meta
    return PolicyCompiler(cp.env, cp.check_env or cp.env, [VariableDecl(v.name, v.expression)
                                                            for v in cv.variant.variables], meta.source, meta.label)


_NO_PROPERTIES: Mapping[str, str] = {}


def _result(cp: CompiledValidatingPolicy, ctx: SubjectContext, rule: str, status: str, message: str,
            props: Mapping[str, str] | None = None) -> Result:
    policy = cp.policy
    return make_result(policy.meta, cp.source_kind, ctx, rule, status, message, props or _NO_PROPERTIES,
                       policy.validation_actions, policy.background, facts=cp.facts)


def _undetermined(cp: CompiledValidatingPolicy, ctx: SubjectContext, where: str, error: str) -> Result | None:
    """`undetermined` when `error` came from a read only a registry answers (needs-registry: image.GetMetadata
    offline where a cluster would read the registry: eval, test --strict), as the ImageValidatingPolicy
    engine says of its validations, or from a lookup the state read from a cluster cannot answer
    (read-failed, kind-not-captured); None for any other error, which stays Kyverno's."""
    # imported on an error only, as below: the GeneratingPolicy engine imports this module for make_result,
    # and the admission chain's module is of no other use to it
    from kubectl_kyrec.evaluate.admission_chain import undetermined_reason

    reason = undetermined_reason(where, error)
    return None if reason is None else _result(cp, ctx, "", UNDETERMINED, reason)


def evaluate_variant(cp: CompiledValidatingPolicy, cv: CompiledVariant, ctx: SubjectContext,
                      rules_checked: bool, recorder: Trace | None = None) -> Result | None:
    fixed = cp.fixed
    json_mode = fixed.json_mode
    # JSON mode applies no matchConstraints (kk: vpol compiler.go compileForJSON)
    if json_mode:
        if recorder is not None:
            recorder.add("matchConstraints", NONE, "evaluation mode JSON applies no matchConstraints")
    elif not (rules_checked and cv.kind_decides):
        try:
            if not matches_constraints(cv.variant.match_constraints, ctx.request, ctx.namespace_obj,
                                       rules_checked=rules_checked):
                if recorder is not None:
                    recorder.node(constraints_node(cv.variant.match_constraints, ctx,
                                                   decided=(NOT_MATCHED, request_text(ctx.request))))
                return None
        except MatchError as exc:
            if recorder is not None:
                recorder.node(constraints_node(cv.variant.match_constraints, ctx,
                                               decided=(ERROR, f"failed to execute matching: {exc}")))
            return _result(cp, ctx, "match", "error", f"failed to execute matching: {exc}")
    if recorder is not None and not json_mode:
        recorder.node(constraints_node(cv.variant.match_constraints, ctx,
                                       decided=(MATCHED, request_text(ctx.request))))
    ignore = fixed.ignore
    exceptions = NO_EXCEPTIONS
    polex = evaluate_exceptions(cp.exceptions, ctx, ignore) if cp.exceptions else None
    if recorder is not None:
        recorder.node(_exceptions_node(cp, ctx, polex))
    if polex is not None:
        if polex.error is not None:
            return _undetermined(cp, ctx, "a PolicyException", polex.error) or \
                _result(cp, ctx, "evaluation", "error", f"failed to load context: {polex.error}")
        if polex.full:
            keys = ", ".join(e.key for e in polex.matched)
            names = ",".join(e.exception.meta.name for e in polex.matched)
            verdict = "pass" if selected_report_result(polex.matched) == "pass" else "skip"
            word = "passed" if verdict == "pass" else "skipped"
            return _result(cp, ctx, "exception", verdict, f"rule is {word} due to policy exception: {keys}",
                           {"exceptions": names})
        if polex.matched:
            exceptions = {"allowedImages": list(polex.allowed_images),
                          "allowedValues": list(polex.allowed_values)}
    activation = ctx.activation(cp.env, exceptions=exceptions)
    if recorder is not None:
        variant = cv.variant
        recorder.node(conditions_node(variant.match_conditions, cv.conditions, activation,
                                      "the policy skips the subject"))
        if variant.variables:
            recorder.node(variables_node(_shown_compiler(cp, cv), variant.variables, activation))
    if cv.conditions:
        ok, error = conditions_hold(cv.conditions, activation, ignore)
        if error is not None:
            return _undetermined(cp, ctx, "a matchCondition", error) or \
                _result(cp, ctx, "evaluation", "error", f"failed to load context: {error}")
        if not ok:
            # a matchConditions skip: what make_result would make, made directly (a pass below likewise)
            subject = ctx.subject
            return new_result(fixed.key, fixed.source_kind, "", "skip", "skip", subject.ref, fixed.scored,
                              fixed.category, fixed.severity, fixed.process_only, fixed.actions, subject.source,
                              fixed.policy_location, "")
    unmet = first_not_true(cv.validation_programs, activation)
    if recorder is not None:
        recorder.node(validations_node(cv.variant.validations, _shown_compiler(cp, cv), activation, unmet))
    if unmet is not None:
        index, outcome = unmet
        value = outcome.value
        validation = cv.validations[index]
        if outcome.error is not None:
            # undetermined (needs-registry, an unread lookup), else an error: what _undetermined and _result
            # would make, made directly (a failed validation's error is met on every subject where a policy
            # reads what is not there)
            from kubectl_kyrec.evaluate.admission_chain import undetermined_reason

            reason = undetermined_reason(f"validation {index}", outcome.error)
            if reason is not None:
                status, message, props = UNDETERMINED, reason, fixed.process_only
            else:
                status, message, props = "error", f"error: {outcome.error}", fixed.index_properties(index)
            subject = ctx.subject
            return new_result(fixed.key, fixed.source_kind, "", status, _shared_text(message), subject.ref,
                              fixed.scored, fixed.category, fixed.severity, props, fixed.actions, subject.source,
                              fixed.policy_location, "")
        if not isinstance(value, bool):
            return _result(cp, ctx, "", "error", f"error: type conversion error from "
                                                 f"'{type(value).__name__}' to 'bool'",
                           {"cel.validationIndex": str(index)})
        message = validation_message(validation, activation, index)
        if json_mode or not cv.audit_annotations:
            # ... and compiles no auditAnnotations (docs/semantics/validating.md#json-http-and-envoy-modes):
            # what make_result would make of `cel.validationIndex` alone, made directly (no property of the
            # index's names a message)
            subject = ctx.subject
            return new_result(fixed.key, fixed.source_kind, "", fixed.failed, _shared_text(message), subject.ref,
                              fixed.scored, fixed.category, fixed.severity, fixed.index_properties(index),
                              fixed.actions, subject.source, fixed.policy_location, "")
        audits, audit_error = evaluate_audit_annotations(cv.audit_annotations, activation)
        if audit_error is not None:
            return _undetermined(cp, ctx, "an auditAnnotation", audit_error) or \
                _result(cp, ctx, "evaluation", "error", f"failed to load context: {audit_error}")
        return _result(cp, ctx, "", "fail", message, {**audits, "cel.validationIndex": str(index)})
    if json_mode or not cv.audit_annotations:
        # the common case, a pass with no audit annotations: what make_result would make, made directly
        subject = ctx.subject
        return new_result(fixed.key, fixed.source_kind, "", "pass", "success", subject.ref, fixed.scored,
                          fixed.category, fixed.severity, fixed.process_only, fixed.actions, subject.source,
                          fixed.policy_location, "")
    audits, audit_error = evaluate_audit_annotations(cv.audit_annotations, activation)
    if audit_error is not None:
        return _undetermined(cp, ctx, "an auditAnnotation", audit_error) or \
            _result(cp, ctx, "evaluation", "error", f"failed to load context: {audit_error}")
    return _result(cp, ctx, "", "pass", "success", audits)


def evaluate_payload(cp: CompiledValidatingPolicy, subject: Subject, obj: Obj) -> Result | None:
    """A JSON-mode policy's response for one JSON payload: `object` is the payload, nothing else is bound."""
    request = build_request(obj, resource="", namespaced=False)
    ctx = SubjectContext(subject, request, None, payload=True)
    return evaluate_variant(cp, cp.variants[0], ctx, False) if cp.variants else None


def validation_message(validation: CompiledValidation, activation: Activation, index: int) -> str:
    """A failed validation's message: its messageExpression's value, else its message, else Kyverno's
    default; the ValidatingPolicy and ImageValidatingPolicy engines alike."""
    message = validation.message
    if validation.message_program is not None:
        outcome = validation.message_program.evaluate(activation)
        if not outcome.ok:
            message = f"failed to evaluate message expression: {outcome.error}"
        elif not isinstance(outcome.value, str):
            message = (f"failed to convert message expression to string: type conversion error from "
                       f"'{type(outcome.value).__name__}' to 'string'")
        else:
            message = outcome.value
    return message or f"CEL expression validation failed at index {index}"
