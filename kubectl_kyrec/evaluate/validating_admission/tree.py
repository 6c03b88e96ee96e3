"""The decision tree of a ValidatingAdmissionPolicy with its bindings, for one subject.

It walks evaluate/validating_admission/engine.py's steps for the runner `eval` uses (the policy's matchConstraints,
then each binding's matchResources and params, the last evaluated binding's answer standing), re-evaluating
the compiled programs to show their values; the result is the one `evaluate_admission` gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext
from kubectl_kyrec.evaluate.validating_admission.engine import (
    CompiledAdmissionPolicy,
    VapRunner,
    as_create,
    binding_matches,
    cli_params,
    evaluate_admission,
    scan_params,
)
from kubectl_kyrec.load.policy.policies import AdmissionBinding
from kubectl_kyrec.model import Document


def explain_admission(cp: CompiledAdmissionPolicy, ctx: SubjectContext, envs: Environments, *,
                      state: Sequence[Document], kinds: KindLookup, runner: VapRunner = VapRunner.SCAN,
                      params: Sequence[Document] = ()) -> Explanation:
    policy = cp.policy
    meta = policy.meta
    # the call eval makes (pipeline.run_eval), with the same state, params and runner
    results = evaluate_admission(cp, ctx, state=state, kinds=kinds, runner=runner, params=params)
    root = Node(f"{meta.kind} {meta.key}")
    steps = root.children
    if ctx.request.operation != "CREATE":
        steps.append(Node("request", "CREATE", f"Kyverno evaluates a {meta.kind} as a CREATE, whatever the "
                                               f"operation ({ctx.request.operation})"))
    ctx = as_create(ctx)
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)
    if not cp.bindings or runner is VapRunner.SCAN:
        match = constraints_node(policy.match_constraints, ctx)
        steps.append(match)
        if match.outcome != MATCHED:
            steps.append(result_node(results[0] if results else None))
            return done
    else:
        steps.append(Node("matchConstraints", "not checked", "Kyverno's CLI checks only the bindings' "
                                                             "matchResources when the policy has bindings"))
    if not cp.bindings:
        steps.append(Node("bindings", NONE, "the policy is evaluated on its own"))
        steps.extend(_evaluation(cp, ctx, envs, None))
    else:
        bindings = Node("bindings", "", "each matching binding is evaluated; the last one's answer stands")
        steps.append(bindings)
        for binding in cp.bindings:
            node = _binding_node(cp, binding, ctx, envs, state, kinds, runner, params)
            bindings.children.append(node)
            if node.outcome == "stopped":
                break
    steps.append(result_node(results[0] if results else None, "no result"))
    return done


def _binding_node(cp: CompiledAdmissionPolicy, binding: AdmissionBinding, ctx: SubjectContext, envs: Environments,
                  state: Sequence[Document], kinds: KindLookup, runner: VapRunner,
                  params: Sequence[Document]) -> Node:
    actions = ", ".join(binding.validation_actions or ("Deny",))
    node = Node(f"binding {binding.meta.name}", "", f"validationActions {actions}")
    match = constraints_node(binding.match_resources, ctx, "matchResources", "none: matches everything")
    node.children.append(match)
    if not binding_matches(binding, ctx):
        node.outcome = NOT_MATCHED
        return node
    ref = binding.param_ref
    if runner is VapRunner.SCAN:
        param, ok = scan_params(cp, binding, ctx, state, kinds)
    else:
        param, ok = cli_params(binding, params), True
    if ref is not None:
        how = (f"name {ref.name!r}" if ref.name else f"selector {show(dict(ref.selector or {}))}") + \
              (f" in namespace {ref.namespace!r}" if ref.namespace else "")
        if not ok:
            node.children.append(Node("params", "not found", f"paramRef {how}: the scan stops here, with the "
                                                             "answer it had"))
            node.outcome = "stopped"
            return node
        found = f"; {param.get('kind')} {(param.get('metadata') or {}).get('name')}" \
            if isinstance(param, dict) and "metadata" in param else ""
        node.children.append(Node("params", "found" if param is not None else "null", f"paramRef {how}{found}"))
    node.outcome = "evaluated"
    node.children.extend(_evaluation(cp, ctx, envs, param))
    return node


def _evaluation(cp: CompiledAdmissionPolicy, ctx: SubjectContext, envs: Environments, param: Any) -> list[Node]:
    policy = cp.policy
    activation = ctx.activation(cp.env, extra={"params": param})
    env, check_env = envs.get("ValidatingAdmissionPolicy")
    compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in policy.variables],
                              policy.meta.source, policy.meta.label)
    conditions = conditions_node(policy.match_conditions, cp.conditions, activation, "the policy skips the subject")
    out = [conditions]
    if policy.variables:
        out.append(variables_node(compiler, policy.variables, activation))
    if conditions.outcome in ("all true", NONE):
        out.append(validations_node([(v, program) for v, program, _ in cp.validations], compiler, activation))
    return out
