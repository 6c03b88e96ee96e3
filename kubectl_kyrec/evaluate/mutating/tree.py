"""The decision tree of a MutatingPolicy / NamespacedMutatingPolicy for one subject (issue 27).

It walks evaluate/mutating/engine.py's steps (kk: pkg/cel/policies/mpol/engine/engine.go handlePolicy, compiler
policy.go Evaluate): the namespace of a namespaced policy, matchConstraints, the exceptions, matchConditions
with their values, then each mutation in order with the patch it made. The request each policy sees is
the one the admission chain fed the MutatingPolicy engine (after the API server's defaults and the
MutatingAdmissionPolicies), each policy seeing the previous one's output, as engine.go Handle does; the
results are those `evaluate_mutating` gives for that very request, the call `eval`'s chain makes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.typed_objects import rewrite_typed_literals
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
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
    show,
    value_node,
    variables_node,
)
from kubectl_kyrec.evaluate.mutating.engine import (
    SOURCE,
    CompiledMutatingPolicy,
    CompiledMutation,
    MutationFailure,
    evaluate_mutating,
    exceptions_matched,
    run_mutations,
    with_object,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.k8s.structured_merge import NeedsSchema
from kubectl_kyrec.load.policy.mutating import Mutation as MutationSpec
from kubectl_kyrec.model import Obj, Result


def explain_mutating(compiled: Sequence[CompiledMutatingPolicy], ctx: SubjectContext, envs: Environments,
                     results: Sequence[Result]) -> list[Explanation]:
    """A tree per policy of the engine (`compiled`: each policy and its autogen copies, in the engine's
    order) on the request `ctx` the admission chain gave the engine; `results`: the chain's results for the
    subject (those of each policy end its tree)."""
    out: list[Explanation] = []
    groups: dict[str, list[CompiledMutatingPolicy]] = {}
    for cp in compiled:
        groups.setdefault(cp.key, []).append(cp)
    step_ctx = ctx
    ref = ctx.subject.ref
    for key, variants in groups.items():
        meta = variants[0].policy.meta
        root = Node(f"{meta.kind} {key}")
        if len(variants) > 1:
            root.detail = "a Pod policy is also run on the pod controllers, as rewritten copies"
        for index, cp in enumerate(variants):
            # the call the engine makes (engine.py _run_in_order), on the object the previous policy made
            outcome = evaluate_mutating(cp, step_ctx)
            root.children.append(_variant_node(cp, step_ctx, envs, outcome.results[0] if outcome.results else None,
                                               outcome.undetermined, index))
            if outcome.obj is not None:
                step_ctx = with_object(step_ctx, outcome.obj)
        # each variant's node ends in its own result (none for a copy that does not match): together, the
        # policy's results in the chain
        mine = [r for r in results if r.policy == key and r.source == SOURCE]
        out.append(Explanation(key, meta.kind, ref, root, mine))
    return out


def matched_word(ok: bool) -> str:
    return MATCHED if ok else NOT_MATCHED


def _kinds(cp: CompiledMutatingPolicy) -> str:
    constraints = cp.policy.match_constraints
    rules = constraints.resource_rules if constraints is not None else ()
    return ", ".join(r for rule in rules for r in rule.resources) or "none"


def _variant_node(cp: CompiledMutatingPolicy, ctx: SubjectContext, envs: Environments, result: Result | None,
                  undetermined: str, copy: int) -> Node:
    """`copy`: 0 for the policy as written, else the index of its autogen copy."""
    policy = cp.policy
    node = Node("policy" if not copy else f"autogen copy for {_kinds(cp)}")
    steps = node.children
    if policy.meta.kind == "NamespacedMutatingPolicy" and ctx.request.namespace != policy.meta.namespace:
        node.outcome = NOT_MATCHED
        steps.append(Node("namespace", NOT_MATCHED, f"a NamespacedMutatingPolicy of {policy.meta.namespace!r} on a "
                                                    f"request in {ctx.request.namespace or 'no namespace'!r}"))
        steps.append(result_node(result))
        return node
    match = constraints_node(policy.match_constraints, ctx)
    if copy and match.outcome == NOT_MATCHED:
        # one line: its rules are the policy's, retargeted to kinds the subject is not
        node.outcome, node.detail = NOT_MATCHED, f"the subject is a {ctx.subject.ref.kind}"
        return node
    steps.append(match)
    if match.outcome != MATCHED:
        node.outcome = match.outcome
        steps.append(result_node(result))
        return node
    if cp.exceptions:
        exceptions = _exceptions_node(cp, ctx)
        steps.append(exceptions)
        if exceptions.outcome != NOT_MATCHED:
            steps.append(result_node(result))
            node.outcome = result.result if result is not None else NONE
            return node
    activation = ctx.activation(cp.env)
    conditions = conditions_node(policy.match_conditions, cp.conditions, activation, "the policy skips the request")
    steps.append(conditions)
    if policy.variables:
        steps.append(variables_node(_compiler(cp, envs), policy.variables, activation))
    if conditions.outcome in (ALL_TRUE, NONE):
        steps.append(mutations_node(cp.policy.mutations, cp.mutations, cp.env, ctx))
    if undetermined:
        steps.append(Node("admitted object", "undetermined", undetermined))
    steps.append(result_node(result, "no result"))
    node.outcome = result.result if result is not None else ("undetermined" if undetermined else NONE)
    return node


def _exceptions_node(cp: CompiledMutatingPolicy, ctx: SubjectContext) -> Node:
    """The PolicyExceptions naming the policy, each with its conditions' values, and which counted (engine.py
    exceptions_matched, Kyverno's quirks included: one without conditions never counts)."""
    matched, error = exceptions_matched(cp, ctx)
    hit = {id(e) for e in matched}
    node = Node("exceptions", ERROR if error else (MATCHED if matched else NOT_MATCHED), error)
    for ce in cp.exceptions:
        child = Node(ce.key, matched_word(id(ce) in hit))
        if not ce.conditions:
            child.detail = "no matchConditions: never counts (mpol policy.go matchExceptions)"
        activation = ctx.activation(ce.env)
        for i, (named, program) in enumerate(zip(ce.exception.match_conditions, ce.conditions)):
            value = value_node(f"matchConditions[{i}] {named.name}", program, activation)
            value.detail = one_line(named.expression)
            child.children.append(value)
        node.children.append(child)
    return node


def mutations_node(specs: Sequence[MutationSpec], mutations: Sequence[CompiledMutation], env: Environment,
                   ctx: SubjectContext, extra: Mapping[str, Any] | None = None) -> Node:
    """Each mutation in order on the previous one's output, as run_mutations applies them (`extra`: the
    variables it binds, a binding's params), with the JSON patch of what it changed; up to the first that
    fails."""
    node = Node("mutations", "applied")
    obj: Obj = dict(ctx.request.obj or {})
    for i, (spec, mutation) in enumerate(zip(specs, mutations)):
        name = f"[{i}] {spec.patch_type}"
        try:
            after = run_mutations([mutation], env, with_object(ctx, obj), extra)
        except MutationFailure as exc:
            node.children.append(Node(name, ERROR, str(exc)))
            node.outcome = f"[{i}] failed"
            break
        except NeedsSchema as exc:
            node.children.append(Node(name, "undetermined", f"sets {exc.path}, a list whose merge needs the "
                                                            "kind's schema"))
            node.outcome = f"[{i}] undetermined"
            break
        patch = make_patch(obj, after)
        child = Node(name, "changed" if patch else "no change", one_line(spec.expression))
        child.children.extend(Node(f"{op.get('op')} {op.get('path')}", show(op["value"]) if "value" in op else "")
                              for op in patch)
        node.children.append(child)
        obj = after
    return node


def _compiler(cp: CompiledMutatingPolicy, envs: Environments) -> PolicyCompiler:
    """A compiler as compile_mutating_policy's, for the variables shown (never for decisions)."""
    meta = cp.policy.meta
    env, check_env = envs.get(meta.kind, meta.namespace)
    variables = []
    for v in cp.policy.variables:
        try:
            variables.append(VariableDecl(v.name, rewrite_typed_literals(v.expression)))
        except CompileError:
            variables.append(VariableDecl(v.name, v.expression))
    return PolicyCompiler(env, check_env, variables, meta.source, meta.label)
