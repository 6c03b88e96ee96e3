"""Masking: no Secret value, no base64 of one, no last-applied-configuration annotation, ever."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.reconcile.masking import MASK, MASK_AFTER, MASK_BEFORE, leaks, mask_object, mask_pair

SECRET: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret",
          "metadata": {"name": "s", "annotations": {
              "kubectl.kubernetes.io/last-applied-configuration": '{"data":{"a":"c2VjcmV0"}}', "keep": "me"}},
          "data": {"a": "c2VjcmV0", "b": "b3RoZXI="}, "stringData": {"c": "plain-secret"}}


def test_mask_object() -> None:
    masked = mask_object(SECRET)
    assert masked["data"] == {"a": MASK, "b": MASK} and masked["stringData"] == {"c": MASK}
    assert masked["metadata"]["annotations"] == {"kubectl.kubernetes.io/last-applied-configuration": MASK,
                                                 "keep": "me"}
    assert SECRET["data"]["a"] == "c2VjcmV0"    # a copy
    assert leaks(str(masked), SECRET) == [] and leaks(str(SECRET), SECRET)


def test_other_kinds_keep_data_but_lose_last_applied() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "visible"},
          "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}}
    masked = mask_object(cm)
    assert masked["data"] == {"a": "visible"}
    assert masked["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == MASK


def test_mask_pair_marks_what_changed() -> None:
    after = {**SECRET, "data": {"a": "bmV3", "b": "b3RoZXI=", "d": "eA=="},
             "metadata": {"name": "s", "annotations": {
                 "kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"}}}
    before, now = mask_pair(SECRET, after)
    assert before["data"] == {"a": MASK_BEFORE, "b": MASK} and now["data"] == {"a": MASK_AFTER, "b": MASK, "d": MASK}
    ann = "kubectl.kubernetes.io/last-applied-configuration"
    assert before["metadata"]["annotations"][ann] == MASK_BEFORE
    assert now["metadata"]["annotations"][ann] == MASK_AFTER
