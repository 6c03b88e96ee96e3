"""Apply configurations merged as structured-merge-diff merges them (typed/merge.go, patch/smd.go)."""

from __future__ import annotations

import pytest

from kubectl_kyrec.k8s.structured_merge import MergeError, NeedsSchema, apply_configuration

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
       "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}


def test_maps_merge_and_keyed_lists_merge_by_key_keeping_live_order() -> None:
    out = apply_configuration(POD, {"metadata": {"labels": {"b": "2"}},
                                    "spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c"}]}}, "Pod")
    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert out["spec"]["containers"] == [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}, {"name": "c"}]
    assert POD["spec"]["containers"][1]["image"] == "y"        # the input is left alone


def test_new_items_go_where_the_patch_puts_them_relative_to_shared_ones() -> None:
    out = apply_configuration(POD, {"spec": {"containers": [{"name": "c"}, {"name": "a"}]}}, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["c", "a", "b"]


def test_atomic_maps_are_refused() -> None:
    with pytest.raises(MergeError, match="may not mutate atomic arrays, maps or structs: .spec.nodeSelector"):
        apply_configuration(POD, {"spec": {"nodeSelector": {"a": "b"}}}, "Pod")


def test_duplicate_keys_in_the_patch_are_refused() -> None:
    with pytest.raises(MergeError, match="duplicate entries"):
        apply_configuration(POD, {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}, "Pod")


def test_a_list_kyrec_has_no_schema_for_needs_one() -> None:
    with pytest.raises(NeedsSchema) as info:
        apply_configuration(POD, {"spec": {"tolerations": [{"key": "a"}]}}, "Pod")
    assert info.value.path == "spec.tolerations"


def test_deduced_types_replace_lists_whole_and_merge_maps() -> None:
    out = apply_configuration(POD, {"spec": {"containers": [{"name": "z"}], "nodeSelector": {"a": "b"}}}, "Pod",
                              deduced=True)
    assert out["spec"]["containers"] == [{"name": "z"}] and out["spec"]["nodeSelector"] == {"a": "b"}
    out = apply_configuration(POD, {"spec": {"securityContext": {"runAsUser": 1}}}, "Pod", deduced=True)
    assert out["spec"]["securityContext"] == {"runAsUser": 1} and len(out["spec"]["containers"]) == 2
