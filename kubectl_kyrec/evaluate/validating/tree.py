"""The decision tree of a ValidatingPolicy (or NamespacedValidatingPolicy) for one subject, built from what
evaluate/validating/engine.py recorded (recording.py) in the evaluation whose results the tree ends in: which
variants it evaluated, and for each how matchConstraints, exceptions and matchConditions came out, the
activation it bound, the first validation not true and the result. Nothing here decides or re-walks the
engine; the nodes only add what a decision was made of (the rules and selectors, the values of the
conditions, variables and operands), evaluated read-only to be shown.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.autogen import CONTROLLERS
from kubectl_kyrec.evaluate.explain import (
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
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import CompiledValidatingPolicy, CompiledVariant
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policy.policies import PolicyException
from kubectl_kyrec.model import Result
from kubectl_kyrec.recording import Step, Trace


def explain_validating(cp: CompiledValidatingPolicy, ctx: SubjectContext, envs: Environments,
                       exceptions: Sequence[PolicyException], now: datetime.datetime, trace: Trace) -> Explanation:
    """`trace`: what `evaluate_validating` recorded evaluating `cp` for `ctx`, as eval calls it (its results are
    the tree's); `exceptions`: every PolicyException of the run, to say of each why it was (not) considered."""
    meta = cp.policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    results: list[Result] = []
    if trace.root.children:
        # the engine stopped before any variant: a namespaced policy sees only its own namespace's requests
        root.children.append(Node("namespace", NOT_MATCHED, f"a {meta.kind} sees only requests in its own "
                                                            f"namespace {trace.root.children[0].detail!r}"))
        root.children.append(result_node(None))
        return Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)
    if len(cp.variants) > 1:
        root.children.append(_autogen_node(cp))
    for cv in cp.variants:
        recorded = trace.rules.get((meta.key, cv.variant.name))
        steps = {step.name: step for step in recorded.children} if recorded is not None else {}
        result = steps["result"].data if "result" in steps else None
        if result is not None:
            results.append(result)
        root.children.append(_variant_node(cp, cv, ctx, envs, exceptions, now, steps, result))
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
                  exceptions: Sequence[PolicyException], now: datetime.datetime, steps: Mapping[str, Step],
                  result: Result | None) -> Node:
    """`steps`: the variant's recorded steps by name (none when the engine did not evaluate it: its rules
    cannot match the subject's kind)."""
    variant = cv.variant
    name = variant.name or cp.policy.meta.name
    if variant.name and not steps:
        # an autogen copy for other kinds: one line, its rules are the policy's, retargeted
        return Node(f"rule {name}", NOT_MATCHED, f"autogen for {', '.join(_controller_kinds(cv))}; "
                                                 f"the subject is a {ctx.subject.ref.kind}")
    node = Node(f"rule {name}", "", f"autogen for {', '.join(_controller_kinds(cv))}" if variant.name else "")
    out = node.children
    if cp.fixed.json_mode:
        out.append(Node("matchConstraints", NONE, "evaluation mode JSON applies no matchConstraints"))
    else:
        # the engine's decision, shown with the rules and selectors it was made of
        out.append(constraints_node(variant.match_constraints, ctx))
        if steps.get("matchConstraints", _UNMATCHED).outcome != MATCHED:
            out.append(result_node(result))
            return node
    out.append(_exceptions_node(cp, ctx, exceptions, now, steps.get("exceptions")))
    if "activation" not in steps:
        out.append(result_node(result))      # an exception decided (or failed)
        return node
    activation = steps["activation"].data
    compiler = _compiler(cp, cv, envs)
    out.append(conditions_node(variant.match_conditions, cv.conditions, activation, "the policy skips the subject"))
    if variant.variables:
        out.append(variables_node(compiler, variant.variables, activation))
    if "validations" in steps:
        out.append(validations_node([(v, c.program) for v, c in zip(variant.validations, cv.validations)],
                                    compiler, activation, recorded=(steps["validations"].data,)))
    out.append(result_node(result, "no result"))
    return node


_UNMATCHED = Step("matchConstraints", NOT_MATCHED)


def _exception_refs_text(exc: PolicyException) -> str:
    return ", ".join(f"{r.kind}/{r.name}" for r in exc.policy_refs) or "none"


def _exceptions_node(cp: CompiledValidatingPolicy, ctx: SubjectContext, exceptions: Sequence[PolicyException],
                     now: datetime.datetime, recorded: Step | None) -> Node:
    """The PolicyExceptions, each considered or not and why; `recorded`: the engine's exceptions step (its
    ExceptionOutcome), absent when it had none to evaluate."""
    meta = cp.policy.meta
    node = Node("exceptions", NONE if not exceptions else NOT_MATCHED)
    compiled = {id(c.exception): c for c in cp.exceptions}
    outcome = recorded.data if recorded is not None else None
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
        # the values of its matchConditions, shown (whether it matched is the engine's, recorded)
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
        return node
    if outcome.error is not None:
        node.outcome, node.detail = ERROR, outcome.error
    elif outcome.full:
        node.outcome, node.detail = MATCHED, "a full exemption: the policy is not evaluated"
    elif outcome.matched:
        node.outcome = "partial"
    return node


def _compiler(cp: CompiledValidatingPolicy, cv: CompiledVariant, envs: Environments) -> PolicyCompiler:
    """A compiler as engine.py's, for the sub-expressions and variables shown (never for decisions)."""
    meta = cp.policy.meta
    env, check_env = envs.get(meta.kind, meta.namespace)
    return PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in cv.variant.variables],
                          meta.source, meta.label)


