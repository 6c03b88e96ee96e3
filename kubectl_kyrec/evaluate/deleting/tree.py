"""The decision tree of a DeletingPolicy / NamespacedDeletingPolicy for one object (issue 27).

It walks evaluate/deleting/engine.py's steps (kk: pkg/cel/policies/dpol/engine/engine.go Handle, compiler/policy.go
Evaluate): when the schedule next runs the policy (kyverno/api GetExecutionTime), the matchConstraints with
every operation (a deletion is no admission request), the exceptions, then the conditions with their values,
and so whether the next run deletes the object. The result is `evaluate_object`'s, as Kyverno's CLI answers
it (`pass` "resource matched" when it would be deleted, else `fail`, `error`): the call `kyrec test` and
`kyrec diff` make.
"""

from __future__ import annotations

import datetime

from kubectl_kyrec.cel.engine import Activation
from kubectl_kyrec.evaluate.deleting.engine import (
    CompiledDeletingPolicy,
    DeletionStatus,
    any_operation,
    evaluate_object,
    next_run,
)
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

_VERDICTS = {
    DeletionStatus.DELETE: ("deletes", "matched, no exception, every condition true: the next run deletes it"),
    DeletionStatus.NO_MATCH: ("keeps", "not matched: the policy never looks at it"),
    DeletionStatus.KEEP: ("keeps", "a condition is not true"),
    DeletionStatus.EXEMPT: ("keeps", "a PolicyException exempts it"),
    DeletionStatus.ERROR: ("keeps", "the evaluation failed: the run leaves it and reports the error"),
}


def explain_deleting(cp: CompiledDeletingPolicy, ctx: SubjectContext, now: datetime.datetime) -> Explanation:
    """`ctx`: the object's context as deleting.subject_context makes it (the object alone, its namespace)."""
    policy = cp.policy
    meta = policy.meta
    # the call `kyrec test` makes for the pair (testsuite/deleting.py suite_deletions)
    outcome = evaluate_object(cp, ctx)
    result = outcome.result()
    root = Node(f"{meta.kind} {meta.key}")
    steps = root.children
    steps.append(_schedule_node(cp, now))
    constraints = policy.match_constraints
    if constraints is None:
        steps.append(Node("matchConstraints", NOT_MATCHED, "none: a policy without matchConstraints matches nothing"))
    else:
        match = constraints_node(any_operation(constraints), ctx)
        match.detail = f"{ctx.subject.ref.api_version} {ctx.request.resource} {ctx.subject.ref.name!r}" + \
            (f" in namespace {ctx.request.namespace}" if ctx.request.namespace else " (cluster-scoped)") + \
            "; every rule's operations count as *: a deletion is no admission request"
        if outcome.status is DeletionStatus.ERROR and match.outcome == ERROR:
            match.detail = outcome.message
        steps.append(match)
    if outcome.status is not DeletionStatus.NO_MATCH and not (
            outcome.status is DeletionStatus.ERROR and steps[-1].outcome == ERROR):
        steps.append(_exceptions_node(cp, ctx))
        if outcome.status is not DeletionStatus.EXEMPT:
            conditions = conditions_node(policy.conditions, cp.conditions, ctx.activation(cp.env),
                                         "the object is kept")
            conditions.name = "conditions"
            steps.append(conditions)
    verdict, why = _VERDICTS.get(outcome.status, ("keeps", outcome.message))
    steps.append(Node("next run", verdict, outcome.message if outcome.status is DeletionStatus.ERROR else why))
    steps.append(result_node(result))
    return Explanation(meta.key, meta.kind, ctx.subject.ref, root, [result])


def _schedule_node(cp: CompiledDeletingPolicy, now: datetime.datetime) -> Node:
    policy = cp.policy
    run = next_run(policy, now)
    if run.error:
        return Node("schedule", ERROR, f"{policy.schedule!r}: {run.error}")
    if run.at is None:
        return Node("schedule", "never", f"{policy.schedule!r} fires no more")
    at = run.at.strftime("%Y-%m-%dT%H:%M:%SZ")
    since = ("status.lastExecutionTime" if policy.last_execution_time
             else "creationTimestamp" if policy.meta.creation_timestamp else "now (a manifest not yet applied)")
    return Node("schedule", f"next run {at}", f"{policy.schedule!r} after {since}" +
                ("; due: the controller runs it at once" if run.due else ""))


def _exceptions_node(cp: CompiledDeletingPolicy, ctx: SubjectContext) -> Node:
    if not cp.exceptions:
        return Node("exceptions", NONE)
    node = Node("exceptions", NOT_MATCHED)
    for ce in cp.exceptions:
        activation: Activation = ctx.activation(ce.env)
        child = Node(ce.key)
        held = True
        for i, (named, program) in enumerate(zip(ce.exception.match_conditions, ce.conditions)):
            value = value_node(f"matchConditions[{i}] {named.name}", program, activation)
            value.detail = one_line(named.expression)
            held = held and value.outcome == "true"
            child.children.append(value)
        if not ce.conditions:
            child.detail = "no matchConditions: every object"
        child.outcome = MATCHED if held else NOT_MATCHED
        if held:
            node.outcome = MATCHED
        node.children.append(child)
    return node
