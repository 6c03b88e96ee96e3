"""Kubernetes' RBAC authorizer over a state's objects: may this user make this request?

What the API server's RBAC authorizer decides (k8s: plugin/pkg/auth/authorizer/rbac/rbac.go `Authorize`,
pkg/registry/rbac/validation/rule.go `VisitRulesFor`, `appliesToUser`; pkg/apis/rbac/v1/evaluation_helpers.go
`RuleAllows`), from the ClusterRoles, ClusterRoleBindings, Roles and RoleBindings a state holds:

- a ClusterRoleBinding's role applies in every namespace and cluster-wide; a RoleBinding's (a Role of its
  namespace, or a ClusterRole) only in its namespace;
- a binding applies to a user named by a `User` subject, a group of the user's by a `Group` subject, or a
  `ServiceAccount` subject (its namespace defaulting to the RoleBinding's) that is the user;
- a rule allows when its verbs, apiGroups, resources (`*`, exact, `*/subresource`) and resourceNames (none,
  or the request's name) all match; a binding to a role the state does not hold grants nothing, as the
  authorizer skips it;
- a ClusterRole with an `aggregationRule` holds the rules of every ClusterRole its selectors match (k8s:
  pkg/controller/clusterroleaggregation `syncClusterRole`), so manifests rendered by a chart (whose
  aggregated roles carry no rules yet) decide as the cluster that aggregated them.

The answer is None ("cannot tell") when the state has no record of listing the kinds the decision needs
(load/run_inputs/cluster_state.py `is_listed`): a grant kyrec did not read must not become a denial. Only the RBAC
authorizer is modelled; a cluster with another authorizer (a webhook) may allow more, which the live
SubjectAccessReview (cluster/access_review.py) sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.k8s.labels import SelectorError, matches_selector

RBAC_API = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class AccessRequest:
    """A resource request as authorizers see it (authorizer.Attributes, a SubjectAccessReview's spec)."""

    user: str
    groups: tuple[str, ...]
    verb: str
    group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""


def service_account_user(namespace: str, name: str) -> tuple[str, tuple[str, ...]]:
    """The user name and groups a service account's token authenticates as (k8s:
    pkg/serviceaccount/util.go `MakeUsername`, `MakeGroupNames`; every authenticated user is also in
    `system:authenticated`)."""
    return (f"system:serviceaccount:{namespace}:{name}",
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"))


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def rule_allows(rule: Mapping[str, Any], req: AccessRequest) -> bool:
    """k8s RuleAllows for a resource request."""
    combined = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
    verbs, groups, resources, names = (_strings(rule.get(k)) for k in
                                       ("verbs", "apiGroups", "resources", "resourceNames"))
    if not ("*" in verbs or req.verb in verbs):
        return False
    if not ("*" in groups or req.group in groups):
        return False
    if not ("*" in resources or combined in resources
            or (req.subresource and f"*/{req.subresource}" in resources)):
        return False
    return not names or req.name in names


def _applies_to(subject: Mapping[str, Any], user: str, groups: Sequence[str], namespace: str) -> bool:
    """k8s appliesToUser."""
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return user == name
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        sa_namespace = str(subject.get("namespace") or "") or namespace
        return bool(sa_namespace) and user == f"system:serviceaccount:{sa_namespace}:{name}"
    return False


@dataclass
class StateRBAC:
    """The RBAC objects of a state, indexed once; `listed(kind, namespace)` says whether the state records
    listing a kind there (True), its LIST failing (False) or nothing (None)."""

    cluster_roles: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    roles: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    cluster_role_bindings: list[Mapping[str, Any]] = field(default_factory=list)
    role_bindings: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    listed: Callable[[str, str], bool | None] = lambda kind, namespace: None
    _rules: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    _answers: dict[AccessRequest, bool | None] = field(default_factory=dict)   # a run asks the same often

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]], listed: Callable[[str, str], bool | None]) -> StateRBAC:
        out = cls(listed=listed)
        for obj in objects:
            if not str(obj.get("apiVersion") or "").startswith(RBAC_GROUP + "/"):
                continue
            meta = _map(obj.get("metadata"))
            name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
            kind = obj.get("kind")
            if kind == "ClusterRole":
                out.cluster_roles[name] = obj
            elif kind == "Role":
                out.roles[(namespace, name)] = obj
            elif kind == "ClusterRoleBinding":
                out.cluster_role_bindings.append(obj)
            elif kind == "RoleBinding":
                out.role_bindings.setdefault(namespace, []).append(obj)
        return out

    def cluster_role_rules(self, name: str, seen: frozenset[str] = frozenset()) -> list[Mapping[str, Any]]:
        """A ClusterRole's rules, its aggregation's included."""
        if name in self._rules:
            return self._rules[name]
        role = self.cluster_roles.get(name)
        if role is None:
            return []
        rules = [_map(r) for r in role.get("rules") or []]
        selectors = _map(role.get("aggregationRule")).get("clusterRoleSelectors")
        for selector in selectors if isinstance(selectors, list) else []:
            for other_name, other in self.cluster_roles.items():
                if other_name == name or other_name in seen:
                    continue
                try:
                    if not matches_selector(_map(selector), _map(_map(other.get("metadata")).get("labels"))):
                        continue
                except SelectorError:
                    continue            # the controller skips a selector it cannot parse
                rules.extend(r for r in self.cluster_role_rules(other_name, seen | {name}) if r not in rules)
        if not seen:
            self._rules[name] = rules
        return rules

    def _role_rules(self, ref: Mapping[str, Any], namespace: str) -> list[Mapping[str, Any]]:
        if ref.get("kind") == "ClusterRole":
            return self.cluster_role_rules(str(ref.get("name") or ""))
        if ref.get("kind") == "Role" and namespace:
            role = self.roles.get((namespace, str(ref.get("name") or "")))
            return [_map(r) for r in role.get("rules") or []] if role is not None else []
        return []

    def bindings_for(self, user: str, groups: Sequence[str], namespace: str = "") -> list[Mapping[str, Any]]:
        """The ClusterRoleBindings, and the RoleBindings of `namespace`, that name the user."""
        out = [b for b in self.cluster_role_bindings
               if any(_applies_to(_map(s), user, groups, "") for s in b.get("subjects") or [])]
        if namespace:
            out.extend(b for b in self.role_bindings.get(namespace, [])
                       if any(_applies_to(_map(s), user, groups, namespace) for s in b.get("subjects") or []))
        return out

    def allowed(self, req: AccessRequest) -> bool | None:
        """True or False as the RBAC authorizer answers; None when the state lacks a LIST the answer needs."""
        if req not in self._answers:
            self._answers[req] = self._decide(req)
        return self._answers[req]

    def _decide(self, req: AccessRequest) -> bool | None:
        needed = [("ClusterRoleBinding", ""), ("ClusterRole", "")]
        if req.namespace:
            needed += [("RoleBinding", req.namespace), ("Role", req.namespace)]
        complete = all(self.listed(kind, ns) is True for kind, ns in needed)
        for binding in self.bindings_for(req.user, req.groups, req.namespace):
            namespace = str(_map(binding.get("metadata")).get("namespace") or "")
            if any(rule_allows(rule, req) for rule in self._role_rules(_map(binding.get("roleRef")), namespace)):
                return True
        return False if complete else None
