"""The decision tree of a classic ClusterPolicy/Policy for one subject: per rule Kyverno computes for the
subject's kind (autogen included), its match and exclude blocks with Kyverno's reasons, the
PolicyExceptions naming it, what its validation checks, and its result.

Preconditions, patterns, deny conditions and foreach elements are decided inside the classic engine: it
records each step as it takes it (recording.py) in the evaluation whose results the tree ends in, and
the tree shows those steps under what the rule says, as written: each condition with its key and value
after substitution and its result, the pattern's walk path by path (each key and anchor, how the engine's
handler came out for it, each leaf comparison), each anyPattern and each foreach element with its outcome.
The tree never decides; the results are those the evaluator gives `eval` for the subject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic.autogen import compute_rules
from kubectl_kyrec.classic.match import RequestFacts, block_reasons, match_state, matches_resources
from kubectl_kyrec.evaluate.classic.engine import ClassicEvaluator
from kubectl_kyrec.evaluate.classic.validate_cel import cel_activations, cel_compiler
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
    ERROR,
    MATCHED,
    NONE,
    NOT_EVALUATED,
    NOT_MATCHED,
    Explanation,
    conditions_node,
    result_node,
    show,
    validations_node,
    variables_node,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule
from kubectl_kyrec.load.policy.vocabulary import NamedExpression, Validation
from kubectl_kyrec.model import Result
from kubectl_kyrec.recording import Step, Trace

_STATE = {True: MATCHED, False: NOT_MATCHED, None: "depends on the requesting user"}


def explain_classic(evaluator: ClassicEvaluator, policy: ClassicPolicy, ctx: SubjectContext,
                    results: Sequence[Result], trace: Trace | None = None,
                    rule_types: Sequence[str] = ()) -> Explanation:
    """`results`: eval's results for this policy and subject: the evaluator's (ClassicEvaluator.evaluate:
    validate and verifyImages rules), the admission chain's (mutate rules) and the generate run's (generate
    rules); `trace`: what the engine recorded in the evaluation (none: the rules are shown as written only);
    `rule_types`: only the rules of these types (a generate trigger no other rule is evaluated on)."""
    meta = policy.meta
    facts = evaluator.request_facts(ctx)
    root = Step(f"{meta.kind} {meta.key}")
    rules = [r for r in compute_rules(policy, facts.kind) if not rule_types or r.type in rule_types]
    # in the order of the rules, as the tree shows them: the results come from several engines
    order = {rule.name: i for i, rule in enumerate(rules)}
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root,
                       sorted(results, key=lambda r: order.get(r.rule, len(order))))
    if meta.kind == "Policy" and meta.namespace != ctx.request.namespace:
        root.children.append(Step("namespace", NOT_MATCHED, f"a Policy applies only in its namespace "
                                                            f"{meta.namespace!r}"))
        return done
    generated = [r.name for r in rules if r.name.startswith("autogen-") and r not in policy.rules]
    if generated:
        root.children.append(Step("autogen", "expanded", f"the Pod rules rewritten for a {facts.kind}: "
                                                         + ", ".join(generated)))
    by_rule = {r.rule: r for r in results}
    namespace = meta.namespace if meta.kind == "Policy" else ""
    for rule in rules:
        recorded = trace.rules.get((meta.key, rule.name)) if trace is not None else None
        root.children.append(_rule_node(evaluator, policy, rule, ctx, facts, namespace, by_rule.get(rule.name),
                                        recorded.children if recorded is not None else None))
    return done


def _rule_node(evaluator: ClassicEvaluator, policy: ClassicPolicy, rule: ClassicRule, ctx: SubjectContext,
               facts: RequestFacts,
               namespace: str, result: Result | None, recorded: Sequence[Step] | None) -> Step:
    """`recorded`: the engine's steps for the rule; None when it did not evaluate the rule."""
    done = recorded is not None
    recorded = recorded or []
    what = rule.type + (f" ({rule.validate_kind})" if rule.type == "validate" and rule.validate_kind else "")
    node = Step(f"rule {rule.name}", "", what)
    steps = node.children
    match = rule.raw.get("match") or {}
    exclude = rule.raw.get("exclude")
    state = match_state(match, exclude, facts, namespace)
    steps.append(_blocks_node("match", match, facts, exclude=False))
    if exclude:
        steps.append(_blocks_node("exclude", exclude, facts, exclude=True))
    steps.append(Step("applies", _STATE[state]))
    if state is False:
        return node
    if rule.type != "validate":
        steps.append(result_node(result, f"no result: the {rule.type} rule gave none for the subject"))
        return node
    if rule.raw.get("preconditions") is not None:
        steps.append(_with_steps(Step("preconditions", "", show(rule.raw.get("preconditions"))),
                                 _named(recorded, "preconditions")))
    exceptions = Step("exceptions", NONE)
    for exc in evaluator.exceptions:
        if not exc.contains(policy.meta.key, rule.name):
            continue
        hit = matches_resources(exc.match, facts)
        why = "its match selects the subject" if hit else "its match does not select the subject"
        if hit and exc.conditions is not None:
            why += f"; conditions {show(exc.conditions)}"
        exceptions.children.append(_with_steps(Step(exc.key, MATCHED if hit else NOT_MATCHED, why),
                                               _named(recorded, f"exception {exc.key} conditions")))
        exceptions.outcome = "considered"
    if any(c.outcome == ERROR for c in exceptions.children):
        # kk: pkg/engine/utils/exceptions.go MatchesException returns nil (evaluate/classic/engine.py
        # matching_exceptions): the matched ones above do not apply either
        exceptions.outcome = NONE
        exceptions.detail = "a selected exception's conditions error: none of the rule's exceptions applies"
    steps.append(exceptions)
    validate = _validate_node(rule.validate, recorded, done)
    if _named(recorded, "cel"):
        for part in validate.children:
            if part.name == "cel":
                part.children.extend(_cel_nodes(evaluator, policy, rule, ctx))
    steps.append(validate)
    steps.append(result_node(result, "no result"))
    return node


def _blocks_node(name: str, block: Mapping[str, Any], facts: RequestFacts, *, exclude: bool) -> Step:
    for form in ("any", "all"):
        blocks = block.get(form)
        if blocks:
            node = Step(f"{name}.{form}")
            for i, b in enumerate(blocks):
                node.children.append(_block_node(f"[{i}]", b, facts, exclude))
            return node
    return _block_node(name, block, facts, exclude)


def _block_node(name: str, block: Mapping[str, Any], facts: RequestFacts, exclude: bool) -> Step:
    state, reasons = block_reasons(block, facts, exclude)
    if exclude:
        outcome = {True: "excludes", False: "does not exclude", None: "depends on the requesting user"}[state]
    else:
        outcome = _STATE[state]
    parts = [show(dict(block.get("resources") or {}))]
    for key in ("subjects", "roles", "clusterRoles"):
        if block.get(key):
            parts.append(f"{key} {show(block.get(key))}")
    node = Step(name, outcome, " ".join(parts))
    for reason in reasons:
        node.children.append(Step(reason))
    return node


def _validate_node(validate: Mapping[str, Any], recorded: Sequence[Step], done: bool) -> Step:
    """What the validation checks, as written, each part with the steps the engine recorded for it (`done`:
    the engine evaluated the rule, so a part with no step was not reached: preconditions or an exception
    decided first)."""
    node = Step("validate", "", f"message: {validate['message']}" if validate.get("message") else "")
    for key in ("pattern", "anyPattern", "deny", "foreach", "podSecurity", "cel", "manifests"):
        if validate.get(key) is None:
            continue
        part = Step(key, "", show(validate[key]))
        if key == "pattern":
            _with_steps(part, _named(recorded, "pattern"))
        elif key == "deny":
            part.children.extend(_node(s) for s in _named(recorded, "deny.conditions"))
        else:
            part.children.extend(_node(s) for s in recorded if s.name.startswith(f"{key}["))
        if done and key in ("pattern", "anyPattern", "deny", "foreach") and not part.outcome and not part.children:
            part.outcome = NOT_EVALUATED
        node.children.append(part)
    node.children.extend(_node(s) for s in _named(recorded, "the old object (allowExistingViolations)"))
    return node


def _named(recorded: Sequence[Step], name: str) -> list[Step]:
    return [s for s in recorded if s.name == name]


def _with_steps(node: Step, steps: Sequence[Step]) -> Step:
    """A part as written takes the outcome and the steps the engine recorded for it (the last evaluation
    of it when there were several)."""
    if steps:
        step = steps[-1]
        node.outcome = step.outcome
        if step.detail:
            node.detail = f"{node.detail}; {step.detail}" if node.detail else step.detail
        node.children.extend(_node(c) for c in step.children)
    return node


def _node(step: Step) -> Step:
    return Step(step.name, step.outcome, step.detail, [_node(c) for c in step.children])


def _cel_nodes(evaluator: ClassicEvaluator, policy: ClassicPolicy, rule: ClassicRule,
               ctx: SubjectContext) -> list[Step]:
    """A `validate.cel` rule the engine evaluated: its celPreconditions, variables and expressions with their
    values, as the ValidatingPolicy tree shows them, from the programs the evaluator compiled and ran (the
    values are re-evaluated to be shown; the result is the evaluator's)."""
    compiled = evaluator.compiled_cel(policy, rule)
    if compiled is None:
        return []
    activations, problem = cel_activations(compiled, ctx, evaluator.state, evaluator.options.cli)
    if problem:
        return [Step("params", ERROR, problem)]
    cel = rule.validate.get("cel") or {}
    preconditions = [NamedExpression(str(m.get("name", "")), str(m.get("expression", "")))
                     for m in rule.raw.get("celPreconditions") or [] if isinstance(m, Mapping)]
    variables = [NamedExpression(str(v.get("name", "")), str(v.get("expression", "")))
                 for v in cel.get("variables") or [] if isinstance(v, Mapping)]
    validations = [(Validation(expression, message, str(raw.get("messageExpression") or "")), program)
                   for (expression, message, program, _), raw in
                   zip(compiled.validations, [e for e in cel.get("expressions") or [] if isinstance(e, Mapping)])]
    compiler = cel_compiler(policy, rule, evaluator.envs)
    out: list[Step] = []
    for i, activation in enumerate(activations):
        steps: list[Step] = []
        conditions = conditions_node(preconditions, compiled.conditions, activation, "the rule is skipped")
        conditions.name = "celPreconditions"
        steps.append(conditions)
        if variables:
            steps.append(variables_node(compiler, variables, activation))
        if conditions.outcome in (ALL_TRUE, NONE):
            steps.append(validations_node(validations, compiler, activation))
        if len(activations) == 1:
            return steps
        out.append(Step(f"params[{i}]", "", "", steps))
    return out
