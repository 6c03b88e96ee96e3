"""Kyverno's own report scenarios (../shared/corpus/kyverno-conformance/validating-policies/report, read
in place): every report their chainsaw steps assert is a subset of the report kyrec expects for that
resource, with chainsaw's assert semantics (maps: the asserted keys; lists: same length, item by item)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.expect.reports import expected_reports
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from tests.shared_inputs import cases, shared

ROOT = shared("corpus/kyverno-conformance/validating-policies")
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
SCENARIOS = ["report/admission", "report/message-exp", "report/background/standard",
             "report/with-exception", "report/with-exception-pass-result", "report/with-exception-skip-result"]


def subset(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where `actual` does not satisfy the partial `expected` (chainsaw assert)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected a mapping"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}/{key}: missing")
            else:
                out.extend(subset(value, actual[key], f"{path}/{key}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {len(expected)} items, got {actual!r}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in subset(e, a, f"{path}/{i}")]
    return [] if expected == actual else [f"{path}: {expected!r} != {actual!r}"]


def _checked_files(folder: Path) -> set[str]:
    """Files the scenario's steps assert (or assert the absence of) rather than create; a file a step
    applies and a later one asserts (that the object was admitted) is created."""
    spec = yaml.safe_load((folder / "chainsaw-test.yaml").read_text())
    ops = [op for step in spec["spec"]["steps"] for op in step.get("try") or []]

    def files(verbs: tuple[str, ...]) -> set[str]:
        return {op[verb]["file"] for op in ops for verb in verbs if verb in op and "file" in op[verb]}
    return files(("assert", "error")) - files(("apply", "create"))


def _is_assert(path: Path) -> bool:
    return (path.name == "chainsaw-test.yaml" or "assert" in path.name or path.name.startswith("report")
            or path.name in _checked_files(path.parent))


@pytest.mark.parametrize("scenario", cases(ROOT, "Kyverno's ValidatingPolicy report scenarios", lambda: SCENARIOS))
def test_asserted_reports_match(scenario: str) -> None:
    folder = ROOT / scenario
    files = sorted(p for p in folder.glob("*.yaml") if not _is_assert(p))
    docs = load_documents([str(p) for p in files])
    policies = classify([d for d in docs if d.api_version.startswith("policies.kyverno.io/")])
    resources = [d for d in docs if not d.api_version.startswith("policies.kyverno.io/")]
    outcome = run_eval(policies, resources, [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW))
    by_name = {r["scope"]["name"]: r for r in expected_reports(outcome.pairs, outcome.now, outcome.report_api)}
    asserted = []
    for p in sorted(folder.glob("*.yaml")):
        if p.name.startswith("report") or p.name.endswith("report-assert.yaml"):
            # assert files may be bare `items:` lists without a kind: read them as plain YAML
            for doc in yaml.safe_load_all(p.read_text()):
                asserted.extend(doc.get("items") or [] if "items" in doc else [doc])
    assert asserted, "the scenario asserts at least one report"
    for report in asserted:
        # the API server sets metadata.generation; Kyverno does not write it
        (report.get("metadata") or {}).pop("generation", None)
        name = report["scope"]["name"]
        assert name in by_name, f"no expected report for {name}"
        assert subset(report, by_name[name]) == []


GEN_ROOT = ROOT.parent / "generating-policies" / "reports"


def _gen_scenarios() -> list[str]:
    return sorted(p.name for p in GEN_ROOT.iterdir() if p.is_dir())


@pytest.mark.parametrize("scenario", cases(GEN_ROOT, "Kyverno's GeneratingPolicy report scenarios", _gen_scenarios))
def test_asserted_generating_reports_match(scenario: str) -> None:
    """GeneratingPolicy results in the triggers' reports (docs/semantics/generating.md#report-results), as Kyverno's
    scenarios assert them."""
    from kubectl_kyrec.cel.context import ObjectsProvider
    from kubectl_kyrec.evaluate.generating.engine import GenerateOptions, generating_environments, run_generating
    from kubectl_kyrec.expect.report_scope import report_scope

    folder = GEN_ROOT / scenario
    files = sorted(p for p in folder.glob("*.yaml") if not _is_assert(p) and p.name != "permissions.yaml")
    docs = load_documents([str(p) for p in files])
    policies = classify([d for d in docs if d.api_version.startswith("policies.kyverno.io/")])
    objects = [d for d in docs if not d.api_version.startswith("policies.kyverno.io/")]
    provider = ObjectsProvider([d.obj for d in objects])
    envs, sink = generating_environments(LibraryContext(now=NOW, provider=provider))
    generating = run_generating(policies.generating, objects, objects, kinds=KindTable(), envs=envs, sink=sink,
                                options=GenerateOptions(now=NOW), exceptions=policies.exceptions)
    scope = report_scope(policies, objects, objects, kinds=KindTable(),
                         libraries=library_factory(LibraryContext(now=NOW, provider=provider)),
                         options=EvalOptions(now=NOW), generating=generating)
    by_name = {r["scope"]["name"]: r for r in scope.expected}
    asserted = [d for p in sorted(folder.glob("*report-assert.yaml")) for d in yaml.safe_load_all(p.read_text())]
    assert asserted
    for report in asserted:
        name = report["scope"]["name"]
        assert name in by_name, f"no expected report for {name}"
        assert subset(report, by_name[name]) == []
