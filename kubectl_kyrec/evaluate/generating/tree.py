"""The decision tree of a GeneratingPolicy for one trigger: whether it matches, what stopped it (a
condition, an exception, an error), and the downstreams it would produce, each with why it exists.

The outcome is the one `eval` lists (run_generating over the run's triggers); the tree adds the
matchConstraints as evaluate/match.py decides them, and the policy's generate entries as written.
"""

from __future__ import annotations

from kubectl_kyrec.evaluate.explain import (
    NONE,
    NOT_MATCHED,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    one_line,
    result_node,
)
from kubectl_kyrec.evaluate.generating.engine import CompiledGeneratingPolicy, TriggerOutcome, TriggerStatus
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.generating import GeneratingPolicy

_STATUS = {
    TriggerStatus.GENERATED: "the policy was evaluated: its generate entries give the downstreams below",
    TriggerStatus.SKIPPED: "a matchCondition is not true: nothing is generated",
    TriggerStatus.EXEMPT: "a PolicyException exempts the trigger: nothing is generated",
    TriggerStatus.ERROR: "the evaluation failed: Kyverno writes nothing and cleans nothing up",
    TriggerStatus.NEEDS_REQUEST: "it depends on request data --values does not give",
}


def explain_generating(policy: GeneratingPolicy, ctx: SubjectContext, outcome: TriggerOutcome | None,
                       compiled: CompiledGeneratingPolicy | None = None) -> Explanation:
    """`outcome`: the run's outcome for this (policy, trigger), None when the policy does not match it;
    `compiled`: the policy compiled as the run compiles it, for its matchConditions' values."""
    meta = policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    results = [outcome.result] if outcome is not None and outcome.result is not None else []
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)
    steps = root.children
    if policy.namespaced and ctx.request.namespace != meta.namespace:
        steps.append(Node("namespace", NOT_MATCHED, f"a {meta.kind} sees only triggers in its own namespace "
                                                    f"{meta.namespace!r}"))
        steps.append(result_node(None))
        return done
    if outcome is not None and outcome.operation != ctx.request.operation:
        steps.append(Node("request", outcome.operation, "the policy matches UPDATE only: the trigger is "
                                                        "taken as updated"))
        subject = ctx.subject
        request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced,
                                operation=outcome.operation, user_info=ctx.request.user_info)
        ctx = SubjectContext(subject, request, ctx.namespace_obj)
    steps.append(constraints_node(policy.match_constraints, ctx))
    if outcome is None:
        steps.append(result_node(None, "no downstreams: the policy does not apply"))
        return done
    if policy.match_conditions and compiled is not None:
        # evaluated without the `exceptions` a partial PolicyException binds (the conditions seldom read it)
        steps.append(conditions_node(policy.match_conditions, compiled.conditions, ctx.activation(compiled.env),
                                     "nothing is generated"))
    steps.append(Node("evaluation", outcome.status.value, outcome.message or _STATUS.get(outcome.status, "")))
    if outcome.status is TriggerStatus.GENERATED:
        steps.append(_downstreams_node(policy, ctx, outcome))
    steps.append(result_node(outcome.result, "no result"))
    return done


def _downstreams_node(policy: GeneratingPolicy, ctx: SubjectContext, outcome: TriggerOutcome) -> Node:
    node = Node("downstreams", str(len(outcome.objects)) if outcome.objects else NONE)
    entries = "; ".join(f"generate[{g.index}] " + (one_line(g.expression) if g.expression else "template")
                        for g in policy.generate)
    node.detail = f"from {entries}" if entries else ""
    owed = "owed" if outcome.owed else "not owed"
    why_owed = ("generateExisting is on, or the trigger is new to the policy" if outcome.owed
                else "generateExisting is off and the trigger existed before the policy: Kyverno generates "
                     "nothing for it")
    if not outcome.age_known:
        why_owed = "the policy's age is unknown (no creationTimestamp): whether the trigger predates it is too"
    ref = ctx.subject.ref
    trigger = f"{ref.kind} {ref.namespace + '/' if ref.namespace else ''}{ref.name}"
    for obj in outcome.objects:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        name = f"{namespace + '/' if namespace else ''}{meta.get('name')}"
        sync = "kept in sync with the policy (synchronize)" if policy.synchronize else "created once"
        node.children.append(Node(f"{obj.get('apiVersion')} {obj.get('kind')} {name}", owed,
                                  f"generated for trigger {trigger}; {sync}; {why_owed}"))
    return node
