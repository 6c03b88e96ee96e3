"""JSON-mode ValidatingPolicies over JSON payloads (docs/semantics/validating.md#json-http-and-envoy-modes).

Kyverno evaluates a policy with `evaluation.mode: JSON` against any JSON document: `object` is the payload
and `variables` the policy's variables; there is no request, oldObject or namespaceObject, no
matchConstraints and no auditAnnotations, while matchConditions and PolicyExceptions (matched on the
payload) apply as in Kubernetes mode (kk: pkg/cel/policies/vpol/compiler/compiler.go compileForJSON,
policy.go evaluateJson). Kubernetes-mode policies are not applied to payloads (kk: processor
policy_processor.go), and a result names the payload as its subject (kind and apiVersion empty).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field

from kubectl_kyrec.cel.environment import Environments, LibraryFactory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.validating.engine import compile_validating_policy, evaluate_payload
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.load.run_inputs.payloads import Payload
from kubectl_kyrec.model import EvalError, Ref, Result, Subject


def payload_subject(payload: Payload) -> Subject:
    ref = Ref("", "", "", payload.name, f"payload:{payload.name}", synthetic=True)
    return Subject(payload.obj, ref, payload.source, resource="", namespaced=False)


@dataclass
class PayloadOutcome:
    subjects: list[Subject] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    errors: list[EvalError] = field(default_factory=list)


def evaluate_json_payloads(policies: PolicySet, payloads: Sequence[Payload], *, libraries: LibraryFactory,
                           now: datetime.datetime, policy_names: Sequence[str] = (),
                           envs: Environments | None = None) -> PayloadOutcome:
    """`envs`: environments over `libraries` the caller evaluates other policies with (compiled once there)."""
    out = PayloadOutcome(subjects=[payload_subject(p) for p in payloads])
    if envs is None:
        envs = Environments(libraries)
    compiled = []
    for policy in policies.validating:
        if policy.mode != "JSON":
            continue
        if policy_names and policy.meta.name not in policy_names and policy.meta.key not in policy_names:
            continue
        try:
            compiled.append(compile_validating_policy(policy, envs, policies.exceptions, now))
        except InputError as exc:
            located = policies.locate(exc)
            out.errors.append(EvalError(located.message, located.source))
    for subject in out.subjects:
        for cp in compiled:
            result = evaluate_payload(cp, subject, subject.obj)
            if result is not None:
                out.results.append(result)
    return out
