"""A Kyverno CLI test suite of a classic policy using rule values, per-resource values (request.operation),
an apiCallResponses mock and a globalContextEntries mock: testdata/classic/suite."""

from __future__ import annotations

import datetime
from pathlib import Path

from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import run_files

SUITE = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "suite" / "kyverno-test.yaml"
NOW = datetime.datetime(2026, 8, 1, tzinfo=datetime.UTC)


def test_values_and_mocks_answer_the_context() -> None:
    for mode in Mode:
        runs, load_errors = run_files([str(SUITE)], now=NOW, mode=mode)
        assert load_errors == [] and runs[0].errors == []
        rows = runs[0].rows
        assert len(rows) == 8
        # from-values: limits.max from the rule's values (the apiCall loader is off without clusterResources);
        # from-mock: the service call answered by apiCallResponses; from-global: the globalContextEntries mock;
        # operation: `three` is evaluated as an UPDATE (its per-resource values)
        assert [(r.resource, r.expected, r.actual, r.passed) for r in rows] == [
            ("app/one", "pass", "pass", True), ("app/three", "fail", "fail", True),
            ("app/one", "pass", "pass", True), ("app/three", "pass", "pass", True),
            ("app/one", "pass", "pass", True), ("app/three", "fail", "fail", True),
            ("app/one", "pass", "pass", True), ("app/three", "fail", "fail", True)], mode
    # the mocks are evaluated: no notice says otherwise
    assert not any("does not evaluate" in str(n) for n in runs[0].notices)
