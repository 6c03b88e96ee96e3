"""`patchedResources` rows of classic mutate rules (kk: cmd/cli/kubectl-kyverno/commands/test/command.go
checkResult, compare.go): testdata/classic/mutate-suite, whose verdicts are those of Kyverno v1.17.2's CLI
(rows 1-3 pass, row 4 fails "Resource diff", row 5 gets no row: its file has no cm3, "not found in
manifest"; the require-team rows pass, cm1 validated as add-team patched it)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import run_files

SUITE = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "mutate-suite"
NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)


def _run(mode: Mode) -> tuple[list[tuple[int, str, str, bool, str]], list[str]]:
    runs, load_errors = run_files([str(SUITE / "kyverno-test.yaml")], now=NOW, mode=mode)
    assert load_errors == [] and runs[0].errors == []
    rows = [(r.location.line if r.location else 0, r.resource, r.actual, r.passed, r.reason) for r in runs[0].rows]
    return rows, [w.reason for w in runs[0].warnings]


@pytest.mark.parametrize("mode", list(Mode))
def test_patched_resources_are_compared_as_the_cli_compares_them(mode: Mode) -> None:
    rows, warnings = _run(mode)
    assert rows[:4] == [
        (11, "ns1/cm1", "pass", True, "ok"),                      # patched as patched.yaml says
        (17, "ns1/cm2", "skip", True, "ok"),                     # preconditions not met: unchanged
        (23, "default/cm3", "pass", True, "ok"),                 # no namespace: `default`, both sides
        (29, "ns1/cm1", "pass", False, "patched-mismatch"),      # patched-wrong.yaml wants team: other
    ]
    if mode is Mode.KYVERNO:
        # the CLI finds no cm3 in patched-wrong.yaml and checks nothing
        assert rows[4] == (35, "default/cm3", "pass", True, "ok")
    else:
        assert rows[4] == (35, "default/cm3", "pass", False, "missing-patched-resource")
    # validation sees each resource as the mutate policies left it: cm1 has its team label now
    assert rows[5:] == [(41, "ns1/cm1", "pass", True, "ok"), (46, "ns1/cm2", "fail", True, "ok")]
    assert warnings == ["missing-patched-resource"]


EXISTING = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "mutate-existing-suite"


def test_mutate_existing_rows_check_the_patched_targets() -> None:
    """Kyverno v1.17.2's CLI on testdata/classic/mutate-existing-suite: row 1 passes on app-one; row 2 names
    app-two, which no rule patched (its target precondition fails), so the CLI checks every patched target
    instead and fails app-one "Want skip, got pass"; the trigger is not in patched.yaml: no row."""
    def rows(mode: Mode) -> list[tuple[int, str, str, str, bool, str]]:
        runs, load_errors = run_files([str(EXISTING / "kyverno-test.yaml")], now=NOW, mode=mode)
        assert load_errors == [] and runs[0].errors == []
        return [(r.location.line if r.location else 0, r.kind, r.resource, r.actual, r.passed, r.reason)
                for r in runs[0].rows]

    assert rows(Mode.KYVERNO) == [(12, "Secret", "team/app-one", "pass", True, "ok"),
                                  (18, "Secret", "team/app-one", "pass", False, "result-mismatch")]
    # strict: the named target's own response (skip: its precondition fails)
    assert rows(Mode.STRICT) == [(12, "Secret", "team/app-one", "pass", True, "ok"),
                                 (18, "Secret", "team/app-two", "skip", True, "ok")]


def test_mutate_existing_changes_for_a_trigger() -> None:
    from kubectl_kyrec.classic.context_loader import ContextSources
    from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator
    from kubectl_kyrec.evaluate.request import build_request
    from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subject
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.policy.policies import classify
    from kubectl_kyrec.load.run_inputs.kinds import KindTable

    policies = classify(load_documents([str(EXISTING / "policy.yaml")])).raise_errors().classic
    targets = load_documents([str(EXISTING / "targets.yaml")])
    trigger = load_documents([str(EXISTING / "trigger.yaml")])[0]
    subject, _ = make_subject(trigger.obj, trigger.source, KindTable())
    request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced)
    mutator = ClassicMutator(policies, [], state=[], now=NOW, sources=ContextSources())
    changes = mutator.mutate_existing(SubjectContext(subject, request, None), targets)
    # app-three is in another namespace, db does not match app-*
    assert [(c.target[2:], c.result) for c in changes] == [(("team", "app-one"), "pass"),
                                                           (("team", "app-two"), "skip")]
    assert changes[0].patch == ({"op": "add", "path": "/metadata/annotations",
                                 "value": {"stamped-by": "trigger", "target-name": "app-one"}},)
    assert changes[1].message == "preconditions not met" and changes[1].after is None
    # at admission the rule does nothing to the trigger
    assert mutator.mutate(SubjectContext(subject, request, None)).results == []
