"""classic/merge2.py: kyaml merge2 as Kyverno's patchStrategicMerge calls it, where it differs from a plain
deep merge (the golden cases of test_mutate_golden.py cover the common ones against Kyverno itself)."""

from __future__ import annotations

import pytest

from kubectl_kyrec.classic.merge2 import MergeError, merge

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": None},
       "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
                "nodeSelector": {"k": "v", "l": "w"}}}


def test_nulls_clear_what_the_patch_names_and_keep_the_resources_own() -> None:
    out = merge({"spec": {"nodeSelector": {"k": None}}}, POD)
    assert out["spec"]["nodeSelector"] == {"l": "w"}
    assert "annotations" in out["metadata"] and out["metadata"]["annotations"] is None


def test_patch_directives_replace_and_delete() -> None:
    out = merge({"spec": {"nodeSelector": {"$patch": "replace", "z": "1"},
                          "containers": [{"name": "a", "$patch": "delete"}]}}, POD)
    assert out["spec"]["nodeSelector"] == {"z": "1"}
    assert out["spec"]["containers"] == [{"name": "b", "image": "y"}]
    with pytest.raises(MergeError):
        merge({"spec": {"nodeSelector": {"$patch": "nonsense"}}}, POD)


def test_associative_lists_put_the_patchs_elements_first() -> None:
    out = merge({"spec": {"containers": [{"name": "new", "image": "z"}, {"name": "b", "image": "y2"}]}}, POD)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [("new", "z"), ("b", "y2"), ("a", "x")]


def test_lists_of_kinds_without_a_schema_are_replaced() -> None:
    widget = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}}
    out = merge({"spec": {"items": [{"name": "b", "v": 3}]}}, widget)
    assert out["spec"]["items"] == [{"name": "b", "v": 3}]


def test_a_map_over_a_string_is_an_error() -> None:
    with pytest.raises(MergeError):
        merge({"metadata": {"name": {"x": 1}}}, POD)
