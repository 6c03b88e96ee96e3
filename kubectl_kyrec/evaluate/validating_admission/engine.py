"""ValidatingAdmissionPolicy with its bindings, as Kyverno evaluates them (kk: pkg/admissionpolicy/validate.go).

Kyverno has two paths, and they disagree; `VapRunner` picks one:

- SCAN (kyrec's default; the background scan, `processVAPWithClient`): the policy's matchConstraints are
  checked first (rules need `operations`, as in the API server), then every binding in order; each
  matching binding (no matchResources matches everything) is evaluated and the **last** one's answer
  stands. Params come from the cluster (`CollectParams`): by name, or every object matching the selector,
  in paramRef.namespace else the object's namespace; a missing param (or a namespaced paramKind for a
  cluster-scoped object) is an error the scan only logs, so the policy gives no result.
- CLI (`kyverno test`, `processVAPWithoutClient`): the policy's matchConstraints are **not** checked when
  it has bindings, only each binding's matchResources (Kyverno's CEL matcher); params are the test's
  paramResources (selector: every object whose labels match; else the first one with the referenced
  name), and none found evaluates with `params` null.

Both: a policy without bindings is evaluated when its matchConstraints match (`processVAPNoBindings`);
the request is always a CREATE without oldObject; validationActions do not change the result. The rule is
named after the policy: fail carries the validation's message (or `failed expression: <expr>`), pass
has an empty message, unmet matchConditions give skip `match conditions aren't met`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.exceptions import conditions_hold
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.k8s.labels import matches_selector
from kubectl_kyrec.load.policy.policies import AdmissionBinding, AdmissionPolicy
from kubectl_kyrec.load.policy.vocabulary import Validation
from kubectl_kyrec.model import Document, Result
from kubectl_kyrec.recording import Trace

SOURCE = "ValidatingAdmissionPolicy"


class VapRunner(enum.Enum):
    SCAN = "scan"   # Kyverno's background scan (reports); kyrec's default
    CLI = "cli"     # Kyverno's CLI (`kyverno test`): `kyrec test --compat kyverno`


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
                                  policy.meta.source, policy.meta.label)
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


def _param_kind_namespaced(cp: CompiledAdmissionPolicy, kinds: KindLookup) -> bool:
    kind = cp.policy.param_kind
    info = kinds.by_kind(kind.api_version, kind.kind) if kind is not None else None
    return bool(info.namespaced) if info is not None else True


def _doc_namespace(doc: Document, namespaced: bool) -> str:
    # a namespaced manifest without a namespace is in `default`, where `kubectl apply` puts it
    return (doc.namespace or "default") if namespaced else ""


def _as_list(found: list[Any]) -> Any:
    # several params (a selector) reach CEL as one UnstructuredList: only `items` is set
    return {"items": found}


def scan_params(cp: CompiledAdmissionPolicy, binding: AdmissionBinding, ctx: SubjectContext,
                 state: Sequence[Document], kinds: KindLookup) -> tuple[Any, bool]:
    """CollectParams (kk: pkg/admissionpolicy/utils.go): (params, ok); not ok = the scan's logged error."""
    kind = cp.policy.param_kind
    ref = binding.param_ref
    if kind is None or ref is None:
        return None, True
    namespaced = _param_kind_namespaced(cp, kinds)
    if namespaced:
        namespace = ref.namespace or ctx.request.namespace
        if not namespace:
            return None, False      # can't use namespaced paramRef to match cluster-scoped resources
    elif ref.namespace:
        return None, False          # paramRef.namespace must not be provided for a cluster-scoped paramKind
    else:
        namespace = ""
    candidates = [d for d in state if d.api_version == kind.api_version and d.kind == kind.kind
                  and _doc_namespace(d, namespaced) == namespace]
    if ref.name:
        named = [d.obj for d in candidates if d.name == ref.name]
        return (named[0], True) if named else (None, False)     # GetResource: not found is an error
    if ref.selector is None:
        return None, False
    found = [d.obj for d in candidates
             if matches_selector(ref.selector, (d.obj.get("metadata") or {}).get("labels") or {})]
    if not found:
        # Deny: "no params found"; Allow (or unset): params[0] on an empty list, which the scan does not
        # survive either; the API server would admit. No result in both cases.
        return None, False
    return (found[0] if len(found) == 1 else _as_list(found)), True


def cli_params(binding: AdmissionBinding, params: Sequence[Document]) -> Any:
    """processVAPWithoutClient: the test's paramResources, whatever the paramKind."""
    ref = binding.param_ref
    if ref is None:
        return None
    if ref.selector is not None:
        found = [d.obj for d in params
                 if matches_selector(ref.selector, (d.obj.get("metadata") or {}).get("labels") or {})]
        return _as_list(found) if found else None
    for doc in params:
        # matchesSelector (kk: pkg/admissionpolicy/mutate.go): a name, when set, decides alone
        if (ref.name and doc.name == ref.name) or (not ref.name and ref.namespace and doc.namespace == ref.namespace):
            return doc.obj
    return None


def as_create(ctx: SubjectContext) -> SubjectContext:
    """Kyverno builds the admission attributes as a CREATE (no oldObject) whatever the test's operation."""
    req = ctx.request
    if req.operation == "CREATE":
        return ctx
    subject = ctx.subject
    request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced,
                            operation="CREATE", user_info=req.user_info)
    return SubjectContext(subject, request, ctx.namespace_obj)


def binding_matches(binding: AdmissionBinding, ctx: SubjectContext) -> bool:
    try:
        return binding.match_resources is None or matches_constraints(binding.match_resources, ctx.request,
                                                                      ctx.namespace_obj)
    except MatchError:
        return False        # logged and skipped by both paths


def evaluate_admission(cp: CompiledAdmissionPolicy, ctx: SubjectContext, *, state: Sequence[Document],
                       kinds: KindLookup, runner: VapRunner = VapRunner.SCAN,
                       params: Sequence[Document] = (), recorder: Trace | None = None) -> list[Result]:
    """`state` is the cluster the scan reads params from; `params` the test's paramResources (CLI).

    `recorder` (explain's): the request evaluated and the policy's matchConstraints, then each binding
    evaluated as a rule (policy key, binding name) with its matchResources, params and evaluation steps."""
    meta = cp.policy.meta
    ctx = as_create(ctx)
    if recorder is not None:
        recorder.add("request", "", data=ctx)

    def result(status: str, message: str, binding: AdmissionBinding | None) -> Result:
        if binding is None:
            return make_result(meta, SOURCE, ctx, meta.name, status, message, {}, ("Deny",), True)
        return make_result(meta, SOURCE, ctx, meta.name, status, message, {"binding": binding.meta.name},
                           binding.validation_actions or ("Deny",), True, binding=binding.meta.name)

    if not cp.bindings or runner is VapRunner.SCAN:
        try:
            matched = matches_constraints(cp.policy.match_constraints, ctx.request, ctx.namespace_obj)
        except MatchError:
            matched = False
        if recorder is not None:
            recorder.add("matchConstraints", "matched" if matched else "not matched")
        if not matched:
            return []
    if not cp.bindings:
        return [result(*_validate(cp, ctx, None, recorder), None)]
    out: list[Result] = []
    for binding in cp.bindings:
        if recorder is not None:
            recorder.rule(meta.key, binding.meta.name)
        matched = binding_matches(binding, ctx)
        if recorder is not None:
            recorder.add("matchResources", "matched" if matched else "not matched")
        if not matched:
            continue
        if runner is VapRunner.SCAN:
            param, ok = scan_params(cp, binding, ctx, state, kinds)
            if recorder is not None:
                recorder.add("params", "found" if ok else "not found", data=param)
            if not ok:
                return out          # the scan returns the answer it had so far
        else:
            param = cli_params(binding, params)
            if recorder is not None:
                recorder.add("params", "found", data=param)
        out = [result(*_validate(cp, ctx, param, recorder), binding)]
    return out


def _validate(cp: CompiledAdmissionPolicy, ctx: SubjectContext, param: Any,
              recorder: Trace | None = None) -> tuple[str, str]:
    activation = ctx.activation(cp.env, extra={"params": param})
    if recorder is not None:
        recorder.add("activation", "", data=activation)
    ok, error = conditions_hold(cp.conditions, activation, cp.policy.failure_policy == "Ignore")
    if error is not None:
        return "error", f"failed to evaluate match conditions: {error}"
    if not ok:
        return "skip", "match conditions aren't met"
    for index, (validation, program, message_program) in enumerate(cp.validations):
        outcome = program.evaluate(activation)
        if recorder is not None and outcome.value is not True:
            recorder.add("validations", "", data=(index, outcome))
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
    if recorder is not None:
        recorder.add("validations", "", data=None)
    return "pass", ""
