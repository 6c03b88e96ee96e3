"""Issue 36, `apply --yes` of 3,000 creates, what it spends before the first write (bench/apply_prewrite.py):
a live object's managedFields are not walked to admit it, the state's index asks each object only whether it
claims to be generated, and a creation time is parsed once. The plan and the outputs are the same (tests/cluster,
tests/reconcile*, tests/realapi hold them); these pin what changed, and what stays the same answer.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_kyrec.evaluate.generating import downstreams as gen_downstreams
from kubectl_kyrec.evaluate.generating.downstreams import (
    LABEL_MANAGED_BY,
    LABEL_POLICY_NAME,
    claims_generated,
    owner_of,
)
from kubectl_kyrec.evaluate.subjects import as_admitted
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.reconcile import downstreams as reconcile_downstreams
from kubectl_kyrec.reconcile.downstreams import StateIndex

# a Namespace as the API server serves it: its managedFields' fieldsV1 is raw JSON the server keeps as written
LIVE_NAMESPACE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Namespace",
    "metadata": {"name": "team-a", "uid": "u-1", "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z",
                 "labels": {"kubernetes.io/metadata.name": "team-a"},
                 "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                    "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "metadata": None}}]},
    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
}


def test_a_live_objects_managed_fields_are_kept_as_served() -> None:
    obj = copy.deepcopy(LIVE_NAMESPACE)
    admitted = as_admitted(obj)
    # nothing to change: the object itself, not a copy (a large state is not held twice)
    assert admitted is obj
    assert admitted["metadata"]["managedFields"][0]["fieldsV1"]["metadata"] is None


def test_metadata_null_is_still_admitted_as_empty_beside_managed_fields() -> None:
    obj = copy.deepcopy(LIVE_NAMESPACE)
    obj["spec"] = {"template": {"metadata": None}}
    admitted = as_admitted(obj)
    assert admitted["spec"]["template"]["metadata"] == {} and obj["spec"]["template"]["metadata"] is None
    # managedFields stay the served list, shared with the object read
    assert admitted["metadata"]["managedFields"] is obj["metadata"]["managedFields"]


LABELS: list[dict[str, Any] | None] = [
    None, {}, {"a": "b"},
    {LABEL_MANAGED_BY: "kyverno"}, {LABEL_POLICY_NAME: "p"},
    {LABEL_MANAGED_BY: "kyverno", LABEL_POLICY_NAME: "p"},
    {LABEL_MANAGED_BY: "kyverno", LABEL_POLICY_NAME: ""},
    {LABEL_MANAGED_BY: "helm", LABEL_POLICY_NAME: "p"},
    {LABEL_MANAGED_BY: "Kyverno", LABEL_POLICY_NAME: "p"},
    {LABEL_MANAGED_BY: "kyverno", LABEL_POLICY_NAME: None},
    {LABEL_MANAGED_BY: None, LABEL_POLICY_NAME: "p"},
    {LABEL_MANAGED_BY: "kyverno", LABEL_POLICY_NAME: 0},
]


@pytest.mark.parametrize("labels", LABELS)
def test_claims_generated_is_owner_of_generated(labels: dict[str, Any] | None) -> None:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "n"}}
    if labels is not None:
        obj["metadata"]["labels"] = labels
    assert claims_generated(obj) is owner_of(obj).generated


def test_the_state_index_reads_no_owner_of_an_object_that_claims_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """owner_of reads ten labels into a frozen record: at 3,000 live Namespaces it was the index's largest cost."""
    calls: list[object] = []
    real = gen_downstreams.owner_of
    monkeypatch.setattr(reconcile_downstreams, "owner_of", lambda obj: calls.append(obj) or real(obj))
    generated = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "s", "namespace": "team-a",
                              "labels": {LABEL_MANAGED_BY: "kyverno", LABEL_POLICY_NAME: "p"}}}
    index = StateIndex.build([LIVE_NAMESPACE, generated])
    assert index.generated == [generated] and calls == []


def test_a_creation_time_is_parsed_once() -> None:
    first = parse_rfc3339("2026-03-04T05:06:07Z")
    assert first is not None and first is parse_rfc3339("2026-03-04T05:06:07Z")
    assert parse_rfc3339("2026-03-04T05:06:07") is None and parse_rfc3339("2026-03-04T05:06:07.5+01:00") is not None
