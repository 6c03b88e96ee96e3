"""ImageValidatingPolicy and NamespacedImageValidatingPolicy (policies.kyverno.io), as their CRD spells them
(kyverno/api v1alpha1 imagevalidating_policy.go, aliased by v1beta1 and v1).

A ValidatingPolicy with image parts: `matchImageReferences` (glob or CEL over `ref`), `images` (named CEL
extractors, beside the defaults Kyverno adds for pods and pod controllers), `attestors` (cosign or notary),
`attestations` (in-toto or OCI 1.1 referrers), `credentials` and `validationConfigurations`. Shape errors
raise InputError naming the document's file:line and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.load.policy.vocabulary import (
    FAILURE_POLICIES,
    VALIDATION_ACTIONS,
    AuditAnnotation,
    MatchResources,
    NamedExpression,
    PolicyMeta,
    Validation,
    read_kyverno_policy,
)
from kubectl_kyrec.model import Document, Obj

# ImageValidatingPolicy's evaluation modes (its CRD: Kubernetes or JSON)
IMAGE_EVALUATION_MODES = ("Kubernetes", "JSON")


@dataclass(frozen=True)
class ImageReference:
    """One `matchImageReferences` entry: a gobwas glob, or a CEL expression over `ref`."""

    glob: str = ""
    expression: str = ""


@dataclass(frozen=True)
class Attestor:
    """An attestor by name; `kind` is `cosign` or `notary`, `raw` the attestor as written (what the
    `attestors.<name>` variable holds)."""

    name: str
    kind: str
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class ImageValidatingPolicy:
    meta: PolicyMeta
    validation_actions: tuple[str, ...]
    validations: tuple[Validation, ...]
    audit_annotations: tuple[AuditAnnotation, ...]
    variables: tuple[NamedExpression, ...]
    match_constraints: MatchResources | None
    match_conditions: tuple[NamedExpression, ...]
    failure_policy: str
    background: bool
    admission: bool
    mode: str
    autogen_controllers: tuple[str, ...] | None
    match_image_references: tuple[ImageReference, ...]
    image_extractors: tuple[NamedExpression, ...]
    attestors: tuple[Attestor, ...]
    attestations: tuple[str, ...]           # their names (the `attestations` variable maps name -> name)
    # validationConfigurations, each defaulting to true (kubebuilder:default); kept as written: Kyverno
    # v1.17.2's ivpol engine reads none of them (the webhook's digest mutation is not part of evaluation)
    mutate_digest: bool
    verify_digest: bool
    required: bool
    raw: Obj

    @property
    def source_kind(self) -> str:
        return "KyvernoImageValidatingPolicy"


def parse_image_validating_policy(doc: Document) -> ImageValidatingPolicy:
    r, meta = read_kyverno_policy(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    evaluation = r.mapping(spec.get("evaluation"), "spec.evaluation")
    background = r.mapping(evaluation.get("background"), "spec.evaluation.background")
    admission = r.mapping(evaluation.get("admission"), "spec.evaluation.admission")
    autogen = r.mapping(spec.get("autogen"), "spec.autogen")
    pod_controllers = r.mapping(autogen.get("podControllers"), "spec.autogen.podControllers")
    controllers = None
    if pod_controllers.get("controllers") is not None:
        controllers = r.strings(pod_controllers["controllers"], "spec.autogen.podControllers.controllers")
    actions = r.strings(spec.get("validationActions"), "spec.validationActions") or ("Deny",)
    for i, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            raise r.unsupported(f"spec.validationActions[{i}]", action, VALIDATION_ACTIONS)
    failure_policy = r.string(spec.get("failurePolicy"), "spec.failurePolicy") or "Fail"
    if failure_policy not in FAILURE_POLICIES:
        raise r.unsupported("spec.failurePolicy", failure_policy, FAILURE_POLICIES)
    mode = r.string(evaluation.get("mode"), "spec.evaluation.mode") or "Kubernetes"
    if mode not in IMAGE_EVALUATION_MODES:
        raise r.unsupported("spec.evaluation.mode", mode, IMAGE_EVALUATION_MODES)
    references = []
    for i, item in enumerate(r.seq(spec.get("matchImageReferences"), "spec.matchImageReferences")):
        path = f"spec.matchImageReferences[{i}]"
        m = r.mapping(item, path)
        ref = ImageReference(r.string(m.get("glob"), f"{path}.glob"),
                             r.string(m.get("expression"), f"{path}.expression"))
        if not ref.glob and not ref.expression:
            # kk: compiler.go CompileMatchImageReference
            raise r.fail(path, "Invalid value: either glob or expression must be set")
        references.append(ref)
    extractors = []
    for i, item in enumerate(r.seq(spec.get("images"), "spec.images")):
        m = r.mapping(item, f"spec.images[{i}]")
        extractors.append(NamedExpression(r.string(m.get("name"), f"spec.images[{i}].name", required=True),
                                          r.string(m.get("expression"), f"spec.images[{i}].expression",
                                                   required=True)))
    attestors = []
    for i, item in enumerate(r.seq(spec.get("attestors"), "spec.attestors")):
        path = f"spec.attestors[{i}]"
        m = r.mapping(item, path)
        name = r.string(m.get("name"), f"{path}.name", required=True)
        kinds = [k for k in ("cosign", "notary") if m.get(k) is not None]
        if len(kinds) != 1:
            # the CRD's oneOf: exactly one of cosign and notary
            raise r.fail(path, "exactly one of cosign and notary is required")
        r.mapping(m.get(kinds[0]), f"{path}.{kinds[0]}")
        attestors.append(Attestor(name, kinds[0], m))
    attestations = []
    for i, item in enumerate(r.seq(spec.get("attestations"), "spec.attestations")):
        m = r.mapping(item, f"spec.attestations[{i}]")
        attestations.append(r.string(m.get("name"), f"spec.attestations[{i}].name", required=True))
    configs = r.mapping(spec.get("validationConfigurations"), "spec.validationConfigurations")
    return ImageValidatingPolicy(
        meta=meta, validation_actions=actions,
        validations=r.validations(spec.get("validations"), "spec.validations"),
        audit_annotations=r.audit_annotations(spec.get("auditAnnotations"), "spec.auditAnnotations"),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        match_constraints=r.match_resources(spec.get("matchConstraints"), "spec.matchConstraints"),
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        failure_policy=failure_policy,
        background=r.boolean(background.get("enabled"), "spec.evaluation.background.enabled", True),
        admission=r.boolean(admission.get("enabled"), "spec.evaluation.admission.enabled", True),
        mode=mode, autogen_controllers=controllers, match_image_references=tuple(references),
        image_extractors=tuple(extractors), attestors=tuple(attestors), attestations=tuple(attestations),
        mutate_digest=r.boolean(configs.get("mutateDigest"), "spec.validationConfigurations.mutateDigest", True),
        verify_digest=r.boolean(configs.get("verifyDigest"), "spec.validationConfigurations.verifyDigest", True),
        required=r.boolean(configs.get("required"), "spec.validationConfigurations.required", True),
        raw=doc.obj)
