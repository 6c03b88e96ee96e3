"""The decision tree of a classic ClusterPolicy/Policy for one subject: per rule Kyverno computes for the
subject's kind (autogen included), its match and exclude blocks with Kyverno's reasons, the
PolicyExceptions naming it, what its validation checks, and its result.

Preconditions, context entries, patterns and deny conditions are decided inside the classic engine; the
tree shows them as written and the engine's result says how they came out (a pattern's failing path and a
precondition's message are in it). The results are those the evaluator gives `eval` for the subject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic.autogen import compute_rules
from kubectl_kyrec.classic.match import RequestFacts, block_reasons, match_state, matches_resources
from kubectl_kyrec.evaluate.classic_validating import ClassicEvaluator
from kubectl_kyrec.evaluate.explain import MATCHED, NONE, NOT_MATCHED, Explanation, Node, result_node, show
from kubectl_kyrec.evaluate.subject import SubjectContext
from kubectl_kyrec.load.classic_policies import ClassicPolicy, ClassicRule
from kubectl_kyrec.model import Result

_STATE = {True: MATCHED, False: NOT_MATCHED, None: "depends on the requesting user"}


def explain_classic(evaluator: ClassicEvaluator, policy: ClassicPolicy, ctx: SubjectContext,
                    results: Sequence[Result]) -> Explanation:
    """`results`: the evaluator's results for this policy and subject (ClassicEvaluator.evaluate, as eval)."""
    meta = policy.meta
    facts = evaluator.request_facts(ctx)
    root = Node(f"{meta.kind} {meta.key}")
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, list(results))
    if meta.kind == "Policy" and meta.namespace != ctx.request.namespace:
        root.children.append(Node("namespace", NOT_MATCHED, f"a Policy applies only in its namespace "
                                                            f"{meta.namespace!r}"))
        return done
    rules = compute_rules(policy, facts.kind)
    generated = [r.name for r in rules if r.name.startswith("autogen-") and r not in policy.rules]
    if generated:
        root.children.append(Node("autogen", "expanded", f"the Pod rules rewritten for a {facts.kind}: "
                                                         + ", ".join(generated)))
    by_rule = {r.rule: r for r in results}
    namespace = meta.namespace if meta.kind == "Policy" else ""
    for rule in rules:
        root.children.append(_rule_node(evaluator, policy, rule, facts, namespace, by_rule.get(rule.name)))
    return done


def _rule_node(evaluator: ClassicEvaluator, policy: ClassicPolicy, rule: ClassicRule, facts: RequestFacts,
               namespace: str, result: Result | None) -> Node:
    what = rule.type + (f" ({rule.validate_kind})" if rule.type == "validate" and rule.validate_kind else "")
    node = Node(f"rule {rule.name}", "", what)
    steps = node.children
    match = rule.raw.get("match") or {}
    exclude = rule.raw.get("exclude")
    state = match_state(match, exclude, facts, namespace)
    steps.append(_blocks_node("match", match, facts, exclude=False))
    if exclude:
        steps.append(_blocks_node("exclude", exclude, facts, exclude=True))
    steps.append(Node("applies", _STATE[state]))
    if state is False:
        return node
    if rule.type != "validate":
        steps.append(Node("result", NONE, f"a {rule.type} rule gives no validation result"))
        return node
    if rule.raw.get("preconditions") is not None:
        steps.append(Node("preconditions", "", show(rule.raw.get("preconditions"))))
    exceptions = Node("exceptions", NONE)
    for exc in evaluator.exceptions:
        if not exc.contains(policy.meta.key, rule.name):
            continue
        hit = matches_resources(exc.match, facts)
        why = "its match selects the subject" if hit else "its match does not select the subject"
        if hit and exc.conditions is not None:
            why += f"; conditions {show(exc.conditions)}"
        exceptions.children.append(Node(exc.key, MATCHED if hit else NOT_MATCHED, why))
        exceptions.outcome = "considered"
    steps.append(exceptions)
    steps.append(_validate_node(rule.validate))
    steps.append(result_node(result, "no result"))
    return node


def _blocks_node(name: str, block: Mapping[str, Any], facts: RequestFacts, *, exclude: bool) -> Node:
    for form in ("any", "all"):
        blocks = block.get(form)
        if blocks:
            node = Node(f"{name}.{form}")
            for i, b in enumerate(blocks):
                node.children.append(_block_node(f"[{i}]", b, facts, exclude))
            return node
    return _block_node(name, block, facts, exclude)


def _block_node(name: str, block: Mapping[str, Any], facts: RequestFacts, exclude: bool) -> Node:
    state, reasons = block_reasons(block, facts, exclude)
    if exclude:
        outcome = {True: "excludes", False: "does not exclude", None: "depends on the requesting user"}[state]
    else:
        outcome = _STATE[state]
    parts = [show(dict(block.get("resources") or {}))]
    for key in ("subjects", "roles", "clusterRoles"):
        if block.get(key):
            parts.append(f"{key} {show(block.get(key))}")
    node = Node(name, outcome, " ".join(parts))
    for reason in reasons:
        node.children.append(Node(reason))
    return node


def _validate_node(validate: Mapping[str, Any]) -> Node:
    """What the validation checks, as written: the engine decides it (see the result)."""
    node = Node("validate", "", f"message: {validate['message']}" if validate.get("message") else "")
    for key in ("pattern", "anyPattern", "deny", "foreach", "podSecurity", "cel", "manifests"):
        if validate.get(key) is not None:
            node.children.append(Node(key, "", show(validate[key])))
    return node
