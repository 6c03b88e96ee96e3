"""GeneratingPolicy and NamespacedGeneratingPolicy, typed (docs/semantics/generating.md#fields).

Fields and defaults follow Kyverno's CRD (kk: config/crds/policies.kyverno.io/
policies.kyverno.io_generatingpolicies.yaml); the checks are the ones Kyverno's admission webhook makes
before it accepts a policy (kk: pkg/cel/policies/gpol/validate.go): `generate` is required, every entry
has exactly one of `expression` and `template`, and `matchConstraints` needs at least one resourceRule.
CEL is compiled later, by the evaluation stage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubectl_kyrec.load.policy.vocabulary import (
    AuditAnnotation,
    MatchResources,
    NamedExpression,
    PolicyMeta,
    _Reader,
    read_kyverno_policy,
    require_resource_rules,
)
from kubectl_kyrec.model import Document, Obj, Source

INTERPOLATION_MODES = ("none", "cel")


@dataclass(frozen=True)
class GenerationTemplate:
    value: str
    interpolate: str = "none"


@dataclass(frozen=True)
class Generation:
    """One `spec.generate[]` entry: exactly one of `expression` and `template` is set."""

    index: int
    expression: str = ""
    template: GenerationTemplate | None = None

    @property
    def path(self) -> str:
        return f"spec.generate[{self.index}]"


@dataclass(frozen=True)
class GeneratingPolicy:
    meta: PolicyMeta
    match_constraints: MatchResources | None
    match_conditions: tuple[NamedExpression, ...]
    variables: tuple[NamedExpression, ...]
    audit_annotations: tuple[AuditAnnotation, ...]
    generate: tuple[Generation, ...]
    admission: bool
    generate_existing: bool
    synchronize: bool
    orphan_on_policy_delete: bool
    skip_background_requests: bool
    use_server_side_apply: bool
    raw: Obj

    @property
    def namespaced(self) -> bool:
        return self.meta.kind == "NamespacedGeneratingPolicy"

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def source(self) -> Source:
        return self.meta.source


def _enabled(r: _Reader, evaluation: object, name: str, default: bool) -> bool:
    block = r.mapping(r.mapping(evaluation, "spec.evaluation").get(name), f"spec.evaluation.{name}")
    return r.boolean(block.get("enabled"), f"spec.evaluation.{name}.enabled", default)


def _generations(r: _Reader, value: object) -> tuple[Generation, ...]:
    items = r.seq(value, "spec.generate")
    if not items:
        # the CRD marks it required: `kubectl apply` fails with exactly this field error
        raise r.fail("spec.generate", "Required value")
    out = []
    for i, item in enumerate(items):
        path = f"spec.generate[{i}]"
        m = r.mapping(item, path)
        expression = r.string(m.get("expression"), f"{path}.expression")
        template = None
        if m.get("template") is not None:
            t = r.mapping(m.get("template"), f"{path}.template")
            interpolate = r.string(t.get("interpolate"), f"{path}.template.interpolate") or "none"
            if interpolate not in INTERPOLATION_MODES:
                raise r.fail(f"{path}.template.interpolate",
                             f"Unsupported value: {interpolate!r}: supported values: \"none\", \"cel\"")
            template = GenerationTemplate(r.string(t.get("value"), f"{path}.template.value", required=True),
                                          interpolate)
        if bool(expression) == (template is not None):
            raise r.fail(path, "exactly one of expression or template must be set")
        out.append(Generation(i, expression, template))
    return tuple(out)


def parse_generating_policy(doc: Document) -> GeneratingPolicy:
    """A typed policy; InputError (file:line, field) for what Kyverno's webhook would refuse."""
    r, meta = read_kyverno_policy(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    evaluation = spec.get("evaluation")
    constraints = r.match_resources(spec.get("matchConstraints"), "spec.matchConstraints")
    generate = _generations(r, spec.get("generate"))
    constraints = require_resource_rules(r, constraints)
    return GeneratingPolicy(
        meta=meta, match_constraints=constraints,
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        audit_annotations=r.audit_annotations(spec.get("auditAnnotations"), "spec.auditAnnotations"),
        generate=generate,
        admission=_enabled(r, evaluation, "admission", True),
        generate_existing=_enabled(r, evaluation, "generateExisting", False),
        synchronize=_enabled(r, evaluation, "synchronize", False),
        orphan_on_policy_delete=_enabled(r, evaluation, "orphanDownstreamOnPolicyDelete", False),
        skip_background_requests=r.boolean(r.mapping(evaluation, "spec.evaluation").get("skipBackgroundRequests"),
                                           "spec.evaluation.skipBackgroundRequests", True),
        use_server_side_apply=r.boolean(spec.get("useServerSideApply"), "spec.useServerSideApply", False),
        raw=doc.obj)


def parse_generating_policies(docs: Iterable[Document]) -> list[GeneratingPolicy]:
    return [parse_generating_policy(d) for d in docs]
