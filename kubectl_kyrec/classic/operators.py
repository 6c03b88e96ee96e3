"""Kyverno's 18 condition operators (pkg/engine/variables/operator): Equals, NotEquals, In, AnyIn, AllIn,
NotIn, AnyNotIn, AllNotIn, GreaterThan[OrEquals], LessThan[OrEquals], the Duration* ones; names are
case-insensitive, `Equal`/`NotEqual` aliases accepted."""

from __future__ import annotations

from typing import Any


def canonical_operator(name: str) -> str | None:
    """The canonical operator name for `name` (case-insensitive), None if Kyverno has no such operator."""
    raise NotImplementedError


def is_deprecated(name: str) -> bool:
    """In, NotIn and the Duration* operators."""
    raise NotImplementedError


def evaluate_operator(name: str, key: Any, value: Any) -> bool:
    """handler.Evaluate(key, value) for an operator (KeyError-free: an unknown name raises ValueError with
    Kyverno's text)."""
    raise NotImplementedError
