"""What every policy kind's model shares: the API groups, versions and kinds, the report sources, the fields
several kinds have (expressions, match resources, metadata) and the reader that parses a document's fields.

The kind modules (load/policy/classic.py, load/policy/mutating.py, ...) import it, and load/policy/policies.py
(the set of policies a run holds and `classify`, which dispatches each document to its kind's parser)
imports them: the vocabulary sits below both, so no kind module imports the dispatcher.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.schema import REQUIRED, policy_label, type_message, unsupported_message
from kubectl_kyrec.load.schema.validate import shown
from kubectl_kyrec.model import Document, Source

KYVERNO_GROUP = "policies.kyverno.io"
KYVERNO_VERSIONS = ("v1alpha1", "v1beta1", "v1")
# served from v1beta1 only (their CRDs: config/crds/policies.kyverno.io)
NAMESPACED_ONLY_V1BETA1 = ("NamespacedValidatingPolicy", "NamespacedGeneratingPolicy", "NamespacedDeletingPolicy",
                           "NamespacedImageValidatingPolicy")
VALIDATING_KINDS = ("ValidatingPolicy", "NamespacedValidatingPolicy")
# spec.evaluation.mode (api: v1beta1 EvaluationMode; HTTP and Envoy are kyverno-authz's)
EVALUATION_MODES = ("Kubernetes", "JSON", "HTTP", "Envoy")
# in the order of the CRDs' enums, which the API server's messages list
FAILURE_POLICIES = ("Ignore", "Fail")
VALIDATION_ACTIONS = ("Deny", "Audit", "Warn")
GENERATING_KINDS = ("GeneratingPolicy", "NamespacedGeneratingPolicy")
IMAGE_VALIDATING_KINDS = ("ImageValidatingPolicy", "NamespacedImageValidatingPolicy")
DELETING_KINDS = ("DeletingPolicy", "NamespacedDeletingPolicy")
VAP_GROUP = "admissionregistration.k8s.io"
POLICY_GROUPS = (KYVERNO_GROUP, "kyverno.io")
VAP_VERSIONS = ("v1", "v1beta1", "v1alpha1")
# the mutating kinds (load/policy/mutating.py) and the classic ones (load/policy/classic.py) are named here
# with the others: `classify` and the table of what kyrec reads (policies.py policy_apis, behind the
# top-level help) import neither model for a run that holds none of them
MUTATING_KINDS = ("MutatingPolicy", "NamespacedMutatingPolicy")
MAP_KIND = "MutatingAdmissionPolicy"
MAP_BINDING_KIND = "MutatingAdmissionPolicyBinding"
CLASSIC_GROUP = "kyverno.io"
CLASSIC_POLICY_KINDS = ("ClusterPolicy", "Policy")
CLASSIC_POLICY_VERSIONS = ("v1", "v2beta1")
CLASSIC_EXCEPTION_VERSIONS = ("v2", "v2beta1")

# Report `source` per policy kind (docs/semantics/reports.md#report-objects).
REPORT_SOURCE = {
    "ValidatingPolicy": "KyvernoValidatingPolicy",
    "NamespacedValidatingPolicy": "KyvernoValidatingPolicy",
    "GeneratingPolicy": "KyvernoGeneratingPolicy",
    "NamespacedGeneratingPolicy": "KyvernoGeneratingPolicy",
    "ValidatingAdmissionPolicy": "ValidatingAdmissionPolicy",
    "ImageValidatingPolicy": "KyvernoImageValidatingPolicy",
    "NamespacedImageValidatingPolicy": "KyvernoImageValidatingPolicy",
    "MutatingPolicy": "KyvernoMutatingPolicy",
    "NamespacedMutatingPolicy": "KyvernoMutatingPolicy",
    "MutatingAdmissionPolicy": "MutatingAdmissionPolicy",
}

# the report `source` of ClusterPolicy and Policy results (load/policy/classic.py parses them)
CLASSIC_REPORT_SOURCE = "kyverno"



@dataclass(frozen=True)
class NamedExpression:
    name: str
    expression: str



@dataclass(frozen=True)
class Validation:
    expression: str
    message: str = ""
    message_expression: str = ""



@dataclass(frozen=True)
class AuditAnnotation:
    key: str
    value_expression: str



@dataclass(frozen=True)
class ResourceRule:
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    operations: tuple[str, ...]
    resources: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    scope: str = "*"



@dataclass(frozen=True)
class MatchResources:
    resource_rules: tuple[ResourceRule, ...] = ()
    exclude_resource_rules: tuple[ResourceRule, ...] = ()
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    match_policy: str = "Equivalent"
    raw: Mapping[str, Any] = field(default_factory=dict)



@dataclass(frozen=True)
class PolicyMeta:
    api_version: str
    kind: str
    name: str
    namespace: str
    source: Source
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    resource_version: str = ""
    creation_timestamp: str = ""
    uid: str = ""

    @property
    def key(self) -> str:
        """How reports name the policy: `name`, or `ns/name` for namespaced kinds."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def label(self) -> str:
        """How an error names the policy: `ValidatingPolicy "name"` (see policy_label)."""
        return policy_label(self.kind, self.name)

    @property
    def category(self) -> str:
        return self.annotations.get("policies.kyverno.io/category", "")

    @property
    def severity(self) -> str:
        return self.annotations.get("policies.kyverno.io/severity", "")

    @property
    def scored(self) -> bool:
        return self.annotations.get("policies.kyverno.io/scored", "") != "false"



@dataclass(frozen=True)
class ParamKind:
    api_version: str
    kind: str



@dataclass(frozen=True)
class ParamRef:
    name: str = ""
    namespace: str = ""
    selector: Mapping[str, Any] | None = None
    not_found_action: str = "Deny"



class _Reader:
    """Typed access to one document's fields, raising InputError with the field path."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def fail(self, path: str, message: str) -> InputError:
        """`Kind "name": path: message`, in the API server's wording (load/schema)."""
        return InputError(f"{policy_label(self.doc.kind, self.doc.name)}: {path}: {message}", self.doc.source,
                          field=path)

    def unsupported(self, path: str, value: Any, allowed: Iterable[str]) -> InputError:
        return self.fail(path, unsupported_message(value, allowed))

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, type_message(path, value, "object"))
        return value

    def seq(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, type_message(path, value, "array"))
        return value

    def string(self, value: Any, path: str, *, required: bool = False) -> str:
        if value is None:
            if required:
                raise self.fail(path, REQUIRED)
            return ""
        if not isinstance(value, str):
            raise self.fail(path, type_message(path, value, "string"))
        return value

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(path, type_message(path, value, "boolean"))
        return value

    def selector(self, value: Any, path: str) -> Mapping[str, Any]:
        """A metav1.LabelSelector: its shape is checked here so matching never meets a wrong one."""
        m = self.mapping(value, path)
        self.mapping(m.get("matchLabels"), f"{path}.matchLabels")
        for i, expr in enumerate(self.seq(m.get("matchExpressions"), f"{path}.matchExpressions")):
            e = self.mapping(expr, f"{path}.matchExpressions[{i}]")
            self.string(e.get("key"), f"{path}.matchExpressions[{i}].key", required=True)
            self.string(e.get("operator"), f"{path}.matchExpressions[{i}].operator", required=True)
            self.seq(e.get("values"), f"{path}.matchExpressions[{i}].values")
        return m

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        return tuple(self.string(v, f"{path}[{i}]", required=True)
                     for i, v in enumerate(self.seq(value, path)))

    def named_expressions(self, value: Any, path: str) -> tuple[NamedExpression, ...]:
        out = []
        for i, item in enumerate(self.seq(value, path)):
            m = self.mapping(item, f"{path}[{i}]")
            out.append(NamedExpression(self.string(m.get("name"), f"{path}[{i}].name"),
                                       self.string(m.get("expression"), f"{path}[{i}].expression",
                                                   required=True)))
        return tuple(out)

    def validations(self, value: Any, path: str) -> tuple[Validation, ...]:
        out = []
        for i, item in enumerate(self.seq(value, path)):
            m = self.mapping(item, f"{path}[{i}]")
            out.append(Validation(
                self.string(m.get("expression"), f"{path}[{i}].expression", required=True),
                self.string(m.get("message"), f"{path}[{i}].message"),
                self.string(m.get("messageExpression"), f"{path}[{i}].messageExpression")))
        return tuple(out)

    def audit_annotations(self, value: Any, path: str) -> tuple[AuditAnnotation, ...]:
        out = []
        for i, item in enumerate(self.seq(value, path)):
            m = self.mapping(item, f"{path}[{i}]")
            out.append(AuditAnnotation(
                self.string(m.get("key"), f"{path}[{i}].key", required=True),
                self.string(m.get("valueExpression"), f"{path}[{i}].valueExpression", required=True)))
        return tuple(out)

    def rules(self, value: Any, path: str) -> tuple[ResourceRule, ...]:
        out = []
        for i, item in enumerate(self.seq(value, path)):
            p = f"{path}[{i}]"
            m = self.mapping(item, p)
            out.append(ResourceRule(
                api_groups=self.strings(m.get("apiGroups"), f"{p}.apiGroups"),
                api_versions=self.strings(m.get("apiVersions"), f"{p}.apiVersions"),
                operations=self.strings(m.get("operations"), f"{p}.operations"),
                resources=self.strings(m.get("resources"), f"{p}.resources"),
                resource_names=self.strings(m.get("resourceNames"), f"{p}.resourceNames"),
                scope=self.string(m.get("scope"), f"{p}.scope") or "*"))
        return tuple(out)

    def param_kind(self, spec: Mapping[str, Any]) -> ParamKind | None:
        """spec.paramKind of an admission policy (validating or mutating), or None."""
        pk = self.mapping(spec.get("paramKind"), "spec.paramKind")
        if not pk:
            return None
        return ParamKind(self.string(pk.get("apiVersion"), "spec.paramKind.apiVersion"),
                         self.string(pk.get("kind"), "spec.paramKind.kind"))

    def param_ref(self, spec: Mapping[str, Any]) -> ParamRef | None:
        """spec.paramRef of an admission policy binding (validating or mutating), or None."""
        pr = spec.get("paramRef")
        if pr is None:
            return None
        m = self.mapping(pr, "spec.paramRef")
        sel = m.get("selector")
        return ParamRef(
            name=self.string(m.get("name"), "spec.paramRef.name"),
            namespace=self.string(m.get("namespace"), "spec.paramRef.namespace"),
            selector=self.mapping(sel, "spec.paramRef.selector") if sel is not None else None,
            not_found_action=self.string(m.get("parameterNotFoundAction"),
                                         "spec.paramRef.parameterNotFoundAction") or "Deny")

    def match_resources(self, value: Any, path: str) -> MatchResources | None:
        if value is None:
            return None
        m = self.mapping(value, path)
        ns_sel = m.get("namespaceSelector")
        obj_sel = m.get("objectSelector")
        return MatchResources(
            resource_rules=self.rules(m.get("resourceRules"), f"{path}.resourceRules"),
            exclude_resource_rules=self.rules(m.get("excludeResourceRules"), f"{path}.excludeResourceRules"),
            namespace_selector=self.selector(ns_sel, f"{path}.namespaceSelector") if ns_sel is not None else None,
            object_selector=self.selector(obj_sel, f"{path}.objectSelector") if obj_sel is not None else None,
            match_policy=self.string(m.get("matchPolicy"), f"{path}.matchPolicy") or "Equivalent",
            raw=m)

    def meta(self) -> PolicyMeta:
        obj = self.doc.obj
        md = self.mapping(obj.get("metadata"), "metadata")
        name = self.string(md.get("name"), "metadata.name", required=True)
        labels = {str(k): str(v) for k, v in self.mapping(md.get("labels"), "metadata.labels").items()}
        annotations = {str(k): str(v)
                       for k, v in self.mapping(md.get("annotations"), "metadata.annotations").items()}
        return PolicyMeta(
            api_version=self.doc.api_version, kind=self.doc.kind, name=name,
            namespace=str(md.get("namespace") or ""), source=self.doc.source, labels=labels,
            annotations=annotations, resource_version=str(md.get("resourceVersion") or ""),
            creation_timestamp=str(md.get("creationTimestamp") or ""), uid=str(md.get("uid") or ""))



def _check_version(doc: Document, versions: tuple[str, ...]) -> None:
    version = doc.api_version.split("/", 1)[-1]
    if version not in versions:
        raise InputError(f"{policy_label(doc.kind, doc.name)}: unknown version {doc.api_version!r} "
                         f"(known: {', '.join(versions)})", doc.source)



def read_kyverno_policy(doc: Document) -> tuple[_Reader, PolicyMeta]:
    """Version check and metadata of a policies.kyverno.io policy kind.

    A namespaced kind applied without a namespace lands in `default` (as kubectl puts it); a cluster
    kind has no namespace whatever its manifest says.
    """
    allowed = ("v1beta1", "v1") if doc.kind in NAMESPACED_ONLY_V1BETA1 else KYVERNO_VERSIONS
    _check_version(doc, allowed)
    r = _Reader(doc)
    meta = r.meta()
    if doc.kind.startswith("Namespaced") and not meta.namespace:
        meta = dataclasses.replace(meta, namespace="default")
    elif not doc.kind.startswith("Namespaced") and meta.namespace:
        meta = dataclasses.replace(meta, namespace="")
    return r, meta



def require_resource_rules(r: _Reader, constraints: MatchResources | None) -> MatchResources:
    """Kyverno's policy webhook refuses a policy without resource rules, so it never exists in a cluster."""
    if constraints is None or not constraints.resource_rules:
        raise r.fail("spec.matchConstraints",
                     "Required value: a matchConstraints with at least one resource rule is required")
    return constraints



def _time(r: _Reader, value: Any, path: str) -> str:
    """A metav1.Time field: RFC 3339 as Go parses it, or the API server (and Kyverno's CLI) refuses it."""
    from kubectl_kyrec.k8s.times import parse_rfc3339

    text = r.string(value, path)
    if text and parse_rfc3339(text) is None:
        raise r.fail(path, f"Invalid value: {shown(text)}: {path} in body must be of type date-time: {shown(text)}")
    return text
