"""Kyverno's scalar pattern values (pkg/engine/pattern, pkg/engine/operator): `>=`, `<=`, `>`, `<`, `!`,
ranges `a-b`/`a!-b`, `|`, `&`, durations, quantities, wildcards, `*`, `?*`, null."""

from __future__ import annotations

from typing import Any


def get_operator(pattern: str) -> str:
    """operator.GetOperatorFromStringPattern: one of '', '==', '!=', '>=', '<=', '>', '<', 'InRange',
    'NotInRange' (Kyverno's symbols)."""
    raise NotImplementedError


def validate(value: Any, pattern: Any) -> bool:
    """pattern.Validate(value, pattern) for a scalar (or map/list: type check only) pattern."""
    raise NotImplementedError
