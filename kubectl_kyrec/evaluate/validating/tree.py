"""The decision tree of a ValidatingPolicy (or NamespacedValidatingPolicy) for one subject.

It walks the steps evaluate/validating/engine.py takes, in its order (matchConstraints, exceptions, matchConditions,
validations stopping at the first not true), re-evaluating the compiled programs to show their values;
each rule's result is the one `evaluate_validating` gives, as in `eval`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.autogen import CONTROLLERS
from kubectl_kyrec.evaluate.exceptions import evaluate_exceptions
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
    ERROR,
    MATCHED,
    NONE,
    NOT_MATCHED,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    matched,
    one_line,
    result_node,
    show,
    validations_node,
    value_node,
    variables_node,
)
from kubectl_kyrec.evaluate.match import may_match
from kubectl_kyrec.evaluate.subjects import NO_EXCEPTIONS, SubjectContext
from kubectl_kyrec.evaluate.validating.engine import CompiledValidatingPolicy, CompiledVariant, evaluate_validating
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policy.policies import PolicyException
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
        match = constraints_node(variant.match_constraints, ctx)
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
    conditions = conditions_node(variant.match_conditions, cv.conditions, activation, "the policy skips the subject")
    steps.append(conditions)
    if variant.variables:
        steps.append(variables_node(compiler, variant.variables, activation))
    if conditions.outcome in (ALL_TRUE, NONE):
        steps.append(validations_node([(v, c.program) for v, c in zip(variant.validations, cv.validations)],
                                      compiler, activation))
    steps.append(result_node(result, "no result"))
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
            value = value_node(f"matchConditions[{i}] {named.name}", program, activation)
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
    """A compiler as engine.py's, for the sub-expressions and variables shown (never for decisions)."""
    meta = cp.policy.meta
    env, check_env = envs.get(meta.kind, meta.namespace)
    return PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in cv.variant.variables],
                          meta.source, meta.label)


