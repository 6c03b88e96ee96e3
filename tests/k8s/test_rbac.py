"""k8s/rbac.py: the RBAC authorizer over a state's objects, each rule of Kubernetes' on the smallest state that
shows it (the realapi test tests/realapi/test_causes.py compares the live answer with a real server's)."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.k8s.rbac import AccessRequest, StateRBAC, rule_allows, service_account_user

USER, GROUPS = service_account_user("kyverno", "kyverno-background-controller")


def _role(name: str, rules: list[dict[str, Any]] | None = None, *, labels: dict[str, str] | None = None,
          aggregate: list[dict[str, str]] | None = None, namespace: str = "") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role" if namespace else "ClusterRole",
                           "metadata": {"name": name, "labels": labels or {}}}
    if namespace:
        obj["metadata"]["namespace"] = namespace
    if rules is not None:
        obj["rules"] = rules
    if aggregate is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": m} for m in aggregate]}
    return obj


def _binding(name: str, role_kind: str, role: str, subjects: list[dict[str, str]],
             namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
            "metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects}


SA = {"kind": "ServiceAccount", "name": "kyverno-background-controller", "namespace": "kyverno"}


def _all_listed(kind: str, namespace: str) -> bool | None:
    return True


def _req(verb: str, resource: str = "configmaps", namespace: str = "team-a", group: str = "", name: str = "",
         subresource: str = "") -> AccessRequest:
    return AccessRequest(USER, GROUPS, verb, group, resource, namespace, name, subresource)


def test_a_service_account_authenticates_with_its_groups() -> None:
    assert USER == "system:serviceaccount:kyverno:kyverno-background-controller"
    assert GROUPS == ("system:serviceaccounts", "system:serviceaccounts:kyverno", "system:authenticated")


def test_rule_matching_wildcards_subresources_and_resource_names() -> None:
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a"]}
    assert rule_allows(rule, _req("get", name="a"))
    assert not rule_allows(rule, _req("get", name="b"))
    # a create names no object: a rule limited by resourceNames cannot grant it
    assert not rule_allows({**rule, "verbs": ["create"]}, _req("create"))
    assert rule_allows({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, _req("delete", "x", group="g"))
    star_sub = {"apiGroups": [""], "resources": ["*/status"], "verbs": ["update"]}
    assert rule_allows(star_sub, _req("update", "pods", subresource="status"))
    assert not rule_allows(star_sub, _req("update", "pods"))


def test_an_aggregated_cluster_role_holds_the_rules_of_the_roles_its_selectors_match() -> None:
    # as Kyverno's chart renders it: the bound role has no rules of its own, only an aggregationRule
    label = {"rbac.kyverno.io/aggregate-to-background-controller": "true"}
    objects = [_role("kyverno:background-controller", aggregate=[label]),
               _role("extra", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}], labels=label),
               _role("unlabelled", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
               _binding("kyverno:background-controller", "ClusterRole", "kyverno:background-controller", [SA])]
    rbac = StateRBAC.of(objects, _all_listed)
    assert rbac.allowed(_req("create", "secrets")) is True
    assert rbac.allowed(_req("delete", "secrets")) is False


def test_a_role_binding_grants_in_its_namespace_only_and_defaults_the_subject_s_namespace() -> None:
    subject = {"kind": "ServiceAccount", "name": "kyverno-background-controller"}   # no namespace: the binding's
    objects = [_role("cm-writer", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]),
               _binding("rb", "ClusterRole", "cm-writer", [subject], namespace="kyverno")]
    rbac = StateRBAC.of(objects, _all_listed)
    assert rbac.allowed(_req("create", namespace="kyverno")) is True
    assert rbac.allowed(_req("create", namespace="team-a")) is False
    assert rbac.allowed(_req("create", namespace="")) is False         # cluster-wide needs a ClusterRoleBinding


def test_group_subjects_and_missing_roles() -> None:
    objects = [_role("reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
               _binding("all-sas", "ClusterRole", "reader", [{"kind": "Group", "name": "system:serviceaccounts"}]),
               _binding("dangling", "ClusterRole", "not-there", [SA])]
    rbac = StateRBAC.of(objects, _all_listed)
    assert rbac.allowed(_req("get")) is True
    assert rbac.allowed(_req("create")) is False                     # a binding to a missing role grants nothing


def test_without_a_record_of_the_lists_a_denial_is_not_decided_but_a_grant_is() -> None:
    objects = [_role("reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
               _binding("b", "ClusterRole", "reader", [SA])]
    no_role_bindings = StateRBAC.of(objects, lambda kind, ns: True if kind.startswith("Cluster") else None)
    assert no_role_bindings.allowed(_req("get")) is True
    assert no_role_bindings.allowed(_req("create")) is None        # a RoleBinding in team-a could grant it
    assert no_role_bindings.allowed(_req("create", namespace="")) is False
