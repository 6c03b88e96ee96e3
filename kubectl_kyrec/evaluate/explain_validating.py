"""The decision tree of a ValidatingPolicy (or NamespacedValidatingPolicy) for one subject.

It walks the steps evaluate/validating.py takes, in its order (matchConstraints, exceptions, matchConditions,
validations stopping at the first not true), re-evaluating the compiled programs to show their values;
each rule's result is the one `evaluate_validating` gives, as in `eval`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl, variable_references
from kubectl_kyrec.cel.engine import Activation, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.admission import RequestInfo
from kubectl_kyrec.evaluate.autogen import CONTROLLERS
from kubectl_kyrec.evaluate.exceptions import evaluate_exceptions
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NONE,
    NOT_EVALUATED,
    NOT_MATCHED,
    Explanation,
    Node,
    matched,
    one_line,
    result_node,
    selector_node,
    show,
    top_level_operands,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints, matches_rules, may_match, namespace_labels
from kubectl_kyrec.evaluate.subject import NO_EXCEPTIONS, SubjectContext
from kubectl_kyrec.evaluate.validating import CompiledValidatingPolicy, CompiledVariant, evaluate_validating
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policies import MatchResources, PolicyException, ResourceRule
from kubectl_kyrec.model import Result


def explain_validating(cp: CompiledValidatingPolicy, ctx: SubjectContext, envs: Environments,
                       exceptions: Sequence[PolicyException], now: datetime.datetime) -> Explanation:
    """`exceptions`: every PolicyException of the run, to say of each why it was (not) considered."""
    policy = cp.policy
    meta = policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    results: list[Result] = []
    own = cp.fixed.own_namespace
    if own is not None and ctx.request.namespace != own:
        root.children.append(Node("namespace", NOT_MATCHED, f"a {meta.kind} sees only requests in its own "
                                                            f"namespace {own!r}"))
        root.children.append(result_node(None))
        return Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)
    if len(cp.variants) > 1:
        root.children.append(_autogen_node(cp))
    for cv in cp.variants:
        # the same call eval makes (pipeline: candidate_variants, then evaluate_validating on them)
        found = evaluate_validating(cp, ctx, [cv]) if may_match(cv.variant.match_constraints, ctx.request) else []
        results.extend(found)
        node = _variant_node(cp, cv, ctx, envs, exceptions, now, found[0] if found else None)
        root.children.append(node)
    return Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)


def _controller_kinds(cv: CompiledVariant) -> list[str]:
    constraints = cv.variant.match_constraints
    rules = constraints.resource_rules if constraints is not None else ()
    return [CONTROLLERS[r][2] for rule in rules for r in rule.resources if r in CONTROLLERS]


def _autogen_node(cp: CompiledValidatingPolicy) -> Node:
    node = Node("autogen", "expanded", "a Pod policy is also evaluated on the pod controllers, as rewritten copies")
    for cv in cp.variants[1:]:
        node.children.append(Node(cv.variant.name, "", ", ".join(_controller_kinds(cv))))
    return node


def _variant_node(cp: CompiledValidatingPolicy, cv: CompiledVariant, ctx: SubjectContext, envs: Environments,
                  exceptions: Sequence[PolicyException], now: datetime.datetime, result: Result | None) -> Node:
    variant = cv.variant
    name = variant.name or cp.policy.meta.name
    if variant.name and not may_match(variant.match_constraints, ctx.request):
        # an autogen copy for other kinds: one line, its rules are the policy's, retargeted
        return Node(f"rule {name}", NOT_MATCHED, f"autogen for {', '.join(_controller_kinds(cv))}; "
                                                 f"the subject is a {ctx.subject.ref.kind}")
    node = Node(f"rule {name}", "", f"autogen for {', '.join(_controller_kinds(cv))}" if variant.name else "")
    steps = node.children
    if cp.fixed.json_mode:
        steps.append(Node("matchConstraints", NONE, "evaluation mode JSON applies no matchConstraints"))
    else:
        match = _constraints_node(variant.match_constraints, ctx)
        steps.append(match)
        if match.outcome != MATCHED:
            steps.append(result_node(result))
            return node
    exception_node, allowed = _exceptions_node(cp, ctx, exceptions, now)
    steps.append(exception_node)
    if exception_node.outcome in (MATCHED, ERROR):
        steps.append(result_node(result))
        return node
    activation = ctx.activation(cp.env, exceptions=allowed)
    compiler = _compiler(cp, cv, envs)
    held = True
    if cv.conditions:
        conditions = Node("matchConditions")
        for i, (named, program) in enumerate(zip(variant.match_conditions, cv.conditions)):
            child = _value_node(f"[{i}] {named.name}", program, activation)
            child.detail = one_line(named.expression)
            held = held and child.outcome == "true"
            conditions.children.append(child)
        conditions.outcome = "all true" if held else "not all true: the policy skips the subject"
        steps.append(conditions)
    else:
        steps.append(Node("matchConditions", NONE))
    if variant.variables:
        steps.append(_variables_node(compiler, variant.variables, activation))
    if held:
        steps.append(_validations_node(cv, compiler, activation))
    steps.append(result_node(result, "no result"))
    return node


def _rule_text(rule: ResourceRule) -> str:
    text = (f"groups {show(list(rule.api_groups))} versions {show(list(rule.api_versions))} "
            f"operations {show(list(rule.operations))} resources {show(list(rule.resources))}")
    if rule.scope not in ("", "*"):
        text += f" scope {rule.scope}"
    if rule.resource_names:
        text += f" names {show(list(rule.resource_names))}"
    return text


def _request_text(req: RequestInfo) -> str:
    resource = req.resource + (f"/{req.subresource}" if req.subresource else "")
    gv = f"{req.group}/{req.version}" if req.group else req.version
    where = f" in namespace {req.namespace}" if req.namespace else " (cluster-scoped)"
    return f"request {req.operation} {gv} {resource} {req.name!r}{where}"


def _constraints_node(constraints: MatchResources | None, ctx: SubjectContext) -> Node:
    req = ctx.request
    if constraints is None:
        return Node("matchConstraints", NOT_MATCHED, "none: a policy without matchConstraints matches nothing")
    try:
        outcome = matched(matches_constraints(constraints, req, ctx.namespace_obj))
        detail = _request_text(req)
    except MatchError as exc:
        outcome, detail = ERROR, f"failed to execute matching: {exc}"
    node = Node("matchConstraints", outcome, detail)
    rules = Node("resourceRules")
    if constraints.resource_rules:
        for i, rule in enumerate(constraints.resource_rules):
            rules.children.append(Node(f"[{i}]", matched(matches_rules((rule,), req)), _rule_text(rule)))
        rules.outcome = matched(matches_rules(constraints.resource_rules, req))
    else:
        rules.outcome, rules.detail = MATCHED, "empty: every request"
    node.children.append(rules)
    if rules.outcome != MATCHED:
        return node         # the selectors count only when the rules match (evaluate/match.py)
    if constraints.exclude_resource_rules:
        excludes = Node("excludeResourceRules")
        for i, rule in enumerate(constraints.exclude_resource_rules):
            excludes.children.append(Node(f"[{i}]", matched(matches_rules((rule,), req)), _rule_text(rule)))
        hit = matches_rules(constraints.exclude_resource_rules, req)
        excludes.outcome = "excluded" if hit else NOT_MATCHED
        node.children.append(excludes)
        if hit:
            return node
    labels = namespace_labels(req, ctx.namespace_obj)
    node.children.append(selector_node("namespaceSelector", constraints.namespace_selector, labels,
                                       f"namespace {req.namespace!r}" if labels is not None and req.namespace
                                       else "a cluster-scoped request" if labels is None else "the Namespace's"))
    obj_labels = ((req.obj or req.old_obj or {}).get("metadata") or {}).get("labels") or {}
    node.children.append(selector_node("objectSelector", constraints.object_selector, obj_labels, "the object's"))
    return node


def _exception_refs_text(exc: PolicyException) -> str:
    return ", ".join(f"{r.kind}/{r.name}" for r in exc.policy_refs) or "none"


def _exceptions_node(cp: CompiledValidatingPolicy, ctx: SubjectContext, exceptions: Sequence[PolicyException],
                     now: datetime.datetime) -> tuple[Node, Mapping[str, Any]]:
    """The PolicyExceptions, each considered or not and why; and the `exceptions` variable they bind."""
    meta = cp.policy.meta
    node = Node("exceptions", NONE if not exceptions else NOT_MATCHED)
    compiled = {id(c.exception): c for c in cp.exceptions}
    outcome = evaluate_exceptions(cp.exceptions, ctx, cp.fixed.ignore) if cp.exceptions else None
    hit = {id(c.exception) for c in outcome.matched} if outcome is not None else set()
    for exc in exceptions:
        key = f"{exc.meta.namespace}/{exc.meta.name}" if exc.meta.namespace else exc.meta.name
        if not any(r.name == meta.name and r.kind == meta.kind for r in exc.policy_refs):
            node.children.append(Node(key, "not considered", f"policyRefs name {_exception_refs_text(exc)}"))
            continue
        ce = compiled.get(id(exc))
        if ce is None:
            expires = parse_rfc3339(exc.expires_at) if exc.expires_at else None
            why = f"expired at {exc.expires_at}" if expires is not None and expires <= now else "not applicable"
            node.children.append(Node(key, "not considered", why))
            continue
        child = Node(key, matched(id(exc) in hit))
        activation = ctx.activation(ce.env)
        for i, (named, program) in enumerate(zip(exc.match_conditions, ce.conditions)):
            value = _value_node(f"matchConditions[{i}] {named.name}", program, activation)
            value.detail = one_line(named.expression)
            child.children.append(value)
        if not exc.match_conditions:
            child.detail = "no matchConditions: every request"
        if id(exc) in hit and (exc.images or exc.allowed_values):
            child.detail = (f"allows images {show(list(exc.images))} values {show(list(exc.allowed_values))}: "
                            "the policy is still evaluated, with `exceptions` bound")
        node.children.append(child)
    if outcome is None:
        return node, NO_EXCEPTIONS
    if outcome.error is not None:
        node.outcome, node.detail = ERROR, outcome.error
        return node, NO_EXCEPTIONS
    if outcome.full:
        node.outcome, node.detail = MATCHED, "a full exemption: the policy is not evaluated"
        return node, NO_EXCEPTIONS
    if outcome.matched:
        node.outcome = "partial"
        return node, {"allowedImages": list(outcome.allowed_images), "allowedValues": list(outcome.allowed_values)}
    return node, NO_EXCEPTIONS


def _compiler(cp: CompiledValidatingPolicy, cv: CompiledVariant, envs: Environments) -> PolicyCompiler:
    """A compiler as validating.py's, for the sub-expressions and variables shown (never for decisions)."""
    meta = cp.policy.meta
    env, check_env = envs.get(meta.kind, meta.namespace)
    return PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in cv.variant.variables],
                          meta.source, f"{meta.kind} {meta.name!r}")


def _value_node(name: str, program: Program, activation: Activation) -> Node:
    outcome = program.evaluate(activation)
    if outcome.error is not None:
        return Node(name, ERROR, str(outcome.error))
    return Node(name, show(outcome.value))


def _value_of(compiler: PolicyCompiler, text: str, activation: Activation, name: str) -> Node:
    try:
        program = compiler.compile(text, "explain")
    except InputError as exc:
        return Node(name, NOT_EVALUATED, f"cannot be evaluated apart: {exc.message}")
    return _value_node(name, program, activation)


def _variables_node(compiler: PolicyCompiler, variables: Sequence[Any], activation: Activation) -> Node:
    node = Node("variables")
    for v in variables:
        child = _value_of(compiler, f"variables.{v.name}", activation, v.name)
        if not child.detail:
            child.detail = one_line(v.expression)
        node.children.append(child)
    return node


def _validations_node(cv: CompiledVariant, compiler: PolicyCompiler, activation: Activation) -> Node:
    node = Node("validations", "all true")
    failed = False
    for i, (validation, compiled) in enumerate(zip(cv.variant.validations, cv.validations)):
        name = f"[{i}] {one_line(validation.expression)}"
        if failed:
            node.children.append(Node(name, NOT_EVALUATED, "an earlier validation decided"))
            continue
        child = _value_node(name, compiled.program, activation)
        if child.outcome != "true":
            failed = True
            node.outcome = f"[{i}] not true"
            if validation.message or validation.message_expression:
                child.detail = "message: " + (validation.message or one_line(validation.message_expression))
        op, operands = top_level_operands(validation.expression)
        if op:
            for operand in operands:
                child.children.append(_value_of(compiler, operand, activation, f"{op} {one_line(operand)}"))
        used = list(dict.fromkeys(r.name for r in variable_references(validation.expression)))
        for var in used:
            child.children.append(_value_of(compiler, f"variables.{var}", activation, f"variables.{var}"))
        node.children.append(child)
    return node
