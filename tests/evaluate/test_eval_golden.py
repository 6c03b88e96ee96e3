"""Golden cases for validating-policy evaluation: testdata/eval/<case>/ (policies, resources, expected).

Each case's expected.yaml was written by hand from the policies; `results` is the exact set of
(policy, subject, result) rows, and the optional fields of an entry are compared when present.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.expect.reports import expected_reports
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Result

CASES = Path(__file__).resolve().parents[2] / "testdata" / "eval"


def _row(r: Result) -> str:
    return f"{r.policy} {r.subject.kind} {r.subject.namespace + '/' if r.subject.namespace else ''}{r.subject.name} " \
           f"{r.result}"


def run_case(case: Path) -> tuple[Any, dict[str, Any]]:
    expected = yaml.safe_load((case / "expected.yaml").read_text())
    now = datetime.datetime.fromisoformat(expected.get("now", "2026-11-29T00:00:00+00:00").replace("Z", "+00:00"))
    paths = [str(case / "policies.yaml")]
    if (case / "exceptions.yaml").exists():
        paths.append(str(case / "exceptions.yaml"))
    policies = classify(load_documents(paths)).raise_errors()
    resources = load_documents([str(case / "resources.yaml")])
    state = load_documents([str(case / "state.yaml")]) if (case / "state.yaml").exists() else []
    kinds = KindTable()
    provider = ObjectsProvider([d.obj for d in state]) if state else EmptyProvider()
    outcome = run_eval(policies, resources, state, kinds=kinds,
                       libraries=library_factory(LibraryContext(now=now, provider=provider)),
                       options=EvalOptions(now=now))
    return outcome, expected


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if (p / "expected.yaml").exists()))
def test_golden(case: str) -> None:
    outcome, expected = run_case(CASES / case)
    assert outcome.errors == []
    entries = [e if isinstance(e, dict) else {"row": e} for e in expected["results"]]
    got = {_row(r): r for r in outcome.results}
    assert sorted(got) == sorted(e["row"] for e in entries)
    assert len(got) == len(outcome.results), "one result per (policy, subject)"
    for entry in entries:
        result = got[entry["row"]]
        for field in ("message", "rule", "category", "severity"):
            if field in entry:
                assert getattr(result, field) == entry[field], (entry["row"], field)
        if "properties" in entry:
            assert dict(result.properties) == entry["properties"], entry["row"]
    reports = expected_reports(outcome.pairs, outcome.now, outcome.report_api)
    if "reports" in expected:
        assert len(reports) == expected["reports"]
    for uid, policies in (expected.get("report_results") or {}).items():
        report = next(r for r in reports if r["metadata"]["name"] == uid)
        assert sorted(x["policy"] for x in report["results"]) == sorted(policies)
