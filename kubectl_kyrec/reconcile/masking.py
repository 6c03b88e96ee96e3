"""What no output may show: a Secret's values (or their base64) and a last-applied-configuration annotation.

Masked as kubectl diff masks Secrets: each value becomes `***`; in a before/after pair, a value that
differs becomes `*** (before)` and `*** (after)`, so a reader still sees *that* it changed. The
last-applied annotation is masked in every kind, since it repeats the object (a Secret's data included).
Masking works on copies that share what they leave unchanged; keys stay visible.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

MASK = "***"
MASK_BEFORE = "*** (before)"
MASK_AFTER = "*** (after)"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SECRET_FIELDS = ("data", "stringData")


def _is_secret(obj: Mapping[str, Any] | None) -> bool:
    return isinstance(obj, Mapping) and obj.get("kind") == "Secret" and str(obj.get("apiVersion", "v1")) == "v1"


def _annotations(obj: Any) -> dict[str, Any] | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) else None


def _with_annotations(obj: dict[str, Any]) -> dict[str, Any] | None:
    """`obj`'s annotations, its metadata and annotations replaced by copies first (copy on write: the
    rest of the object stays shared with the caller's)."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping) or not isinstance(meta, Mapping):
        return None
    own = dict(annotations)
    obj["metadata"] = {**meta, "annotations": own}
    return own


def mask_object(obj: Any) -> Any:
    """A copy with every Secret value and the last-applied annotation replaced by `***` (unchanged parts
    are shared with `obj`: read the copy, never change it)."""
    if not isinstance(obj, Mapping):
        return obj
    out = dict(obj)
    if _is_secret(out):
        for field in SECRET_FIELDS:
            values = out.get(field)
            if isinstance(values, dict):
                out[field] = dict.fromkeys(values, MASK)
    annotations = _annotations(out)
    if annotations is not None and LAST_APPLIED in annotations:
        owned = _with_annotations(out)
        assert owned is not None
        owned[LAST_APPLIED] = MASK
    return out


def _mask_pair_map(before: Any, after: Any) -> tuple[Any, Any]:
    if not isinstance(before, dict) or not isinstance(after, dict):
        return (dict.fromkeys(before, MASK) if isinstance(before, dict) else before,
                dict.fromkeys(after, MASK) if isinstance(after, dict) else after)
    masked_before: dict[str, Any] = {}
    masked_after: dict[str, Any] = {}
    for key in before:
        if key in after and before[key] != after[key]:
            masked_before[key] = MASK_BEFORE
        else:
            masked_before[key] = MASK
    for key in after:
        if key in before and before[key] != after[key]:
            masked_after[key] = MASK_AFTER
        else:
            masked_after[key] = MASK
    return masked_before, masked_after


def mask_pair(before: Any, after: Any) -> tuple[Any, Any]:
    """Copies of two versions of one object, masked so that a changed value reads as changed (unchanged
    parts are shared with the inputs: read the copies, never change them)."""
    b: Any = dict(before) if isinstance(before, Mapping) else before
    a: Any = dict(after) if isinstance(after, Mapping) else after
    if _is_secret(b if isinstance(b, Mapping) else None) or _is_secret(a if isinstance(a, Mapping) else None):
        for field in SECRET_FIELDS:
            in_b = isinstance(b, dict) and field in b
            in_a = isinstance(a, dict) and field in a
            if not (in_b or in_a):
                continue
            mb, ma = _mask_pair_map(b.get(field) if in_b else None, a.get(field) if in_a else None)
            if in_b:
                b[field] = mb
            if in_a:
                a[field] = ma
    ann_b, ann_a = _annotations(b), _annotations(a)
    lb = ann_b.get(LAST_APPLIED) if ann_b is not None else None
    la = ann_a.get(LAST_APPLIED) if ann_a is not None else None
    changed = lb is not None and la is not None and lb != la
    if ann_b is not None and LAST_APPLIED in ann_b:
        owned = _with_annotations(b)
        assert owned is not None
        owned[LAST_APPLIED] = MASK_BEFORE if changed else MASK
    if ann_a is not None and LAST_APPLIED in ann_a:
        owned = _with_annotations(a)
        assert owned is not None
        owned[LAST_APPLIED] = MASK_AFTER if changed else MASK
    return b, a


def leaks(text: str, obj: Mapping[str, Any]) -> list[str]:
    """The Secret values (and their base64) of `obj` found in `text`: for tests and self-checks."""
    import base64

    found: list[str] = []
    if _is_secret(obj):
        for field in SECRET_FIELDS:
            values = obj.get(field)
            if not isinstance(values, Mapping):
                continue
            for value in values.values():
                if not isinstance(value, str) or len(value) < 3:
                    continue
                candidates = {value}
                if field == "stringData":
                    candidates.add(base64.b64encode(value.encode()).decode())
                else:
                    with contextlib.suppress(ValueError, UnicodeDecodeError):
                        candidates.add(base64.b64decode(value).decode())
                found.extend(c for c in candidates if len(c) >= 3 and c in text)
    annotations = _annotations(dict(obj))
    if annotations and isinstance(annotations.get(LAST_APPLIED), str) and annotations[LAST_APPLIED] in text:
        found.append(LAST_APPLIED)
    return found
