"""Shared reading of ../shared/vectors/kyverno-engine (read in place) for the classic engine vector tests."""

from __future__ import annotations

import json
from typing import Any

from tests.shared_inputs import require, shared

VECTORS = shared("vectors/kyverno-engine")


def load(name: str) -> list[dict[str, Any]]:
    """Every case of one vector file; a skip (a failure under CI) when the vectors are absent."""
    path = require(VECTORS / name, f"kyverno-engine vectors {name}")
    data = json.loads(path.read_text())
    assert isinstance(data, list) and data, f"{name}: no cases"
    return data


def case_id(index: int, case: dict[str, Any]) -> str:
    src = case.get("source", {})
    return f"{index}:{src.get('test', '?')}:{src.get('case', src.get('line', ''))}"


def error_matches(case: dict[str, Any], message: str) -> bool:
    want = case["error"]
    if want is True:
        return True
    if case.get("error_match") == "exact":
        return message == want
    return str(want) in message


def report(name: str, total: int, failures: dict[str, str]) -> None:
    # visible with `pytest -s`: the pass count per vector file
    print(f"\n[vectors] {name}: {total - len(failures)}/{total} pass")
