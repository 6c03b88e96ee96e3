"""`explain` from a recorder (issue 35): an engine records its steps (recording.py) in the very run whose results
it returns, and a migrated kind's tree.py builds the tree from that recording. So a tree.py imports from its
engine only the types it reads (the compiled policy, the variant), never an evaluation function, nor the
shared matching or exception evaluation it would need to walk the engine's control flow a second time; the
tree follows a recording even when it is not what a fresh walk would find; recording never changes a result.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import importlib
from pathlib import Path

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.explain import Node
from kubectl_kyrec.evaluate.pipeline import EvalOptions, subject_context
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subjects
from kubectl_kyrec.evaluate.validating.engine import (
    CompiledValidatingPolicy,
    candidate_variants,
    compile_validating_policy,
    evaluate_validating,
)
from kubectl_kyrec.evaluate.validating.tree import explain_validating
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.recording import Trace

EVALUATE = Path(__file__).resolve().parents[2] / "kubectl_kyrec" / "evaluate"
# the kinds whose tree.py is built from the recording; a kind is added here when it is migrated (a kind whose
# engine records its explain nodes whole has no tree.py: tests/consistency/test_explain_renderer.py)
MIGRATED = ("validating",)
# what walks an engine's decisions: matching and exception evaluation (the display of a decision's parts,
# evaluate/explain.py's nodes, is not)
WALKERS = {"kubectl_kyrec.evaluate.match": {"may_match", "matches_constraints", "matches_rules"},
           "kubectl_kyrec.evaluate.exceptions": {"evaluate_exceptions", "conditions_hold", "applicable"}}


def _imports(path: Path) -> list[tuple[str, str]]:
    return [(node.module or "", alias.name) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) for alias in node.names]


@pytest.mark.parametrize("kind", MIGRATED)
def test_a_migrated_tree_imports_only_its_engines_types(kind: str) -> None:
    engine_name = f"kubectl_kyrec.evaluate.{kind}.engine"
    engine = importlib.import_module(engine_name)
    imported = _imports(EVALUATE / kind / "tree.py")
    from_engine = [name for module, name in imported if module == engine_name]
    assert from_engine, f"{kind}/tree.py reads no type of its engine: is the list of migrated kinds stale?"
    functions = [name for name in from_engine if not isinstance(getattr(engine, name), type)]
    assert not functions, f"{kind}/tree.py imports {functions} from its engine: it would re-walk it"
    walkers = [f"{module}.{name}" for module, name in imported if name in WALKERS.get(module, ())]
    assert not walkers, f"{kind}/tree.py imports {walkers}: it would decide again what the engine recorded"


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
    cp, envs, contexts = _setup(tmp_path)
    by_name = {ctx.subject.ref.name: ctx for ctx in contexts}
    trace = Trace()
    evaluate_validating(cp, by_name["bare"], candidate_variants(cp, by_name["bare"].request), trace)
    tree = explain_validating(cp, by_name["bare"], envs, [], NOW, trace).tree.to_json()
    assert "a team label is required" in str(tree)
    # the same recording shown for the labelled ConfigMap: a tree that re-walked the engine would pass it
    explained = explain_validating(cp, by_name["labelled"], envs, [], NOW, trace)
    assert [leaf.outcome for leaf in _leaves(explained.tree)] == ["fail"]
    assert [r.result for r in explained.results] == ["fail"]
    # and a recorded result is the one shown, whatever a fresh evaluation would give
    step = trace.rules[(cp.policy.meta.key, "")].children[-1]
    assert step.name == "result"
    trace.rules[(cp.policy.meta.key, "")].children[-1] = dataclasses.replace(
        step, data=step.data._replace(result="error", message="recorded"))
    again = explain_validating(cp, by_name["bare"], envs, [], NOW, trace)
    assert [(leaf.outcome, leaf.detail) for leaf in _leaves(again.tree)] == [("error", "recorded")]
