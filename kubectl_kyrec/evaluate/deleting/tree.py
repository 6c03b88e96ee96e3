"""The decision tree of a DeletingPolicy / NamespacedDeletingPolicy for one object (issue 27).

Built from what evaluate/deleting/engine.py recorded (recording.py) evaluating the object (kk:
pkg/cel/policies/dpol/engine/engine.go Handle, compiler/policy.go Evaluate): when the schedule next runs the
policy (kyverno/api GetExecutionTime), the matchConstraints with every operation (a deletion is no admission
request), the exceptions, then the conditions with their values, and so whether the next run deletes the
object. The result is that evaluation's, as Kyverno's CLI answers it (`pass` "resource matched" when it would
be deleted, else `fail`, `error`): the call `kyrec test` and `kyrec diff` make.
"""

from __future__ import annotations

from kubectl_kyrec.evaluate.deleting.engine import CompiledDeletingPolicy, DeletionOutcome, DeletionStatus, NextRun
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NONE,
    NOT_MATCHED,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    one_line,
    result_node,
    value_node,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.recording import Step, Trace

_VERDICTS = {
    DeletionStatus.DELETE: ("deletes", "matched, no exception, every condition true: the next run deletes it"),
    DeletionStatus.NO_MATCH: ("keeps", "not matched: the policy never looks at it"),
    DeletionStatus.KEEP: ("keeps", "a condition is not true"),
    DeletionStatus.EXEMPT: ("keeps", "a PolicyException exempts it"),
    DeletionStatus.ERROR: ("keeps", "the evaluation failed: the run leaves it and reports the error"),
}


def explain_deleting(cp: CompiledDeletingPolicy, ctx: SubjectContext, trace: Trace, outcome: DeletionOutcome,
                     run: NextRun) -> Explanation:
    """`ctx`: the object's context as deleting.subject_context makes it (the object alone, its namespace);
    `trace`, `outcome`: what `evaluate_object` recorded and returned for it, the call `kyrec test` makes for the
    pair (testsuite/deleting.py suite_deletions); `run`: when the schedule next runs the policy."""
    policy = cp.policy
    meta = policy.meta
    recorded = {step.name: step for step in trace.root.children}
    result = outcome.result()
    root = Node(f"{meta.kind} {meta.key}")
    steps = root.children
    steps.append(_schedule_node(cp, run))
    if cp.match_any_operation is None:
        steps.append(Node("matchConstraints", NOT_MATCHED, "none: a policy without matchConstraints matches nothing"))
    else:
        # the engine's decision, shown with the rules and selectors it was made of
        match = constraints_node(cp.match_any_operation, ctx)
        match.detail = f"{ctx.subject.ref.api_version} {ctx.request.resource} {ctx.subject.ref.name!r}" + \
            (f" in namespace {ctx.request.namespace}" if ctx.request.namespace else " (cluster-scoped)") + \
            "; every rule's operations count as *: a deletion is no admission request"
        if "matchConstraints" in recorded and recorded["matchConstraints"].outcome == ERROR:
            match.detail = outcome.message
        steps.append(match)
    if "exceptions" in recorded:
        steps.append(_exceptions_node(cp, ctx, recorded["exceptions"]))
    if "conditions" in recorded:
        conditions = conditions_node(policy.conditions, cp.conditions, recorded["conditions"].data,
                                     "the object is kept")
        conditions.name = "conditions"
        steps.append(conditions)
    verdict, why = _VERDICTS.get(outcome.status, ("keeps", outcome.message))
    steps.append(Node("next run", verdict, outcome.message if outcome.status is DeletionStatus.ERROR else why))
    steps.append(result_node(result))
    return Explanation(meta.key, meta.kind, ctx.subject.ref, root, [result])


def _schedule_node(cp: CompiledDeletingPolicy, run: NextRun) -> Node:
    policy = cp.policy
    if run.error:
        return Node("schedule", ERROR, f"{policy.schedule!r}: {run.error}")
    if run.at is None:
        return Node("schedule", "never", f"{policy.schedule!r} fires no more")
    at = run.at.strftime("%Y-%m-%dT%H:%M:%SZ")
    since = ("status.lastExecutionTime" if policy.last_execution_time
             else "creationTimestamp" if policy.meta.creation_timestamp else "now (a manifest not yet applied)")
    return Node("schedule", f"next run {at}", f"{policy.schedule!r} after {since}" +
                ("; due: the controller runs it at once" if run.due else ""))


def _exceptions_node(cp: CompiledDeletingPolicy, ctx: SubjectContext, recorded: Step) -> Node:
    """`recorded`: each exception the engine considered, with whether it held."""
    if not cp.exceptions:
        return Node("exceptions", NONE)
    node = Node("exceptions", NOT_MATCHED)
    for ce, held in recorded.data:
        activation = ctx.activation(ce.env)
        child = Node(ce.key)
        for i, (named, program) in enumerate(zip(ce.exception.match_conditions, ce.conditions)):
            # the values its matchConditions had, shown (whether it held is the engine's, recorded)
            value = value_node(f"matchConditions[{i}] {named.name}", program, activation)
            value.detail = one_line(named.expression)
            child.children.append(value)
        if not ce.conditions:
            child.detail = "no matchConditions: every object"
        child.outcome = MATCHED if held else NOT_MATCHED
        if held:
            node.outcome = MATCHED
        node.children.append(child)
    return node
