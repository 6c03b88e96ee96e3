"""`explain` never disagrees with `eval` for the kinds whose trees came last (issue 27): MutatingPolicy and
MutatingAdmissionPolicy (testdata/mutating, admitted as eval admits manifests), ImageValidatingPolicy
(testdata/eval/ivpol-offline) and DeletingPolicy (testdata/testrun/deleting-policies, whose verdicts are Kyverno
v1.17.2's CLI's)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.explain import Explanation
from kubectl_kyrec.evaluate.explain_pairs import ADMISSION, explain_pairs
from kubectl_kyrec.evaluate.mutating.engine import SOURCE as MPOL
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.load.run_inputs.values import parse_values
from tests.evaluate.test_explain_equals_eval import _leaves, _row

ROOT = Path(__file__).resolve().parents[2] / "testdata"
NOW = datetime.datetime(2026, 12, 4, tzinfo=datetime.timezone.utc)
SOURCES = (MPOL, "MutatingAdmissionPolicy")
KINDS = ("MutatingPolicy", "NamespacedMutatingPolicy", "MutatingAdmissionPolicy")
LIBRARIES = library_factory(LibraryContext(now=NOW, provider=EmptyProvider()))


def _said(explanations: list[Explanation]) -> None:
    """Each tree's result nodes say what its results are."""
    for e in explanations:
        said = [leaf.outcome for leaf in _leaves(e.tree) if leaf.outcome != "none"]
        assert said == [r.result for r in e.results], e.policy


@pytest.mark.parametrize("case", sorted(p.name for p in (ROOT / "mutating").iterdir() if p.is_dir()))
def test_mutating_trees_end_in_the_chains_results(case: str) -> None:
    directory = ROOT / "mutating" / case
    spec = yaml.safe_load((directory / "kyverno-test.yaml").read_text())
    paths = [str(directory / p) for p in [*spec.get("policies", []), *spec.get("exceptions", [])]]
    policies = classify(load_documents(paths)).raise_errors()
    resources = load_documents([str(directory / r) for r in spec["resources"]])
    # a binding's params: from the state, as in a cluster
    state = load_documents([str(directory / r) for r in spec.get("paramResources", [])])
    options = EvalOptions(now=NOW, admit=True)
    evaluated = run_eval(policies, resources, state, kinds=KindTable(), libraries=LIBRARIES, options=options)
    explained = explain_pairs(policies, resources, state, kinds=KindTable(), libraries=LIBRARIES, options=options)
    assert explained.errors == evaluated.errors
    want = sorted(_row(r) for r in evaluated.results if r.source in SOURCES)
    trees = [e for e in explained.explanations if e.policy_kind in KINDS]
    got = sorted(_row(r) for e in trees for r in e.results)
    assert got == want
    if policies.mutating or policies.mutating_admission:
        assert got, "each case gives its mutating policies results"
    # the admission tree tells the same results as the policies' own trees
    chain = sorted(_row(r) for e in explained.explanations if e.policy_kind == ADMISSION for r in e.results
                   if r.source in SOURCES)
    assert chain == got
    _said(trees)


def test_image_validating_policy_trees_end_in_evals_results() -> None:
    directory = ROOT / "eval" / "ivpol-offline"
    policies = classify(load_documents([str(directory / "policies.yaml"),
                                        str(directory / "exceptions.yaml")])).raise_errors()
    resources = load_documents([str(directory / "resources.yaml")])
    options = EvalOptions(now=NOW)
    evaluated = run_eval(policies, resources, resources, kinds=KindTable(), libraries=LIBRARIES, options=options)
    explained = explain_pairs(policies, resources, resources, kinds=KindTable(), libraries=LIBRARIES,
                              options=options)
    assert explained.errors == evaluated.errors
    kinds = {(p.meta.key, p.source_kind) for p in policies.image_validating}
    want = sorted(_row(r) for r in evaluated.results if (r.policy, r.source) in kinds)
    got = sorted(_row(r) for e in explained.explanations for r in e.results if (r.policy, r.source) in kinds)
    assert want and got == want
    _said([e for e in explained.explanations if "ImageValidating" in e.policy_kind])


def test_deleting_policy_trees_give_kyvernos_verdicts() -> None:
    """The test suite's rows are Kyverno v1.17.2's CLI's verdicts (its kyverno-test.yaml passes there)."""
    directory = ROOT / "testrun" / "deleting-policies"
    spec = yaml.safe_load((directory / "kyverno-test.yaml").read_text())
    policies = classify(load_documents([str(directory / "policies.yaml"),
                                        str(directory / "exceptions.yaml")])).raise_errors()
    resources = load_documents([str(directory / "resources.yaml")])
    values = parse_values(load_documents([str(directory / "values.yaml")]))
    options = EvalOptions(now=NOW, namespaces=tuple(values.namespaces), namespace_labels=values.namespace_labels)
    explained = explain_pairs(policies, resources, [], kinds=KindTable(), libraries=LIBRARIES, options=options)
    assert not explained.errors
    trees = [e for e in explained.explanations if e.policy_kind == "DeletingPolicy"]
    got = {(r.policy, r.subject.kind, f"{r.subject.namespace}/{r.subject.name}"): r.result
           for e in trees for r in e.results}
    want = {(row["policy"], row["kind"], name): row["result"] for row in spec["results"] for name in row["resources"]}
    assert {k: got.get(k) for k in want} == want
    _said(trees)
