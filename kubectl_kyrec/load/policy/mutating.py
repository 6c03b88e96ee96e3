"""MutatingPolicy / NamespacedMutatingPolicy (policies.kyverno.io) and MutatingAdmissionPolicy with its
bindings (admissionregistration.k8s.io), parsed into typed values.

Fields follow kyverno/api policies.kyverno.io/v1beta1 MutatingPolicySpec (mutations, matchConstraints,
matchConditions, variables, failurePolicy, reinvocationPolicy, evaluation.mutateExisting,
targetMatchConstraints, autogen) and admissionregistration/v1beta1 MutatingAdmissionPolicy (paramKind,
mutations, reinvocationPolicy) and its binding (policyName, paramRef, matchResources).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.load.policy.vocabulary import (
    VAP_GROUP,
    VAP_VERSIONS,
    MatchResources,
    NamedExpression,
    ParamKind,
    ParamRef,
    PolicyMeta,
    _check_version,
    _Reader,
    read_kyverno_policy,
    require_resource_rules,
)
from kubectl_kyrec.model import Document, Obj

MAP_GROUP = VAP_GROUP
PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
REINVOCATION_POLICIES = ("Never", "IfNeeded")


@dataclass(frozen=True)
class Mutation:
    patch_type: str          # ApplyConfiguration | JSONPatch
    expression: str


@dataclass(frozen=True)
class MutatingPolicy:
    meta: PolicyMeta
    mutations: tuple[Mutation, ...]
    variables: tuple[NamedExpression, ...]
    match_constraints: MatchResources | None
    match_conditions: tuple[NamedExpression, ...]
    failure_policy: str
    reinvocation_policy: str
    admission: bool
    background: bool
    mutate_existing: bool
    autogen_controllers: tuple[str, ...] | None
    raw: Obj
    # spec.targetMatchConstraints (its MatchResources; None without resourceRules) and its CEL
    # `expression`, and spec.targetMatchConditions: how a mutateExisting policy picks its targets
    target_match_constraints: MatchResources | None = None
    target_expression: str = ""
    target_match_conditions: tuple[NamedExpression, ...] = ()

    @property
    def source_kind(self) -> str:
        return "KyvernoMutatingPolicy"


@dataclass(frozen=True)
class MutatingAdmissionPolicy:
    meta: PolicyMeta
    param_kind: ParamKind | None
    mutations: tuple[Mutation, ...]
    variables: tuple[NamedExpression, ...]
    match_constraints: MatchResources | None
    match_conditions: tuple[NamedExpression, ...]
    failure_policy: str
    reinvocation_policy: str
    raw: Obj


@dataclass(frozen=True)
class MutatingAdmissionBinding:
    meta: PolicyMeta
    policy_name: str
    param_ref: ParamRef | None
    match_resources: MatchResources | None


def _mutations(r: _Reader, value: Any) -> tuple[Mutation, ...]:
    out = []
    for i, item in enumerate(r.seq(value, "spec.mutations")):
        path = f"spec.mutations[{i}]"
        m = r.mapping(item, path)
        patch_type = r.string(m.get("patchType"), f"{path}.patchType", required=True)
        if patch_type not in PATCH_TYPES:
            raise r.unsupported(f"{path}.patchType", patch_type, PATCH_TYPES)
        field = "applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch"
        body = r.mapping(m.get(field), f"{path}.{field}")
        expression = r.string(body.get("expression"), f"{path}.{field}.expression", required=True)
        out.append(Mutation(patch_type, expression))
    return tuple(out)


def _choice(r: _Reader, value: Any, path: str, allowed: tuple[str, ...], default: str) -> str:
    text = r.string(value, path) or default
    if text not in allowed:
        raise r.unsupported(path, text, allowed)
    return text


def parse_mutating_policy(doc: Document) -> MutatingPolicy:
    r, meta = read_kyverno_policy(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    evaluation = r.mapping(spec.get("evaluation"), "spec.evaluation")
    admission = r.mapping(evaluation.get("admission"), "spec.evaluation.admission")
    background = r.mapping(evaluation.get("background"), "spec.evaluation.background")
    existing = r.mapping(evaluation.get("mutateExisting"), "spec.evaluation.mutateExisting")
    autogen = r.mapping(spec.get("autogen"), "spec.autogen")
    pod_controllers = r.mapping(autogen.get("podControllers"), "spec.autogen.podControllers")
    controllers = None
    if pod_controllers.get("controllers") is not None:
        controllers = r.strings(pod_controllers["controllers"], "spec.autogen.podControllers.controllers")
    constraints = require_resource_rules(r, r.match_resources(spec.get("matchConstraints"),
                                                              "spec.matchConstraints"))
    target = r.mapping(spec.get("targetMatchConstraints"), "spec.targetMatchConstraints")
    target_constraints = r.match_resources(target, "spec.targetMatchConstraints") if target else None
    return MutatingPolicy(
        meta=meta, mutations=_mutations(r, spec.get("mutations")),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        match_constraints=constraints,
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        failure_policy=_choice(r, spec.get("failurePolicy"), "spec.failurePolicy", ("Fail", "Ignore"), "Fail"),
        reinvocation_policy=_choice(r, spec.get("reinvocationPolicy"), "spec.reinvocationPolicy",
                                    REINVOCATION_POLICIES, "Never"),
        admission=r.boolean(admission.get("enabled"), "spec.evaluation.admission.enabled", True),
        background=r.boolean(background.get("enabled"), "spec.evaluation.background.enabled", True),
        mutate_existing=r.boolean(existing.get("enabled"), "spec.evaluation.mutateExisting.enabled", False),
        autogen_controllers=controllers, raw=doc.obj,
        target_match_constraints=target_constraints if target_constraints and target_constraints.resource_rules
        else None,
        target_expression=r.string(target.get("expression"), "spec.targetMatchConstraints.expression") or "",
        target_match_conditions=r.named_expressions(spec.get("targetMatchConditions"), "spec.targetMatchConditions"))


def parse_mutating_admission_policy(doc: Document) -> MutatingAdmissionPolicy:
    _check_version(doc, VAP_VERSIONS)
    r = _Reader(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    return MutatingAdmissionPolicy(
        meta=r.meta(), param_kind=r.param_kind(spec), mutations=_mutations(r, spec.get("mutations")),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        match_constraints=r.match_resources(spec.get("matchConstraints"), "spec.matchConstraints"),
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        failure_policy=_choice(r, spec.get("failurePolicy"), "spec.failurePolicy", ("Fail", "Ignore"), "Fail"),
        reinvocation_policy=_choice(r, spec.get("reinvocationPolicy"), "spec.reinvocationPolicy",
                                    REINVOCATION_POLICIES, "Never"),
        raw=doc.obj)


def parse_mutating_binding(doc: Document) -> MutatingAdmissionBinding:
    _check_version(doc, VAP_VERSIONS)
    r = _Reader(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    return MutatingAdmissionBinding(
        meta=r.meta(), policy_name=r.string(spec.get("policyName"), "spec.policyName", required=True),
        param_ref=r.param_ref(spec),
        match_resources=r.match_resources(spec.get("matchResources"), "spec.matchResources"))
