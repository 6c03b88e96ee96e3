"""Downstreams exactly as Kyverno writes them (docs/semantics/generating.md#downstream-objects): labels, stripping,
scope, ownerReferences."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.generator_lib import GenerateRefused
from kubectl_kyrec.evaluate.generating.downstreams import (
    Owner,
    TriggerInfo,
    expand_items,
    generate_downstreams,
    is_owned_by,
    write_downstream,
)
from kubectl_kyrec.load.run_inputs.kinds import KindTable

KINDS = KindTable()
OWNER = Owner("pol", "", TriggerInfo("team-a", "", "uid-1", "Namespace", "", "v1"))
LABELS = {
    "app.kubernetes.io/managed-by": "kyverno",
    "generate.kyverno.io/policy-name": "pol",
    "generate.kyverno.io/trigger-name": "team-a",
    "generate.kyverno.io/trigger-namespace": "",
    "generate.kyverno.io/trigger-uid": "uid-1",
    "generate.kyverno.io/trigger-kind": "Namespace",
    "generate.kyverno.io/trigger-group": "",
    "generate.kyverno.io/trigger-version": "v1",
}
SOURCE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Secret",
    "metadata": {"name": "regcred", "namespace": "default", "uid": "src-uid", "resourceVersion": "42",
                 "creationTimestamp": "2026-01-01T00:00:00Z", "selfLink": "/x", "generation": 1,
                 "managedFields": [{"manager": "kubectl"}],
                 "labels": {"app.kubernetes.io/managed-by": "helm", "team": "a"},
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                 "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "o-1"}]},
    "data": {"foo": "YmFy"}, "type": "Opaque",
}


def write(item: dict, namespace: str = "team-a", *, namespaced_policy: bool = False) -> dict:
    return write_downstream(item, namespace, OWNER, kinds=KINDS, namespaced_policy=namespaced_policy)


def test_data_downstream_gets_the_labels_and_the_target_namespace() -> None:
    obj = write({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "elsewhere"},
                 "data": {"k": "v"}})
    assert obj == {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cm", "namespace": "team-a", "labels": LABELS}, "data": {"k": "v"}}
    assert list(obj) == ["apiVersion", "kind", "metadata", "data"]


def test_clone_across_namespaces() -> None:
    obj = write(SOURCE)
    meta = obj["metadata"]
    # managed-by overwritten, other labels kept, source-uid from the source's uid
    assert meta["labels"] == {**LABELS, "team": "a", "generate.kyverno.io/source-uid": "src-uid"}
    for key in ("uid", "resourceVersion", "creationTimestamp", "selfLink", "managedFields", "ownerReferences"):
        assert key not in meta
    # Kyverno neither strips generation nor annotations of the source (last-applied included)
    assert meta["generation"] == 1
    assert meta["annotations"] == {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    assert meta["namespace"] == "team-a" and obj["data"] == {"foo": "YmFy"}
    assert SOURCE["metadata"]["uid"] == "src-uid"   # the source is not touched


def test_clone_into_the_same_namespace_keeps_owner_references() -> None:
    assert write(SOURCE, "default")["metadata"]["ownerReferences"] == SOURCE["metadata"]["ownerReferences"]


def test_owner_references_without_a_source_namespace_are_kept() -> None:
    item = {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "svc", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"}]}}
    assert write(item)["metadata"]["ownerReferences"][0]["uid"] == "1"


def test_no_source_uid_without_a_resource_version() -> None:
    item = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "uid": "given"}}
    assert "generate.kyverno.io/source-uid" not in write(item)["metadata"]["labels"]


def test_cluster_scoped_kinds_lose_the_namespace() -> None:
    obj = write({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "r", "namespace": "x"}})
    assert "namespace" not in obj["metadata"]


def test_namespaced_policy_may_not_write_cluster_scoped_kinds() -> None:
    with pytest.raises(GenerateRefused, match="cross-scope generation denied: a policy scoped to namespace "
                                              "'team-a' cannot generate cluster-scoped resource "
                                              "rbac.authorization.k8s.io/v1/ClusterRole"):
        write({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}},
              namespaced_policy=True)


def test_namespaced_kind_without_a_namespace_is_refused() -> None:
    with pytest.raises(GenerateRefused, match="needs a namespace"):
        write({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}, "")


def test_name_is_required() -> None:
    with pytest.raises(GenerateRefused, match="resource name may not be empty"):
        write({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})


def test_whole_floats_become_integers() -> None:
    obj = write({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
                 "spec": {"minAvailable": 1.0, "ratio": 0.5}})
    assert obj["spec"] == {"minAvailable": 1, "ratio": 0.5} and isinstance(obj["spec"]["minAvailable"], int)


def test_list_objects_expand_to_their_items() -> None:
    listed = {"apiVersion": "v1", "kind": "SecretList", "metadata": {},
              "items": [{"metadata": {"name": "a", "namespace": "default"}}, SOURCE]}
    items = expand_items([listed, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}])
    assert [(i["kind"], i["metadata"]["name"]) for i in items] == [("Secret", "a"), ("Secret", "regcred"),
                                                                   ("ConfigMap", "c")]
    assert len(generate_downstreams("team-a", [listed], OWNER, kinds=KINDS, namespaced_policy=False)) == 2


def test_ownership_check() -> None:
    obj = write({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    assert is_owned_by(obj, "pol", "", "uid-1")
    assert not is_owned_by(obj, "pol", "", "uid-2")
    assert not is_owned_by(obj, "other", "", "uid-1")
    obj["metadata"]["labels"]["generate.kyverno.io/policy-namespace"] = "ns"
    assert not is_owned_by(obj, "pol", "", "uid-1") and is_owned_by(obj, "pol", "ns", "uid-1")


def test_a_kind_its_group_does_not_serve_is_refused() -> None:
    # the group is one the cluster serves, so the API server would answer "no matches for kind"
    with pytest.raises(GenerateRefused, match='no matches for kind "NetworkPolicy" in version "networking.k8s.io/v2"'):
        write({"apiVersion": "networking.k8s.io/v2", "kind": "NetworkPolicy", "metadata": {"name": "n"}}, "team-a")
    with pytest.raises(GenerateRefused, match="unexpected GroupVersion string: networking.k8s.io/apps/v1"):
        write({"apiVersion": "networking.k8s.io/apps/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"}},
              "team-a")


def test_a_kind_of_an_unknown_group_is_taken_for_a_namespaced_crd() -> None:
    obj = write({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, "team-a")
    assert obj["metadata"]["namespace"] == "team-a"


def test_the_downstream_shares_no_container_with_the_item() -> None:
    """write_downstream changes the object it returns (metadata, labels, the namespace), and callers change
    it further; the item (a clone source, a policy's data, shared by every trigger) stays as it was, without
    a deep copy (normalize_numbers builds each dict and list anew)."""
    import copy

    source = copy.deepcopy(SOURCE)
    source["data"] = {"nested": {"list": [{"a": 1.0}], "tags": ["x"]}}
    before = copy.deepcopy(source)
    obj = write(source)
    assert source == before                                  # ownerReferences, uid, ... still on the source

    def containers(value: Any) -> list[Any]:
        if isinstance(value, dict):
            return [value, *(c for v in value.values() for c in containers(v))]
        if isinstance(value, list):
            return [value, *(c for v in value for c in containers(v))]
        return []

    theirs = {id(c) for c in containers(source)}
    assert not any(id(c) in theirs for c in containers(obj))
    obj["data"]["nested"]["list"][0]["a"] = 2                # a caller's change reaches the object only
    assert source == before and obj["data"]["nested"]["list"][0]["a"] == 2
