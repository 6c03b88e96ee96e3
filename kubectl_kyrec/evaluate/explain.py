"""`explain`: why a policy did (or did not) apply to a subject, as a tree of the decisions taken (issue 27).

Every kind's engine records its explain nodes (recording.py Steps) where it decides, in the very evaluation whose
results the tree ends in (`record`, `recorded`): a tree decides nothing, so `explain` cannot disagree with `eval`.
The nodes here are the shared vocabulary of what a decision was made of (a matchConstraints' rules and selectors,
the values of conditions, variables and operands), evaluated read-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, variable_references
from kubectl_kyrec.cel.engine import Activation, Outcome, Program
from kubectl_kyrec.cel.top_level import has_conditional, operands
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.exceptions import CompiledException
from kubectl_kyrec.evaluate.match import matches_rules, namespace_labels
from kubectl_kyrec.evaluate.request import RequestInfo
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.labels import SelectorError, matches_selector, selector_is_empty
from kubectl_kyrec.load.policy.vocabulary import (
    MatchResources,
    NamedExpression,
    PolicyMeta,
    ResourceRule,
    Validation,
)
from kubectl_kyrec.model import Ref, Result
from kubectl_kyrec.recording import Step, Trace, shown

# the outcomes a node states; a value (a CEL result) is shown as its JSON text instead
MATCHED, NOT_MATCHED, ERROR, NONE, NOT_EVALUATED = "matched", "not matched", "error", "none", "not evaluated"
ALL_TRUE = "all true"



@dataclass
class Explanation:
    """One policy x one subject: its tree and the results `eval` gives for the pair."""

    policy: str             # key: name or ns/name
    policy_kind: str
    subject: Ref
    tree: Step
    results: list[Result]

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "policyKind": self.policy_kind, "subject": self.subject.to_json(),
                "tree": self.tree.to_json(),
                "results": [{"rule": r.rule, "result": r.result, "message": r.message} for r in self.results]}


def show(value: Any) -> str:
    """A value as a node shows it (recording.shown, 200 wide, floats as Python writes them)."""
    return shown(value, 200, go=False)


def matched(ok: bool) -> str:
    return MATCHED if ok else NOT_MATCHED


def result_node(result: Result | None, absent: str = "no result: the policy does not apply") -> Step:
    if result is None:
        return Step("result", NONE, absent)
    said = [f"rule {result.rule!r}"] if result.rule else []
    if result.message:
        said.append(result.message)
    return Step("result", result.result, ": ".join(said))


def selector_node(name: str, selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None,
                  whose: str) -> Step:
    """A label selector against the labels it sees; `whose`: whose labels they are, for the detail."""
    if selector_is_empty(selector):
        return Step(name, MATCHED, "empty: selects everything")
    if labels is None:
        return Step(name, MATCHED, f"does not apply: {whose}")
    try:
        ok = matches_selector(selector, labels)
    except SelectorError as exc:
        return Step(name, ERROR, str(exc))
    return Step(name, matched(ok), f"{show(dict(selector or {}))} on {whose} labels {show(dict(labels))}")


def top_level_operands(text: str) -> tuple[str, list[str]]:
    """A CEL expression's operands of its outermost `||` (or else `&&`), and that operator; ("", [text]) when it
    has none (or a conditional at the top, which binds looser)."""
    if not has_conditional(text):
        for op in ("||", "&&"):
            parts = operands(text, op)
            if len(parts) > 1:
                return op, parts
    return "", [text]


def one_line(text: str) -> str:
    """An expression as a node names it: on one line."""
    return " ".join(text.split())


def _rule_text(rule: ResourceRule) -> str:
    text = (f"groups {show(list(rule.api_groups))} versions {show(list(rule.api_versions))} "
            f"operations {show(list(rule.operations))} resources {show(list(rule.resources))}")
    if rule.scope not in ("", "*"):
        text += f" scope {rule.scope}"
    if rule.resource_names:
        text += f" names {show(list(rule.resource_names))}"
    return text


def _rules_node(name: str, rules: Sequence[ResourceRule], req: RequestInfo, hit: str) -> Step:
    """Each rule against the request; the node is `hit` when one matches (matches_rules: any of them)."""
    node = Step(name, NOT_MATCHED, "", [Step(f"[{i}]", matched(matches_rules((r,), req)), _rule_text(r))
                                        for i, r in enumerate(rules)])
    if any(c.outcome == MATCHED for c in node.children):
        node.outcome = hit
    return node


def request_text(req: RequestInfo) -> str:
    resource = req.resource + (f"/{req.subresource}" if req.subresource else "")
    gv = f"{req.group}/{req.version}" if req.group else req.version
    where = f" in namespace {req.namespace}" if req.namespace else " (cluster-scoped)"
    return f"request {req.operation} {gv} {resource} {req.name!r}{where}"


def constraints_node(constraints: MatchResources | None, ctx: SubjectContext, name: str = "matchConstraints",
                     absent: str = "none: a policy without matchConstraints matches nothing", *,
                     decided: tuple[str, str]) -> Step:
    """matchConstraints (or a binding's matchResources) against the request, with the rules and selectors it
    is made of; `decided`: the engine's (outcome, detail) as it matched (evaluate/match.py), where it did."""
    req = ctx.request
    if constraints is None:
        return Step(name, NOT_MATCHED if "nothing" in absent else MATCHED, absent)
    node = Step(name, *decided)
    node.children.append(_rules_node("resourceRules", constraints.resource_rules, req, MATCHED)
                         if constraints.resource_rules else Step("resourceRules", MATCHED, "empty: every request"))
    if node.children[-1].outcome != MATCHED:
        return node         # the selectors count only when the rules match (evaluate/match.py)
    if constraints.exclude_resource_rules:
        node.children.append(_rules_node("excludeResourceRules", constraints.exclude_resource_rules, req, "excluded"))
        if node.children[-1].outcome == "excluded":
            return node
    labels = namespace_labels(req, ctx.namespace_obj)
    node.children.append(selector_node("namespaceSelector", constraints.namespace_selector, labels,
                                       f"namespace {req.namespace!r}" if labels is not None and req.namespace
                                       else "a cluster-scoped request" if labels is None else "the Namespace's"))
    picked = selector_node("objectSelector", constraints.object_selector, req.labels, "the object's")
    if picked.outcome == NOT_MATCHED and req.obj is not None and req.old_obj is not None:
        # the engine's selector holds when either the new or the old object's labels match (evaluate/match.py)
        old = selector_node("objectSelector", constraints.object_selector,
                            (req.old_obj.get("metadata") or {}).get("labels") or {}, "the old object's")
        picked = old if old.outcome == MATCHED else picked
    node.children.append(picked)
    return node


def exception_node(ce: CompiledException, held: bool, activation: Activation, unconditional: str = "") -> Step:
    """A PolicyException the engine evaluated, whether it held (the engine's), and the values of its
    matchConditions in `activation`; `unconditional`: the detail of one without matchConditions."""
    return Step(ce.key, matched(held), "" if ce.conditions else unconditional,
                _value_nodes("matchConditions", ce.exception.match_conditions, ce.conditions, activation))


def record(trace: Trace | None, meta: PolicyMeta, ref: Ref) -> list[Result]:
    """Start one policy x subject's tree under `trace` (Trace.tree; None: no tree, as eval runs): the engine
    evaluating it next records into it, and the results it returns, added to the list returned, end the tree."""
    results: list[Result] = []
    if trace is not None:
        trace.tree(f"{meta.kind} {meta.key}", (meta, ref, results))
    return results


def recorded(trace: Trace) -> list[Explanation]:
    """The trees recorded under `trace` (Trace.tree, or `record`), in their order: one per policy an engine ran,
    each root's data the policy's meta, the subject, and the results the policy gave in that run."""
    return [Explanation(meta.key, meta.kind, ref, root, list(results))
            for root in trace.root.children for meta, ref, results in (root.data,)]


def patch_nodes(patch: Sequence[Mapping[str, Any]], prefix: str = "") -> list[Step]:
    """A JSON patch, one node per operation with the value it sets."""
    return [Step(f"{prefix}{op.get('op')} {op.get('path')}", show(op["value"]) if "value" in op else "")
            for op in patch]


def outcome_node(name: str, outcome: Outcome) -> Step:
    if outcome.error is not None:
        return Step(name, ERROR, str(outcome.error))
    return Step(name, show(outcome.value))


def value_of(compiler: PolicyCompiler, text: str, activation: Activation, name: str) -> Step:
    """The value of an expression the policy does not hold whole (a variable, an operand), compiled with
    the policy's own variables; never a decision, only shown."""
    try:
        program = compiler.compile(text, "explain")
    except InputError as exc:
        return Step(name, NOT_EVALUATED, f"cannot be evaluated apart: {exc.message}")
    return outcome_node(name, program.evaluate(activation))


def conditions_node(named: Sequence[NamedExpression], programs: Sequence[Program], activation: Activation,
                    unmet: str, name: str = "matchConditions") -> Step:
    """matchConditions, each with its value; `unmet`: what the policy does when one is not true."""
    if not programs:
        return Step(name, NONE)
    children = _value_nodes("", named, programs, activation)
    return Step(name, ALL_TRUE if all(c.outcome == "true" for c in children) else f"not all true: {unmet}", "",
                children)


def _value_nodes(prefix: str, named: Sequence[NamedExpression], programs: Sequence[Program],
                 activation: Activation) -> list[Step]:
    """Each condition with its value in `activation` (or `error`), its expression as the detail."""
    return [Step(f"{prefix}[{i}] {n.name}", outcome_node("", p.evaluate(activation)).outcome, one_line(n.expression))
            for i, (n, p) in enumerate(zip(named, programs))]


def variables_node(compiler: PolicyCompiler, variables: Sequence[NamedExpression], activation: Activation) -> Step:
    node = Step("variables")
    for v in variables:
        child = value_of(compiler, f"variables.{v.name}", activation, v.name)
        if not child.detail:
            child.detail = one_line(v.expression)
        node.children.append(child)
    return node


def validations_node(validations: Sequence[Validation], compiler: PolicyCompiler, activation: Activation,
                     unmet: tuple[int, Outcome] | None) -> Step:
    """Each validation up to the first not true (the evaluators stop there): `unmet`, the engine's own (index,
    Outcome) of that one (None: all were true); it shows its message, the values of its top-level operands
    and of the variables it reads."""
    node = Step("validations", ALL_TRUE)
    failed = False
    for i, validation in enumerate(validations):
        name = f"[{i}] {one_line(validation.expression)}"
        if failed:
            node.children.append(Step(name, NOT_EVALUATED, "an earlier validation decided"))
            continue
        child = outcome_node(name, unmet[1]) if unmet is not None and unmet[0] == i else Step(name, "true")
        if child.outcome != "true":
            failed = True
            node.outcome = f"[{i}] not true"
            if validation.message or validation.message_expression:
                child.detail = "message: " + (validation.message or one_line(validation.message_expression))
        op, operands = top_level_operands(validation.expression)
        if op:
            for operand in operands:
                child.children.append(value_of(compiler, operand, activation, f"{op} {one_line(operand)}"))
        for var in dict.fromkeys(r.name for r in variable_references(validation.expression)):
            child.children.append(value_of(compiler, f"variables.{var}", activation, f"variables.{var}"))
        node.children.append(child)
    return node
