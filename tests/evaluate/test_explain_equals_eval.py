"""`explain` never disagrees with `eval` (issue 27): over Kyverno's public ValidatingPolicy samples
(../shared/corpus, each kyverno-test.yaml's policies and resources, loaded as test_corpus_vpol.py loads
them), the results at the leaves of explain's trees are eval's results, pair for pair, message and all."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.explain_pairs import explain_pairs
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import PolicySet, classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.load.run_inputs.values import Values, parse_values
from kubectl_kyrec.model import Document, Result
from kubectl_kyrec.recording import Step
from tests.evaluate.test_corpus_vpol import CORPUS, NOW, _test_files
from tests.shared_inputs import cases, shared

EVAL_CASES = Path(__file__).resolve().parents[2] / "testdata" / "eval"


def _row(r: Result) -> tuple[str, str, str, str, str, str, str]:
    return (r.policy, r.subject.kind, r.subject.namespace, r.subject.name, r.rule, r.result, r.message)


def _leaves(node: Step) -> list[Step]:
    """The `result` nodes of a tree: what it says each rule came to."""
    if node.name == "result":
        return [node]
    return [leaf for child in node.children for leaf in _leaves(child)]


@pytest.mark.parametrize("test_file", cases(CORPUS, "corpus ValidatingPolicy kyverno-test.yaml files", _test_files,
                                             ids=lambda p: str(p.relative_to(CORPUS).parent)))
def test_explain_results_equal_eval(test_file: Path) -> None:
    spec = yaml.safe_load(test_file.read_text())
    base = test_file.parent
    policies = classify(load_documents([str(base / p) for p in spec.get("policies") or []])).raise_errors()
    if not policies.validating:
        pytest.skip("no ValidatingPolicy in this test")
    resources = load_documents([str(base / r) for r in spec.get("resources") or []])
    context = None
    if spec.get("context"):
        context = load_documents([str(base / spec["context"])])[0].obj
    provider = ObjectsProvider([], context_file=context, read_file=lambda p: yaml.safe_load((base / p).read_text()))
    values = parse_values(load_documents([str(base / spec["variables"])])) if spec.get("variables") else Values()
    user_info = {}
    if spec.get("userinfo"):
        user_info = yaml.safe_load((base / spec["userinfo"]).read_text()).get("userInfo") or {}
    options = EvalOptions(now=NOW, namespace_labels=values.namespace_labels, user_info=user_info)
    _assert_equal(policies, resources, [], LibraryContext(now=NOW, provider=provider), options)


@pytest.mark.parametrize("case", sorted(p.name for p in EVAL_CASES.iterdir() if (p / "expected.yaml").exists()))
def test_explain_results_equal_eval_on_golden_cases(case: str) -> None:
    """testdata/eval's cases: ValidatingAdmissionPolicies with bindings and params, exceptions, autogen."""
    directory = EVAL_CASES / case
    expected = yaml.safe_load((directory / "expected.yaml").read_text())
    now = datetime.datetime.fromisoformat(expected.get("now", "2026-11-29T00:00:00+00:00").replace("Z", "+00:00"))
    paths = [str(directory / "policies.yaml")]
    if (directory / "exceptions.yaml").exists():
        paths.append(str(directory / "exceptions.yaml"))
    policies = classify(load_documents(paths)).raise_errors()
    resources = load_documents([str(directory / "resources.yaml")])
    state = load_documents([str(directory / "state.yaml")]) if (directory / "state.yaml").exists() else []
    provider = ObjectsProvider([d.obj for d in state]) if state else EmptyProvider()
    _assert_equal(policies, resources, state, LibraryContext(now=now, provider=provider), EvalOptions(now=now))


def _assert_equal(policies: PolicySet, resources: list[Document], state: list[Document], context: LibraryContext,
                  options: EvalOptions) -> None:
    libraries = library_factory(context)
    evaluated = run_eval(policies, resources, state, kinds=KindTable(), libraries=libraries, options=options)
    explained = explain_pairs(policies, resources, state, kinds=KindTable(), libraries=libraries, options=options)
    assert explained.errors == evaluated.errors
    # the kinds explain draws; eval's results of the others (classic, generating) are not compared here
    explained_kinds = {(p.meta.key, p.source_kind) for p in policies.validating} | \
        {(p.meta.key, "ValidatingAdmissionPolicy") for p in policies.admission} | \
        {(p.meta.key, p.source_kind) for p in policies.classic} | \
        {(p.meta.key, p.source_kind) for p in policies.image_validating}
    want = sorted(_row(r) for r in evaluated.results if (r.policy, r.source) in explained_kinds)
    # (a DeletingPolicy's tree ends in the test's verdict, which eval does not give: test_explain_equals_eval_kinds)
    got = sorted(_row(r) for e in explained.explanations if "DeletingPolicy" not in e.policy_kind
                 for r in e.results)
    assert got == want
    # ... and each tree's result nodes say what those results are
    for e in explained.explanations:
        said = [leaf.outcome for leaf in _leaves(e.tree) if leaf.outcome != "none"]
        assert said == [r.result for r in e.results]


CLASSIC_CORPUS = shared("corpus/kyverno-policies-legacy")


def _classic_test_files() -> list[Path]:
    return sorted(CLASSIC_CORPUS.glob("**/kyverno-test.yaml"))


@pytest.mark.parametrize("test_file", cases(CLASSIC_CORPUS, "corpus classic kyverno-test.yaml files",
                                             _classic_test_files,
                                             ids=lambda p: str(p.relative_to(CLASSIC_CORPUS).parent)))
def test_explain_results_equal_eval_on_classic_corpus(test_file: Path) -> None:
    """kyverno/policies' ClusterPolicies (and their -cel twins) with the resources each test names."""
    spec = yaml.safe_load(test_file.read_text())
    base = test_file.parent
    policies = classify(load_documents([str(base / p) for p in spec.get("policies") or []]))
    if not policies.classic:
        pytest.skip("no classic policy in this test")
    resources = load_documents([str(base / r) for r in spec.get("resources") or []])
    _assert_equal(policies, resources, [], LibraryContext(now=NOW, provider=EmptyProvider()), EvalOptions(now=NOW))
