"""ValidatingPolicies with `evaluation.mode: HTTP` or `Envoy` over check requests (`httpPayloads`,
`envoyPayloads`).

As Kyverno's CLI runs them (kk: cmd/cli/kubectl-kyverno/processor/authz_processor.go with kyverno-authz
pkg/engine/compiler compiler.go, policy.go, pkg/cel/env.go):

- the environment binds `object` (the request: `http.CheckRequest` or envoy's `CheckRequest`) and
  `variables`; its libraries are Kubernetes' CEL libraries, Kyverno's `http`, `image` and `resource`,
  `jwt`/`jwks`, and the mode's own (`http.Allowed`... or `envoy.Allowed`...);
- matchConditions see `object` only; one false: no response; an error: the evaluation's error;
- validations run in order and the first that is not null is the answer: it must be the mode's
  CheckResponse (another static type is a compile error, a policy the CLI refuses to run);
- an error with failurePolicy Fail is the result; with Ignore it is as if nothing answered;
- the CLI passes no PolicyExceptions to these policies, and matchConstraints do not apply.

One result per (policy, request): `pass` "request allowed", `fail` "request denied with status code N"
(Envoy) or "request denied, reason: R" (HTTP), `skip` "request does not match" when nothing answered,
`error` with the evaluation's message. Each request is a subject named as the test names it.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_kyrec.cel.authz_envoy import CHECK_RESPONSE, envoy_authz_library
from kubectl_kyrec.cel.authz_http import RESPONSE, http_authz_library
from kubectl_kyrec.cel.authz_jwt import jwt_library
from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.engine import Environment, Program
from kubectl_kyrec.cel.environment import LibraryFactory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.evaluate.validating.json_payloads import PayloadOutcome
from kubectl_kyrec.load.policy.policies import PolicySet, ValidatingPolicy
from kubectl_kyrec.load.run_inputs.authz_requests import ENVOY, HTTP, AuthzPayload
from kubectl_kyrec.model import EvalError, Ref, Result, Subject

AUTHZ_MODES = (HTTP, ENVOY)
# Kyverno's libraries kyverno-authz's environment has too (pkg/cel/env.go NewEnv)
_SHARED_LIBRARIES = ("kyverno.http", "kyverno.image", "kyverno.imagedata", "kyverno.resource")
# the response type each mode's validations return, and its Go type as `%T` prints a nil one
_RESPONSE = {HTTP: (RESPONSE, "*http.CheckResponse"), ENVOY: (CHECK_RESPONSE, "*v3.CheckResponse")}
NO_MATCH = "request does not match"


_UID_PREFIXES = tuple(f"{mode.lower()}-payload:" for mode in AUTHZ_MODES)


def payload_subject(payload: AuthzPayload) -> Subject:
    ref = Ref("", "", "", payload.name, f"{payload.mode.lower()}-payload:{payload.name}", synthetic=True)
    return Subject(payload.obj, ref, payload.source, resource="", namespaced=False)


def is_authz_subject(subject: Subject) -> bool:
    return subject.ref.synthetic and subject.ref.uid.startswith(_UID_PREFIXES)


@dataclass(frozen=True)
class _Compiled:
    policy: ValidatingPolicy
    conditions: tuple[Program, ...]
    validations: tuple[Program, ...]


def authz_libraries(libraries: LibraryFactory, mode: str, now: datetime.datetime) -> list[Library]:
    shared = [lib for lib in libraries("ValidatingPolicy", "")
              if lib.name.startswith("kubernetes.") or lib.name in _SHARED_LIBRARIES]
    own = http_authz_library() if mode == HTTP else envoy_authz_library()
    return [*shared, own, jwt_library(now)]


def _compile(policy: ValidatingPolicy, env: Environment, check_env: Environment) -> _Compiled:
    label = policy.meta.label
    compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in policy.variables],
                              policy.meta.source, label)
    conditions = tuple(compiler.compile(m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                       for i, m in enumerate(policy.match_conditions))
    type_name = _RESPONSE[policy.mode][0]
    validations = []
    for i, v in enumerate(policy.validations):
        path = f"spec.validations[{i}].expression"
        program = compiler.compile(v.expression, path)
        if program.result_type not in ("dyn", "null"):
            # kyverno-authz compiler.go compileAuthorization checks the output type
            raise InputError(f"{label}: {path}: rule response output is expected to be of type {type_name}",
                             policy.meta.source, field=path)
        validations.append(program)
    return _Compiled(policy, conditions, tuple(validations))


def _answer(compiled: _Compiled, env: Environment, payload: AuthzPayload) -> tuple[str, str]:
    """(status, message) of one policy for one request, as processHTTPPolicy/processEnvoyPolicy say it."""
    policy = compiled.policy
    status, message = _evaluate(compiled, env, payload)
    if status == "error" and policy.failure_policy == "Ignore":
        return "skip", NO_MATCH
    return status, message


def _evaluate(compiled: _Compiled, env: Environment, payload: AuthzPayload) -> tuple[str, str]:
    # matchConditions are evaluated with `object` alone (policy.go match)
    activation = env.activation({"object": payload.obj})
    errors = []
    for program in compiled.conditions:
        outcome = program.evaluate(activation)
        if not outcome.ok:
            errors.append(str(outcome.error))
        elif outcome.value is False:
            return "skip", NO_MATCH
        elif outcome.value is not True:
            errors.append(f"type conversion error from '{type(outcome.value).__name__}' to 'bool'")
    if errors:
        return "error", "; ".join(errors)        # multierr.Combine
    type_name, go_type = _RESPONSE[compiled.policy.mode]
    for program in compiled.validations:
        outcome = program.evaluate(activation)
        if not outcome.ok:
            return "error", str(outcome.error)
        value = outcome.value
        if value is None:
            continue
        if not isinstance(value, dict) or value.get("@type") != type_name:
            return "error", f"rule result is expected to be {go_type}"
        if compiled.policy.mode == HTTP:
            if value.get("ok") is not None:
                return "pass", "request allowed"
            return "fail", f"request denied, reason: {value['denied']['reason']}"
        if "ok_response" in value:
            return "pass", "request allowed"
        return "fail", f"request denied with status code {value['denied_response']['status']['code']}"
    return "skip", NO_MATCH


def evaluate_authz_payloads(policies: PolicySet, payloads: Sequence[AuthzPayload], *,
                            libraries: LibraryFactory, now: datetime.datetime,
                            policy_names: Sequence[str] = ()) -> PayloadOutcome:
    """Every HTTP (Envoy) policy over every HTTP (Envoy) request; a policy that does not compile is an
    EvalError and gives no results."""
    out = PayloadOutcome(subjects=[payload_subject(p) for p in payloads])
    for mode in AUTHZ_MODES:
        requests = [(p, s) for p, s in zip(payloads, out.subjects) if p.mode == mode]
        chosen = [p for p in policies.validating if p.mode == mode and (
            not policy_names or p.meta.name in policy_names or p.meta.key in policy_names)]
        if not requests or not chosen:
            continue
        libs = authz_libraries(libraries, mode, now)
        env, check_env = Environment(libs, ("object",)), Environment(libs, ("object", "variables"))
        compiled = []
        for policy in chosen:
            try:
                compiled.append(_compile(policy, env, check_env))
            except InputError as exc:
                located = policies.locate(exc)
                out.errors.append(EvalError(located.message, located.source))
        for payload, subject in requests:
            ctx = SubjectContext(subject, build_request(payload.obj, resource="", namespaced=False), None,
                                 payload=True)
            for cp in compiled:
                status, message = _answer(cp, env, payload)
                out.results.append(_result(cp.policy, ctx, status, message))
    return out


def _result(policy: ValidatingPolicy, ctx: SubjectContext, status: str, message: str) -> Result:
    return make_result(policy.meta, policy.source_kind, ctx, "", status, message, {},
                       policy.validation_actions, policy.background)
