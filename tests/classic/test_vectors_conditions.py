"""Kyverno's condition and operator tests (conditions.json, condition-blocks.json), every case, against
classic/conditions and classic/operators."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.classic import conditions, operators
from kubectl_kyrec.classic.json_context import EvalContext
from tests.classic.vectors import case_id, load, report

# Cases kyrec does not reproduce, with the reason. A fixed miss or a new miss fails the test.
EXPECTED_MISSES_CONDITIONS: dict[str, str] = {}
EXPECTED_MISSES_BLOCKS: dict[str, str] = {}


def _typed(value: Any, go_type: str | None) -> Any:
    if go_type == "float64" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if go_type in ("int", "int64") and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def run_condition(case: dict[str, Any]) -> str | None:
    key = _typed(case["key"], case.get("key_go_type"))
    value = _typed(case["value"], case.get("value_go_type"))
    if case["via"].startswith("variables.Evaluate"):
        ctx = EvalContext(case.get("context") or {})
        got, _ = conditions.evaluate(ctx, {"key": key, "operator": case["operator"], "value": value})
    else:
        got = operators.evaluate_operator(case["operator"], key, value)
    return None if got == case["result"] else f"got {got!r}"


def run_block(case: dict[str, Any]) -> str | None:
    ctx = EvalContext(case.get("context") or {})
    fn = case["go_function"]
    try:
        if fn.startswith("EvaluateAnyAllConditions"):
            ok, msg = conditions.evaluate_any_all_conditions(ctx, case["conditions"])
        else:
            blocks = case["conditions"]
            ok, msg = conditions.evaluate_conditions(ctx, blocks[0] if isinstance(blocks, list) and len(blocks) == 1
                                                     and isinstance(blocks[0], dict) and ("any" in blocks[0]
                                                     or "all" in blocks[0]) else blocks)
    except conditions.ConditionError as exc:
        return None if case.get("error") else f"error {exc}"
    if case.get("error"):
        return "no error"
    if ok != case["result"]:
        return f"got {ok!r} ({msg!r})"
    if "message" in case:
        want = case["message"]
        if case.get("message_match") == "exact" and msg != want:
            return f"message {msg!r}"
        if case.get("message_match") != "exact" and want not in msg:
            return f"message {msg!r}"
    return None


def _check(name: str, runner: Any, expected: dict[str, str]) -> None:
    cases = load(name)
    failures = {}
    for i, case in enumerate(cases):
        why = runner(case)
        if why is not None:
            failures[case_id(i, case)] = why
    report(name, len(cases), failures)
    unexpected = {k: v for k, v in failures.items() if k not in expected}
    fixed = [k for k in expected if k not in failures]
    assert not unexpected, unexpected
    assert not fixed, f"expected misses now pass: {fixed}"


def test_condition_vectors() -> None:
    _check("conditions.json", run_condition, EXPECTED_MISSES_CONDITIONS)


def test_condition_block_vectors() -> None:
    _check("condition-blocks.json", run_block, EXPECTED_MISSES_BLOCKS)
