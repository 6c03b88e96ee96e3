"""Kyverno's conditions (pkg/engine/variables/evaluate.go): preconditions, deny conditions, foreach preconditions.

A condition is a mapping {key, operator, value, message?}; a block is {any: [...], all: [...]} (either may be
missing); the old form is a plain list of conditions. Keys and values are substituted with
substitute_all_in_preconditions before the operator (classic/operators.py) runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic.json_context import EvalContext


class ConditionError(Exception):
    """str() is Kyverno's text: `failed to substitute variables in condition key: ...`, `invalid condition`,
    `failed to create handler for condition operator: ...`."""


def evaluate(ctx: EvalContext, condition: Mapping[str, Any]) -> tuple[bool, str]:
    """variables.Evaluate: (result, condition message)."""
    raise NotImplementedError


def evaluate_conditions(ctx: EvalContext, conditions: Any, context_label: str = "") -> tuple[bool, str]:
    """EvaluateConditionsWithContext: `conditions` is an any/all mapping (None or {} = true) or a list of
    conditions (old form). Returns (result, joined messages): the true messages joined by '; ' when true,
    the false ones when false (old form: ';'). Raises ConditionError / SubstitutionError."""
    raise NotImplementedError


def evaluate_any_all_conditions(ctx: EvalContext, blocks: Sequence[Mapping[str, Any]],
                                context_label: str = "") -> tuple[bool, str]:
    """EvaluateAnyAllConditionsWithContext over a list of any/all blocks (foreach/preconditions lists)."""
    raise NotImplementedError
