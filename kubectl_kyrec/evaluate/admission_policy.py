"""ValidatingAdmissionPolicy with its bindings, as Kyverno reports them (kk: pkg/admissionpolicy/validate.go).

The first binding whose matchResources match is used; its params come from the state per paramRef (the
API server's semantics: by name, or every object matching the selector; `parameterNotFoundAction`).
Kyverno names the rule after the policy: fail carries the validation's message (or
`failed expression: <expr>`), pass has an empty message, unmet matchConditions give
`match conditions aren't met`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.exceptions import conditions_hold
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.subject import SubjectContext
from kubectl_kyrec.evaluate.subjects import KindLookup
from kubectl_kyrec.evaluate.validating import make_result
from kubectl_kyrec.k8s.labels import matches_selector
from kubectl_kyrec.load.policies import AdmissionBinding, AdmissionPolicy, Validation
from kubectl_kyrec.model import Document, Result

SOURCE = "ValidatingAdmissionPolicy"


@dataclass(frozen=True)
class CompiledAdmissionPolicy:
    policy: AdmissionPolicy
    bindings: tuple[AdmissionBinding, ...]
    env: Environment
    conditions: tuple[Program, ...]
    validations: tuple[tuple[Validation, Program, Program | None], ...]


def compile_admission_policies(policies: Sequence[AdmissionPolicy], bindings: Sequence[AdmissionBinding],
                               envs: Environments) -> list[CompiledAdmissionPolicy]:
    env, check_env = envs.get("ValidatingAdmissionPolicy")
    out = []
    for policy in policies:
        compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in policy.variables],
                                  policy.meta.source, f"ValidatingAdmissionPolicy {policy.meta.name!r}")
        conditions = tuple(compiler.compile(m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                           for i, m in enumerate(policy.match_conditions))
        validations = tuple(
            (v, compiler.compile(v.expression, f"spec.validations[{i}].expression", ("bool",)),
             compiler.compile(v.message_expression, f"spec.validations[{i}].messageExpression", ("string",))
             if v.message_expression else None)
            for i, v in enumerate(policy.validations))
        mine = tuple(b for b in bindings if b.policy_name == policy.meta.name)
        out.append(CompiledAdmissionPolicy(policy, mine, env, conditions, validations))
    return out


def _params(cp: CompiledAdmissionPolicy, binding: AdmissionBinding, ctx: SubjectContext,
            state: Sequence[Document], kinds: KindLookup) -> tuple[list[Any] | None, str | None]:
    """The param objects to evaluate with; (None, None) means "no params needed"."""
    kind = cp.policy.param_kind
    if kind is None:
        return None, None
    ref = binding.param_ref
    if ref is None:
        return [], "failed to configure binding: paramKind is set but the binding has no paramRef"
    info = kinds.by_kind(kind.api_version, kind.kind)
    namespaced = bool(info.namespaced) if info is not None else True
    namespace = ref.namespace or (ctx.request.namespace if namespaced else "")
    found = []
    for doc in state:
        if doc.api_version != kind.api_version or doc.kind != kind.kind:
            continue
        if namespaced and doc.namespace != namespace:
            continue
        if ref.name:
            if doc.name == ref.name:
                found.append(doc.obj)
        elif matches_selector(ref.selector or {}, (doc.obj.get("metadata") or {}).get("labels") or {}):
            found.append(doc.obj)
    if not found and ref.not_found_action != "Allow":
        return [], "no params found for policy binding with `Deny` parameterNotFoundAction"
    return found, None


def evaluate_admission(cp: CompiledAdmissionPolicy, ctx: SubjectContext, *, state: Sequence[Document],
                       kinds: KindLookup) -> list[Result]:
    meta = cp.policy.meta
    try:
        if not matches_constraints(cp.policy.match_constraints, ctx.request, ctx.namespace_obj):
            return []
    except MatchError:
        return []
    binding = None
    for candidate in cp.bindings:
        try:
            if candidate.match_resources is None or matches_constraints(candidate.match_resources, ctx.request,
                                                                        ctx.namespace_obj):
                binding = candidate
                break
        except MatchError:
            continue
    if binding is None:
        return []
    actions = binding.validation_actions or ("Deny",)

    def result(status: str, message: str) -> Result:
        return make_result(meta, SOURCE, ctx, meta.name, status, message, {"binding": binding.meta.name},
                           actions, True, binding=binding.meta.name)

    params, error = _params(cp, binding, ctx, state, kinds)
    if error is not None:
        return [result("error", error)]
    if params == []:
        return []       # parameterNotFoundAction: Allow
    for param in (params if params is not None else [None]):
        outcome = _validate(cp, ctx, param)
        if outcome is not None:
            return [result(*outcome)]
    return [result("pass", "")]


def _validate(cp: CompiledAdmissionPolicy, ctx: SubjectContext, param: Any) -> tuple[str, str] | None:
    activation = ctx.activation(cp.env, extra={"params": param})
    ok, error = conditions_hold(cp.conditions, activation, cp.policy.failure_policy == "Ignore")
    if error is not None:
        return "error", f"failed to evaluate match conditions: {error}"
    if not ok:
        return "skip", "match conditions aren't met"
    for validation, program, message_program in cp.validations:
        outcome = program.evaluate(activation)
        if not outcome.ok:
            return "error", f"expression '{validation.expression}' resulted in error: {outcome.error}"
        if outcome.value is True:
            continue
        message = validation.message or f"failed expression: {validation.expression.strip()}"
        if message_program is not None:
            m = message_program.evaluate(activation)
            if m.ok and isinstance(m.value, str) and m.value.strip():
                message = m.value
        return "fail", message
    return None
