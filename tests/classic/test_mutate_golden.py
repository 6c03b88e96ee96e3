"""Classic mutate rules against Kyverno v1.17.2's own output: testdata/classic/mutate-golden (README there).

Each policy is applied as Kyverno's CLI applies it (ClassicMutator.policy_responses); the patched resource
must equal the one the CLI wrote, exactly (no tidying: an empty map the patch drops must be dropped), and the
per-rule results must be the CLI's.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from kubectl_kyrec.classic.context_loader import ContextSources
from kubectl_kyrec.classic.mutate import same_json
from kubectl_kyrec.evaluate.classic.engine import ClassicOptions, refused_by_kyverno
from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subject
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable

DATA = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "mutate-golden"
NOW = datetime.datetime(2026, 8, 1, tzinfo=datetime.UTC)


def _runs(policy: str, resources: str) -> dict[str, tuple[object, list[tuple[str, str, str]]]]:
    policies = classify(load_documents([str(DATA / policy)])).raise_errors().classic
    mutator = ClassicMutator(policies, [], state=[], now=NOW, sources=ContextSources(),
                             options=ClassicOptions(cli=True))
    out = {}
    kinds = KindTable()
    for doc in load_documents([str(DATA / resources)]):
        subject, _ = make_subject(doc.obj, doc.source, kinds)
        request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced)
        for run in mutator.policy_responses(SubjectContext(subject, request, None)):
            out[doc.name] = (run.after, [(r.rule, r.result, r.message) for r in run.results])
    return out


def _golden(name: str) -> object:
    return load_documents([str(DATA / name)])[0].obj


MUTATED = "mutated Pod/pod1 in namespace ns1"


@pytest.mark.parametrize(("policy", "results"), [
    # a sidecar first (Prepend), env merged by name, ports by containerPort, +(app) kept, a conditional
    # list element named after the matching container, a new volume's empty emptyDir dropped
    ("p1", [("r1", "pass", MUTATED)]),
    ("p2_0", [("r-cond", "pass", MUTATED)]),           # (image) condition on each container
    ("p2_1", [("r-global", "pass", MUTATED)]),         # <(image) global anchor holds for one container
    # foreach: strategic merge last element first, elementIndex the original index; a JSON patch foreach
    # with preconditions; negative indices, a remove of a missing path
    ("p3", [("fe", "pass", MUTATED), ("j6902", "pass", MUTATED)]),
    # nested foreach (element1/elementIndex1), preconditions skip, a patch that changes nothing
    ("p4", [("nested", "pass", MUTATED), ("skip-pre", "skip", "preconditions not met"),
            ("nochange", "skip", "no patches applied")]),
])
def test_pod_mutations_are_kyvernos(policy: str, results: list[tuple[str, str, str]]) -> None:
    after, got = _runs(f"{policy}.yaml", "pod.yaml")["pod1"]
    assert got == results
    assert same_json(after, _golden(f"{policy}.pod1.kyverno.yaml"))


def test_autogen_rule_mutates_the_pod_template() -> None:
    runs = _runs("p5.yaml", "deployment-widget.yaml")
    after, got = runs["dep1"]
    assert got == [("autogen-podrule", "pass", "mutated Deployment/dep1 in namespace ns1")]
    assert same_json(after, _golden("p5.dep1.kyverno.yaml"))
    assert "w1" not in runs or runs["w1"][1] == []


def test_merge_keys_crd_lists_conditions_and_json_patch_errors() -> None:
    runs = _runs("p6.yaml", "deployment-widget.yaml")
    after, got = runs["dep1"]
    # finalizers merge as a set of strings; a failed (name) condition empties the patch: skip
    assert got == [("fin", "pass", "mutated Deployment/dep1 in namespace ns1"),
                   ("cond-fail", "skip", "no patches applied")]
    assert same_json(after, _golden("p6.dep1.kyverno.yaml"))
    after, got = runs["w1"]
    # a kind kyaml has no schema for: its lists are replaced; then a failing `test` op is an error,
    # which leaves Kyverno's empty object
    assert [(rule, result) for rule, result, _ in got] == [("crd", "pass"), ("cond-fail", "skip"),
                                                          ("jtest", "error")]
    assert got[2][2].startswith("failed to patch resource: ")
    assert after is None


@pytest.mark.parametrize("name", ["p2_2-refused.yaml", "p2_3-refused.yaml"])
def test_non_string_label_values_are_refused(name: str) -> None:
    policies = classify(load_documents([str(DATA / name)])).raise_errors().classic
    refused = refused_by_kyverno(policies[0])
    assert refused is not None and "labels and annotations supports only string values" in refused.message
    assert _runs(name, "pod.yaml") == {}
