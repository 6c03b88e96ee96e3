"""match / exclude of classic rules (kk: pkg/engine/utils/match.go, pkg/utils/match)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.classic.match import RequestFacts, match_state, parse_kind_selector, rule_matches, user_info_paths


def facts(obj: dict[str, Any], *, group: str = "", version: str = "v1", sub: str = "", op: str = "CREATE",
          ns_labels: dict[str, str] | None = None, **user: Any) -> RequestFacts:
    return RequestFacts(obj=obj, group=group, version=version, kind=str(obj.get("kind")), subresource=sub,
                        operation=op, namespace_labels=ns_labels, **user)


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-1", "namespace": "prod", "labels": {"app": "web", "tier": "front"},
                    "annotations": {"team.io/owner": "alice"}}}


@pytest.mark.parametrize(("text", "parsed"), [
    ("Pod", ("*", "*", "Pod", "")),
    ("v1/Pod", ("*", "v1", "Pod", "")),
    ("Pod/status", ("*", "*", "Pod", "status")),
    ("Pod.status", ("*", "*", "Pod", "status")),
    ("*/*", ("*", "*", "*", "*")),
    ("*/scale", ("*", "*", "*", "scale")),
    ("apps/v1/Deployment", ("apps", "v1", "Deployment", "")),
    ("v1/Pod/ephemeralcontainers", ("*", "v1", "Pod", "ephemeralcontainers")),
    ("apps/v1/Deployment/scale", ("apps", "v1", "Deployment", "scale")),
])
def test_kind_selectors(text: str, parsed: tuple[str, str, str, str]) -> None:
    assert parse_kind_selector(text) == parsed


@pytest.mark.parametrize(("match", "matched"), [
    ({"resources": {"kinds": ["Pod"]}}, True),
    ({"resources": {"kinds": ["apps/v1/Deployment"]}}, False),
    ({"resources": {"kinds": ["*"]}}, True),
    ({"resources": {"kinds": ["Pod/status"]}}, False),         # no subresource in the request
    ({"resources": {"kinds": ["Pod"], "names": ["web-*"]}}, True),
    ({"resources": {"kinds": ["Pod"], "name": "web-?"}}, True),
    ({"resources": {"kinds": ["Pod"], "names": ["db-*"]}}, False),
    ({"resources": {"kinds": ["Pod"], "namespaces": ["pr*"]}}, True),
    ({"resources": {"kinds": ["Pod"], "namespaces": ["dev"]}}, False),
    ({"resources": {"kinds": ["Pod"], "selector": {"matchLabels": {"app": "w*"}}}}, True),
    ({"resources": {"kinds": ["Pod"], "selector": {"matchLabels": {"app": "db"}}}}, False),
    ({"resources": {"kinds": ["Pod"], "annotations": {"team.io/*": "ali*"}}}, True),
    ({"resources": {"kinds": ["Pod"], "annotations": {"team.io/*": "bob"}}}, False),
    ({"resources": {"kinds": ["Pod"], "operations": ["UPDATE"]}}, False),
    ({"resources": {"kinds": ["Pod"], "namespaceSelector": {"matchLabels": {"env": "prod"}}}}, True),
    ({"resources": {"kinds": ["Pod"], "namespaceSelector": {"matchLabels": {"env": "dev"}}}}, False),
    ({"any": [{"resources": {"kinds": ["Service"]}}, {"resources": {"kinds": ["Pod"]}}]}, True),
    ({"all": [{"resources": {"kinds": ["Service"]}}, {"resources": {"kinds": ["Pod"]}}]}, False),
    ({"all": [{"resources": {"kinds": ["Pod"]}}, {"resources": {"namespaces": ["prod"]}}]}, True),
    ({"resources": {}}, False),                                # "match cannot be empty"
])
def test_match(match: dict[str, Any], matched: bool) -> None:
    assert rule_matches(match, None, facts(POD, ns_labels={"env": "prod"})) is matched


@pytest.mark.parametrize(("exclude", "matched"), [
    ({"resources": {"namespaces": ["prod"]}}, False),
    ({"resources": {"namespaces": ["dev"]}}, True),
    ({"any": [{"resources": {"namespaces": ["dev"]}}, {"resources": {"names": ["web-1"]}}]}, False),
    # all: excluded only when every block excludes
    ({"all": [{"resources": {"namespaces": ["prod"]}}, {"resources": {"names": ["other"]}}]}, True),
    ({"all": [{"resources": {"namespaces": ["prod"]}}, {"resources": {"names": ["web-*"]}}]}, False),
])
def test_exclude(exclude: dict[str, Any], matched: bool) -> None:
    assert rule_matches({"resources": {"kinds": ["Pod"]}}, exclude, facts(POD)) is matched


def test_user_info_is_ignored_in_match_and_never_excludes_without_request_info() -> None:
    # the background scan has no user information: Kyverno drops userInfo from match blocks ...
    match = {"any": [{"resources": {"kinds": ["Pod"]}, "clusterRoles": ["cluster-admin"]}]}
    assert rule_matches(match, None, facts(POD))
    # ... and an exclude that needs it does not exclude
    exclude = {"any": [{"subjects": [{"kind": "User", "name": "alice"}]}]}
    assert rule_matches({"resources": {"kinds": ["Pod"]}}, exclude, facts(POD))


def test_user_info_given() -> None:
    match = {"any": [{"resources": {"kinds": ["Pod"]}, "clusterRoles": ["cluster-admin"]}]}
    assert not rule_matches(match, None, facts(POD, user_info={"username": "bob"}, cluster_roles=("view",)))
    assert rule_matches(match, None, facts(POD, user_info={"username": "bob"}, cluster_roles=("cluster-admin",)))
    exclude = {"any": [{"subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}]}]}
    who = {"username": "system:serviceaccount:tools:ci"}
    assert not rule_matches({"resources": {"kinds": ["Pod"]}}, exclude, facts(POD, user_info=who))
    group = {"any": [{"subjects": [{"kind": "Group", "name": "system:*"}]}]}
    assert not rule_matches({"resources": {"kinds": ["Pod"]}}, group,
                            facts(POD, user_info={"username": "x", "groups": ["system:masters"]}))


def test_namespaced_policy_sees_only_its_namespace() -> None:
    assert rule_matches({"resources": {"kinds": ["Pod"]}}, None, facts(POD), policy_namespace="prod")
    assert not rule_matches({"resources": {"kinds": ["Pod"]}}, None, facts(POD), policy_namespace="dev")


def test_namespace_kind_matches_namespaces_by_its_name() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}
    assert rule_matches({"resources": {"kinds": ["Namespace"], "namespaces": ["prod"]}}, None, facts(ns))
    # a namespaceSelector never matches a Namespace
    assert not rule_matches({"resources": {"kinds": ["Namespace"], "namespaceSelector": {}}}, None, facts(ns))


def test_ephemeral_containers_match_pod_rules() -> None:
    assert rule_matches({"resources": {"kinds": ["Pod"]}}, None, facts(POD, sub="ephemeralcontainers"))
    assert not rule_matches({"resources": {"kinds": ["Pod"]}}, None, facts(POD, sub="status"))
    assert rule_matches({"resources": {"kinds": ["Pod/status"]}}, None, facts(POD, sub="status"))


# who makes the request not given (eval without a UserInfo): answers that depend on it are None
@pytest.mark.parametrize(("match", "exclude", "state"), [
    # a userInfo block whose resource part matches: depends on the user
    ({"any": [{"resources": {"kinds": ["Pod"]}, "subjects": [{"kind": "User", "name": "alice"}]}]}, None, None),
    # ... whose resource part fails: decided, the user cannot make it match
    ({"any": [{"resources": {"kinds": ["Secret"]}, "clusterRoles": ["admin"]}]}, None, False),
    # another block of `any` matches without the user: decided
    ({"any": [{"resources": {"kinds": ["Pod"]}}, {"resources": {"kinds": ["Pod"]}, "roles": ["a:b"]}]}, None, True),
    # `all` with one block failing on resources: decided
    ({"all": [{"resources": {"kinds": ["Secret"]}}, {"resources": {"kinds": ["Pod"]}, "roles": ["a:b"]}]}, None,
     False),
    ({"all": [{"resources": {"kinds": ["Pod"]}}, {"resources": {"kinds": ["Pod"]}, "roles": ["a:b"]}]}, None, None),
    # the old form
    ({"resources": {"kinds": ["Pod"]}, "clusterRoles": ["admin"]}, None, None),
    # exclude by user: undecided unless its resource part fails or another exclude block applies
    ({"resources": {"kinds": ["Pod"]}}, {"clusterRoles": ["cluster-admin"]}, None),
    ({"resources": {"kinds": ["Pod"]}}, {"any": [{"resources": {"kinds": ["Secret"]}, "roles": ["a:b"]}]}, True),
    ({"resources": {"kinds": ["Pod"]}}, {"any": [{"resources": {"namespaces": ["prod"]}},
                                                  {"clusterRoles": ["x"]}]}, False),
    # exclude.all: one block that cannot exclude decides "not excluded"
    ({"resources": {"kinds": ["Pod"]}}, {"all": [{"resources": {"namespaces": ["dev"]}}, {"clusterRoles": ["x"]}]},
     True),
    ({"resources": {"kinds": ["Pod"]}}, {"all": [{"resources": {"namespaces": ["prod"]}}, {"clusterRoles": ["x"]}]},
     None),
])
def test_match_state_with_the_user_unknown(match: dict[str, Any], exclude: dict[str, Any] | None,
                                           state: bool | None) -> None:
    assert match_state(match, exclude, facts(POD, user_known=False)) is state
    # known (even empty: the scan's RequestInfo) it is always decided
    assert match_state(match, exclude, facts(POD)) is not None


def test_user_info_paths_name_every_field() -> None:
    block = {"clusterRoles": ["a"], "any": [{"subjects": [{"kind": "User", "name": "x"}], "roles": ["n:r"]}]}
    assert user_info_paths(block, "exclude") == ["exclude.clusterRoles", "exclude.any[0].roles",
                                                 "exclude.any[0].subjects"]
    assert user_info_paths(None, "match") == []


def _labelled(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_one_rule_asked_about_many_objects_follows_each_objects_labels() -> None:
    """A rule's selector is parsed once and reused, except a wildcard matchLabels, which each object's
    labels expand (ReplaceInSelector): the same match dict must still answer per object."""
    exprs = {"resources": {"kinds": ["Namespace"], "selector": {"matchExpressions": [
        {"key": "tenant", "operator": "Exists"}, {"key": "lite", "operator": "DoesNotExist"}]}}}
    wild = {"resources": {"kinds": ["Namespace"], "selector": {"matchLabels": {"app": "w*"}}}}
    bad = {"resources": {"kinds": ["Namespace"], "selector": {"matchExpressions": [
        {"key": "tenant", "operator": "Has"}]}}}
    objects = [_labelled("a", {"tenant": "t", "app": "web"}), _labelled("b", {"tenant": "t", "lite": "true"}),
               _labelled("c", {"app": "wiki"}), _labelled("d", {"app": "db"})]
    assert [rule_matches(exprs, None, facts(o)) for o in objects] == [True, False, False, False]
    # "web" expands w* for the first; the second must not reuse {app: web} (its "wiki" matches too)
    assert [rule_matches(wild, None, facts(o)) for o in objects] == [True, False, True, False]
    # a selector that does not parse fails every time, not only the first
    assert [rule_matches(bad, None, facts(o)) for o in objects] == [False, False, False, False]
