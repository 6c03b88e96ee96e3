"""The decision tree of a MutatingAdmissionPolicy with its bindings, for one subject (issue 27), built from
what evaluate/mutating_admission/engine.py recorded (recording.py) in the admission chain's run whose results
the tree ends in (k8s.io/apiserver pkg/admission/plugin/policy/mutating dispatcher.go dispatchInvocations):
the policy's matchConstraints, then each binding whose matchResources match, with its params, the
matchConditions and each mutation's patch, each binding seeing the object the previous one made. Nothing here
decides or re-walks the engine; the nodes only add what a decision was made of (the rules and selectors, the
values of the conditions), evaluated read-only to be shown.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_kyrec.evaluate.explain import (
    MATCHED,
    NONE,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    result_node,
    show,
)
from kubectl_kyrec.evaluate.mutating.tree import mutations_node
from kubectl_kyrec.evaluate.mutating_admission.engine import CompiledMutatingAdmissionPolicy, MutatingAdmissionEngine
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.mutating import MutatingAdmissionBinding
from kubectl_kyrec.model import Ref, Result
from kubectl_kyrec.recording import Step, Trace


def explain_mutating_admission(engine: MutatingAdmissionEngine, trace: Trace, ref: Ref) -> list[Explanation]:
    """A tree per policy of the engine, in its order; `trace`: what the engine recorded for the subject `ref`
    in the admission chain's run (engine.py cluster_in_order)."""
    return [_tree(cp, trace, ref) for cp in engine.compiled]


def _steps(trace: Trace, key: str, name: str) -> dict[str, Step]:
    return {step.name: step for step in trace.rules[(key, name)].children}


def _tree(cp: CompiledMutatingAdmissionPolicy, trace: Trace, ref: Ref) -> Explanation:
    meta = cp.policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    results: list[Result] = []
    done = Explanation(meta.key, meta.kind, ref, root, results)
    steps = _steps(trace, meta.key, "")
    # the engine's decision, shown with the rules and selectors it was made of
    root.children.append(constraints_node(cp.policy.match_constraints, steps["request"].data))
    if steps["matchConstraints"].outcome != MATCHED:
        root.children.append(result_node(None))
        return done
    if not cp.bindings:
        root.children.append(Node("bindings", NONE, "the API server applies a policy only through its bindings"))
        root.children.append(result_node(None))
        return done
    bindings = Node("bindings", "", "each matching binding mutates the object the previous one made")
    root.children.append(bindings)
    for binding in cp.bindings:
        recorded = _steps(trace, meta.key, binding.meta.name)
        result = recorded["result"].data
        if result is not None:
            results.append(result)
        bindings.children.append(_binding_node(cp, binding, recorded, result))
    return done


def _binding_node(cp: CompiledMutatingAdmissionPolicy, binding: MutatingAdmissionBinding, steps: Mapping[str, Step],
                  result: Result | None) -> Node:
    """`steps`: the binding's recorded steps by name, the first the request it saw."""
    ctx: SubjectContext = steps["request"].data
    node = Node(f"binding {binding.meta.name}")
    if binding.match_resources is not None:
        node.children.append(constraints_node(binding.match_resources, ctx, "matchResources"))
        if steps["matchResources"].outcome != MATCHED:
            node.outcome = steps["matchResources"].outcome
            return node
    else:
        node.children.append(Node("matchResources", MATCHED, "none: matches everything"))
    ref = binding.param_ref
    if ref is not None:
        param = steps["params"].data
        how = (f"name {ref.name!r}" if ref.name else f"selector {show(dict(ref.selector or {}))}") + \
              (f" in namespace {ref.namespace!r}" if ref.namespace else "")
        found = (f"; {param.get('kind')} {(param.get('metadata') or {}).get('name')}"
                 if isinstance(param, dict) and "metadata" in param else "")
        action = f"; parameterNotFoundAction {ref.not_found_action}" if ref.not_found_action else ""
        node.children.append(Node("params", steps["params"].outcome, f"paramRef {how}{found}{action}"))
    node.outcome = result.result if result is not None else NONE
    if "activation" not in steps:
        # no params and parameterNotFoundAction Deny: the engine stopped there
        node.children.append(result_node(result))
        return node
    node.children.append(conditions_node(cp.policy.match_conditions, cp.conditions, steps["activation"].data,
                                         "the binding is skipped"))
    if "mutations" in steps:
        node.children.append(mutations_node(cp.policy.mutations, steps["mutations"].children))
    node.children.append(result_node(result, "no result"))
    return node
