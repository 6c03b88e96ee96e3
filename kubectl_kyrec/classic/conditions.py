"""Kyverno's conditions (pkg/engine/variables/evaluate.go): preconditions, deny conditions, foreach preconditions.

A condition is a mapping {key, operator, value, message?}; a block is {any: [...], all: [...]} (either may be
missing); the old form is a plain list of conditions. Keys and values are substituted with
substitute_all_in_preconditions before the operator (classic/operators.py) runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic import operators
from kubectl_kyrec.classic.json_context import EvalContext
from kubectl_kyrec.classic.variables import SubstitutionError, has_integral_floats, substitute_all_in_preconditions
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.recording import Trace, shown


class ConditionError(EngineError):
    """str() is Kyverno's text: `failed to substitute variables in condition key: ...`, `invalid condition`,
    `failed to create handler for condition operator: %!w(<nil>)`. `not_found` mirrors SubstitutionError's."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def _decoded(value: Any) -> Any:
    """What Kyverno's Evaluate sees of a condition key/value it has not substituted: GetKey() decodes the
    raw JSON with the Kubernetes decoder (integral numbers int64, others float64), then DocumentToUntyped
    re-decodes a scalar with encoding/json (float64) but leaves maps and lists as they are."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, (dict, list)) and not has_integral_floats(value):
        return value  # nothing the decoders would change: keep the object (and the substitution caches)
    return _ints(value)


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def evaluate(ctx: EvalContext, condition: Mapping[str, Any], trace: Trace | None = None) -> tuple[bool, str]:
    """variables.Evaluate: (result, condition message). `trace` records the condition with its key and value
    after substitution, its operator and its result (explain)."""
    try:
        key = substitute_all_in_preconditions(ctx, _decoded(condition.get("key")))
    except SubstitutionError as exc:
        raise _failed(trace, condition, ConditionError(f"failed to substitute variables in condition key: {exc}",
                                                       not_found=exc.not_found)) from None
    try:
        value = substitute_all_in_preconditions(ctx, _decoded(condition.get("value")))
    except SubstitutionError as exc:
        raise _failed(trace, condition, ConditionError(f"failed to substitute variables in condition value: {exc}",
                                                       not_found=exc.not_found)) from None
    op = str(condition.get("operator") or "")
    if not operators.handler_exists(op):
        raise _failed(trace, condition, ConditionError("failed to create handler for condition operator: %!w(<nil>)"))
    ok = operators.evaluate_operator(op, key, value)
    msg = str(condition.get("message") or "")
    if trace is not None:
        trace.add(_written(condition), str(ok).lower(), f"key {shown(key)}, value {shown(value)}"
                  + (f"; message: {msg}" if msg else ""))
    return ok, msg


def _written(condition: Mapping[str, Any]) -> str:
    return f"{shown(condition.get('key'))} {condition.get('operator') or ''} {shown(condition.get('value'))}"


def _failed(trace: Trace | None, condition: Mapping[str, Any], err: ConditionError) -> ConditionError:
    if trace is not None:
        trace.add(_written(condition), "error", str(err))
    return err


def _join_non_empty(messages: list[str], sep: str) -> str:
    return sep.join(m for m in messages if m)


def _evaluate_block(ctx: EvalContext, block: Mapping[str, Any], trace: Trace | None = None) -> tuple[bool, str]:
    any_conditions = block.get("any")
    all_conditions = block.get("all") or []
    any_result = all_result = True
    false_messages: list[str] = []
    true_messages: list[str] = []
    if any_conditions is not None:
        any_result = False
        opened = trace.open("any") if trace is not None else None
        for condition in any_conditions:
            ok, msg = evaluate(ctx, condition, trace)
            if ok:
                any_result = True
                true_messages.append(msg)
                break
            false_messages.append(msg)
        if trace is not None and opened is not None:
            trace.close(opened, "one true" if any_result else "none true")
    opened = trace.open("all") if trace is not None and all_conditions else None
    for condition in all_conditions:
        ok, msg = evaluate(ctx, condition, trace)
        if not ok:
            all_result = False
            false_messages.append(msg)
            break
        true_messages.append(msg)
    if trace is not None and opened is not None:
        trace.close(opened, "all true" if all_result else "one false")
    if any_result and all_result:
        return True, _join_non_empty(true_messages, "; ")
    return False, _join_non_empty(false_messages, "; ")


def _evaluate_old(ctx: EvalContext, conditions: Sequence[Mapping[str, Any]],
                  trace: Trace | None = None) -> tuple[bool, str]:
    true_messages = []
    for condition in conditions:
        ok, msg = evaluate(ctx, condition, trace)
        if not ok:
            return False, msg
        true_messages.append(msg)
    return True, _join_non_empty(true_messages, ";")


def evaluate_conditions(ctx: EvalContext, conditions: Any, trace: Trace | None = None) -> tuple[bool, str]:
    """EvaluateConditionsWithContext: `conditions` is an any/all mapping (None or {} = true) or a list of
    conditions (old form). Returns (result, joined messages): the true messages joined by '; ' when true,
    the false ones when false (old form: ';'). Raises ConditionError. `trace` records each condition
    evaluated, under its `any`/`all` (explain)."""
    if conditions is None:
        return _evaluate_block(ctx, {}, trace)
    if isinstance(conditions, Mapping):
        return _evaluate_block(ctx, conditions, trace)
    if isinstance(conditions, list):
        return _evaluate_old(ctx, conditions, trace)
    raise ConditionError("invalid condition")


def check_any_all_conditions(ctx: EvalContext, block: Mapping[str, Any], trace: Trace | None = None) -> bool:
    """kk: pkg/utils/conditions CheckAnyAllConditions, the order a PolicyException's and a cleanup policy's
    conditions are read in (not EvaluateConditions'): every `all` condition first, the first false making
    the block false; then the `any` ones, the first true making it true; an `any` that is missing or empty
    is true. An error in a condition reached raises ConditionError; one not reached (after a false `all`)
    does not."""
    all_conditions = block.get("all") or []
    any_conditions = block.get("any") or []
    opened = trace.open("all") if trace is not None and all_conditions else None
    for condition in all_conditions:
        if not evaluate(ctx, condition, trace)[0]:
            if trace is not None and opened is not None:
                trace.close(opened, "one false")
            return False
    if trace is not None and opened is not None:
        trace.close(opened, "all true")
    opened = trace.open("any") if trace is not None and any_conditions else None
    for condition in any_conditions:
        if evaluate(ctx, condition, trace)[0]:
            if trace is not None and opened is not None:
                trace.close(opened, "one true")
            return True
    if trace is not None and opened is not None:
        trace.close(opened, "none true")
    return not any_conditions


def evaluate_any_all_conditions(ctx: EvalContext, blocks: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """EvaluateAnyAllConditionsWithContext over a list of any/all blocks (foreach/preconditions lists)."""
    true_messages = []
    for block in blocks:
        ok, msg = _evaluate_block(ctx, block)
        if not ok:
            return False, msg
        true_messages.append(msg)
    return True, _join_non_empty(true_messages, ";")
