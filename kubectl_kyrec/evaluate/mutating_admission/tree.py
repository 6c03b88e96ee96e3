"""The decision tree of a MutatingAdmissionPolicy with its bindings, for one subject (issue 27).

It walks the API server's steps as evaluate/mutating_admission/engine.py models them for `eval`'s admission chain
(k8s.io/apiserver pkg/admission/plugin/policy/mutating dispatcher.go dispatchInvocations): the policy's
matchConstraints, then each binding whose matchResources match, with its params, the matchConditions with
their values and each mutation's patch, each binding seeing the object the previous one made. The request is
the one the chain fed the MutatingAdmissionPolicy engine; the results are those the engine's own walk
(`cluster_in_order`) gives for this policy on that request, the call the chain makes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
    ERROR,
    MATCHED,
    NONE,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    one_line,
    result_node,
    show,
)
from kubectl_kyrec.evaluate.mutating.engine import CompiledMutation, MutationFailure, run_mutations, with_object
from kubectl_kyrec.evaluate.mutating_admission.engine import (
    CompiledMutatingAdmissionPolicy,
    MutatingAdmissionEngine,
    cli_param,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.k8s.structured_merge import NeedsSchema
from kubectl_kyrec.load.policy.mutating import MutatingAdmissionBinding
from kubectl_kyrec.load.policy.mutating import Mutation as MutationSpec
from kubectl_kyrec.model import Obj, Result


def explain_mutating_admission(engine: MutatingAdmissionEngine, ctx: SubjectContext) -> list[Explanation]:
    """A tree per policy of the engine, in its order, on the request `ctx` the chain gave the engine."""
    out = []
    for cp in engine.compiled:
        # the engine's walk for this policy alone: the walk over all of them, one policy at a time
        step = engine.cluster_in_order([cp], ctx)
        out.append(_tree(engine, cp, ctx, step.results))
        if step.obj is not None and step.obj is not ctx.request.obj:
            ctx = with_object(ctx, dict(step.obj))
    return out


def _tree(engine: MutatingAdmissionEngine, cp: CompiledMutatingAdmissionPolicy, ctx: SubjectContext,
          results: Sequence[Result]) -> Explanation:
    meta = cp.policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, list(results))
    match = constraints_node(cp.policy.match_constraints, ctx)
    root.children.append(match)
    if match.outcome != MATCHED:
        root.children.append(result_node(None))
        return done
    if not cp.bindings:
        root.children.append(Node("bindings", NONE, "the API server applies a policy only through its bindings"))
        root.children.append(result_node(None))
        return done
    bindings = Node("bindings", "", "each matching binding mutates the object the previous one made")
    root.children.append(bindings)
    by_binding = {r.binding: r for r in results}
    for binding in cp.bindings:
        node, obj = _binding_node(engine, cp, binding, ctx, by_binding.get(binding.meta.name))
        bindings.children.append(node)
        if obj is not None:
            ctx = with_object(ctx, obj)
    return done


def _binding_node(engine: MutatingAdmissionEngine, cp: CompiledMutatingAdmissionPolicy,
                  binding: MutatingAdmissionBinding, ctx: SubjectContext, result: Result | None
                  ) -> tuple[Node, Obj | None]:
    """The binding's node, and the object after it (None when it changed nothing)."""
    node = Node(f"binding {binding.meta.name}")
    if binding.match_resources is not None:
        match = constraints_node(binding.match_resources, ctx, "matchResources")
        node.children.append(match)
        if match.outcome != MATCHED:
            node.outcome = match.outcome
            return node, None
    else:
        node.children.append(Node("matchResources", MATCHED, "none: matches everything"))
    ref = binding.param_ref
    param = cli_param(binding, engine.params) if ref is not None else None
    if ref is not None:
        how = (f"name {ref.name!r}" if ref.name else f"selector {show(dict(ref.selector or {}))}") + \
              (f" in namespace {ref.namespace!r}" if ref.namespace else "")
        found = (f"; {param.get('kind')} {(param.get('metadata') or {}).get('name')}"
                 if isinstance(param, dict) and "metadata" in param else "")
        action = f"; parameterNotFoundAction {ref.not_found_action}" if ref.not_found_action else ""
        node.children.append(Node("params", "found" if param is not None else "not found",
                                  f"paramRef {how}{found}{action}"))
    node.outcome = result.result if result is not None else NONE
    if ref is not None and param is None and ref.not_found_action == "Deny":
        node.children.append(result_node(result))
        return node, None
    extra = {"params": param}
    conditions = conditions_node(cp.policy.match_conditions, cp.conditions, ctx.activation(cp.env, extra=extra),
                                 "the binding is skipped")
    node.children.append(conditions)
    obj = None
    if conditions.outcome in (ALL_TRUE, NONE):
        node.children.append(_mutations_node(cp.policy.mutations, cp.mutations, cp.env, ctx, extra))
        try:
            obj = run_mutations(cp.mutations, cp.env, ctx, extra)
        except (MutationFailure, NeedsSchema):
            obj = None
        if result is None and obj is not None:
            obj = None      # a failure the policy ignores (failurePolicy Ignore): the object is left as it was
    node.children.append(result_node(result, "no result"))
    return node, obj


def _mutations_node(specs: Sequence[MutationSpec], mutations: Sequence[CompiledMutation], env: Environment,
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
