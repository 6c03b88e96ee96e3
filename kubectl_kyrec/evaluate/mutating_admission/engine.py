"""MutatingAdmissionPolicy with its bindings and params: Kubernetes' in-tree mutating admission, and the
way Kyverno's CLI runs it.

In a cluster (k8s.io/apiserver pkg/admission/plugin/policy/mutating, dispatcher.go dispatchInvocations;
generic/policy_source.go): only a policy with a binding is applied, once per binding that matches (the
policy's matchConstraints and the binding's matchResources), with the binding's params; its
matchConditions, then its mutations in order, each on the previous output (the same patchers as
MutatingPolicy: patch/json_patch.go, patch/smd.go, merged with the kind's schema). The policies come from a
Go map (policy_source.go `policiesToBindings`), so their order is not fixed: where it matters the step
is ORDER_DEPENDENT. failurePolicy Fail makes an error a rejection, Ignore drops it.

Kyverno's CLI (pkg/admissionpolicy/mutate.go Mutate, used by `kyverno test` and so `kyrec test`) differs:
a policy without bindings is applied when its matchConstraints match; with bindings, the policy's
matchConstraints are not looked at, each binding whose matchResources match (or that has none) mutates
the resource as it was when the policy started (the attributes record is built once), and the last
binding's response is the policy's; merges use the deduced type converter (a list is replaced whole,
nothing is refused as atomic); a patch error gives an empty response; params are the test's
paramResources (matchesSelector).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import CompileError, Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.typed_objects import rewrite_typed_literals
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.admission_chain import (
    NEEDS_SCHEMA,
    ORDER_DEPENDENT,
    MutationStep,
    Reinvocation,
    mutation_of,
)
from kubectl_kyrec.evaluate.exceptions import conditions_hold
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NONE,
    NOT_MATCHED,
    conditions_node,
    constraints_node,
    request_text,
    result_node,
    show,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.mutating.engine import (
    CompiledMutation,
    MutationFailure,
    compile_mutation,
    run_mutations,
    with_object,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.k8s.labels import SelectorError, matches_selector
from kubectl_kyrec.k8s.structured_merge import NeedsSchema
from kubectl_kyrec.load.policy.mutating import MutatingAdmissionBinding, MutatingAdmissionPolicy
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import Document, Obj, Result
from kubectl_kyrec.recording import Step, Trace

SOURCE = "MutatingAdmissionPolicy"
KIND = "MutatingAdmissionPolicy"


@dataclass(frozen=True)
class CompiledMutatingAdmissionPolicy:
    policy: MutatingAdmissionPolicy
    env: Environment
    conditions: tuple[Program, ...]
    mutations: tuple[CompiledMutation, ...]
    bindings: tuple[MutatingAdmissionBinding, ...]


def _compile(compiler: PolicyCompiler, text: str, path: str, expect: tuple[str, ...] = ()) -> Program:
    try:
        rewritten = rewrite_typed_literals(text)
    except CompileError as exc:
        raise compiler._error(path, exc.message, exc.line, exc.column) from None
    return compiler.compile(rewritten, path, expect)


def compile_mutating_admission_policy(policy: MutatingAdmissionPolicy, bindings: Sequence[MutatingAdmissionBinding],
                                      envs: Environments) -> CompiledMutatingAdmissionPolicy:
    env, check_env = envs.get(KIND)
    label = policy.meta.label
    variables = [VariableDecl(v.name, rewrite_typed_literals(v.expression)) for v in policy.variables]
    compiler = PolicyCompiler(env, check_env, variables, policy.meta.source, label)
    conditions = tuple(_compile(compiler, m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                       for i, m in enumerate(policy.match_conditions))
    mutations = []
    for i, m in enumerate(policy.mutations):
        field_name = "applyConfiguration" if m.patch_type == "ApplyConfiguration" else "jsonPatch"
        mutations.append(compile_mutation(m.patch_type, _compile(compiler, m.expression,
                                                                 f"spec.mutations[{i}].{field_name}.expression"),
                                          m.expression))
    own = tuple(b for b in bindings if b.policy_name == policy.meta.name)
    return CompiledMutatingAdmissionPolicy(policy, env, conditions, tuple(mutations), own)


def cli_param(binding: MutatingAdmissionBinding, params: Sequence[Document]) -> Any:
    """mutate.go processMAPWithoutClient / matchesSelector: with a selector, every paramResource whose
    labels it selects, as a list (`params.items`); without, the first whose namespace, then name, match
    (the name decides when both are set); None when none does."""
    ref = binding.param_ref
    if ref is None:
        return None
    items = []
    for doc in params:
        obj = doc.obj
        meta = obj.get("metadata") or {}
        if ref.selector is not None:
            try:
                if matches_selector(ref.selector, meta.get("labels") or {}):
                    items.append(dict(obj))
            except SelectorError:
                continue
            continue
        matches = False
        if ref.namespace:
            matches = (meta.get("namespace") or "") == ref.namespace
        if ref.name:
            matches = (meta.get("name") or "") == ref.name
        if matches:
            return dict(obj)
    return {"apiVersion": "v1", "kind": "List", "items": items} if items else None


@dataclass
class _Response:
    """One policy's response in the CLI: its result, and the resource it carries."""

    result: Result | None = None
    obj: Obj | None = None


class MutatingAdmissionEngine:
    """The MutationEngine of the run's MutatingAdmissionPolicies; `in_cli` runs them as Kyverno's CLI
    does (module docstring), else as the API server does."""

    def __init__(self, compiled: Sequence[CompiledMutatingAdmissionPolicy], *, params: Sequence[Document] = (),
                 in_cli: bool = False) -> None:
        self.compiled = tuple(compiled)
        self.params = tuple(params)
        self.in_cli = in_cli
        # per policy name, the resource its last response carried (the CLI's PatchedResource)
        self.last_outputs: dict[str, Obj] = {}

    # its mutate takes explain's recorder (AdmissionChain.traces)
    records = True

    def mutate(self, ctx: SubjectContext, recorder: Trace | None = None) -> MutationStep:
        """`recorder` (explain's, on the API server's path): the run in load order, whose results the step
        holds, is recorded (cluster_in_order; the other orders tried are not)."""
        self.last_outputs = {}
        if self.in_cli:
            return self._cli(ctx)
        return self._cluster(ctx, recorder)

    # --- Kyverno's CLI ---------------------------------------------------------------------------------

    def _cli(self, ctx: SubjectContext) -> MutationStep:
        step = MutationStep(ctx.request.obj)
        for cp in self.compiled:
            response = self._cli_policy(cp, ctx)
            if response.result is None:
                continue            # an empty response: policy_processor.go skips it
            step.results.append(response.result)
            if response.obj is not None:
                mutation = mutation_of(cp.policy.meta.name, KIND, "", ctx.request.obj, response.obj,
                                       cp.policy.meta.source)
                if mutation is not None:
                    step.mutations.append(mutation)
                self.last_outputs[cp.policy.meta.name] = response.obj
                ctx = with_object(ctx, response.obj)
                step.obj = response.obj
            elif ctx.request.obj is not None:
                self.last_outputs[cp.policy.meta.name] = dict(ctx.request.obj)
        return step

    def _cli_policy(self, cp: CompiledMutatingAdmissionPolicy, ctx: SubjectContext) -> _Response:
        if not cp.bindings:
            try:
                if not matches_constraints(cp.policy.match_constraints, ctx.request, ctx.namespace_obj):
                    return _Response()
            except MatchError:
                return _Response()
            return self._cli_mutate(cp, None, ctx, None) or _Response()
        response = _Response()
        for binding in cp.bindings:
            if binding.match_resources is not None:
                try:
                    if not matches_constraints(binding.match_resources, ctx.request, ctx.namespace_obj):
                        continue
                except MatchError:
                    continue
            outcome = self._cli_mutate(cp, binding, ctx, cli_param(binding, self.params))
            if outcome is not None:
                response = outcome
        return response

    def _cli_mutate(self, cp: CompiledMutatingAdmissionPolicy, binding: MutatingAdmissionBinding | None,
                    ctx: SubjectContext, param: Any) -> _Response | None:
        """mutate.go mutateResource: None where it returns an error (the caller keeps what it had)."""
        # the match conditions see no namespace object (matcher.Match(..., nil, nil))
        bare = SubjectContext(ctx.subject, ctx.request, None)
        activation = bare.activation(cp.env, extra={"params": param})
        ok, error = conditions_hold(cp.conditions, activation, cp.policy.failure_policy == "Ignore")
        if error is not None:
            return None
        if not ok:
            return _Response(self._result(cp, ctx, binding, "skip", "match conditions aren't met"))
        try:
            obj = run_mutations(cp.mutations, cp.env, ctx, {"params": param}, deduced=True)
        except (MutationFailure, NeedsSchema):
            return _Response()          # `return engineResponse, nil`: a response with no rule
        return _Response(self._result(cp, ctx, binding, "pass", "mutation is successfully applied"), obj)

    def _result(self, cp: CompiledMutatingAdmissionPolicy, ctx: SubjectContext,
                binding: MutatingAdmissionBinding | None, status: str, message: str) -> Result:
        meta = cp.policy.meta
        if binding is None:
            return make_result(meta, SOURCE, ctx, meta.name, status, message, {}, (), True)
        return make_result(meta, SOURCE, ctx, meta.name, status, message, {"binding": binding.meta.name}, (),
                           True, binding=binding.meta.name)

    # --- the API server ------------------------------------------------------------------------------------

    def _cluster(self, ctx: SubjectContext, recorder: Trace | None) -> MutationStep:
        step = self.cluster_in_order(self.compiled, ctx, recorder)
        step.reinvocation = self._reinvocation(step)
        changed = [cp for cp in self.compiled if any(m.policy == cp.policy.meta.name for m in step.mutations)]
        if len(changed) > 1:
            others = [cp for cp in self.compiled if cp not in changed]
            differing: set[str] = set()
            for order in list(itertools.permutations(changed))[1:24]:
                if self.cluster_in_order([*order, *others], ctx).obj != step.obj:
                    differing.update(cp.policy.meta.name for cp in order)
            if differing:
                step.undetermined.append(
                    f"{ORDER_DEPENDENT}: MutatingAdmissionPolicies {', '.join(sorted(differing))} give different "
                    "objects in different orders, and the API server applies them in Go map order")
        return step

    def _reinvocation(self, step: MutationStep) -> Reinvocation:
        """The plugin's second run in the API server's reinvocation round (policy/mutating/dispatcher.go
        dispatchInvocations): only the invocations (policy and binding) that mutated in the first run and
        whose policy says reinvocationPolicy IfNeeded, each matched again on the object as it is then. All
        of them, not only those a later mutation followed: once any invocation patched the object, the
        versioned attributes are Dirty and the dispatcher marks every earlier IfNeeded invocation for
        reinvocation (and the chain reinvokes only when some stage changed the object)."""
        ran = {(r.policy, r.binding) for r in step.results if r.result == "pass"}  # policy: its key
        again = []
        for cp in self.compiled:
            if cp.policy.reinvocation_policy != "IfNeeded":
                continue
            bindings = tuple(b for b in cp.bindings if (cp.policy.meta.key, b.meta.name) in ran)
            if bindings:
                again.append(replace(cp, bindings=bindings))
        return Reinvocation(lambda ctx: self.cluster_in_order(again, ctx), webhook=False)

    def cluster_in_order(self, compiled: Sequence[CompiledMutatingAdmissionPolicy], ctx: SubjectContext,
                         recorder: Trace | None = None) -> MutationStep:
        """`recorder`: a tree per policy (Trace.tree): its matchConstraints, then each binding, as it saw the
        request, ending in the binding's result."""
        step = MutationStep(ctx.request.obj)
        for cp in compiled:
            tree = None
            if recorder is not None:
                meta = cp.policy.meta
                tree = recorder.tree(f"{meta.kind} {meta.key}", (meta, ctx.subject.ref, []))
            try:
                if not matches_constraints(cp.policy.match_constraints, ctx.request, ctx.namespace_obj):
                    if recorder is not None:
                        recorder.node(constraints_node(cp.policy.match_constraints, ctx,
                                                       decided=(NOT_MATCHED, request_text(ctx.request))))
                        recorder.node(result_node(None))
                    continue
            except MatchError as exc:
                if recorder is not None:
                    recorder.node(constraints_node(cp.policy.match_constraints, ctx,
                                                   decided=(ERROR, f"failed to execute matching: {exc}")))
                    recorder.node(result_node(None))
                continue
            if recorder is not None:
                recorder.node(constraints_node(cp.policy.match_constraints, ctx,
                                               decided=(MATCHED, request_text(ctx.request))))
                if not cp.bindings:
                    recorder.add("bindings", NONE, "the API server applies a policy only through its bindings")
                    recorder.node(result_node(None))
                else:
                    recorder.open("bindings", "each matching binding mutates the object the previous one made")
            for binding in cp.bindings:
                node = recorder.open(f"binding {binding.meta.name}") if recorder is not None else None
                result, obj = self._cluster_binding(cp, binding, ctx, step, recorder)
                if recorder is not None and node is not None and tree is not None:
                    # the binding's first node is its matchResources: past it, the binding ends in its result
                    said = node.children[0].outcome
                    if said == MATCHED:
                        recorder.node(result_node(result, "no result"))
                        said = result.result if result is not None else NONE
                    recorder.close(node, said)
                    if result is not None:
                        tree.data[2].append(result)
                if result is not None:
                    step.results.append(result)
                if obj is not None:
                    ctx = with_object(ctx, obj)
                    step.obj = obj
        return step

    def _cluster_binding(self, cp: CompiledMutatingAdmissionPolicy, binding: MutatingAdmissionBinding,
                         ctx: SubjectContext, step: MutationStep, recorder: Trace | None
                         ) -> tuple[Result | None, Obj | None]:
        """One binding of a policy whose matchConstraints match: its result (None when it gives none) and
        the object after its mutations (None when it did not mutate); its mutation and undetermined
        reason go to `step`."""
        try:
            if binding.match_resources is not None and not matches_constraints(
                    binding.match_resources, ctx.request, ctx.namespace_obj):
                if recorder is not None:
                    recorder.node(constraints_node(binding.match_resources, ctx, "matchResources",
                                                   decided=(NOT_MATCHED, request_text(ctx.request))))
                return None, None
        except MatchError as exc:
            if recorder is not None:
                recorder.node(constraints_node(binding.match_resources, ctx, "matchResources",
                                               decided=(ERROR, f"failed to execute matching: {exc}")))
            return None, None
        if recorder is not None:
            recorder.node(constraints_node(binding.match_resources, ctx, "matchResources",
                                           decided=(MATCHED, request_text(ctx.request)))
                          if binding.match_resources is not None else
                          Step("matchResources", MATCHED, "none: matches everything"))
        param = cli_param(binding, self.params) if binding.param_ref is not None else None
        if recorder is not None and binding.param_ref is not None:
            recorder.node(_params_node(binding, param))
        if binding.param_ref is not None and param is None and binding.param_ref.not_found_action == "Deny":
            return self._result(cp, ctx, binding, "error", "no params found for policy binding with `Deny` "
                                                           "parameterNotFoundAction"), None
        activation = ctx.activation(cp.env, extra={"params": param})
        if recorder is not None:
            recorder.node(conditions_node(cp.policy.match_conditions, cp.conditions, activation,
                                          "the binding is skipped"))
        ok, error = conditions_hold(cp.conditions, activation, cp.policy.failure_policy == "Ignore")
        if error is not None:
            return self._result(cp, ctx, binding, "error", error), None
        if not ok:
            return None, None
        before = ctx.request.obj
        try:
            obj = run_mutations(cp.mutations, cp.env, ctx, {"params": param}, recorder=recorder)
        except MutationFailure as exc:
            if cp.policy.failure_policy == "Fail":
                return self._result(cp, ctx, binding, "error", str(exc)), None
            return None, None
        except NeedsSchema as exc:
            step.undetermined.append(f"{NEEDS_SCHEMA}: MutatingAdmissionPolicy {cp.policy.meta.name!r} "
                                     f"sets {exc.path}, {exc.reason}")
            return None, None
        mutation = mutation_of(cp.policy.meta.name, KIND, binding.meta.name, before, obj, cp.policy.meta.source)
        if mutation is not None:
            step.mutations.append(mutation)
        return self._result(cp, ctx, binding, "pass", "mutation is successfully applied"), obj


def _params_node(binding: MutatingAdmissionBinding, param: Any) -> Step:
    """A binding's paramRef and what it found."""
    ref = binding.param_ref
    assert ref is not None
    how = (f"name {ref.name!r}" if ref.name else f"selector {show(dict(ref.selector or {}))}") + \
          (f" in namespace {ref.namespace!r}" if ref.namespace else "")
    found = (f"; {param.get('kind')} {(param.get('metadata') or {}).get('name')}"
             if isinstance(param, dict) and "metadata" in param else "")
    action = f"; parameterNotFoundAction {ref.not_found_action}" if ref.not_found_action else ""
    return Step("params", "found" if param is not None else "not found", f"paramRef {how}{found}{action}")


def mutating_admission_engine(policies: PolicySet, envs: Environments, *, params: Sequence[Document] = (),
                              selection: Selection | None = None, in_cli: bool = False
                              ) -> tuple[MutatingAdmissionEngine | None, list[InputError]]:
    """The engine of the run's MutatingAdmissionPolicies (None without any), with the errors of those that
    do not compile (located at file:line; the others still run). `params`: the objects a binding's
    paramRef selects from (the test's paramResources, or the cluster state's)."""
    compiled: list[CompiledMutatingAdmissionPolicy] = []
    errors: list[InputError] = []
    for policy in policies.mutating_admission:
        if selection is not None and not selection.holds_policy(policy.meta.key):
            continue
        try:
            compiled.append(compile_mutating_admission_policy(policy, policies.mutating_bindings, envs))
        except InputError as exc:
            errors.append(policies.locate(exc))
    if not compiled:
        return None, errors
    return MutatingAdmissionEngine(compiled, params=params, in_cli=in_cli), errors

