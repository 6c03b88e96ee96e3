"""matchConstraints, as Kyverno's CEL matcher evaluates them (kk: pkg/cel/matching/matcher.go).

Order: namespaceSelector, objectSelector, excludeResourceRules, resourceRules; selector errors count only
when the rules match. Empty resourceRules match everything; a nil matchConstraints matches nothing.
Rule matching is k8s.io/apiserver's webhook rules.Matcher (scope, operation, group, version, resource
with `*` and `res/sub`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.evaluate.admission import RequestInfo
from kubectl_kyrec.evaluate.selectors import SelectorError, matches_selector, selector_is_empty
from kubectl_kyrec.load.policies import MatchResources, ResourceRule


class MatchError(Exception):
    """Kyverno reports this as rule `match`, message `failed to execute matching: <err>`."""


def _rule_matches(rule: ResourceRule, req: RequestInfo) -> bool:
    if rule.scope not in ("*", ""):
        is_namespace = req.resource == "namespaces" and req.group == ""
        if rule.scope == "Namespaced" and (is_namespace or not req.namespace):
            return False
        if rule.scope == "Cluster" and not (is_namespace or not req.namespace):
            return False
    if not any(op in ("*", req.operation) for op in rule.operations):
        return False
    if not any(g in ("*", req.group) for g in rule.api_groups):
        return False
    if not any(v in ("*", req.version) for v in rule.api_versions):
        return False
    for entry in rule.resources:
        res, _, sub = entry.partition("/")
        if res in ("*", req.resource) and sub in ("*", req.subresource):
            return True
    return False


def _name_matches(rule: ResourceRule, req: RequestInfo) -> bool:
    if not rule.resource_names:
        return True
    if not req.name:
        meta = (req.obj or {}).get("metadata") or {}
        generate_name = str(meta.get("generateName") or "")
        return any(generate_name.startswith(n) for n in rule.resource_names)
    return req.name in rule.resource_names


def matches_rules(rules: Sequence[ResourceRule], req: RequestInfo) -> bool:
    return any(_rule_matches(r, req) and _name_matches(r, req) for r in rules)


def namespace_labels(req: RequestInfo, namespace_obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    """The labels a namespaceSelector sees; None when the selector does not apply (cluster-scoped)."""
    if req.kind == "Namespace" and req.group == "":
        return req.labels
    if not req.namespace:
        return None
    if namespace_obj is not None:
        return ((namespace_obj.get("metadata") or {}).get("labels")) or {}
    return {"kubernetes.io/metadata.name": req.namespace}


def matches_constraints(constraints: MatchResources | None, req: RequestInfo,
                        namespace_obj: Mapping[str, Any] | None) -> bool:
    """True when the policy applies; raises MatchError for a bad selector on a matching request."""
    if constraints is None:
        return False
    ns_error: str | None = None
    obj_error: str | None = None
    if not selector_is_empty(constraints.namespace_selector):
        labels = namespace_labels(req, namespace_obj)
        if labels is not None:
            try:
                if not matches_selector(constraints.namespace_selector, labels):
                    return False
            except SelectorError as exc:
                ns_error = str(exc)
    if not selector_is_empty(constraints.object_selector):
        try:
            # the object selector matches when either the new or the old object's labels do
            candidates = [o for o in (req.obj, req.old_obj) if o is not None]
            if not any(matches_selector(constraints.object_selector,
                                        (o.get("metadata") or {}).get("labels") or {}) for o in candidates):
                return False
        except SelectorError as exc:
            obj_error = str(exc)
    if matches_rules(constraints.exclude_resource_rules, req):
        return False
    if constraints.resource_rules and not matches_rules(constraints.resource_rules, req):
        return False
    if ns_error or obj_error:
        raise MatchError(ns_error or obj_error)
    return True
