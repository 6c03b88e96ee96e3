"""Issue 36, `eval --state` per-pair cost (statefast4): a validation that errs, and one that needs a registry
offline, make their results directly, as a pass, a skip and a failure already did (test_statefast2.py); and
`first_not_true` decides a false or an erring typed-bool validation from the engine's first answer, without
`Program._outcome` asking the engine again. Each short path must give what the general path gives: the
result field for field (its shared properties object for object) as make_result makes it, the Outcome as
`Program.evaluate` makes it.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel import engine as cel_engine
from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.engine import Environment, first_not_true
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate import pipeline
from kubectl_kyrec.evaluate.pipeline import EvalOptions, subject_context
from kubectl_kyrec.evaluate.validating import engine
from kubectl_kyrec.evaluate.validating.engine import candidate_variants, compile_validating_policy, make_result
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Result

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


def _policy(name: str, *, scored: bool = True, background: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "annotations": {"policies.kyverno.io/category": "Cat",
                                                              "policies.kyverno.io/severity": "high"}}
    if not scored:
        metadata["annotations"]["policies.kyverno.io/scored"] = "false"
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": metadata, "spec": {
        "evaluation": {"background": {"enabled": background}},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]},
        "validationActions": ["Audit", "Warn"],
        "validations": [
            {"expression": "true"},
            # Pods named err-*: a selection on a missing map (cel-go's `no such key`)
            {"expression": "!object.metadata.name.startsWith('err') || object.spec.missing.field == 'x'"},
            # Pods named img-*: image data, which only a registry answers (undetermined, needs-registry)
            {"expression": "!object.metadata.name.startsWith('img') || "
                           "image.GetMetadata(object.spec.containers[0].image).config != null"},
            # Pods named div-*: an engine error of another text
            {"expression": "!object.metadata.name.startsWith('div') || 1 / (size(object.metadata.name) - 5) == 0"},
            {"expression": "object.metadata.name != 'bad'", "message": "bad name"},
        ],
    }}


POLICIES = [_policy("scored"), _policy("unscored", scored=False), _policy("admission-only", background=False)]
NAMES = ["ok", "err-1", "img-1", "div-1", "bad"]


@pytest.fixture()
def loaded(tmp_path: Path) -> tuple[Any, list[Any]]:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "ns"},
          "spec": {"containers": [{"name": "c", "image": "nginx"}]}} for n in NAMES]))
    policies = classify(load_documents([str(tmp_path / "policies.yaml")])).raise_errors()
    return policies, load_documents([str(tmp_path / "pods.yaml")])


def _evaluated(loaded: tuple[Any, list[Any]]) -> list[tuple[Any, Any, Result]]:
    """(compiled policy, subject context, result) of every policy on every Pod, with no registry (offline)."""
    policies, pods = loaded
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    compiled = [compile_validating_policy(p, envs, [], NOW) for p in policies.validating]
    options = EvalOptions(now=NOW)
    subjects, _ = pipeline.select_subjects(pods, [], KindTable(), options.selection)
    out = []
    for subject in subjects:
        ctx = subject_context(subject, {}, options)
        for cp in compiled:
            for result in engine.evaluate_validating(cp, ctx, candidate_variants(cp, ctx.request)):
                out.append((cp, ctx, result))
    return out


def test_an_erring_or_undetermined_validation_makes_what_make_result_makes(loaded: tuple[Any, list[Any]]) -> None:
    seen = set()
    for cp, ctx, result in _evaluated(loaded):
        status = "fail" if result.result == "warn" else result.result
        props = {k: v for k, v in result.properties.items() if k != "process"}
        expected = make_result(cp.policy.meta, cp.source_kind, ctx, result.rule, status, result.message, props,
                               cp.policy.validation_actions, cp.policy.background, facts=cp.facts)
        assert result == expected
        # the one mapping of these properties, as make_result shares them
        assert result.properties is expected.properties
        seen.add((result.policy, result.subject.name, result.result, result.message,
                  result.properties.get("cel.validationIndex")))
    assert ("scored", "err-1", "error", "error: no such key: missing", "1") in seen
    assert ("unscored", "err-1", "error", "error: no such key: missing", "1") in seen
    assert ("scored", "div-1", "error", "error: division by zero", "3") in seen
    undetermined = {(p, n, s, i) for p, n, s, m, i in seen if n == "img-1"}
    assert undetermined == {(p, "img-1", "undetermined", None) for p in ("scored", "unscored", "admission-only")}
    assert any(n == "img-1" and m.startswith("needs-registry: validation 2 needs a registry: ")
               for _, n, _, m, _ in seen)
    assert ("unscored", "bad", "warn", "bad name", "4") in seen and ("scored", "ok", "pass", "success", None) in seen


def test_an_erring_or_undetermined_validation_is_made_without_the_general_path(
        loaded: tuple[Any, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    def general(*args: Any, **kwargs: Any) -> Result:
        raise AssertionError("make_result called")

    monkeypatch.setattr(engine, "make_result", general)
    statuses = {(r.policy, r.subject.name): r.result for _, _, r in _evaluated(loaded)}
    assert statuses[("scored", "err-1")] == statuses[("scored", "div-1")] == "error"
    assert statuses[("scored", "img-1")] == "undetermined"


# ---- first_not_true: a false or an erring typed-bool program decided from the engine's first answer ----

_ENV = Environment([], ("object",))
_CASES = [
    ("object.a == 1", {"a": 1}),                    # true: passes
    ("object.a == 2", {"a": 1}),                    # false
    ("object.b.c == 1", {"a": 1}),                  # cel-go's no such key: b
    ("object.a.c == 1", {"a": 1}),                  # a selection on a scalar: no such key: c
    ("1 / object.z == 1", {"z": 0}),                # division by zero
    ("object.l[3] == 1", {"l": [1]}),               # index out of bounds
    ("object.a", {"a": True}),                      # a dyn result that is a bool
    ("object.a", {"a": False}),
    ("object.a", {"a": "text"}),                    # a dyn result that is not a bool
    ("object.a", {"a": None}),
]


@pytest.mark.parametrize(("expression", "data"), _CASES)
def test_first_not_true_says_what_evaluate_says(expression: str, data: dict[str, Any]) -> None:
    program = _ENV.compile(expression)
    activation = _ENV.activation({"object": data})
    found = first_not_true([_ENV.compile("true"), program], activation)
    outcome = program.evaluate(activation)
    if outcome.value is True:
        assert found is None
    else:
        assert found is not None and found[0] == 1
        assert found[1] == outcome


def test_a_false_or_erring_typed_bool_program_asks_the_engine_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def general(self: Any, raw: Any, activation: Any) -> Any:
        raise AssertionError("_outcome called")

    monkeypatch.setattr(cel_engine.Program, "_outcome", general)
    for expression, data, error in [("object.a == 2", {"a": 1}, None),
                                    ("object.b.c == 1", {"a": 1}, "no such key: b"),
                                    ("1 / object.z == 1", {"z": 0}, "division by zero")]:
        program = _ENV.compile(expression)
        found = first_not_true([program], _ENV.activation({"object": data}))
        assert found is not None
        assert (found[1].value, found[1].error) == ((False, None) if error is None else (None, error))


# ---- start-up: the ImageValidatingPolicy engine is imported by a run that has one ----

_IMPORTED = """
import json, sys
from click.testing import CliRunner
from kubectl_kyrec.cli.main import cli
result = CliRunner().invoke(cli, ["eval", *sys.argv[1:], "--now", "2026-01-02T03:04:05Z"])
print(json.dumps({"exit": result.exit_code, "output": result.output, "modules": sorted(
    m for m in sys.modules if m.split(".")[0] == "cryptography" or m in (
        "kubectl_kyrec.evaluate.image_validating.engine", "kubectl_kyrec.cel.kyverno_imageverify",
        "kubectl_kyrec.load.cosign", "kubectl_kyrec.load.notary"))}))
"""

ROOT = Path(__file__).resolve().parents[2]


def _eval_imports(*args: str) -> dict[str, Any]:
    """eval with `args` in a fresh interpreter: its exit code, output and the image-verification modules loaded."""
    done = subprocess.run([sys.executable, "-c", _IMPORTED, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_run_without_image_validating_policies_imports_no_image_verification(tmp_path: Path) -> None:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES))
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "ns"},
             "spec": {"containers": [{"name": "c", "image": "nginx"}]}} for n in NAMES]
    (tmp_path / "state.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    ran = _eval_imports("-p", str(tmp_path / "policies.yaml"), "--state", str(tmp_path / "state.json"))
    assert ran["exit"] == 1 and "bad name" in ran["output"]
    assert ran["modules"] == []
    # with one, the engine is there and evaluates it
    ran = _eval_imports("-p", str(tmp_path / "policies.yaml"),
                        "-p", str(ROOT / "testdata" / "consistency" / "kinds" / "imagevalidatingpolicy.yaml"),
                        "--state", str(tmp_path / "state.json"), "-o", "json")
    assert "kubectl_kyrec.evaluate.image_validating.engine" in ran["modules"]
    document = json.loads(ran["output"][ran["output"].index("{"):])
    assert sorted((r["subject"]["name"], r["result"]) for r in document["results"]
                  if r["policy"] == "ivpol-registry") == sorted((n, "pass") for n in NAMES)
