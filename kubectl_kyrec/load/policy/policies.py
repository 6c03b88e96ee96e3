"""Turn loaded documents into typed policies, exceptions and bindings.

Field names and defaults follow Kyverno's CRDs (docs/semantics/validating.md#fields,
docs/semantics/exceptions.md, docs/semantics/generating.md#fields) and admissionregistration/v1 for
ValidatingAdmissionPolicy. Shape errors raise InputError naming the document's file:line and field.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.vocabulary import (
    CLASSIC_EXCEPTION_VERSIONS,
    CLASSIC_GROUP,
    CLASSIC_POLICY_KINDS,
    CLASSIC_POLICY_VERSIONS,
    CLASSIC_REPORT_SOURCE,
    DELETING_KINDS,
    EVALUATION_MODES,
    FAILURE_POLICIES,
    GENERATING_KINDS,
    IMAGE_VALIDATING_KINDS,
    KYVERNO_GROUP,
    KYVERNO_VERSIONS,
    MAP_BINDING_KIND,
    MAP_KIND,
    MUTATING_KINDS,
    NAMESPACED_ONLY_V1BETA1,
    REPORT_SOURCE,
    VALIDATING_KINDS,
    VALIDATION_ACTIONS,
    VAP_GROUP,
    VAP_VERSIONS,
    AuditAnnotation,
    MatchResources,
    NamedExpression,
    ParamKind,
    ParamRef,
    PolicyMeta,
    Validation,
    _check_version,
    _Reader,
    _time,
    read_kyverno_policy,
    require_resource_rules,
)
from kubectl_kyrec.load.schema import REQUIRED, SchemaCheck
from kubectl_kyrec.model import Document, Notice, Obj, Source

if TYPE_CHECKING:
    from kubectl_kyrec.load.policy.classic import ClassicException, ClassicPolicy
    from kubectl_kyrec.load.policy.deleting import DeletingPolicy
    from kubectl_kyrec.load.policy.generating import GeneratingPolicy
    from kubectl_kyrec.load.policy.image_validating import ImageValidatingPolicy
    from kubectl_kyrec.load.policy.mutating import MutatingAdmissionBinding, MutatingAdmissionPolicy, MutatingPolicy


def result_policy_kind(source: str, policy: str) -> str:
    """The kind of the policy a result came from, by its report `source` and its name (`ns/name` for the
    namespaced kinds): a result names its policy by name and source only, as reports do."""
    namespaced = "/" in policy
    if source == CLASSIC_REPORT_SOURCE:
        return "Policy" if namespaced else "ClusterPolicy"
    if source.startswith("Kyverno"):
        kind = source.removeprefix("Kyverno")
        return f"Namespaced{kind}" if namespaced else kind
    return source


def policy_labels(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """How outputs name the policies of one run where a name alone would make two policies one: during a
    move to the CEL kinds a ValidatingPolicy often shares its ClusterPolicy's name. For each (source, name)
    held by more than one kind, the label `Kind/name` (`ValidatingPolicy/require-labels`); the
    ClusterPolicy or Policy keeps its bare name, the one its baseline entries and code-scanning alerts were
    recorded under before the move. Names held by one kind are absent: they stay as they are."""
    sources: dict[str, set[str]] = {}
    for source, name in pairs:
        held = sources.get(name)
        if held is None:
            held = sources[name] = set()
        held.add(source)
    return {(source, name): f"{result_policy_kind(source, name)}/{name}"
            for name, held in sources.items() if len(held) > 1
            for source in held if source != CLASSIC_REPORT_SOURCE}


def split_policy_label(source: str, shown: str) -> tuple[str, str]:
    """(kind, name) of a policy as a result names it: its bare name, or its `policy_labels` label. A
    `Kind/` prefix is never a name's: Kubernetes names and namespaces are lower case."""
    for namespaced in ("n/", ""):
        kind = result_policy_kind(source, namespaced + "x")
        if shown.startswith(kind + "/"):
            return kind, shown[len(kind) + 1:]
    return result_policy_kind(source, shown), shown


# Policy kinds kyrec recognises but does not evaluate, by API group, with the report `source` their
# results carry (kk: pkg/utils/report ToPolicyReportResult; docs/semantics/reports.md#report-objects). They are read as
# policies (never as resources), their test rows are `not-evaluated`, and report comparisons leave their results out.
UNEVALUATED_KINDS: dict[tuple[str, str], str] = {
    ("kyverno.io", "ClusterCleanupPolicy"): "",
    ("kyverno.io", "CleanupPolicy"): "",
}
# evaluated kinds whose report results kyrec does not compute, so report comparisons leave results under
# their sources out. A DeletingPolicy (evaluate/deleting/engine.py) writes none. The mutating kinds do: the
# background scan runs each background MutatingPolicy and MutatingAdmissionPolicy on the stored object and
# reports a rule that would still change it as `fail` ("mutation is not applied"; kk:
# pkg/controllers/report/utils/scanner.go ScanResource), which kyrec's admission chain, run on manifests
# before they are stored, does not model: comparing those results would report kyrec's gap as drift.
UNEVALUATED_SOURCES = frozenset(s for s in (*UNEVALUATED_KINDS.values(), "KyvernoMutatingPolicy",
                                             "MutatingAdmissionPolicy", "KyvernoDeletingPolicy") if s)


def unevaluated_kind(doc: Document) -> str | None:
    """The kind of a policy kyrec recognises and does not evaluate, else None."""
    group = doc.api_version.split("/", 1)[0] if "/" in doc.api_version else ""
    return doc.kind if (group, doc.kind) in UNEVALUATED_KINDS else None


@dataclass(frozen=True)
class ValidatingPolicy:
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
    raw: Obj

    @property
    def source_kind(self) -> str:
        return REPORT_SOURCE[self.meta.kind]


@dataclass(frozen=True)
class AdmissionPolicy:
    """A ValidatingAdmissionPolicy: like a ValidatingPolicy, with params and no Kyverno extras."""

    meta: PolicyMeta
    param_kind: ParamKind | None
    validations: tuple[Validation, ...]
    audit_annotations: tuple[AuditAnnotation, ...]
    variables: tuple[NamedExpression, ...]
    match_constraints: MatchResources | None
    match_conditions: tuple[NamedExpression, ...]
    failure_policy: str
    raw: Obj


@dataclass(frozen=True)
class AdmissionBinding:
    meta: PolicyMeta
    policy_name: str
    param_ref: ParamRef | None
    validation_actions: tuple[str, ...]
    match_resources: MatchResources | None


@dataclass(frozen=True)
class PolicyRef:
    name: str
    kind: str


@dataclass(frozen=True)
class PolicyException:
    meta: PolicyMeta
    policy_refs: tuple[PolicyRef, ...]
    match_conditions: tuple[NamedExpression, ...]
    images: tuple[str, ...]
    allowed_values: tuple[str, ...]
    report_result: str
    expires_at: str

    @property
    def priority(self) -> int:
        """`polex.kyverno.io/priority`; only integers > 0 count (docs/semantics/exceptions.md)."""
        try:
            value = int(self.meta.labels.get("polex.kyverno.io/priority", ""))
        except ValueError:
            return 0
        return value if value > 0 else 0


@dataclass
class PolicySet:
    validating: list[ValidatingPolicy] = field(default_factory=list)
    admission: list[AdmissionPolicy] = field(default_factory=list)
    bindings: list[AdmissionBinding] = field(default_factory=list)
    exceptions: list[PolicyException] = field(default_factory=list)
    generating: list[GeneratingPolicy] = field(default_factory=list)
    image_validating: list[ImageValidatingPolicy] = field(default_factory=list)
    classic: list[ClassicPolicy] = field(default_factory=list)     # kyverno.io ClusterPolicy / Policy
    classic_exceptions: list[ClassicException] = field(default_factory=list)   # kyverno.io/v2 exceptions
    deleting: list[DeletingPolicy] = field(default_factory=list)   # DeletingPolicy / NamespacedDeletingPolicy
    mutating: list[MutatingPolicy] = field(default_factory=list)   # (Namespaced)MutatingPolicy
    mutating_admission: list[MutatingAdmissionPolicy] = field(default_factory=list)
    mutating_bindings: list[MutatingAdmissionBinding] = field(default_factory=list)
    others: list[Document] = field(default_factory=list)
    # policies of any kind that do not parse: each one reported, the rest still evaluated
    errors: list[InputError] = field(default_factory=list)
    # what Kyverno accepts with a warning (`kubectl kyrec lint --strict` fails on them): the policy is used
    warnings: list[InputError] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    # the lines of nested fields, per document (from the loader), so errors can point at the field
    lines: dict[Source, Any] = field(default_factory=dict)
    # Kyverno's own validation ran (evaluate/policy_validation.py): the policies Kyverno refuses are in errors
    validated: bool = False

    @property
    def has_policies(self) -> bool:
        """Whether anything was given that could produce a result (bad policies count: they are reported)."""
        return bool(self.validating or self.admission or self.generating or self.classic or self.mutating
                    or self.mutating_admission or self.deleting or self.image_validating or self.errors)

    def extend(self, other: PolicySet) -> None:
        self.validating.extend(other.validating)
        self.admission.extend(other.admission)
        self.bindings.extend(other.bindings)
        self.exceptions.extend(other.exceptions)
        self.generating.extend(other.generating)
        self.image_validating.extend(other.image_validating)
        self.classic.extend(other.classic)
        self.classic_exceptions.extend(other.classic_exceptions)
        self.deleting.extend(other.deleting)
        self.mutating.extend(other.mutating)
        self.mutating_admission.extend(other.mutating_admission)
        self.mutating_bindings.extend(other.mutating_bindings)
        self.others.extend(other.others)
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)
        self.notices.extend(other.notices)
        self.lines.update(other.lines)
        self.validated = self.validated and other.validated

    def failure_policies(self) -> dict[tuple[str, str], str]:
        """(report source, policy as results name it) -> the policy's failurePolicy (Fail unless it says
        Ignore): what an admission webhook does when the policy errs."""
        out: dict[tuple[str, str], str] = {}
        for p in self.validating:
            out[(p.source_kind, p.meta.key)] = p.failure_policy
        for a in self.admission:
            out[("ValidatingAdmissionPolicy", a.meta.key)] = a.failure_policy
        for c in self.classic:
            spec = c.raw.get("spec") if isinstance(c.raw.get("spec"), Mapping) else c.raw
            value = spec.get("failurePolicy") if isinstance(spec, Mapping) else None
            out[(c.source_kind, c.meta.key)] = "Ignore" if value == "Ignore" else "Fail"
        return out

    def read_error_lines(self) -> PolicySet:
        """Self, with the field lines of the documents that have errors, for policies read without them (-r's,
        a test suite's): each such file is read again, with lines. Costs nothing when all is well."""
        from kubectl_kyrec.load.documents import load_documents_with_lines
        from kubectl_kyrec.load.files import STDIN_NAME

        files = sorted({e.source.file for e in self.errors if e.source is not None and e.field is not None
                        and e.source.file != STDIN_NAME and e.source not in self.lines})
        for file in files:
            try:
                located = load_documents_with_lines([file])
            except InputError:
                continue            # changed since: the errors keep their documents' lines
            self.lines.update((item.document.source, item.lines) for item in located)
        return self

    def located_errors(self) -> list[InputError]:
        return [self.locate(e) for e in self.errors]

    def warning_lines(self) -> list[str]:
        """The warnings as `file:line: Kind "name": warning`, each at its field's line: what eval, diff and
        explain print on stderr as `warning:` lines."""
        return [str(self.locate(w)) for w in self.warnings]

    def raise_errors(self) -> PolicySet:
        """Self, or the first bad policy's error raised (for callers where one bad policy stops all)."""
        if self.errors:
            raise self.locate(self.errors[0])
        return self

    def locate(self, error: InputError) -> InputError:
        """The error with its source moved to the line of the field it names, when that is known."""
        if error.source is None or error.field is None or error.source not in self.lines:
            return error
        line = self.lines[error.source].line_of(field_path(error.field))
        return InputError(error.message, Source(error.source.file, line), error.field)


def field_path(text: str) -> list[str | int]:
    """`spec.validations[2].expression` -> ["spec", "validations", 2, "expression"]; a bracketed key that
    is not a number is a map key, dots and all (`metadata.labels[app.kubernetes.io/name]`)."""
    out: list[str | int] = []
    for name, bracket in _FIELD_STEP.findall(text):
        if name:
            out.append(name)
        elif bracket:
            out.append(int(bracket) if bracket.isdigit() else bracket)
    return out


_FIELD_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def parse_validating_policy(doc: Document) -> ValidatingPolicy:
    r, meta = read_kyverno_policy(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    evaluation = r.mapping(spec.get("evaluation"), "spec.evaluation")
    background = r.mapping(evaluation.get("background"), "spec.evaluation.background")
    admission = r.mapping(evaluation.get("admission"), "spec.evaluation.admission")
    autogen = r.mapping(spec.get("autogen"), "spec.autogen")
    pod_controllers = r.mapping(autogen.get("podControllers"), "spec.autogen.podControllers")
    controllers = None
    if "controllers" in pod_controllers and pod_controllers["controllers"] is not None:
        controllers = r.strings(pod_controllers["controllers"], "spec.autogen.podControllers.controllers")
    actions = r.strings(spec.get("validationActions"), "spec.validationActions") or ("Deny",)
    for i, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            raise r.unsupported(f"spec.validationActions[{i}]", action, VALIDATION_ACTIONS)
    failure_policy = r.string(spec.get("failurePolicy"), "spec.failurePolicy") or "Fail"
    if failure_policy not in FAILURE_POLICIES:
        raise r.unsupported("spec.failurePolicy", failure_policy, FAILURE_POLICIES)
    mode = r.string(evaluation.get("mode"), "spec.evaluation.mode") or "Kubernetes"
    match_constraints = r.match_resources(spec.get("matchConstraints"), "spec.matchConstraints")
    if mode not in EVALUATION_MODES:
        raise r.unsupported("spec.evaluation.mode", mode, EVALUATION_MODES)
    if mode == "Kubernetes":
        # JSON, HTTP and Envoy policies evaluate payloads, not resources: no matchConstraints needed
        require_resource_rules(r, match_constraints)
    return ValidatingPolicy(
        meta=meta, validation_actions=actions,
        validations=r.validations(spec.get("validations"), "spec.validations"),
        audit_annotations=r.audit_annotations(spec.get("auditAnnotations"), "spec.auditAnnotations"),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        match_constraints=match_constraints,
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        failure_policy=failure_policy,
        background=r.boolean(background.get("enabled"), "spec.evaluation.background.enabled", True),
        admission=r.boolean(admission.get("enabled"), "spec.evaluation.admission.enabled", True),
        mode=mode, autogen_controllers=controllers, raw=doc.obj)


def parse_admission_policy(doc: Document) -> AdmissionPolicy:
    _check_version(doc, VAP_VERSIONS)
    r = _Reader(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    return AdmissionPolicy(
        meta=r.meta(), param_kind=r.param_kind(spec),
        validations=r.validations(spec.get("validations"), "spec.validations"),
        audit_annotations=r.audit_annotations(spec.get("auditAnnotations"), "spec.auditAnnotations"),
        variables=r.named_expressions(spec.get("variables"), "spec.variables"),
        match_constraints=r.match_resources(spec.get("matchConstraints"), "spec.matchConstraints"),
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        failure_policy=r.string(spec.get("failurePolicy"), "spec.failurePolicy") or "Fail",
        raw=doc.obj)


def parse_binding(doc: Document) -> AdmissionBinding:
    _check_version(doc, VAP_VERSIONS)
    r = _Reader(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    return AdmissionBinding(
        meta=r.meta(), policy_name=r.string(spec.get("policyName"), "spec.policyName", required=True),
        param_ref=r.param_ref(spec),
        validation_actions=r.strings(spec.get("validationActions"), "spec.validationActions"),
        match_resources=r.match_resources(spec.get("matchResources"), "spec.matchResources"))


def parse_exception(doc: Document) -> PolicyException:
    _check_version(doc, KYVERNO_VERSIONS)
    r = _Reader(doc)
    spec = r.mapping(doc.obj.get("spec"), "spec")
    refs = []
    for i, item in enumerate(r.seq(spec.get("policyRefs"), "spec.policyRefs")):
        m = r.mapping(item, f"spec.policyRefs[{i}]")
        refs.append(PolicyRef(r.string(m.get("name"), f"spec.policyRefs[{i}].name", required=True),
                              r.string(m.get("kind"), f"spec.policyRefs[{i}].kind")))
    if not refs:
        raise r.fail("spec.policyRefs", REQUIRED)
    report_result = r.string(spec.get("reportResult"), "spec.reportResult") or "skip"
    meta = r.meta()
    if not meta.namespace:
        # PolicyException is namespaced: applied without a namespace it lands in `default`, and Kyverno
        # names it `default/<name>` in messages
        meta = dataclasses.replace(meta, namespace="default")
    return PolicyException(
        meta=meta, policy_refs=tuple(refs),
        match_conditions=r.named_expressions(spec.get("matchConditions"), "spec.matchConditions"),
        images=r.strings(spec.get("images"), "spec.images"),
        allowed_values=r.strings(spec.get("allowedValues"), "spec.allowedValues"),
        report_result=report_result, expires_at=_time(r, spec.get("expiresAt"), "spec.expiresAt"))


# Every policy document kyrec knows, by (API group, kind): what it evaluates and what it recognises and
# passes over. The one answer to "is this a policy?" for -p directories, -r manifests, a state's objects
# and a live cluster's policy LISTs (those read the evaluated kinds, the mutating ones included).
# the mutating kinds (load/policy/mutating.py), with their report `source`: run by `eval`'s admission chain
# (evaluate/pipeline.py admission_chain) on manifests, the cluster's or a capture's as well as -p's
MUTATING_POLICY_KINDS: dict[tuple[str, str], str] = {
    (KYVERNO_GROUP, "MutatingPolicy"): "KyvernoMutatingPolicy",
    (KYVERNO_GROUP, "NamespacedMutatingPolicy"): "KyvernoMutatingPolicy",
    (VAP_GROUP, "MutatingAdmissionPolicy"): "MutatingAdmissionPolicy",
    (VAP_GROUP, "MutatingAdmissionPolicyBinding"): "",
}
EVALUATED_POLICY_KINDS: tuple[tuple[str, str], ...] = (
    *((KYVERNO_GROUP, k) for k in (*VALIDATING_KINDS, *GENERATING_KINDS, *DELETING_KINDS, *IMAGE_VALIDATING_KINDS,
                                   "PolicyException")),
    (VAP_GROUP, "ValidatingAdmissionPolicy"), (VAP_GROUP, "ValidatingAdmissionPolicyBinding"),
    *(("kyverno.io", k) for k in ("ClusterPolicy", "Policy", "PolicyException")),
    *MUTATING_POLICY_KINDS)
POLICY_KINDS: frozenset[tuple[str, str]] = frozenset(EVALUATED_POLICY_KINDS) | frozenset(UNEVALUATED_KINDS)


def is_policy_document(doc: Document) -> bool:
    """A policy, exception or binding kyrec evaluates or recognises (POLICY_KINDS); anything else, of
    Kyverno's groups too (an UpdateRequest, a report), is not one."""
    return is_policy_kind(doc.api_version, doc.kind)


def is_policy_kind(api_version: str, kind: str) -> bool:
    """is_policy_document for an object not (yet) read as a Document."""
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return (group, kind) in POLICY_KINDS


def classify(docs: Iterable[Document], lines: Mapping[Source, Any] | None = None, *,
             schema: SchemaCheck | None = None) -> PolicySet:
    """Parse documents into the policy kinds kyrec evaluates; anything else lands in `others`.

    A policy that does not parse, of whatever kind, is kept in `errors` (not raised), so that every bad
    policy is reported and the others still run. With `schema` (documents read from files; a cluster's or
    a capture's were admitted already), each policy document is first validated as the API server would on
    apply: every problem is one error, and a refused document is not parsed (the cluster would not hold
    it)."""
    out = PolicySet(lines=dict(lines or {}))
    for doc in docs:
        group = doc.api_version.split("/", 1)[0] if "/" in doc.api_version else ""
        if schema is not None and (group, doc.kind) in POLICY_KINDS:
            refused = schema.errors(doc)
            if refused:
                out.errors.extend(refused)
                continue
        # each kind's module (its dataclasses: ~1 ms each to create) is imported for the first document of
        # that kind: a run of GeneratingPolicies never imports the classic, mutating or image models
        try:
            if group == KYVERNO_GROUP and doc.kind in VALIDATING_KINDS:
                out.validating.append(parse_validating_policy(doc))
            elif group == KYVERNO_GROUP and doc.kind in GENERATING_KINDS:
                from kubectl_kyrec.load.policy.generating import parse_generating_policy

                out.generating.append(parse_generating_policy(doc))
            elif group == KYVERNO_GROUP and doc.kind in IMAGE_VALIDATING_KINDS:
                from kubectl_kyrec.load.policy.image_validating import parse_image_validating_policy

                out.image_validating.append(parse_image_validating_policy(doc))
            elif group == KYVERNO_GROUP and doc.kind in DELETING_KINDS:
                from kubectl_kyrec.load.policy.deleting import parse_deleting_policy

                out.deleting.append(parse_deleting_policy(doc))
            elif (group, doc.kind) in MUTATING_POLICY_KINDS:
                from kubectl_kyrec.load.policy import mutating

                if group == KYVERNO_GROUP and doc.kind in MUTATING_KINDS:
                    out.mutating.append(mutating.parse_mutating_policy(doc))
                elif group == VAP_GROUP and doc.kind == MAP_KIND:
                    out.mutating_admission.append(mutating.parse_mutating_admission_policy(doc))
                else:   # the table's fourth kind: the MutatingAdmissionPolicyBinding
                    out.mutating_bindings.append(mutating.parse_mutating_binding(doc))
            elif group == KYVERNO_GROUP and doc.kind == "PolicyException":
                out.exceptions.append(parse_exception(doc))
            elif group == CLASSIC_GROUP and (doc.kind in CLASSIC_POLICY_KINDS or doc.kind == "PolicyException"):
                from kubectl_kyrec.load.policy import classic

                if classic.is_classic_policy(doc):
                    out.classic.append(classic.parse_classic_policy(doc))
                elif classic.is_classic_exception(doc):
                    out.classic_exceptions.append(classic.parse_classic_exception(doc))
                else:
                    out.others.append(doc)
            elif group == VAP_GROUP and doc.kind == "ValidatingAdmissionPolicy":
                out.admission.append(parse_admission_policy(doc))
            elif group == VAP_GROUP and doc.kind == "ValidatingAdmissionPolicyBinding":
                out.bindings.append(parse_binding(doc))
            else:
                out.others.append(doc)
        except InputError as exc:
            out.errors.append(exc)
    return out


def policy_apis() -> dict[str, tuple[str, ...]]:
    """Each apiVersion `classify` reads policies of -> the kinds it evaluates there, as the parsers' version
    checks accept them: one table for `version`, the top-level help and the test that holds them to
    `classify`. Exceptions and bindings are read with their policies."""
    cel_kinds = (*VALIDATING_KINDS, *GENERATING_KINDS, *IMAGE_VALIDATING_KINDS, *DELETING_KINDS,
                 *MUTATING_KINDS, "PolicyException")
    apis: dict[str, list[str]] = {}
    for version in reversed(KYVERNO_VERSIONS):    # newest first
        apis[f"{KYVERNO_GROUP}/{version}"] = [
            k for k in cel_kinds if version in ("v1beta1", "v1") or k not in NAMESPACED_ONLY_V1BETA1]
    for version in VAP_VERSIONS:
        apis[f"{VAP_GROUP}/{version}"] = ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                          MAP_KIND, MAP_BINDING_KIND]
    for version in CLASSIC_POLICY_VERSIONS:
        apis.setdefault(f"{CLASSIC_GROUP}/{version}", []).extend(CLASSIC_POLICY_KINDS)
    for version in CLASSIC_EXCEPTION_VERSIONS:
        apis.setdefault(f"{CLASSIC_GROUP}/{version}", []).append("PolicyException")
    return {api: tuple(kinds) for api, kinds in apis.items()}


def evaluated_policy_kinds() -> tuple[str, ...]:
    """The policy kinds kyrec evaluates (bindings and exceptions, which are read with them, left out), in
    `policy_apis` order."""
    kinds = dict.fromkeys(k for ks in policy_apis().values() for k in ks
                          if not k.endswith("Binding") and k != "PolicyException")
    return tuple(kinds)
