"""Kubernetes label selectors (metav1.LabelSelector), as `labels.Selector.Matches` evaluates them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SelectorError(ValueError):
    """A selector that Kubernetes would refuse to convert (LabelSelectorAsSelector)."""


def selector_is_empty(selector: Mapping[str, Any] | None) -> bool:
    return not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def matches_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """True when `labels` satisfy the selector. A nil or empty selector matches everything."""
    if selector_is_empty(selector):
        return True
    assert selector is not None
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != str(value):
            return False
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions[{i}]: expected a mapping")
        key = str(expr.get("key", ""))
        op = str(expr.get("operator", ""))
        values = [str(v) for v in (expr.get("values") or [])]
        if op == "In":
            if not values:
                raise SelectorError(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
            if labels.get(key) not in values:
                return False
        elif op == "NotIn":
            if not values:
                raise SelectorError(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if values:
                raise SelectorError(f"values set must be empty for exists and does not exist (key {key!r})")
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if values:
                raise SelectorError(f"values set must be empty for exists and does not exist (key {key!r})")
            if key in labels:
                return False
        else:
            raise SelectorError(f"{op!r} is not a valid label selector operator")
    return True


def matches_label_map(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """An equality-only selector given as a plain map (as `resource.List` takes it)."""
    labels = labels or {}
    return all(labels.get(k) == v for k, v in (selector or {}).items())
