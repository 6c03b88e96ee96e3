"""matchConstraints, as Kyverno's CEL matcher evaluates them (kk: pkg/cel/matching/matcher.go).

Kyverno's order is namespaceSelector, objectSelector, excludeResourceRules, resourceRules, with selector
errors counting only when the rules match; the rules are checked first here, which gives the same
answers. Empty resourceRules match everything; a nil matchConstraints matches nothing.
Rule matching is k8s.io/apiserver's webhook rules.Matcher (scope, operation, group, version, resource
with `*` and `res/sub`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.evaluate.request import RequestInfo
from kubectl_kyrec.k8s.labels import Selector, SelectorError, from_label_selector, matches_selector, selector_is_empty
from kubectl_kyrec.load.policy.vocabulary import MatchResources, ResourceRule


class MatchError(EngineError):
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
    if not any(r.resource_names for r in rules):
        return _rules_match_cached(tuple(rules), req.group, req.version, req.resource, req.subresource,
                                   req.operation, bool(req.namespace))
    return any(_rule_matches(r, req) and _name_matches(r, req) for r in rules)


@functools.lru_cache(maxsize=65536)
def _rules_match_cached(rules: tuple[ResourceRule, ...], group: str, version: str, resource: str,
                        subresource: str, operation: str, namespaced: bool) -> bool:
    # Without resourceNames a rule's answer depends only on these request attributes; scans ask the same
    # question for every subject of a kind, so the answer is memoised (the namespace only matters as
    # empty or not, so only that is kept, which keeps the cache small).
    req = RequestInfo(obj=None, old_obj=None, group=group, version=version, kind="", resource=resource,
                      subresource=subresource, namespace="ns" if namespaced else "", name="",
                      operation=operation, namespaced=namespaced)
    return any(_rule_matches(r, req) for r in rules)


def namespace_labels(req: RequestInfo, namespace_obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    """The labels a namespaceSelector sees; None when the selector does not apply (cluster-scoped)."""
    if req.kind == "Namespace" and req.group == "":
        return req.labels
    if not req.namespace:
        return None
    if namespace_obj is not None:
        return ((namespace_obj.get("metadata") or {}).get("labels")) or {}
    return {"kubernetes.io/metadata.name": req.namespace}


def rules_decided_by_kind(constraints: MatchResources) -> bool:
    """True when the rules' answer depends only on the request's kind and operation (no resourceNames)."""
    return _decided_by_kind(constraints.resource_rules, constraints.exclude_resource_rules)


@functools.lru_cache(maxsize=4096)
def _decided_by_kind(rules: tuple[ResourceRule, ...], excludes: tuple[ResourceRule, ...]) -> bool:
    return not any(r.resource_names for r in (*rules, *excludes))


def may_match(constraints: MatchResources | None, req: RequestInfo) -> bool:
    """The rules part alone (ignoring resourceNames when present): a cheap pre-filter per kind."""
    if constraints is None:
        return False
    if not rules_decided_by_kind(constraints):
        return True
    if matches_rules(constraints.exclude_resource_rules, req):
        return False
    return not constraints.resource_rules or matches_rules(constraints.resource_rules, req)


# a policy's selectors, parsed once: by the mapping's identity (the mapping is held, so its id is not reused),
# checked against its value when parsed (a mapping changed since is parsed again)
_PARSED: dict[int, tuple[Any, Any, Selector]] = {}
_PARSED_MAX = 1024


def _parsed(selector: Any) -> Selector:
    """from_label_selector(selector), which a scan asks of the same policy's selector for every subject."""
    found = _PARSED.get(id(selector))
    if found is not None and found[0] is selector and found[1] == selector:
        return found[2]
    parsed = from_label_selector(selector)      # SelectorError: never kept, raised again each time
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[id(selector)] = (selector, copy.deepcopy(selector), parsed)
    return parsed


def matches_constraints(constraints: MatchResources | None, req: RequestInfo,
                        namespace_obj: Mapping[str, Any] | None, *, rules_checked: bool = False) -> bool:
    """True when the policy applies; raises MatchError for a bad selector on a matching request.

    `rules_checked`: the caller knows `may_match` holds for this request's kind and that the rules have
    no resourceNames (`rules_decided_by_kind`), so only the selectors are left to check.
    """
    if constraints is None:
        return False
    # rules first: cheap and memoised; selectors only matter (errors included) when the rules match
    if not rules_checked:
        if matches_rules(constraints.exclude_resource_rules, req):
            return False
        if constraints.resource_rules and not matches_rules(constraints.resource_rules, req):
            return False
    ns_error: str | None = None
    obj_error: str | None = None
    if not selector_is_empty(constraints.namespace_selector):
        labels = namespace_labels(req, namespace_obj)
        if labels is not None:
            try:
                if not matches_selector(_parsed(constraints.namespace_selector), labels):
                    return False
            except SelectorError as exc:
                ns_error = str(exc)
    if not selector_is_empty(constraints.object_selector):
        try:
            # the object selector matches when either the new or the old object's labels do
            candidates = [o for o in (req.obj, req.old_obj) if o is not None]
            if not any(matches_selector(_parsed(constraints.object_selector),
                                        (o.get("metadata") or {}).get("labels") or {}) for o in candidates):
                return False
        except SelectorError as exc:
            obj_error = str(exc)
    if ns_error or obj_error:
        raise MatchError(ns_error or obj_error)
    return True
