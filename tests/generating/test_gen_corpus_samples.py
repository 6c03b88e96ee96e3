"""The GeneratingPolicy samples of kyverno/policies (../shared/corpus/kyverno-policies/*-gpol) generate
exactly the objects their test directories name (`generatedResource` files)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.evaluate.generating.downstreams import identity
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.load.documents import load_documents
from tests.generating.gen_support import CORPUS, evaluate, strip_ownership
from tests.shared_inputs import cases, present

POLICIES = CORPUS / "kyverno-policies"


def _suites() -> list[Path]:
    return sorted(POLICIES.glob("*-gpol/*/.kyverno-test/kyverno-test.yaml"))


@present(POLICIES, "corpus GeneratingPolicy suites (count)")
def test_corpus_has_generating_suites() -> None:
    assert len(_suites()) >= 2


@pytest.mark.parametrize("suite", cases(POLICIES, "corpus GeneratingPolicy kyverno-test.yaml suites", _suites,
                                        ids=lambda p: p.parts[-3]))
def test_kyverno_test_generated_resources(suite: Path) -> None:
    test = yaml.safe_load(suite.read_text())
    base = suite.parent
    policies = load_documents([str(base / p) for p in test["policies"]])
    resources = load_documents([str(base / r) for r in test["resources"]])
    outcome = evaluate(policies, resources)
    assert not outcome.errors
    checked = 0
    for entry in test["results"]:
        if not entry.get("generatedResource"):
            continue
        expected = [d.obj for d in load_documents([str(base / entry["generatedResource"])])]
        for name in entry["resources"]:
            ns, _, short = name.rpartition("/")
            matches = [o for o in outcome.outcomes if o.policy.name == entry["policy"]
                       and o.trigger.ref.name == short and o.trigger.ref.kind == entry["kind"]
                       and (not ns or o.trigger.ref.namespace == ns)]
            assert len(matches) == 1
            assert matches[0].status is TriggerStatus.GENERATED
            assert matches[0].result is not None and matches[0].result.result == entry["result"]
            got = {identity(o): strip_ownership(o) for o in matches[0].objects}
            assert got == {identity(o): o for o in expected}
            checked += 1
    assert checked


@present(POLICIES, "corpus GeneratingPolicy samples without a test file")
@pytest.mark.parametrize("sample", ["best-practices-gpol/add-ns-quota", "kubevirt-gpol/add-services"])
def test_samples_without_a_test_file(sample: str) -> None:
    # these directories carry resource.yaml and generated*.yaml but no kyverno-test.yaml
    base = POLICIES / sample
    policies = load_documents([str(p) for p in sorted(base.glob("*.yaml"))])
    resources = load_documents([str(base / ".kyverno-test" / "resource.yaml")])
    expected = [d.obj for p in sorted((base / ".kyverno-test").glob("generated*.yaml"))
                for d in load_documents([str(p)])]
    outcome = evaluate(policies, resources)
    assert not outcome.errors
    objects = [o for out in outcome.outcomes for o in out.objects]
    assert {identity(o): strip_ownership(o) for o in objects} == {identity(o): o for o in expected}
