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
from kubectl_kyrec.evaluate.explain import record, recorded
from kubectl_kyrec.evaluate.generating.engine import (
    GenerateOptions,
    generating_environments,
    run_generating,
)
from kubectl_kyrec.evaluate.mutating.engine import mutating_engine
from kubectl_kyrec.evaluate.mutating_admission.engine import mutating_admission_engine
from kubectl_kyrec.evaluate.pipeline import EvalOptions, classic_evaluator, subject_context
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subjects
from kubectl_kyrec.evaluate.validating.engine import (
    CompiledValidatingPolicy,
    candidate_variants,
    compile_validating_policy,
    evaluate_validating,
)
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import PolicySet, classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.recording import Step, Trace

EVALUATE = Path(__file__).resolve().parents[2] / "kubectl_kyrec" / "evaluate"
# the kinds whose engine records its explain nodes whole (no tree.py); a kind is added here when it is migrated
MIGRATED = ("validating", "validating_admission", "image_validating", "deleting", "mutating", "mutating_admission",
            "generating", "classic")


@pytest.mark.parametrize("kind", MIGRATED)
def test_a_migrated_kind_has_no_tree_of_its_own(kind: str) -> None:
    assert not (EVALUATE / kind / "tree.py").exists()
    # the engine records its nodes (classic: evaluate/classic/explain.py, called by the engine in its run)
    assert any("recorder.node(" in p.read_text() for p in (EVALUATE / kind).glob("*.py"))
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


def _leaves(node: Step) -> list[Step]:
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
    results = record(trace, cp.policy.meta, by_name["bare"].subject.ref)
    results.extend(evaluate_validating(cp, by_name["bare"], candidate_variants(cp, by_name["bare"].request), trace))
    [tree] = recorded(trace)
    assert "a team label is required" in str(tree.tree.to_json())
    # the same recording shown for the labelled ConfigMap: a tree that re-walked the engine would pass it
    root = trace.root.children[0]
    root.data = (cp.policy.meta, by_name["labelled"].subject.ref, results)
    [explained] = recorded(trace)
    assert explained.subject.name == "labelled"
    assert [leaf.outcome for leaf in _leaves(explained.tree)] == ["fail"]
    # and a recorded result is the one shown, whatever a fresh evaluation would give
    rule = root.children[0]
    assert rule.children[-1].name == "result"
    rule.children[-1] = dataclasses.replace(rule.children[-1], outcome="error", detail="recorded")
    [again] = recorded(trace)
    assert [(leaf.outcome, leaf.detail) for leaf in _leaves(again.tree)] == [("error", "recorded")]


# --- the kinds admission mutates with, and GeneratingPolicy: a tree shows what the engine recorded in the run
# whose results the tree ends in (the admission chain's, run_generating's), even an edited recording

MUTATING = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: add-team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": "a"}}}'
"""
MUTATING_ADMISSION = """\
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: stamp}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"stamped": "yes"}}}'
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: everywhere}
spec:
  policyName: stamp
"""
GENERATING = """\
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: copy-secret, creationTimestamp: "2025-01-01T00:00:00Z"}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  generate:
  - expression: >-
      generator.Apply(object.metadata.namespace, [{"apiVersion": dyn("v1"), "kind": dyn("Secret"),
      "metadata": dyn({"name": "for-" + object.metadata.name})}])
"""


def _policies(tmp: Path, text: str) -> PolicySet:
    (tmp / "policy.yaml").write_text(text)
    return classify(load_documents([str(tmp / "policy.yaml")])).raise_errors()


def _bare(tmp: Path) -> SubjectContext:
    (tmp / "cm.yaml").write_text(CONFIGMAPS)
    subjects = make_subjects(load_documents([str(tmp / "cm.yaml")]), KindTable()).subjects
    bare = next(s for s in subjects if s.ref.name == "bare")
    return subject_context(bare, {}, EvalOptions(now=NOW))


def _envs() -> Environments:
    return Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))


def _shows_the_recording(trace: Trace, step_results: list[object]) -> None:
    """A mutating engine's recording holds one tree per policy, ending in the results of the run it recorded;
    what explain shows is that recording, an edited one too."""
    [tree] = recorded(trace)
    assert tree.tree is trace.root.children[0]
    assert "add /metadata/labels" in str(tree.tree.to_json())
    assert tree.results == step_results and [r.result for r in tree.results] == ["pass"]
    [leaf] = _leaves(tree.tree)
    leaf.outcome, leaf.detail = "error", "recorded"
    leaf.children.append(Step("a step only the recording has", "shown"))
    [again] = recorded(trace)
    assert "a step only the recording has" in str(again.tree.to_json())
    assert [(leaf.outcome, leaf.detail) for leaf in _leaves(again.tree)] == [("error", "recorded")]


def test_a_mutating_policy_records_its_tree_whole(tmp_path: Path) -> None:
    engine, errors = mutating_engine(_policies(tmp_path, MUTATING), _envs(), NOW)
    assert engine is not None and not errors
    ctx = _bare(tmp_path)
    trace = Trace()
    step = engine.mutate(ctx, trace)
    assert step == engine.mutate(ctx) and step.mutations      # recording never changes a result
    _shows_the_recording(trace, step.results)


def test_a_mutating_admission_policy_records_its_tree_whole(tmp_path: Path) -> None:
    engine, errors = mutating_admission_engine(_policies(tmp_path, MUTATING_ADMISSION), _envs())
    assert engine is not None and not errors
    ctx = _bare(tmp_path)
    trace = Trace()
    step = engine.mutate(ctx, trace)
    assert step == engine.mutate(ctx) and step.mutations
    _shows_the_recording(trace, step.results)


def test_a_generating_policy_records_its_tree_whole(tmp_path: Path) -> None:
    policies = _policies(tmp_path, GENERATING)

    def run(recorder: Trace | None) -> list[object]:
        envs, sink = generating_environments(LibraryContext(now=NOW, provider=EmptyProvider()))
        triggers = [d for d in load_documents([str(tmp_path / "cm.yaml")]) if d.name == "bare"]
        return list(run_generating(policies.generating, triggers, [], kinds=KindTable(), envs=envs,
                                   sink=sink, options=GenerateOptions(now=NOW), recorder=recorder).outcomes)

    (tmp_path / "cm.yaml").write_text(CONFIGMAPS)
    trace = Trace()
    outcomes = run(trace)
    assert outcomes == run(None) and outcomes         # recording never changes an outcome
    [tree] = recorded(trace)
    assert tree.tree is trace.root.children[0] and tree.subject.name == "bare"
    assert "Secret default/for-bare" in str(tree.tree.to_json())
    assert tree.results == [o.result for o in outcomes]     # type: ignore[attr-defined]
    # the tree shown is the recording, an edited one too
    [leaf] = _leaves(tree.tree)
    leaf.outcome, leaf.detail = "error", "recorded"
    [again] = recorded(trace)
    assert [(leaf.outcome, leaf.detail) for leaf in _leaves(again.tree)] == [("error", "recorded")]


# --- classic ClusterPolicies: the evaluator records each policy's tree whole in the run whose results it ends in

CLASSIC = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: needs-team}
spec:
  rules:
  - name: team
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      message: a team label is required
      pattern: {metadata: {labels: {team: "?*"}}}
  - name: stamp
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    mutate:
      patchStrategicMerge: {metadata: {labels: {stamped: "yes"}}}
"""


def test_a_classic_policy_records_its_tree_whole(tmp_path: Path) -> None:
    policies = _policies(tmp_path, CLASSIC)
    evaluator = classic_evaluator(policies, [], KindTable(), _envs(), EvalOptions(now=NOW))
    assert evaluator is not None
    ctx = _bare(tmp_path)
    # a mutate rule's result is another engine's (the admission chain's): the tree ends in it too
    chained = evaluator.evaluate(ctx)[0][0]._replace(rule="stamp", result="pass", message="stamped")
    trace = Trace()
    evaluator.explain(ctx, trace, [chained])
    assert evaluator.core.trace is None                    # recording is for that run only
    [tree] = recorded(trace)
    assert tree.tree is trace.root.children[0] and tree.policy == "needs-team" and tree.subject.name == "bare"
    # the recording's results are the run's: eval's for the validate rule, the chain's for the mutate rule
    assert [(r.rule, r.result) for r in tree.results] == [("team", "fail"), ("stamp", "pass")]
    assert [(r, True) for r in tree.results[:1]] == evaluator.evaluate(ctx)    # recording never changes a result
    assert [(leaf.outcome, leaf.detail) for leaf in _leaves(tree.tree)] == [
        ("fail", "rule 'team': " + tree.results[0].message), ("pass", "rule 'stamp': stamped")]
    # the pattern's walk is the engine's, recorded in this run: an edited recording is what explain shows
    rule = tree.tree.children[0]
    validate = next(c for c in rule.children if c.name == "validate")
    [pattern] = validate.children
    assert pattern.name == "pattern" and pattern.outcome and pattern.children
    pattern.children.append(Step("a step only the recording has", "shown"))
    [again] = recorded(trace)
    assert "a step only the recording has" in str(again.tree.to_json())


def test_a_classic_generate_trigger_shows_only_its_generate_rules(tmp_path: Path) -> None:
    policies = _policies(tmp_path, CLASSIC)
    evaluator = classic_evaluator(policies, [], KindTable(), _envs(), EvalOptions(now=NOW))
    assert evaluator is not None
    trace = Trace()
    evaluator.explain(_bare(tmp_path), trace, rule_types=("generate",))
    [tree] = recorded(trace)
    # no generate rule: no rule shown, none evaluated (nothing recorded for the validate rule)
    assert tree.results == [] and tree.tree.children == [] and trace.rules == {}
