"""Kyverno's classic kinds: `kyverno.io/v1` ClusterPolicy and Policy, `kyverno.io/v2` PolicyException.

Shapes follow kk: api/kyverno/v1 (spec, rules, match/exclude) and api/kyverno/v2 (PolicyException) at the
commit docs/semantics/README.md names. The policy kinds are read as v1 and as v2beta1, which Kyverno's CLI
still converts to v1 (cmd/cli/kubectl-kyverno/policy/load.go) though the CRDs no longer serve it;
PolicyException is served as v2 and v2beta1. The rule bodies (patterns, conditions, context entries) stay
plain data: their meaning is the evaluator's, and Kyverno itself keeps them as raw JSON. What the API server
or Kyverno's policy webhook refuses is an InputError naming the field, so the CLI points at its line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.vocabulary import (
    CLASSIC_EXCEPTION_VERSIONS,
    CLASSIC_GROUP,
    CLASSIC_POLICY_KINDS,
    CLASSIC_POLICY_VERSIONS,
    CLASSIC_REPORT_SOURCE,
    PolicyMeta,
    _Reader,
)
from kubectl_kyrec.load.schema import REQUIRED, policy_label, type_message, unsupported_message
from kubectl_kyrec.load.schema.validate import shown, unknown_message
from kubectl_kyrec.model import Document, Obj

REPORT_SOURCE = CLASSIC_REPORT_SOURCE

# the rule types a rule may have exactly one of (kk: api/kyverno/v1 rule_types.go)
RULE_TYPES = ("validate", "mutate", "generate", "verifyImages")
# validate sub-kinds, in the order Kyverno's handler factory picks them (engine/validation.go)
VALIDATE_KINDS = ("manifests", "podSecurity", "cel", "deny", "pattern", "anyPattern", "foreach")
FAILURE_ACTIONS = ("Audit", "Enforce")
_MATCH_FIELDS = ("any", "all", "resources", "subjects", "roles", "clusterRoles")


@dataclass(frozen=True)
class ClassicRule:
    """One rule as written. `type` is validate, mutate, generate or verifyImages."""

    name: str
    index: int
    type: str
    raw: Mapping[str, Any]

    @property
    def validate(self) -> Mapping[str, Any]:
        value = self.raw.get("validate")
        return value if isinstance(value, Mapping) else {}

    @property
    def validate_kind(self) -> str:
        """Which validate handler Kyverno runs: manifests > podSecurity > cel > deny > pattern > ... ."""
        v = self.validate
        for kind in VALIDATE_KINDS:
            if v.get(kind) is not None:
                return kind
        return ""

    @property
    def report_properties(self) -> Mapping[str, str]:
        value = self.raw.get("reportProperties")
        return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class ClassicPolicy:
    meta: PolicyMeta
    rules: tuple[ClassicRule, ...]
    validation_failure_action: str        # Audit | Enforce (spec.validationFailureAction, default Audit)
    background: bool
    admission: bool
    apply_rules: str                      # All | One
    raw: Obj

    @property
    def source_kind(self) -> str:
        return REPORT_SOURCE

    def failure_action(self, rule: ClassicRule, namespace: str = "",
                       namespace_labels: Mapping[str, str] | None = None) -> str:
        """validate.failureAction with its overrides, else the policy's (kk: ComputeValidationFailureAction:
        an override applies when a namespace in it matches (wildcards) and its namespaceSelector, if any,
        matches the namespace's labels; without namespaces, its namespaceSelector alone decides)."""
        cached = _ACTIONS.get((id(self), rule.name))
        if cached is not None and cached[0] is self:
            return cached[1]
        v = rule.validate
        overrides = v.get("failureActionOverrides")
        if overrides is None:
            overrides = (self.raw.get("spec") or {}).get("validationFailureActionOverrides")
        own = _normal_action(str(v.get("failureAction") or "")) or self.validation_failure_action
        if not overrides or not isinstance(overrides, list):
            _ACTIONS[(id(self), rule.name)] = (self, own)   # the same for every namespace: asked per result
            return own
        from kubectl_kyrec.golang.wildcard import match as wildcard_match
        from kubectl_kyrec.k8s.labels import SelectorError, matches_selector

        def selected(selector: Any) -> bool:
            if not isinstance(selector, Mapping):
                return False        # kk CheckSelector: a nil selector matches nothing
            try:
                return matches_selector(selector, namespace_labels or {})
            except SelectorError:
                return False

        for override in overrides:
            if not isinstance(override, Mapping):
                continue
            action = _normal_action(str(override.get("action") or ""))
            if not action:
                continue
            namespaces = override.get("namespaces")
            if namespaces is None:
                if selected(override.get("namespaceSelector")):
                    return action
                continue
            for ns in namespaces:
                if wildcard_match(str(ns), namespace) and (override.get("namespaceSelector") is None
                                                           or selected(override.get("namespaceSelector"))):
                    return action
        return own


_ACTIONS: dict[tuple[int, str], tuple[ClassicPolicy, str]] = {}


@dataclass(frozen=True)
class ExceptionEntry:
    policy_name: str                      # `name` or `ns/name`
    rule_names: tuple[str, ...]


@dataclass(frozen=True)
class ClassicException:
    """A `kyverno.io/v2` (or v2beta1) PolicyException."""

    meta: PolicyMeta
    entries: tuple[ExceptionEntry, ...]
    match: Mapping[str, Any]
    conditions: Any
    pod_security: tuple[Mapping[str, Any], ...]
    background: bool

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}" if self.meta.namespace else self.meta.name

    def contains(self, policy_key: str, rule: str) -> bool:
        """kk: Exception.Contains: the policy name (ns/name for a Policy) and a rule name, wildcards allowed."""
        from kubectl_kyrec.golang.wildcard import match as wildcard_match

        for entry in self.entries:
            if entry.policy_name == policy_key and any(wildcard_match(r, rule) for r in entry.rule_names):
                return True
        return False


def _normal_action(value: str) -> str:
    # the CRD accepts audit/enforce in lower case too (Kyverno compares case-insensitively)
    return {"audit": "Audit", "enforce": "Enforce"}.get(value.lower(), "")


def _check_version(doc: Document, versions: tuple[str, ...]) -> None:
    version = doc.api_version.split("/", 1)[-1]
    if version not in versions:
        raise InputError(f"{policy_label(doc.kind, doc.name)}: unknown version {doc.api_version!r} "
                         f"(known: {', '.join(CLASSIC_GROUP + '/' + v for v in versions)})", doc.source)


def _check_match(r: _Reader, value: Any, path: str, *, required: bool) -> Mapping[str, Any]:
    if value is None:
        if required:
            raise r.fail(path, REQUIRED)
        return {}
    m = r.mapping(value, path)
    if m.get("any") and m.get("all"):
        raise r.fail(path, "Invalid value: can't specify any and all together")
    for block in ("any", "all"):
        for i, item in enumerate(r.seq(m.get(block), f"{path}.{block}")):
            if item is None:    # the CRD schema refuses a null filter; matching would meet nothing to read
                raise r.fail(f"{path}.{block}[{i}]", type_message(f"{path}.{block}[{i}]", None, "object"))
            f = r.mapping(item, f"{path}.{block}[{i}]")
            _check_description(r, f.get("resources"), f"{path}.{block}[{i}].resources")
    _check_description(r, m.get("resources"), f"{path}.resources")
    unknown = [k for k in m if k not in _MATCH_FIELDS]
    if unknown:
        raise r.fail(f"{path}.{unknown[0]}", unknown_message(f"{path}.{unknown[0]}", _MATCH_FIELDS))
    return m


def _check_description(r: _Reader, value: Any, path: str) -> None:
    d = r.mapping(value, path)
    for key in ("kinds", "names", "namespaces", "operations"):
        r.strings(d.get(key), f"{path}.{key}")
    r.string(d.get("name"), f"{path}.name")
    for key in ("selector", "namespaceSelector", "annotations"):
        if d.get(key) is not None:
            r.mapping(d.get(key), f"{path}.{key}")


def parse_classic_policy(doc: Document) -> ClassicPolicy:
    _check_version(doc, CLASSIC_POLICY_VERSIONS)
    r = _Reader(doc)
    meta = r.meta()
    if doc.kind == "Policy" and not meta.namespace:
        meta = dataclasses.replace(meta, namespace="default")   # where kubectl puts it
    elif doc.kind == "ClusterPolicy" and meta.namespace:
        meta = dataclasses.replace(meta, namespace="")
    spec = r.mapping(doc.obj.get("spec"), "spec")
    action = r.string(spec.get("validationFailureAction"), "spec.validationFailureAction")
    if action and not _normal_action(action):
        raise r.fail("spec.validationFailureAction", unsupported_message(action, FAILURE_ACTIONS))
    apply_rules = r.string(spec.get("applyRules"), "spec.applyRules") or "All"
    if apply_rules not in ("All", "One"):
        raise r.fail("spec.applyRules", unsupported_message(apply_rules, ("All", "One")))
    rules = []
    seen: set[str] = set()
    for i, item in enumerate(r.seq(spec.get("rules"), "spec.rules")):
        path = f"spec.rules[{i}]"
        raw = r.mapping(item, path)
        name = r.string(raw.get("name"), f"{path}.name", required=True)
        if name in seen:
            raise r.fail(f"{path}.name", f"Invalid value: {shown(name)}: Duplicate rule name: '{name}'")
        seen.add(name)
        if len(name) > 63:
            raise r.fail(f"{path}.name", "Invalid value: rule name is longer than 63 characters")
        types = [t for t in RULE_TYPES if raw.get(t) is not None and raw.get(t) != []]
        if len(types) != 1:
            raise r.fail(path, f"rule {name!r} must have exactly one of {', '.join(RULE_TYPES)} "
                               f"(found {', '.join(types) or 'none'})")
        _check_match(r, raw.get("match"), f"{path}.match", required=True)
        _check_match(r, raw.get("exclude"), f"{path}.exclude", required=False)
        _check_context(r, raw.get("context"), f"{path}.context")
        if types[0] == "verifyImages":
            r.seq(raw.get("verifyImages"), f"{path}.verifyImages")
        else:
            r.mapping(raw.get(types[0]), f"{path}.{types[0]}")
        if types[0] == "generate":
            _check_generate(r, raw["generate"], f"{path}.generate")
        if types[0] == "validate":
            v = r.mapping(raw.get("validate"), f"{path}.validate")
            r.string(v.get("message"), f"{path}.validate.message")
            fa = r.string(v.get("failureAction"), f"{path}.validate.failureAction")
            if fa and not _normal_action(fa):
                raise r.fail(f"{path}.validate.failureAction", unsupported_message(fa, FAILURE_ACTIONS))
            if v.get("anyPattern") is not None:
                r.seq(v.get("anyPattern"), f"{path}.validate.anyPattern")
            r.seq(v.get("foreach"), f"{path}.validate.foreach")
            _check_pod_security(r, v.get("podSecurity"), f"{path}.validate.podSecurity")
        rules.append(ClassicRule(name, i, types[0], raw))
    if not rules:
        raise r.fail("spec.rules", "Required value: a policy needs at least one rule")
    return ClassicPolicy(
        meta=meta, rules=tuple(rules), validation_failure_action=_normal_action(action) or "Audit",
        background=r.boolean(spec.get("background"), "spec.background", True),
        admission=r.boolean(spec.get("admission"), "spec.admission", True),
        apply_rules=apply_rules, raw=doc.obj)


def _check_context(r: _Reader, value: Any, path: str) -> None:
    for i, entry in enumerate(r.seq(value, path)):
        e = r.mapping(entry, f"{path}[{i}]")
        r.string(e.get("name"), f"{path}[{i}].name", required=True)
        for source in ("configMap", "apiCall", "imageRegistry", "variable", "globalReference"):
            if e.get(source) is not None:
                r.mapping(e.get(source), f"{path}[{i}].{source}")


def _check_generate(r: _Reader, value: Mapping[str, Any], path: str) -> None:
    """The typed fields of a generate rule (kyverno.io/v1 Generation): what the CRD schema refuses."""
    for key in ("apiVersion", "kind", "name", "namespace", "uid"):
        r.string(value.get(key), f"{path}.{key}")
    for key in ("synchronize", "orphanDownstreamOnPolicyDelete", "generateExisting"):
        if value.get(key) is not None:
            r.boolean(value.get(key), f"{path}.{key}", False)
    for key in ("clone", "cloneList"):
        if value.get(key) is not None:
            r.mapping(value.get(key), f"{path}.{key}")
    r.seq(value.get("foreach"), f"{path}.foreach")


def _check_pod_security(r: _Reader, value: Any, path: str) -> None:
    if value is None:
        return
    pss = r.mapping(value, path)
    level = r.string(pss.get("level"), f"{path}.level")
    for i, entry in enumerate(r.seq(pss.get("exclude"), f"{path}.exclude")):
        _check_pss_exclusion(r, r.mapping(entry, f"{path}.exclude[{i}]"), f"{path}.exclude[{i}]", level)


def _check_pss_exclusion(r: _Reader, entry: Mapping[str, Any], path: str, level: str | None) -> None:
    from kubectl_kyrec.load.policy.pss_exclusions import exclusion_errors

    for name, message in exclusion_errors(entry, level):
        raise r.fail(f"{path}.{name}", message)


def parse_classic_exception(doc: Document) -> ClassicException:
    _check_version(doc, CLASSIC_EXCEPTION_VERSIONS)
    r = _Reader(doc)
    meta = r.meta()
    if not meta.namespace:
        meta = dataclasses.replace(meta, namespace="default")
    spec = r.mapping(doc.obj.get("spec"), "spec")
    entries = []
    for i, item in enumerate(r.seq(spec.get("exceptions"), "spec.exceptions")):
        m = r.mapping(item, f"spec.exceptions[{i}]")
        entries.append(ExceptionEntry(
            r.string(m.get("policyName"), f"spec.exceptions[{i}].policyName", required=True),
            r.strings(m.get("ruleNames"), f"spec.exceptions[{i}].ruleNames")))
    match = _check_match(r, spec.get("match"), "spec.match", required=True)
    pss = tuple(r.mapping(p, f"spec.podSecurity[{i}]") for i, p in enumerate(r.seq(spec.get("podSecurity"),
                                                                                     "spec.podSecurity")))
    for i, entry in enumerate(pss):
        _check_pss_exclusion(r, entry, f"spec.podSecurity[{i}]", None)
    background = r.boolean(spec.get("background"), "spec.background", True)
    if background:
        _check_no_user_info(r, match, "spec.match")
    return ClassicException(meta=meta, entries=tuple(entries), match=match, conditions=spec.get("conditions"),
                            pod_security=pss, background=background)


def _check_no_user_info(r: _Reader, match: Mapping[str, Any] | None, path: str) -> None:
    """kk: PolicyExceptionSpec.Validate: an exception applied in background scans has no user to match, so
    Kyverno's webhook refuses roles/clusterRoles/subjects in its match (MatchResources.ValidateNoUserInfo)."""
    if not isinstance(match, Mapping):
        return
    for sub in ("any", "all"):
        for i, block in enumerate(match.get(sub) or []):
            if not isinstance(block, Mapping):
                continue
            for key in ("roles", "clusterRoles", "subjects"):
                if block.get(key):
                    raise r.fail(f"{path}.{sub}[{i}].{key}", "Usage of user info is forbidden")


def is_classic_policy(doc: Document) -> bool:
    return doc.api_version.startswith(CLASSIC_GROUP + "/") and doc.kind in CLASSIC_POLICY_KINDS


def is_classic_exception(doc: Document) -> bool:
    return doc.api_version.startswith(CLASSIC_GROUP + "/") and doc.kind == "PolicyException"
