"""The classic kind's explain tree, put together in the run `ClassicEvaluator.explain` makes (evaluate/explain.py
`recorded` reads it): per rule, the steps the engine recorded for it (match and exclude blocks with Kyverno's
reasons and whether the rule applies, classic/match.py `match_state`; conditions, the pattern's walk, each
anyPattern and foreach element), what its validation checks as written, and its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.engine import Activation, first_not_true
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.classic.autogen import compute_rules
from kubectl_kyrec.classic.match import RequestFacts, match_state, matches_resources
from kubectl_kyrec.evaluate.classic.validate_cel import CompiledCel, cel_compiler
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
    ERROR,
    MATCHED,
    NONE,
    NOT_EVALUATED,
    NOT_MATCHED,
    conditions_node,
    result_node,
    show,
    validations_node,
    variables_node,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.classic import ClassicException, ClassicPolicy, ClassicRule
from kubectl_kyrec.load.policy.vocabulary import NamedExpression, Validation
from kubectl_kyrec.model import Result
from kubectl_kyrec.recording import Step, Trace


def record_policy(policy: ClassicPolicy, ctx: SubjectContext, facts: RequestFacts, results: Sequence[Result],
                  recorder: Trace, exceptions: Sequence[ClassicException], rule_types: Sequence[str]) -> None:
    """The decision tree of a classic policy for one subject: per rule Kyverno computes for the subject's kind
    (autogen included), its match and exclude blocks, the PolicyExceptions naming it, what its validation checks
    as written with the steps the engine took for each part in this run (conditions after substitution, the
    pattern's walk, each anyPattern and foreach element), and the policy's among `results` (all engines')."""
    meta = policy.meta
    rules = [r for r in compute_rules(policy, facts.kind) if not rule_types or r.type in rule_types]
    # in the order of the rules, as the tree shows them: the results come from several engines
    order = {rule.name: i for i, rule in enumerate(rules)}
    shown = sorted([r for r in results if r.policy == meta.key and r.source == policy.source_kind],
                   key=lambda r: order.get(r.rule, len(order)))
    recorder.tree(f"{meta.kind} {meta.key}", (meta, ctx.subject.ref, shown))
    if meta.kind == "Policy" and meta.namespace != ctx.request.namespace:
        recorder.add("namespace", NOT_MATCHED, f"a Policy applies only in its namespace {meta.namespace!r}")
        return
    generated = [r.name for r in rules if r.name.startswith("autogen-") and r not in policy.rules]
    if generated:
        recorder.add("autogen", "expanded", f"the Pod rules rewritten for a {facts.kind}: " + ", ".join(generated))
    by_rule = {r.rule: r for r in shown}
    namespace = meta.namespace if meta.kind == "Policy" else ""
    for rule in rules:
        steps = recorder.rules.get((meta.key, rule.name))
        recorder.node(_rule_node(exceptions, policy, rule, facts, namespace, by_rule.get(rule.name),
                                 steps.children if steps is not None else None))


def _rule_node(exceptions: Sequence[ClassicException], policy: ClassicPolicy, rule: ClassicRule,
               facts: RequestFacts, namespace: str, result: Result | None, recorded: Sequence[Step] | None) -> Step:
    """`recorded`: the engine's steps for the rule; None when it did not reach the rule (`applyRules: One`
    stopped first), whose match and exclude blocks are then recorded here, for the tree only."""
    done = recorded is not None
    if recorded is None:
        alone = Trace()
        alone.rule(policy.meta.key, rule.name)
        match_state(rule.raw.get("match") or {}, rule.raw.get("exclude"), facts, namespace, alone)
        recorded = alone.current.children
    what = rule.type + (f" ({rule.validate_kind})" if rule.type == "validate" and rule.validate_kind else "")
    node = Step(f"rule {rule.name}", "", what)
    steps = node.children
    # match_state records first: the match and exclude blocks, then whether the rule applies
    applies = next(i for i, s in enumerate(recorded) if s.name == "applies")
    steps.extend(recorded[:applies + 1])
    if recorded[applies].outcome == NOT_MATCHED:
        return node
    if rule.type != "validate":
        steps.append(result_node(result, f"no result: the {rule.type} rule gave none for the subject"))
        return node
    if rule.raw.get("preconditions") is not None:
        steps.append(_with_steps(Step("preconditions", "", show(rule.raw.get("preconditions"))),
                                 _named(recorded, "preconditions")))
    considered = Step("exceptions", NONE)
    for exc in exceptions:
        if not exc.contains(policy.meta.key, rule.name):
            continue
        hit = matches_resources(exc.match, facts)
        why = "its match selects the subject" if hit else "its match does not select the subject"
        if hit and exc.conditions is not None:
            why += f"; conditions {show(exc.conditions)}"
        considered.children.append(_with_steps(Step(exc.key, MATCHED if hit else NOT_MATCHED, why),
                                               _named(recorded, f"exception {exc.key} conditions")))
        considered.outcome = "considered"
    if any(c.outcome == ERROR for c in considered.children):
        # kk: pkg/engine/utils/exceptions.go MatchesException returns nil (matching_exceptions): the matched
        # ones above do not apply either
        considered.outcome = NONE
        considered.detail = "a selected exception's conditions error: none of the rule's exceptions applies"
    steps.append(considered)
    steps.append(_validate_node(rule.validate, recorded, done))
    steps.append(result_node(result, "no result"))
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
            part.children.extend(_named(recorded, "deny.conditions"))
        elif key == "cel":
            part.children.extend(c for s in _named(recorded, "cel") for c in s.children)
        else:
            part.children.extend(s for s in recorded if s.name.startswith(f"{key}["))
        if done and key in ("pattern", "anyPattern", "deny", "foreach") and not part.outcome and not part.children:
            part.outcome = NOT_EVALUATED
        node.children.append(part)
    node.children.extend(_named(recorded, "the old object (allowExistingViolations)"))
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
        node.children.extend(step.children)
    return node


def cel_nodes(policy: ClassicPolicy, rule: ClassicRule, compiled: CompiledCel, activations: Sequence[Activation],
              problem: str, envs: Environments) -> list[Step]:
    """A `validate.cel` rule being evaluated: its celPreconditions, variables and expressions with their values,
    as the ValidatingPolicy tree shows them, from the programs and activations the rule is evaluated with (the
    values are evaluated apart to be shown; the result is evaluate_cel_rule's)."""
    if problem:
        return [Step("params", ERROR, problem)]
    cel = rule.validate.get("cel") or {}
    preconditions = [NamedExpression(str(m.get("name", "")), str(m.get("expression", "")))
                     for m in rule.raw.get("celPreconditions") or [] if isinstance(m, Mapping)]
    variables = [NamedExpression(str(v.get("name", "")), str(v.get("expression", "")))
                 for v in cel.get("variables") or [] if isinstance(v, Mapping)]
    validations = [Validation(expression, message, str(raw.get("messageExpression") or ""))
                   for (expression, message, _, _), raw in
                   zip(compiled.validations, [e for e in cel.get("expressions") or [] if isinstance(e, Mapping)])]
    compiler = cel_compiler(policy, rule, envs)
    out: list[Step] = []
    for i, activation in enumerate(activations):
        steps: list[Step] = []
        conditions = conditions_node(preconditions, compiled.conditions, activation, "the rule is skipped",
                                     "celPreconditions")
        steps.append(conditions)
        if variables:
            steps.append(variables_node(compiler, variables, activation))
        if conditions.outcome in (ALL_TRUE, NONE):
            unmet = first_not_true([program for _, _, program, _ in compiled.validations], activation)
            steps.append(validations_node(validations, compiler, activation, unmet))
        if len(activations) == 1:
            return steps
        out.append(Step(f"params[{i}]", "", "", steps))
    return out
