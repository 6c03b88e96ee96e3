"""The decision tree of a MutatingPolicy / NamespacedMutatingPolicy for one subject (issue 27), built from what
evaluate/mutating/engine.py recorded (recording.py) in the admission chain's run whose results the tree ends
in (kk: pkg/cel/policies/mpol/engine/engine.go handlePolicy, compiler policy.go Evaluate): the request each
policy saw (the one the chain fed the MutatingPolicy engine, after the API server's defaults and the
MutatingAdmissionPolicies, each policy seeing the previous one's output, as engine.go Handle does), the
namespace of a namespaced policy, matchConstraints, the exceptions, matchConditions, then each mutation in
order with the patch it made. Nothing here decides or re-walks the engine; the nodes only add what a decision
was made of (the rules and selectors, the values of the conditions and variables), evaluated read-only to be
shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import CompileError
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.typed_objects import rewrite_typed_literals
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
    show,
    value_node,
    variables_node,
)
from kubectl_kyrec.evaluate.mutating.engine import CompiledMutatingPolicy, PolicyOutcome
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.mutating import Mutation as MutationSpec
from kubectl_kyrec.model import Ref
from kubectl_kyrec.recording import Step, Trace


def explain_mutating(compiled: Sequence[CompiledMutatingPolicy], trace: Trace, envs: Environments,
                     ref: Ref) -> list[Explanation]:
    """A tree per policy of the engine (`compiled`: each policy and its autogen copies, in the engine's
    order); `trace`: what the engine recorded for the subject `ref` in the admission chain's run (each policy
    and copy under the rule (its key, its index in `compiled`)). Each tree ends in the results its policy
    gave in that run."""
    out: list[Explanation] = []
    groups: dict[str, list[tuple[int, CompiledMutatingPolicy]]] = {}
    for index, cp in enumerate(compiled):
        groups.setdefault(cp.key, []).append((index, cp))
    for key, variants in groups.items():
        meta = variants[0][1].policy.meta
        root = Node(f"{meta.kind} {key}")
        if len(variants) > 1:
            root.detail = "a Pod policy is also run on the pod controllers, as rewritten copies"
        mine = []
        for copy, (index, cp) in enumerate(variants):
            steps = {step.name: step for step in trace.rules[(key, str(index))].children}
            outcome: PolicyOutcome = steps["result"].data
            mine.extend(outcome.results)
            root.children.append(_variant_node(cp, envs, steps, outcome, copy))
        out.append(Explanation(key, meta.kind, ref, root, mine))
    return out


def _kinds(cp: CompiledMutatingPolicy) -> str:
    constraints = cp.policy.match_constraints
    rules = constraints.resource_rules if constraints is not None else ()
    return ", ".join(r for rule in rules for r in rule.resources) or "none"


def _variant_node(cp: CompiledMutatingPolicy, envs: Environments, steps: Mapping[str, Step],
                  outcome: PolicyOutcome, copy: int) -> Node:
    """`steps`: the variant's recorded steps by name; `copy`: 0 for the policy as written, else the index of
    its autogen copy."""
    policy = cp.policy
    ctx: SubjectContext = steps["request"].data
    result = outcome.results[0] if outcome.results else None
    node = Node("policy" if not copy else f"autogen copy for {_kinds(cp)}")
    out = node.children
    if "namespace" in steps:
        node.outcome = NOT_MATCHED
        out.append(Node("namespace", NOT_MATCHED, f"a NamespacedMutatingPolicy of {policy.meta.namespace!r} on a "
                                                  f"request in {ctx.request.namespace or 'no namespace'!r}"))
        out.append(result_node(result))
        return node
    matched = steps["matchConstraints"].outcome
    if copy and matched == NOT_MATCHED:
        # one line: its rules are the policy's, retargeted to kinds the subject is not
        node.outcome, node.detail = NOT_MATCHED, f"the subject is a {ctx.subject.ref.kind}"
        return node
    # the engine's decision, shown with the rules and selectors it was made of
    out.append(constraints_node(policy.match_constraints, ctx))
    if matched != MATCHED:
        node.outcome = matched
        out.append(result_node(result))
        return node
    if "exceptions" in steps:
        out.append(_exceptions_node(cp, ctx, steps["exceptions"]))
        if steps["exceptions"].outcome != NOT_MATCHED:
            out.append(result_node(result))
            node.outcome = result.result if result is not None else NONE
            return node
    activation = steps["activation"].data
    out.append(conditions_node(policy.match_conditions, cp.conditions, activation, "the policy skips the request"))
    if policy.variables:
        out.append(variables_node(_compiler(cp, envs), policy.variables, activation))
    if "mutations" in steps:
        out.append(mutations_node(cp.policy.mutations, steps["mutations"].children))
    if outcome.undetermined:
        out.append(Node("admitted object", "undetermined", outcome.undetermined))
    out.append(result_node(result, "no result"))
    node.outcome = result.result if result is not None else ("undetermined" if outcome.undetermined else NONE)
    return node


def _exceptions_node(cp: CompiledMutatingPolicy, ctx: SubjectContext, recorded: Step) -> Node:
    """The PolicyExceptions naming the policy, each with its conditions' values; which counted is the engine's
    (`recorded`: its exceptions step, the ones that counted as data; engine.py exceptions_matched, Kyverno's
    quirks included: one without conditions never counts)."""
    hit = {id(e) for e in recorded.data}
    node = Node("exceptions", recorded.outcome, recorded.detail)
    for ce in cp.exceptions:
        child = Node(ce.key, MATCHED if id(ce) in hit else NOT_MATCHED)
        if not ce.conditions:
            child.detail = "no matchConditions: never counts (mpol policy.go matchExceptions)"
        activation = ctx.activation(ce.env)
        for i, (named, program) in enumerate(zip(ce.exception.match_conditions, ce.conditions)):
            value = value_node(f"matchConditions[{i}] {named.name}", program, activation)
            value.detail = one_line(named.expression)
            child.children.append(value)
        node.children.append(child)
    return node


def mutations_node(specs: Sequence[MutationSpec], recorded: Sequence[Step]) -> Node:
    """Each mutation in order with the JSON patch of what it changed, as the engine recorded it applying them
    (run_mutations), up to the first that failed."""
    node = Node("mutations", "applied")
    for i, (spec, step) in enumerate(zip(specs, recorded)):
        name = f"[{i}] {spec.patch_type}"
        if step.outcome == ERROR:
            node.children.append(Node(name, ERROR, step.detail))
            node.outcome = f"[{i}] failed"
            break
        if step.outcome == "undetermined":
            node.children.append(Node(name, "undetermined", f"sets {step.detail}, a list whose merge needs the "
                                                            "kind's schema"))
            node.outcome = f"[{i}] undetermined"
            break
        patch = step.data
        child = Node(name, "changed" if patch else "no change", one_line(spec.expression))
        child.children.extend(Node(f"{op.get('op')} {op.get('path')}", show(op["value"]) if "value" in op else "")
                              for op in patch)
        node.children.append(child)
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
