"""Golden cases for ClusterPolicy / Policy evaluation: testdata/classic/<case>/.

Each case holds policies.yaml, resources.yaml, optionally state.yaml (the cluster) and exceptions.yaml,
and expected.yaml written by hand from Kyverno's code: `results` is the exact set of rows
`<policy> <rule> <Kind> <ns/name> <result>`, with optional message/category/severity/properties.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.expect.reports import expected_reports
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Result

CASES = Path(__file__).resolve().parents[2] / "testdata" / "classic"


def _row(r: Result) -> str:
    ref = r.subject
    return f"{r.policy} {r.rule} {ref.kind} {ref.namespace + '/' if ref.namespace else ''}{ref.name} {r.result}"


def run_case(case: Path) -> tuple[Any, dict[str, Any]]:
    """`inputs: <case>` in expected.yaml reads that case's files (one set of inputs, several requests);
    `request` gives operation, userInfo, roles and clusterRoles (a UserInfo's fields)."""
    expected = yaml.safe_load((case / "expected.yaml").read_text())
    if expected.get("inputs"):
        case = case.parent / expected["inputs"]
    now = datetime.datetime.fromisoformat(expected.get("now", "2026-11-29T00:00:00+00:00"))
    paths = [str(case / "policies.yaml")]
    if (case / "exceptions.yaml").exists():
        paths.append(str(case / "exceptions.yaml"))
    policies = classify(load_documents(paths))
    resources = load_documents([str(case / "resources.yaml")])
    state = load_documents([str(case / "state.yaml")]) if (case / "state.yaml").exists() else []
    provider = ObjectsProvider([d.obj for d in state]) if state else EmptyProvider()
    request = expected.get("request") or {}
    outcome = run_eval(policies, resources, state, kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=now, provider=provider)),
                       options=EvalOptions(now=now, operation=request.get("operation", "CREATE"),
                                           user_info=request.get("userInfo") or {}, classic=ClassicOptions(
                                               roles=tuple(request.get("roles") or ()),
                                               cluster_roles=tuple(request.get("clusterRoles") or ()),
                                               user_info_known="userInfo" in request)))
    return outcome, expected


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if (p / "expected.yaml").exists()))
def test_golden(case: str) -> None:
    outcome, expected = run_case(CASES / case)
    assert [e.message for e in outcome.errors] == expected.get("errors", [])
    entries = [e if isinstance(e, dict) else {"row": e} for e in expected["results"]]
    got = {_row(r): r for r in outcome.results}
    assert sorted(got) == sorted(e["row"] for e in entries)
    assert len(got) == len(outcome.results), "one result per (policy, rule, subject)"
    for entry in entries:
        result = got[entry["row"]]
        for field in ("message", "category", "severity"):
            if field in entry:
                assert getattr(result, field) == entry[field], (entry["row"], field)
        if "properties" in entry:
            assert dict(result.properties) == entry["properties"], entry["row"]
    if "reports" in expected:
        assert len(expected_reports(outcome.pairs, outcome.now, outcome.report_api)) == expected["reports"]
    for notice in expected.get("notices", []):
        assert any(notice in str(n) for n in outcome.notices), notice
