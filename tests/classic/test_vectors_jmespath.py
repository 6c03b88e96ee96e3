"""Kyverno's JMESPath function tests (jmespath-functions.json), every case, against classic/jmespath_eval."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.classic.go_values import GoInt, deep_equal
from kubectl_kyrec.classic.jmespath_eval import Engine
from kubectl_kyrec.classic.jmespath_types import JMESPathCompileError, JMESPathError
from tests.classic.vectors import case_id, error_matches, load, report

FILE = "jmespath-functions.json"

# Cases kyrec does not reproduce, with the reason. A fixed miss or a new miss fails the test.
EXPECTED_MISSES: dict[str, str] = {}


def _go_args(value: Any) -> Any:
    # direct Go handler calls: `1` is a Go int, `1.0` a float64
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return GoInt(value)
    if isinstance(value, list):
        return [_go_args(v) for v in value]
    return value


def _result_ok(case: dict[str, Any], got: Any) -> bool:
    want = case["result"]
    kind = case.get("result_type")
    if kind == "float64" and not (isinstance(got, float)):
        return False
    if kind == "string" and not isinstance(got, str):
        return False
    return deep_equal(got, want)


def run_case(engine: Engine, case: dict[str, Any]) -> str | None:
    """None when kyrec agrees with the case, else what differed."""
    try:
        if "call" in case:
            call = case["call"]
            got = engine.functions[call["function"]].handler(*_go_args(call["args"]))
        else:
            if case.get("error_stage") == "compile":
                engine.compile(case["expression"])
                return "compiled"
            got = engine.search(case["expression"], case["data"])
    except JMESPathCompileError as exc:
        if "error" in case and case.get("error_stage", "compile") == "compile" and error_matches(case, str(exc)):
            return None
        if "error" in case and error_matches(case, str(exc)):
            return None
        return f"compile error {exc}"
    except JMESPathError as exc:
        if "error" in case and error_matches(case, str(exc)):
            return None
        return f"error {exc!s}"
    if "error" in case:
        return f"no error, got {got!r}"
    if _result_ok(case, got):
        return None
    return f"got {got!r}"


def test_jmespath_function_vectors() -> None:
    engine = Engine(now=lambda: datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), seed=1)
    cases = load(FILE)
    failures = {}
    for i, case in enumerate(cases):
        why = run_case(engine, case)
        if why is not None:
            failures[case_id(i, case)] = why
    report(FILE, len(cases), failures)
    unexpected = {k: v for k, v in failures.items() if k not in EXPECTED_MISSES}
    fixed = [k for k in EXPECTED_MISSES if k not in failures]
    assert not unexpected, unexpected
    assert not fixed, f"expected misses now pass: {fixed}"
