"""DeletingPolicy and NamespacedDeletingPolicy (policies.kyverno.io), typed.

Fields follow Kyverno's CRD (kk: config/crds/policies.kyverno.io/policies.kyverno.io_deletingpolicies.yaml,
kyverno/api policies.kyverno.io/v1beta1 deleting_policy.go): `schedule` is required (a cron expression,
parsed only when the next run is worked out: the CRD takes any string), `deletionPropagationPolicy` one of
Foreground, Background, Orphan (absent: the API server's default for the kind), `matchConstraints`,
`conditions` and `variables`. CEL is compiled by the evaluation stage (evaluate/deleting/engine.py).

`matchConstraints` may be absent here: Kyverno's CLI evaluates such a policy (against a JSON payload, or
as a match that fails for a resource); its admission webhook refuses it in a cluster (kk: pkg/cel/policies/
dpol/validate.go), and the deleting controller errors on it (pkg/controllers/deleting/controller.go), which
evaluate/deleting/engine.py reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_kyrec.load.policy.vocabulary import (
    DELETING_KINDS,
    KYVERNO_GROUP,
    MatchResources,
    NamedExpression,
    PolicyMeta,
    _time,
    read_kyverno_policy,
)
from kubectl_kyrec.model import Document, Obj, Source

PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")


@dataclass(frozen=True)
class DeletingPolicy:
    meta: PolicyMeta
    schedule: str
    match_constraints: MatchResources | None
    conditions: tuple[NamedExpression, ...]
    variables: tuple[NamedExpression, ...]
    propagation_policy: str            # "" when the policy sets none: the API server's default applies
    last_execution_time: str           # status.lastExecutionTime ("" when never run, or not given)
    raw: Obj

    @property
    def namespaced(self) -> bool:
        return self.meta.kind == "NamespacedDeletingPolicy"

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def source(self) -> Source:
        return self.meta.source


def is_deleting_policy(doc: Document) -> bool:
    group = doc.api_version.split("/", 1)[0] if "/" in doc.api_version else ""
    return group == KYVERNO_GROUP and doc.kind in DELETING_KINDS


def parse_deleting_policy(doc: Document) -> DeletingPolicy:
    """A typed policy; InputError (file:line, field) for what the API server would refuse."""
    r, meta = read_kyverno_policy(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    schedule = r.string(spec.get("schedule"), "spec.schedule", required=True)
    propagation = r.string(spec.get("deletionPropagationPolicy"), "spec.deletionPropagationPolicy")
    if propagation and propagation not in PROPAGATION_POLICIES:
        raise r.fail("spec.deletionPropagationPolicy",
                     f"Unsupported value: {propagation!r}: supported values: \"Foreground\", \"Background\", "
                     "\"Orphan\"")
    status = r.mapping(doc.obj.get("status"), "status")
    return DeletingPolicy(
        meta=meta, schedule=schedule,
        match_constraints=r.match_resources(spec.get("matchConstraints"), "spec.matchConstraints"),
        conditions=r.named_expressions(spec.get("conditions"), "spec.conditions"),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        propagation_policy=propagation,
        last_execution_time=_time(r, status.get("lastExecutionTime"), "status.lastExecutionTime"),
        raw=doc.obj)
