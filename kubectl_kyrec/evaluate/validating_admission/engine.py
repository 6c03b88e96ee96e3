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
from kubectl_kyrec.cel.engine import Activation, Environment, Outcome, Program
from kubectl_kyrec.cel.environment import Environments
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
    validations_node,
    variables_node,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.k8s.labels import matches_selector
from kubectl_kyrec.load.policy.policies import AdmissionBinding, AdmissionPolicy
from kubectl_kyrec.load.policy.vocabulary import MatchResources, Validation
from kubectl_kyrec.model import Document, Result
from kubectl_kyrec.recording import Step, Trace

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
    compiler: PolicyCompiler        # the policy's, for the values explain shows beside a decision



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
        out.append(CompiledAdmissionPolicy(policy, mine, env, conditions, validations, compiler))
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


def _matches(constraints: MatchResources | None, ctx: SubjectContext, recorder: Trace | None,
             binding: bool = False) -> bool:
    """The policy's matchConstraints (None matches nothing) or a binding's matchResources (None matches
    everything); a MatchError is no match, logged and skipped by both paths. Recorded with the rules and
    selectors the decision was made of."""
    matched, error = binding, ""
    if constraints is not None:
        try:
            matched = matches_constraints(constraints, ctx.request, ctx.namespace_obj)
        except MatchError as exc:
            matched, error = False, f"failed to execute matching: {exc}"
    if recorder is not None:
        decided = (ERROR, error) if error else (MATCHED if matched else NOT_MATCHED, request_text(ctx.request))
        recorder.node(constraints_node(constraints, ctx, "matchResources", "none: matches everything",
                                       decided=decided)
                      if binding else constraints_node(constraints, ctx, decided=decided))
    return matched


def evaluate_admission(cp: CompiledAdmissionPolicy, ctx: SubjectContext, *, state: Sequence[Document],
                       kinds: KindLookup, runner: VapRunner = VapRunner.SCAN,
                       params: Sequence[Document] = (), recorder: Trace | None = None) -> list[Result]:
    """`state` is the cluster the scan reads params from; `params` the test's paramResources (CLI).

    `recorder` (explain's): the explain nodes of the request evaluated, the policy's matchConstraints, each
    binding evaluated (its matchResources, params and evaluation), then the result."""
    meta = cp.policy.meta
    if recorder is not None and ctx.request.operation != "CREATE":
        recorder.add("request", "CREATE", f"Kyverno evaluates a {meta.kind} as a CREATE, whatever the operation "
                                          f"({ctx.request.operation})")
    ctx = as_create(ctx)
    if not cp.bindings or runner is VapRunner.SCAN:
        if not _matches(cp.policy.match_constraints, ctx, recorder):
            if recorder is not None:
                recorder.node(result_node(None))
            return []
    elif recorder is not None:
        recorder.add("matchConstraints", "not checked", "Kyverno's CLI checks only the bindings' matchResources "
                                                        "when the policy has bindings")
    out = _evaluate_bindings(cp, ctx, state, kinds, runner, params, recorder)
    if recorder is not None:
        recorder.node(result_node(out[0] if out else None, "no result"))
    return out


def _result(cp: CompiledAdmissionPolicy, ctx: SubjectContext, status: str, message: str,
            binding: AdmissionBinding | None) -> Result:
    meta = cp.policy.meta
    if binding is None:
        return make_result(meta, SOURCE, ctx, meta.name, status, message, {}, ("Deny",), True)
    return make_result(meta, SOURCE, ctx, meta.name, status, message, {"binding": binding.meta.name},
                       binding.validation_actions or ("Deny",), True, binding=binding.meta.name)


def _evaluate_bindings(cp: CompiledAdmissionPolicy, ctx: SubjectContext, state: Sequence[Document],
                       kinds: KindLookup, runner: VapRunner, params: Sequence[Document],
                       recorder: Trace | None) -> list[Result]:
    if not cp.bindings:
        if recorder is not None:
            recorder.add("bindings", NONE, "the policy is evaluated on its own")
        return [_result(cp, ctx, *_validate(cp, ctx, None, recorder), None)]
    bindings = recorder.open("bindings", "each matching binding is evaluated; the last one's answer stands") \
        if recorder is not None else None
    out: list[Result] = []
    for binding in cp.bindings:
        actions = ", ".join(binding.validation_actions or ("Deny",))
        step = recorder.open(f"binding {binding.meta.name}", f"validationActions {actions}") \
            if recorder is not None else None
        if not _matches(binding.match_resources, ctx, recorder, binding=True):
            if recorder is not None and step is not None:
                recorder.close(step, NOT_MATCHED)
            continue
        if runner is VapRunner.SCAN:
            param, ok = scan_params(cp, binding, ctx, state, kinds)
        else:
            param, ok = cli_params(binding, params), True
        if recorder is not None and step is not None and (ref := binding.param_ref) is not None:
            how = (f"name {ref.name!r}" if ref.name else f"selector {show(dict(ref.selector or {}))}") + \
                  (f" in namespace {ref.namespace!r}" if ref.namespace else "")
            found = f"; {param.get('kind')} {(param.get('metadata') or {}).get('name')}" \
                if isinstance(param, dict) and "metadata" in param else ""
            if ok:
                recorder.add("params", "found" if param is not None else "null", f"paramRef {how}{found}")
            else:
                recorder.add("params", "not found", f"paramRef {how}: the scan stops here, with the answer it had")
        if not ok:
            if recorder is not None and step is not None:
                recorder.close(step, "stopped")
            break           # the scan returns the answer it had so far
        out = [_result(cp, ctx, *_validate(cp, ctx, param, recorder), binding)]
        if recorder is not None and step is not None:
            recorder.close(step, "evaluated")
    if recorder is not None and bindings is not None:
        recorder.close(bindings, "")
    return out


def _validate(cp: CompiledAdmissionPolicy, ctx: SubjectContext, param: Any,
              recorder: Trace | None = None) -> tuple[str, str]:
    activation = ctx.activation(cp.env, extra={"params": param})
    policy = cp.policy
    if recorder is not None:
        recorder.node(conditions_node(policy.match_conditions, cp.conditions, activation,
                                      "the policy skips the subject"))
        if policy.variables:
            recorder.node(variables_node(cp.compiler, policy.variables, activation))
    ok, error = conditions_hold(cp.conditions, activation, policy.failure_policy == "Ignore")
    if error is not None:
        return "error", f"failed to evaluate match conditions: {error}"
    if not ok:
        return "skip", "match conditions aren't met"
    for index, (validation, program, message_program) in enumerate(cp.validations):
        outcome = program.evaluate(activation)
        if recorder is not None and outcome.value is not True:
            recorder.node(_validations(cp, activation, (index, outcome)))
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
        recorder.node(_validations(cp, activation, None))
    return "pass", ""


def _validations(cp: CompiledAdmissionPolicy, activation: Activation, unmet: tuple[int, Outcome] | None) -> Step:
    return validations_node([v for v, _, _ in cp.validations], cp.compiler, activation, unmet)
