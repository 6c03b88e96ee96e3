"""Kyverno's public ValidatingPolicy samples (../shared/corpus, read in place): every policy compiles, and
evaluating the resources each kyverno-test.yaml names gives no `error` result the test does not expect."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.evaluate.validating.engine import compile_validating_policy
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.load.run_inputs.values import Values, parse_values
from tests.shared_inputs import cases, present, shared

CORPUS = shared("corpus/kyverno-policies")
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)


def _policy_files() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*-vpol/**/*.yaml")
                  if ".kyverno-test" not in p.parts and ".chainsaw-test" not in p.parts
                  and p.name not in ("artifacthub-pkg.yaml", "kustomization.yaml"))


def _test_files() -> list[Path]:
    return sorted(CORPUS.glob("*-vpol/**/kyverno-test.yaml"))


@present(CORPUS, "corpus ValidatingPolicy samples compile")
def test_every_sample_policy_compiles() -> None:
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    compiled = 0
    for path in _policy_files():
        for policy in classify(load_documents([str(path)])).raise_errors().validating:
            compile_validating_policy(policy, envs, [], NOW)
            compiled += 1
    assert compiled >= 100


@pytest.mark.parametrize("test_file", cases(CORPUS, "corpus ValidatingPolicy kyverno-test.yaml files", _test_files,
                                             ids=lambda p: str(p.relative_to(CORPUS).parent)))
def test_no_unexpected_error_results(test_file: Path) -> None:
    spec = yaml.safe_load(test_file.read_text())
    base = test_file.parent
    policies = classify(load_documents([str(base / p) for p in spec.get("policies") or []])).raise_errors()
    if not policies.validating:
        pytest.skip("no ValidatingPolicy in this test")
    resources = load_documents([str(base / r) for r in spec.get("resources") or []])
    expected_errors = {(r.get("policy", "").split("/")[-1], name.split("/")[-1])
                       for r in spec.get("results") or [] if r.get("result") == "error"
                       for name in r.get("resources") or []}
    context = None
    if spec.get("context"):
        context = load_documents([str(base / spec["context"])])[0].obj
    provider = ObjectsProvider([], context_file=context, read_file=lambda p: yaml.safe_load((base / p).read_text()))
    values = parse_values(load_documents([str(base / spec["variables"])])) if spec.get("variables") else Values()
    user_info = {}
    if spec.get("userinfo"):
        user_info = yaml.safe_load((base / spec["userinfo"]).read_text()).get("userInfo") or {}
    outcome = run_eval(policies, resources, [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=provider)),
                       options=EvalOptions(now=NOW, namespace_labels=values.namespace_labels,
                                           user_info=user_info))
    assert outcome.errors == []
    unexpected = [(r.policy, r.subject.name, r.message) for r in outcome.results
                  if r.result == "error" and (r.policy.split("/")[-1], r.subject.name) not in expected_errors]
    assert unexpected == []
