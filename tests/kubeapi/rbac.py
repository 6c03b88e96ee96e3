"""RBAC from a role file: ClusterRoles, Roles and their bindings, as the RBAC authorizer reads them.

The file is ordinary multi-document YAML (the shape of docs/rbac.yaml plus bindings). A request is allowed
when a binding for the user or one of its groups grants a rule with the verb, the API group, the resource
(`*`, `resource/subresource`) and, when the rule names some, the object's name. Discovery and /version are
allowed to every authenticated user (the default system:discovery binding).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass(frozen=True)
class Rule:
    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]

    def allows(self, verb: str, group: str, resource: str, name: str) -> bool:
        return ((verb in self.verbs or "*" in self.verbs)
                and (group in self.api_groups or "*" in self.api_groups)
                and (resource in self.resources or "*" in self.resources)
                and (not self.resource_names or name in self.resource_names))


def _rules(role: Mapping[str, Any]) -> list[Rule]:
    out = []
    for r in role.get("rules") or []:
        out.append(Rule(frozenset(r.get("verbs") or ()), frozenset(r.get("apiGroups") or ()),
                        frozenset(r.get("resources") or ()), frozenset(r.get("resourceNames") or ())))
    return out


@dataclass
class Rbac:
    cluster_roles: dict[str, list[Rule]] = field(default_factory=dict)
    roles: dict[tuple[str, str], list[Rule]] = field(default_factory=dict)
    # (namespace or "" for cluster-wide, role rules, subjects as (kind, name))
    bindings: list[tuple[str, list[Rule], frozenset[tuple[str, str]]]] = field(default_factory=list)

    @classmethod
    def from_documents(cls, docs: Iterable[Mapping[str, Any]]) -> Rbac:
        rbac = cls()
        docs = [d for d in docs if isinstance(d, Mapping)]
        for doc in docs:
            meta = doc.get("metadata") or {}
            if doc.get("kind") == "ClusterRole":
                rbac.cluster_roles[str(meta.get("name"))] = _rules(doc)
            elif doc.get("kind") == "Role":
                rbac.roles[(str(meta.get("namespace") or "default"), str(meta.get("name")))] = _rules(doc)
        for doc in docs:
            kind = doc.get("kind")
            if kind not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            meta = doc.get("metadata") or {}
            ref = doc.get("roleRef") or {}
            namespace = "" if kind == "ClusterRoleBinding" else str(meta.get("namespace") or "default")
            if ref.get("kind") == "ClusterRole":
                rules = rbac.cluster_roles.get(str(ref.get("name")), [])
            else:
                rules = rbac.roles.get((namespace, str(ref.get("name"))), [])
            subjects = frozenset((str(s.get("kind")), str(s.get("name"))) for s in doc.get("subjects") or [])
            rbac.bindings.append((namespace, rules, subjects))
        return rbac

    @classmethod
    def from_yaml(cls, text: str) -> Rbac:
        return cls.from_documents(yaml.safe_load_all(text))

    def allows(self, user: str, groups: Iterable[str], verb: str, group: str, resource: str, namespace: str,
               name: str = "") -> bool:
        who = {("User", user)} | {("Group", g) for g in groups}
        for scope, rules, subjects in self.bindings:
            if not who & subjects:
                continue
            if scope and scope != namespace:
                continue
            if any(rule.allows(verb, group, resource, name) for rule in rules):
                return True
        return False
