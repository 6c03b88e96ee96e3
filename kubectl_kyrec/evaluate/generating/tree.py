"""The decision tree of a GeneratingPolicy for one trigger: whether it matches, what stopped it (a
condition, an exception, an error), and the downstreams it would produce, each with why it exists.

Built from what evaluate/generating/engine.py recorded (recording.py) in the run whose outcomes `eval` lists
(run_generating over the run's triggers): the request each evaluation saw (the UPDATE one when the run
retried a trigger as updated and kept that), the namespace and matchConstraints decisions, and the outcome
the run kept. The nodes add what a decision was made of (the rules and selectors, the matchConditions'
values), evaluated read-only to be shown, and the policy's generate entries as written.
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
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.generating import GeneratingPolicy
from kubectl_kyrec.recording import Step, Trace

_STATUS = {
    TriggerStatus.GENERATED: "the policy was evaluated: its generate entries give the downstreams below",
    TriggerStatus.SKIPPED: "a matchCondition is not true: nothing is generated",
    TriggerStatus.EXEMPT: "a PolicyException exempts the trigger: nothing is generated",
    TriggerStatus.ERROR: "the evaluation failed: Kyverno writes nothing and cleans nothing up",
    TriggerStatus.NEEDS_REQUEST: "it depends on request data --values does not give",
}


def explain_generating(policy: GeneratingPolicy, ctx: SubjectContext, trace: Trace) -> Explanation:
    """`trace`: what the run that `eval` lists recorded (run_generating); `ctx`: the trigger's request, shown
    for a policy the run did not evaluate (one that does not compile)."""
    meta = policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    uid = ctx.subject.ref.uid
    recorded = trace.rules.get((policy.key, uid))
    retried = trace.rules.get((policy.key, f"{uid} UPDATE"))
    kept_update = retried is not None and _steps(retried)["outcome"].data is not None
    steps = _steps(retried if kept_update and retried is not None else recorded)
    outcome: TriggerOutcome | None = steps["outcome"].data if "outcome" in steps else None
    results = [outcome.result] if outcome is not None and outcome.result is not None else []
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)
    out = root.children
    if "namespace" in steps:
        out.append(Node("namespace", NOT_MATCHED, f"a {meta.kind} sees only triggers in its own namespace "
                                                  f"{meta.namespace!r}"))
        out.append(result_node(None))
        return done
    if kept_update and outcome is not None:
        out.append(Node("request", outcome.operation, "the policy matches UPDATE only: the trigger is "
                                                      "taken as updated"))
    if "request" in steps:
        ctx = steps["request"].data
    out.append(constraints_node(policy.match_constraints, ctx))
    if outcome is None:
        out.append(result_node(None, "no downstreams: the policy does not apply"))
        return done
    compiled: CompiledGeneratingPolicy = steps["compiled"].data
    if policy.match_conditions:
        # evaluated without the `exceptions` a partial PolicyException binds (the conditions seldom read it)
        out.append(conditions_node(policy.match_conditions, compiled.conditions, ctx.activation(compiled.env),
                                   "nothing is generated"))
    out.append(Node("evaluation", outcome.status.value, outcome.message or _STATUS.get(outcome.status, "")))
    if outcome.status is TriggerStatus.GENERATED:
        out.append(_downstreams_node(policy, ctx, outcome))
    out.append(result_node(outcome.result, "no result"))
    return done


def _steps(recorded: Step | None) -> dict[str, Step]:
    return {step.name: step for step in recorded.children} if recorded is not None else {}


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
