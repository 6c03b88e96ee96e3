"""The decision tree of a ValidatingAdmissionPolicy with its bindings, for one subject, built from what
evaluate/validating_admission/engine.py recorded (recording.py) in the evaluation whose results the tree ends
in, for the runner `eval` uses: the request it evaluated (as a CREATE), the policy's matchConstraints, then
each binding evaluated (matchResources, params, the activation, the first validation not true), the last
evaluated binding's answer standing. The nodes only add what a decision was made of, shown read-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.explain import (
    MATCHED,
    NONE,
    NOT_MATCHED,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    result_node,
    show,
    validations_node,
    variables_node,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating_admission.engine import CompiledAdmissionPolicy
from kubectl_kyrec.load.policy.policies import AdmissionBinding
from kubectl_kyrec.model import Result
from kubectl_kyrec.recording import Step, Trace


def explain_admission(cp: CompiledAdmissionPolicy, ctx: SubjectContext, envs: Environments, trace: Trace,
                      results: Sequence[Result]) -> Explanation:
    """`trace`, `results`: what `evaluate_admission` recorded and returned evaluating `cp` for `ctx`, as eval
    calls it (with the same state, params and runner)."""
    policy = cp.policy
    meta = policy.meta
    recorded = {step.name: step for step in trace.root.children}
    root = Node(f"{meta.kind} {meta.key}")
    steps = root.children
    if ctx.request.operation != "CREATE":
        steps.append(Node("request", "CREATE", f"Kyverno evaluates a {meta.kind} as a CREATE, whatever the "
                                               f"operation ({ctx.request.operation})"))
    ctx = recorded["request"].data
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, list(results))
    if "matchConstraints" in recorded:
        # the engine's decision, shown with the rules and selectors it was made of
        steps.append(constraints_node(policy.match_constraints, ctx))
        if recorded["matchConstraints"].outcome != MATCHED:
            steps.append(result_node(results[0] if results else None))
            return done
    else:
        steps.append(Node("matchConstraints", "not checked", "Kyverno's CLI checks only the bindings' "
                                                             "matchResources when the policy has bindings"))
    if not cp.bindings:
        steps.append(Node("bindings", NONE, "the policy is evaluated on its own"))
        steps.extend(_evaluation(cp, envs, recorded))
    else:
        bindings = Node("bindings", "", "each matching binding is evaluated; the last one's answer stands")
        steps.append(bindings)
        for binding in cp.bindings:
            evaluated = trace.rules.get((meta.key, binding.meta.name))
            if evaluated is None:
                break           # the engine stopped at an earlier binding
            bindings.children.append(_binding_node(cp, binding, ctx, envs,
                                                   {step.name: step for step in evaluated.children}))
    steps.append(result_node(results[0] if results else None, "no result"))
    return done


def _binding_node(cp: CompiledAdmissionPolicy, binding: AdmissionBinding, ctx: SubjectContext, envs: Environments,
                  recorded: Mapping[str, Step]) -> Node:
    actions = ", ".join(binding.validation_actions or ("Deny",))
    node = Node(f"binding {binding.meta.name}", "", f"validationActions {actions}")
    node.children.append(constraints_node(binding.match_resources, ctx, "matchResources", "none: matches everything"))
    if recorded["matchResources"].outcome != MATCHED:
        node.outcome = NOT_MATCHED
        return node
    ref = binding.param_ref
    params = recorded["params"]
    param = params.data
    if ref is not None:
        how = (f"name {ref.name!r}" if ref.name else f"selector {show(dict(ref.selector or {}))}") + \
              (f" in namespace {ref.namespace!r}" if ref.namespace else "")
        if params.outcome != "found":
            node.children.append(Node("params", "not found", f"paramRef {how}: the scan stops here, with the "
                                                             "answer it had"))
            node.outcome = "stopped"
            return node
        found = f"; {param.get('kind')} {(param.get('metadata') or {}).get('name')}" \
            if isinstance(param, dict) and "metadata" in param else ""
        node.children.append(Node("params", "found" if param is not None else "null", f"paramRef {how}{found}"))
    node.outcome = "evaluated"
    node.children.extend(_evaluation(cp, envs, recorded))
    return node


def _evaluation(cp: CompiledAdmissionPolicy, envs: Environments, recorded: Mapping[str, Step]) -> list[Node]:
    policy = cp.policy
    activation = recorded["activation"].data
    env, check_env = envs.get("ValidatingAdmissionPolicy")
    compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in policy.variables],
                              policy.meta.source, policy.meta.label)
    conditions = conditions_node(policy.match_conditions, cp.conditions, activation, "the policy skips the subject")
    out = [conditions]
    if policy.variables:
        out.append(variables_node(compiler, policy.variables, activation))
    if "validations" in recorded:
        out.append(validations_node([(v, program) for v, program, _ in cp.validations], compiler, activation,
                                    recorded=(recorded["validations"].data,)))
    return out
