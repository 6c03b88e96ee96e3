"""`explain` from a recorder (issue 35): an engine records its explain nodes (recording.py) in the very run whose
results it returns, and the recording is the tree. So a migrated kind has no tree.py (nothing could walk its
engine's control flow a second time); the tree follows a recording even when it is not what a fresh walk would
find; recording never changes a result.
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.explain import Node, explanation
from kubectl_kyrec.evaluate.pipeline import EvalOptions, subject_context
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subjects
from kubectl_kyrec.evaluate.validating.engine import (
    CompiledValidatingPolicy,
    candidate_variants,
    compile_validating_policy,
    evaluate_validating,
)
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.recording import Trace

EVALUATE = Path(__file__).resolve().parents[2] / "kubectl_kyrec" / "evaluate"
# the kinds whose engine records its explain nodes whole; a kind is added here when it is migrated
MIGRATED = ("validating", "validating_admission", "image_validating", "deleting")


@pytest.mark.parametrize("kind", MIGRATED)
def test_a_migrated_kind_has_no_tree_of_its_own(kind: str) -> None:
    assert not (EVALUATE / kind / "tree.py").exists()
    assert "recorder.node(" in (EVALUATE / kind / "engine.py").read_text()
    users = [p for p in EVALUATE.parent.rglob("*.py") if f"evaluate.{kind}.tree" in p.read_text()]
    assert users == []


POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: needs-team
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [configmaps]
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: a team label is required
"""
CONFIGMAPS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: labelled, namespace: default, labels: {team: a}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bare, namespace: default}
"""
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _leaves(node: Node) -> list[Node]:
    return [node] if node.name == "result" else [leaf for c in node.children for leaf in _leaves(c)]


def _setup(tmp: Path) -> tuple[CompiledValidatingPolicy, Environments, list[SubjectContext]]:
    (tmp / "policy.yaml").write_text(POLICY)
    (tmp / "cm.yaml").write_text(CONFIGMAPS)
    policies = classify(load_documents([str(tmp / "policy.yaml")])).raise_errors()
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    cp = compile_validating_policy(policies.validating[0], envs, [], NOW)
    subjects = make_subjects(load_documents([str(tmp / "cm.yaml")]), KindTable()).subjects
    options = EvalOptions(now=NOW)
    return cp, envs, [subject_context(s, {}, options) for s in subjects]


def test_recording_never_changes_a_result(tmp_path: Path) -> None:
    cp, _, contexts = _setup(tmp_path)
    for ctx in contexts:
        plain = evaluate_validating(cp, ctx, candidate_variants(cp, ctx.request))
        recorded = evaluate_validating(cp, ctx, candidate_variants(cp, ctx.request), Trace())
        assert recorded == plain and plain


def test_the_tree_follows_the_recording(tmp_path: Path) -> None:
    cp, _, contexts = _setup(tmp_path)
    by_name = {ctx.subject.ref.name: ctx for ctx in contexts}
    trace = Trace()
    found = evaluate_validating(cp, by_name["bare"], candidate_variants(cp, by_name["bare"].request), trace)
    tree = explanation(cp.policy.meta, by_name["bare"].subject.ref, trace, found).tree.to_json()
    assert "a team label is required" in str(tree)
    # the same recording shown for the labelled ConfigMap: a tree that re-walked the engine would pass it
    explained = explanation(cp.policy.meta, by_name["labelled"].subject.ref, trace, found)
    assert [leaf.outcome for leaf in _leaves(explained.tree)] == ["fail"]
    # and a recorded result is the one shown, whatever a fresh evaluation would give
    rule = trace.root.children[0]
    assert rule.children[-1].name == "result"
    rule.children[-1] = dataclasses.replace(rule.children[-1], outcome="error", detail="recorded")
    again = explanation(cp.policy.meta, by_name["bare"].subject.ref, trace, found)
    assert [(leaf.outcome, leaf.detail) for leaf in _leaves(again.tree)] == [("error", "recorded")]
