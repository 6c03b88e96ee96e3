"""Issue 36, `eval --state` per-pair cost: the results made on eval's short paths are the ones the general
path (make_result, evaluate_policies with a recorder) makes.

A matchConditions skip and a failed validation without auditAnnotations are made directly from what the policy
fixes once (evaluate/validating/engine.py `_Fixed`), as a pass already was; evaluate_policies reads what decides
reporting once per policy; a subject's (result, reportable) list joins the run's ResultPairs without a Python
call per pair. Each result must be field for field (and for its shared properties, object for object) what
make_result makes, and each flag what `reportable` says.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel import engine as cel_engine
from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate import pipeline
from kubectl_kyrec.evaluate.pipeline import EvalOptions, reportable, run_eval, subject_context
from kubectl_kyrec.evaluate.validating import engine
from kubectl_kyrec.evaluate.validating.engine import candidate_variants, compile_validating_policy, make_result
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Result, ResultPairs
from kubectl_kyrec.recording import Trace

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


def _policy(name: str, *, scored: bool = True, disabled: bool = False, background: bool = True,
            audit: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "annotations": {"policies.kyverno.io/category": "Cat",
                                                              "policies.kyverno.io/severity": "high"}}
    if not scored:
        metadata["annotations"]["policies.kyverno.io/scored"] = "false"
    if disabled:
        metadata["labels"] = {"reports.kyverno.io/disabled": "true"}
    spec: dict[str, Any] = {
        "evaluation": {"background": {"enabled": background}},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]},
        # skips the Pods named skip-*
        "matchConditions": [{"name": "not-skipped", "expression": "!object.metadata.name.startsWith('skip')"}],
        "validationActions": ["Audit"],
        "validations": [
            {"expression": "true"},
            {"expression": "object.metadata.name != 'bad-msg'", "message": "a fixed message"},
            {"expression": "object.metadata.name != 'bad-expr'",
             "messageExpression": "'made for ' + object.metadata.name"},
            {"expression": "object.metadata.name != 'bad-none'"},
        ],
    }
    if audit:
        spec["auditAnnotations"] = [{"key": "who", "valueExpression": "object.metadata.name"}]
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": metadata, "spec": spec}


POLICIES = [_policy("scored"), _policy("unscored", scored=False), _policy("disabled", disabled=True),
            _policy("admission-only", background=False), _policy("audited", audit=True)]
NAMES = ["ok", "skip-me", "bad-msg", "bad-expr", "bad-none"]


@pytest.fixture()
def loaded(tmp_path: Path) -> tuple[Any, list[Any]]:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "ns"},
          "spec": {"containers": [{"name": "c", "image": "nginx"}]}} for n in NAMES]))
    policies = classify(load_documents([str(tmp_path / "policies.yaml")])).raise_errors()
    return policies, load_documents([str(tmp_path / "pods.yaml")])


def _general(result: Result, cp: Any, ctx: Any) -> Result:
    """`result` as make_result makes it from the engine's own arguments (the path every result took before)."""
    status = "fail" if result.result == "warn" else result.result
    props = {k: v for k, v in result.properties.items() if k != "process"}
    return make_result(cp.policy.meta, cp.source_kind, ctx, result.rule, status, result.message, props,
                       cp.policy.validation_actions, cp.policy.background, facts=cp.facts)


def test_the_short_paths_make_what_make_result_makes(loaded: tuple[Any, list[Any]]) -> None:
    policies, pods = loaded
    libraries = library_factory(LibraryContext(now=NOW, provider=EmptyProvider()))
    envs = Environments(libraries)
    compiled = [compile_validating_policy(p, envs, [], NOW) for p in policies.validating]
    options = EvalOptions(now=NOW)
    outcome = run_eval(policies, pods, [], kinds=KindTable(), libraries=libraries, options=options, envs=envs)
    by_policy = {cp.policy.meta.name: cp for cp in compiled}
    subjects = {s.ref.name: s for s in outcome.subjects}
    seen = set()
    for result, flag in outcome.pairs:
        cp = by_policy[result.policy]
        ctx = subject_context(subjects[result.subject.name], {}, options)
        expected = _general(result, cp, ctx)
        assert result == expected
        # the one mapping of these properties, as make_result shares them
        assert result.properties is expected.properties
        assert flag == reportable(result, cp.policy.background,
                                  "reports.kyverno.io/disabled" in cp.policy.meta.labels)
        seen.add((result.policy, result.subject.name, result.result, result.message,
                  result.properties.get("cel.validationIndex")))
    # every path met: pass, skip, fail (warn unscored) with each kind of message, and the audited policy's
    assert ("scored", "skip-me", "skip", "skip", None) in seen
    assert ("scored", "bad-msg", "fail", "a fixed message", "1") in seen
    assert ("unscored", "bad-msg", "warn", "a fixed message", "1") in seen
    assert ("scored", "bad-expr", "fail", "made for bad-expr", "2") in seen
    assert ("scored", "bad-none", "fail", "CEL expression validation failed at index 3", "3") in seen
    assert ("audited", "bad-none", "fail", "CEL expression validation failed at index 3", "3") in seen
    assert ("scored", "ok", "pass", "success", None) in seen
    flags = {(r.policy, r.subject.name): f for r, f in outcome.pairs}
    assert not flags[("disabled", "bad-msg")] and not flags[("admission-only", "bad-msg")]
    assert flags[("scored", "bad-msg")] and not flags[("scored", "skip-me")]


def test_a_skip_or_a_failed_validation_is_made_without_the_general_path(loaded: tuple[Any, list[Any]],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    policies, pods = loaded
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    scored = next(p for p in policies.validating if p.meta.name == "scored")
    cp = compile_validating_policy(scored, envs, [], NOW)
    options = EvalOptions(now=NOW)
    subjects, _ = pipeline.select_subjects(pods, [], KindTable(), options.selection)

    def general(*args: Any, **kwargs: Any) -> Result:
        raise AssertionError("make_result called")

    monkeypatch.setattr(engine, "make_result", general)
    for subject in subjects:
        ctx = subject_context(subject, {}, options)
        results = engine.evaluate_validating(cp, ctx, candidate_variants(cp, ctx.request))
        assert [r.result for r in results] == ["pass" if subject.ref.name == "ok" else
                                               "skip" if subject.ref.name == "skip-me" else "fail"]


def test_the_eval_path_flags_what_the_recorded_path_does(loaded: tuple[Any, list[Any]]) -> None:
    """evaluate_policies without a recorder (eval) and with one (explain): the same pairs."""
    policies, pods = loaded
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    compiled = [compile_validating_policy(p, envs, [], NOW) for p in policies.validating]
    run = pipeline.CompiledRun(compiled, [], [], None)
    options = EvalOptions(now=NOW)
    subjects, _ = pipeline.select_subjects(pods, [], KindTable(), options.selection)
    for subject in subjects:
        ctx = subject_context(subject, {}, options)
        validating = [(cp, candidate_variants(cp, ctx.request)) for cp in compiled]
        plain = pipeline.evaluate_policies(ctx, validating, run, state=[], kinds=KindTable(), options=options)
        recorded = pipeline.evaluate_policies(ctx, validating, run, state=[], kinds=KindTable(), options=options,
                                              recorder=Trace())
        assert plain == recorded and len(plain) == len(POLICIES)


def test_a_subjects_pairs_join_without_a_call_per_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    results = [Result("p", "ValidatingPolicy", "", s, "m", None) for s in ("pass", "fail", "skip")]  # type: ignore[arg-type]
    pairs = ResultPairs()
    pairs.extend([(results[0], True)])

    def one(self: ResultPairs, result: Result, flag: bool) -> None:
        raise AssertionError("a call per pair")

    monkeypatch.setattr(ResultPairs, "append", one)
    pairs.extend([(results[1], False), (results[2], 1)])    # type: ignore[list-item]
    assert pairs.results == results and list(pairs) == [(results[0], True), (results[1], False),
                                                         (results[2], True)]
    assert pairs.reportable == bytearray(b"\x01\x00\x01")


# ---- cel-go's `no such key: <field>` for a selection on null or a scalar (cel/engine.py _missing_field) ----

_ENV = Environment([], ("object", "x"))
_SELECTIONS = [
    "object.a.b + object.c.d",
    "object.l.z == 1 || object.a.b == 1",
    "cel.bind(v, (object.c), (object.a.b == 1 && v.d.e == 2))",
    "object.m.k.z",
    "x.spec.name",
    "object.t.f",
    # a path through a list, a bound variable before a path, a receiver that is no path
    "object.l.z.y == 1 || object.c.d.e == 1",
    "cel.bind(v, (object.m), (v.k.z == 1 || object.a.b.c == 1))",
    "object.m[\"k\"].z == 1 || object.a.b == 1",
]
_DATA: list[dict[str, Any]] = [
    {"a": {"b": 1}, "c": None, "l": [1], "m": {"k": None}, "t": "2020-01-01T00:00:00Z"},
    {"a": None, "c": {"d": {"e": 1}}, "l": [1, 2], "m": {"k": "s"}},
    {"a": 3, "c": {"d": None}, "l": None, "m": {"k": {"z": 1}}},
    {"a": {"b": [1]}, "c": "s", "l": {"z": 1}, "m": None},
    {"a": [], "c": [], "m": {"k": []}},
    {"a": {"b": True}, "c": {"d": 1.5}, "l": {"z": {"y": b"x"}}, "m": {"k": {"z": None}}},
    # values the engine cannot convert, anywhere in the root: every receiver on it fails, as each alone does
    {"a": {"b": None}, "c": None, "u": datetime.datetime(2020, 1, 1)},
    {"a": {"b": None}, "c": {"d": 1 << 70}},
    {"a": {"b": None}, datetime.datetime(2020, 1, 1): 1},
]

def _program_and_activation(expression: str, data: dict[str, Any]) -> tuple[Any, Any]:
    return _ENV.compile(expression), _ENV.activation({"object": data, "x": None})


@pytest.mark.parametrize("expression", _SELECTIONS)
def test_the_receivers_kinds_at_once_name_the_field_one_at_a_time_does(expression: str) -> None:
    for data in _DATA:
        program, activation = _program_and_activation(expression, data)
        at_once = cel_engine._missing_field(program, activation)
        found = program._receivers
        assert found is not None and found.kinds is not None
        program._receivers = found._replace(kinds=None)      # each receiver alone, as before
        try:
            assert cel_engine._missing_field(program, activation) == at_once, data
        finally:
            program._receivers = found      # the environment keeps its programs by text


class _Counted:
    def __init__(self, expr: Any, calls: list[str], name: str) -> None:
        self.expr, self.calls, self.name = expr, calls, name

    def eval(self, activation: Any) -> Any:
        self.calls.append(self.name)
        return self.expr.eval(activation)


def test_a_scalar_receiver_is_found_in_one_engine_call() -> None:
    # an environment of its own: it keeps its programs by text, and the receivers are replaced below
    env = Environment([], ("object", "x"))
    program, activation = env.compile("object.a.b + object.c.d"), env.activation({"object": _DATA[0], "x": None})
    assert program.evaluate(activation).error == "no such key: d" and program._receivers is not None
    calls: list[str] = []
    found = program._receivers
    program._receivers = found._replace(receivers=tuple((f, _Counted(e, calls, f), p) for f, e, p in found.receivers))
    assert program.evaluate(activation).error == "no such key: d"
    assert calls == []
    # a list among the receivers is looked at alone (its plain value decides), from where it stands
    env = Environment([], ("object", "x"))
    program = env.compile("object.a.b + object.c.d")
    activation = env.activation({"object": {"a": {"b": 1}, "c": [1]}, "x": None})
    assert program.evaluate(activation).error == "no such key: d" and program._receivers is not None
    found = program._receivers
    program._receivers = found._replace(receivers=tuple((f, _Counted(e, calls, f), p) for f, e, p in found.receivers))
    assert program.evaluate(activation).error == "no such key: d" and calls == ["d"]
