"""as_admitted: `metadata: null` read as `{}` (typed decoding), every other value as it was."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.evaluate.subjects import as_admitted


def test_object_without_null_metadata_is_used_as_loaded() -> None:
    obj = {"kind": "Pod", "metadata": {"name": "p", "labels": None}, "spec": {"containers": [{"name": "c"}]}}
    assert as_admitted(obj) is obj


def test_null_metadata_is_replaced_in_a_copy_and_the_input_left_alone() -> None:
    inner: dict[str, Any] = {"metadata": None, "keep": None}
    obj: dict[str, Any] = {"kind": "List", "items": [{"metadata": {"name": "a"}}, inner], "other": {"x": 1}}
    out = as_admitted(obj)
    assert out == {"kind": "List", "items": [{"metadata": {"name": "a"}}, {"metadata": {}, "keep": None}],
                   "other": {"x": 1}}
    assert inner == {"metadata": None, "keep": None}
    assert obj["items"][1] is inner
    # the untouched branches are shared, the changed path copied
    assert out["other"] is obj["other"] and out["items"][0] is obj["items"][0]
    assert out["items"] is not obj["items"]


def test_other_mapping_types_become_dicts() -> None:
    class Ordered(dict):  # type: ignore[type-arg]
        pass

    out = as_admitted({"spec": Ordered(a=1)})
    assert type(out["spec"]) is dict and out["spec"] == {"a": 1}
