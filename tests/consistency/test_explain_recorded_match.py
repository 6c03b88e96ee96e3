"""`explain` from a recorder (issue 35), the classic kind's match and the recorder's nesting: a classic rule's
match and exclude blocks are recorded where the engine decides them (classic/match.py `match_state` given the
recorder), so the tree shows the engine's answer, not a second reading of the blocks; and a `close` never ends
the tree being recorded.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.classic import match as classic_match
from kubectl_kyrec.classic.match import RequestFacts, match_state
from kubectl_kyrec.evaluate.classic import engine as classic_engine
from kubectl_kyrec.evaluate.explain import recorded
from kubectl_kyrec.evaluate.pipeline import EvalOptions, classic_evaluator, subject_context
from kubectl_kyrec.evaluate.subjects import make_subjects
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.recording import Trace

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}}}


def _facts(user_known: bool = True) -> RequestFacts:
    return RequestFacts(obj=POD, group="", version="v1", kind="Pod", subresource="", operation="CREATE",
                        namespace_labels={}, user_known=user_known)


KINDS: dict[str, Any] = {"resources": {"kinds": ["Pod"]}}
CASES = [
    ({"any": [KINDS]}, None),
    ({"any": [{"resources": {"kinds": ["ConfigMap"]}}, KINDS]}, None),
    ({"all": [KINDS, {"resources": {"namespaces": ["other"]}}]}, None),
    (KINDS, None),
    ({"any": [KINDS]}, {"any": [{"resources": {"names": ["web"]}}]}),
    ({"any": [KINDS]}, {"all": [{"resources": {"names": ["web"]}}, {"resources": {"namespaces": ["x"]}}]}),
    ({"any": [{"resources": {"kinds": ["ConfigMap"]}}]}, {"any": [{"resources": {"names": ["web"]}}]}),
    ({"any": [{**KINDS, "clusterRoles": ["admin"]}]}, None),
    ({"any": [KINDS]}, {"any": [{**KINDS, "roles": ["dev"]}]}),
]


@pytest.mark.parametrize("user_known", [True, False])
@pytest.mark.parametrize(("match", "exclude"), CASES)
def test_match_state_returns_the_answer_it_records(match: dict[str, Any], exclude: dict[str, Any] | None,
                                                   user_known: bool) -> None:
    facts = _facts(user_known)
    trace = Trace()
    trace.rule("p", "r")
    answer = match_state(match, exclude, facts, "", trace)
    assert answer is match_state(match, exclude, facts)          # recording never changes the answer
    steps = trace.rules[("p", "r")].children
    names = [s.name for s in steps]
    # every block is recorded (the exclude ones too), then whether the rule applies
    assert names[0].startswith("match") and names[-1] == "applies"
    assert any(n.startswith("exclude") for n in names) is bool(exclude)
    assert steps[-1].outcome == {True: "matched", False: "not matched", None: "depends on the requesting user"}[answer]
    assert trace.current is trace.rules[("p", "r")]                 # the blocks closed, the rule still open


def test_a_policy_namespace_elsewhere_is_recorded_as_not_applying() -> None:
    trace = Trace()
    trace.rule("team/p", "r")
    assert match_state({"any": [KINDS]}, None, _facts(), "team", trace) is False
    steps = trace.rules[("team/p", "r")].children
    assert [(s.name, s.outcome) for s in steps] == [("match.any", ""), ("applies", "not matched")]
    assert steps[0].children[0].outcome == "matched"


CLASSIC = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: needs-team}
spec:
  rules:
  - name: team
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    exclude: {any: [{resources: {names: [skip-me]}}]}
    validate:
      message: a team label is required
      pattern: {metadata: {labels: {team: "?*"}}}
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bare, namespace: default}\n"


def test_the_classic_tree_shows_the_match_the_engine_recorded(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited recording of the match is what explain shows: the tree does not read the blocks again."""
    (tmp_path / "policy.yaml").write_text(CLASSIC)
    (tmp_path / "cm.yaml").write_text(CONFIGMAP)
    policies = classify(load_documents([str(tmp_path / "policy.yaml")])).raise_errors()
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    evaluator = classic_evaluator(policies, [], KindTable(), envs, EvalOptions(now=NOW))
    assert evaluator is not None
    [subject] = make_subjects(load_documents([str(tmp_path / "cm.yaml")]), KindTable()).subjects
    ctx = subject_context(subject, {}, EvalOptions(now=NOW))
    real = classic_match.match_state
    calls = []

    def edited(match: Any, exclude: Any, facts: RequestFacts, namespace: str = "",
               recorder: Trace | None = None) -> bool | None:
        answer = real(match, exclude, facts, namespace, recorder)
        calls.append(recorder is not None)
        if recorder is not None:
            recorder.current.children[0].detail = "as the engine recorded it"
        return answer

    monkeypatch.setattr(classic_engine, "match_state", edited)
    trace = Trace()
    evaluator.explain(ctx, trace)
    assert calls == [True]                   # the engine's one decision for the rule, with the recorder
    [tree] = recorded(trace)
    rule = tree.tree.children[0]
    assert [(c.name, c.outcome) for c in rule.children[:3]] == [
        ("match.any", ""), ("exclude.any", ""), ("applies", "matched")]
    assert rule.children[0].detail == "as the engine recorded it"
    assert rule.children[1].children[0].outcome == "does not exclude"


def test_close_never_ends_the_open_tree() -> None:
    trace = Trace()
    tree = trace.tree("ValidatingPolicy p")
    step = trace.open("validations")
    trace.close(step, "all true")
    trace.close(step, "all true")            # closed twice: the tree stays open
    trace.add("result", "pass")
    assert [c.name for c in tree.children] == ["validations", "result"]
    assert trace.root.children == [tree] and tree.outcome == ""
    trace.close(tree, "done")                # nor does closing the tree itself pop it
    trace.add("more", "x")
    assert tree.children[-1].name == "more" and trace.current is tree


def test_a_step_left_open_is_closed_by_the_enclosing_close() -> None:
    trace = Trace()
    tree = trace.tree("ClusterPolicy p")
    outer = trace.open("pattern")
    inner = trace.open("element 0")          # an exception left it open
    trace.close(outer, "fail")
    assert (inner.outcome, outer.outcome) == ("error", "fail")
    assert trace.current is tree
