"""Field comparison for drift: subset semantics, keyed lists, quantities, Secrets, managedFields."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.k8s.list_keys import list_spec
from kubectl_kyrec.reconcile.normalize import (
    changed_fields,
    comparable,
    managed_leaves,
    remove_pointers,
    unset_managed_fields,
)


def pointers(expected: dict[str, Any], live: dict[str, Any]) -> list[str]:
    return [d.pointer for d in changed_fields(comparable(expected), comparable(live))]


DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"},
          "spec": {"replicas": 2, "template": {"spec": {"containers": [
              {"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80}],
               "env": [{"name": "A", "value": "1"}]}]}}}}


def live_deploy() -> dict[str, Any]:
    # what the API server serves back: defaults everywhere, status, server metadata
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "a", "uid": "u", "resourceVersion": "9", "generation": 3,
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "annotations": {"deployment.kubernetes.io/revision": "1"}},
            "spec": {"replicas": 2, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                     "strategy": {"type": "RollingUpdate"},
                     "template": {"metadata": {"creationTimestamp": None}, "spec": {
                         "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                         "containers": [{"name": "app", "image": "nginx:1", "imagePullPolicy": "IfNotPresent",
                                         "terminationMessagePath": "/dev/termination-log",
                                         "env": [{"name": "A", "value": "1"}],
                                         "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}},
            "status": {"replicas": 2, "readyReplicas": 2}}


def test_server_defaults_status_and_metadata_are_not_drift() -> None:
    assert pointers(DEPLOY, live_deploy()) == []


def test_keyed_lists_match_by_key_not_position() -> None:
    live = live_deploy()
    containers = live["spec"]["template"]["spec"]["containers"]
    containers.insert(0, {"name": "sidecar", "image": "envoy"})
    assert pointers(DEPLOY, live) == []
    containers[1]["env"][0]["value"] = "2"
    assert pointers(DEPLOY, live) == ["/spec/template/spec/containers/1/env/0/value"]


def test_missing_keyed_element() -> None:
    live = live_deploy()
    live["spec"]["template"]["spec"]["containers"][0]["env"] = []
    assert pointers(DEPLOY, live) == ["/spec/template/spec/containers/0/env/-"]


def test_other_lists_compare_whole() -> None:
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "d"},
              "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}
    live: dict[str, Any] = {**policy, "spec": {"podSelector": {}, "policyTypes": ["Egress", "Ingress"]}}
    assert pointers(policy, live) == ["/spec/policyTypes/0", "/spec/policyTypes/1"]
    live["spec"]["policyTypes"] = ["Ingress"]
    assert pointers(policy, live) == ["/spec/policyTypes"]


def test_atomic_lists_of_maps_allow_defaults_inside() -> None:
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b"},
          "subjects": [{"kind": "User", "name": "alice"}]}
    live = {**rb, "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert pointers(rb, live) == []


def test_empty_values_equal_absent_ones() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {}}, "data": {}}
    assert pointers(cm, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}) == []


@pytest.mark.parametrize("expected, live, same", [("1000m", "1", True), ("0.5", "500m", True), ("1Gi", "1024Mi", True),
                                                  ("1", "2", False)])
def test_quantities_compare_by_amount_in_resource_maps(expected: str, live: str, same: bool) -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"hard": {"requests.cpu": expected}}}
    got = pointers(quota, {**quota, "spec": {"hard": {"requests.cpu": live}}})
    assert got == ([] if same else ["/spec/hard/requests.cpu"])


def test_quantity_rules_do_not_apply_to_config_data() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"limits": "1000m"}}
    assert pointers(cm, {**cm, "data": {"limits": "1"}}) == ["/data/limits"]


def test_numbers_compare_by_value_but_not_with_booleans() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
           "spec": {"minAvailable": 1, "flag": True}}
    assert pointers(pdb, {**pdb, "spec": {"minAvailable": 1.0, "flag": True}}) == []
    assert pointers(pdb, {**pdb, "spec": {"minAvailable": 1, "flag": 1}}) == ["/spec/flag"]


def test_secret_data_and_string_data_compare_by_bytes() -> None:
    expected = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "bar"},
                "data": {"user": "YWxpY2U="}}
    live: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "data": {"password": "YmFy", "user": "YWxpY2U=", "extra": "eA=="}}
    assert pointers(expected, live) == []
    live["data"]["password"] = "YmF6"
    assert pointers(expected, live) == ["/data/password"]


def test_labels_and_annotations_compare_as_subsets() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}}
    live: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}}
    assert pointers(cm, live) == []
    live["metadata"]["labels"]["a"] = "3"
    assert pointers(cm, live) == ["/metadata/labels/a"]


def test_list_key_table() -> None:
    assert list_spec("Deployment", ("spec", "template", "spec", "containers")).keys == ("name",)
    assert list_spec("CronJob", ("spec", "jobTemplate", "spec", "template", "spec", "containers", "ports")).keys \
        == ("containerPort", "protocol")
    assert list_spec("Service", ("spec", "ports")).keys == ("port", "protocol")
    assert list_spec("Pod", ("spec", "containers", "volumeMounts")).keys == ("mountPath",)
    assert list_spec("ConfigMap", ("metadata", "ownerReferences")).keys == ("uid",)
    assert list_spec("ConfigMap", ("metadata", "finalizers")).type == "set"
    assert list_spec("NetworkPolicy", ("spec", "ingress")).type == "atomic"


MANAGED = [
    {"manager": "kyverno", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {
        "f:data": {".": {}, "f:color": {}}, "f:metadata": {"f:labels": {".": {}, "f:owned": {}}}}},
    {"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {
        "f:data": {"f:extra": {}}, "f:metadata": {"f:annotations": {".": {}, "f:note": {}}}}},
    {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1",
     "fieldsV1": {"f:status": {"f:x": {}}}},
]


def test_managed_leaves_skip_map_markers_and_subresources() -> None:
    obj = {"metadata": {"managedFields": MANAGED}}
    leaves = {(leaf.manager, leaf.path) for leaf in managed_leaves(obj)}
    assert leaves == {("kyverno", (("f", "data"), ("f", "color"))),
                      ("kyverno", (("f", "metadata"), ("f", "labels"), ("f", "owned"))),
                      ("kubectl-edit", (("f", "data"), ("f", "extra"))),
                      ("kubectl-edit", (("f", "metadata"), ("f", "annotations"), ("f", "note")))}


def test_foreign_and_stale_fields() -> None:
    expected = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"x": "1"}},
                "data": {"other": "v"}}
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"x": "1", "owned": "y"}, "annotations": {"note": "n"},
                         "managedFields": MANAGED},
            "data": {"color": "blue", "extra": "1", "other": "v"}, "status": {"x": 1}}
    findings = unset_managed_fields(comparable(expected), live, comparable(live))
    assert [(f.pointer, f.foreign) for f in findings] == [
        ("/data/color", False), ("/data/extra", True), ("/metadata/annotations/note", True),
        ("/metadata/labels/owned", False)]


def test_keyed_elements_in_managed_fields() -> None:
    expected = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {
        "spec": {"containers": [{"name": "app", "image": "i"}]}}}}
    live = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "managedFields": [
        {"manager": "istio", "operation": "Update", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
            "f:containers": {'k:{"name":"proxy"}': {".": {}, "f:name": {}, "f:image": {}},
                             'k:{"name":"app"}': {"f:env": {}}}}}}}}]},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "i", "env": [{"name": "E"}]},
                                                     {"name": "proxy", "image": "envoy"}]}}}}
    findings = unset_managed_fields(comparable(expected), live, comparable(live))
    assert [f.pointer for f in findings] == ["/spec/template/spec/containers/0/env",
                                             "/spec/template/spec/containers/1"]


def test_remove_pointers_drops_emptied_maps() -> None:
    obj = {"metadata": {"annotations": {"a": "1"}, "name": "n"}, "items": [1, 2, 3]}
    remove_pointers(obj, ["/metadata/annotations/a", "/items/0", "/items/2"])
    assert obj == {"metadata": {"name": "n"}, "items": [2]}


def test_comparing_leaves_both_objects_as_they_were() -> None:
    """comparable() copies only the top level and metadata and shares the rest with its input (no deep
    copy per downstream), so nothing on the way may write into it."""
    import copy

    from kubectl_kyrec.reconcile.downstreams import compare

    secret: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"},
                              "stringData": {"token": "new"}, "data": {"ca": "Y2E="}}
    live_secret: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "data": {"token": "b2xk", "ca": "Y2E=", "extra": "eA=="},
        "metadata": {"name": "s", "namespace": "a", "uid": "u", "resourceVersion": "9",
                     "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:data": {"f:extra": {}}}}]}}
    for expected, live in ((DEPLOY, live_deploy()), (secret, live_secret)):
        before = copy.deepcopy((expected, live))
        view = comparable(live)
        assert "status" not in view and "uid" not in view["metadata"] and "managedFields" not in view["metadata"]
        reason, fields, diff = compare(expected, live, server_side_apply=False)
        assert (expected, live) == before
        assert "uid" in live["metadata"]
    assert reason is not None and "/data/token" in fields and "/data/extra" in fields
