"""convert: a ClusterPolicy's `validate.cel` and `celPreconditions` whose expression errors decide as the
original (a failure), never an error result (convert/cel_total.py), and what cannot be made so is refused."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.cel_total import total
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import _verdicts, verify
from tests.shared_inputs import present, shared


def _policy(expressions: list[str], pre: list[str] | None = None, variables: dict[str, str] | None = None
            ) -> dict[str, Any]:
    rule: dict[str, Any] = {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                            "validate": {"message": "tiller is not allowed", "cel": {
                                "expressions": [{"expression": e} for e in expressions]}}}
    if variables:
        rule["validate"]["cel"]["variables"] = [{"name": k, "expression": v} for k, v in variables.items()]
    if pre:
        rule["celPreconditions"] = [{"name": f"p{i}", "expression": e} for i, e in enumerate(pre)]
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"validationFailureAction": "Audit", "background": True, "rules": [rule]}}


def _pod(name: str, spec: dict[str, Any], labels: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


PODS = [
    _pod("ok", {"containers": [{"name": "a", "image": "nginx:1", "env": [{"name": "X", "value": "1"}]}],
                "priority": 5}, {"app": "x"}),
    _pod("tiller", {"containers": [{"name": "a", "image": "r.io/tiller:2"}], "priority": 1}),
    _pod("no-image", {"containers": [{"name": "a"}]}, {"app": "y"}),
    _pod("empty", {"containers": []}),
    _pod("other-labels", {"containers": [{"name": "b", "image": "x:1"}, {"name": "c", "image": "tiller"}]},
         {"team": "t"}),
]


def _original_verdicts(doc: dict[str, Any]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as workdir:
        found = _verdicts([doc], PODS, workdir, "o")
    return {name: verdict for (_, _, name), (verdict, _) in found.items()}


def test_an_erroring_expression_fails_in_the_conversion_as_in_the_original() -> None:
    """Kyverno fails a ClusterPolicy rule whose validate.cel errors; the ValidatingPolicy must fail, not error."""
    original = _policy(["object.spec.containers.all(c, !c.image.contains('tiller'))"])
    assert _original_verdicts(original)["no-image"] == "fail"          # the case exists
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, subjects = verify(original, conv.documents, PODS)
    assert [d.line() for d in diffs if d.verdict] == []
    assert subjects > len(PODS)
    # where it errored, the conversion fails with the rule's message (a named, reported message difference)
    assert any(d.subject == "Pod/default/no-image" and d.converted_message == "tiller is not allowed" for d in diffs)
    assert any("errors fails the ClusterPolicy rule" in s for s in conv.substitutes)


def test_an_erroring_cel_precondition_fails_in_the_conversion() -> None:
    """An erroring celPrecondition fails the classic rule (a false one skips it): the conversion's
    matchCondition is "not false" and every validation needs the precondition true."""
    original = _policy(["object.spec.containers.size() > 0"], pre=["object.spec.priority > 2"])
    verdicts = _original_verdicts(original)
    assert verdicts["no-image"] == "fail" and verdicts["tiller"] == "pass" and verdicts["empty"] == "fail"
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, _ = verify(original, conv.documents, PODS)
    assert [d.line() for d in diffs if d.verdict] == []


EXPRESSIONS = [
    "object.spec.containers.all(c, !c.image.contains('tiller'))",
    "object.spec.containers.exists(c, c.image.startsWith('nginx') && c.env[0].value == '1')",
    "!has(object.metadata.labels) || object.metadata.labels.app == 'x'",
    "object.metadata.?labels[?'app'].orValue('') == 'y'",
    "object.spec.priority >= 3 ? object.spec.containers.size() == 1 : object.spec.containers[0].name == 'a'",
    "object.spec.containers.map(c, c.image).filter(i, i.endsWith(':1')).size() == 1",
    "variables.images.exists_one(i, i.contains('tiller'))",
    "'x' in object.metadata.labels.app || object.spec.containers[1].name == 'b'",
    "object.spec.containers + object.metadata.?labels.team.orValue([]) != []",
    "object.metadata.?labels.app.orValue('z').matches('^[xy]$')",
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_true_and_false_forms_never_error_and_decide_as_the_expression(expression: str) -> None:
    """T(E) passes exactly where E is true and F(E) exactly where E is false; neither ever errors."""
    variables = {"images": "object.spec.containers.map(c, c.image)"}
    t, f = total(expression, "x", variables)

    def run(text: str) -> dict[str, str]:
        doc = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "v"},
               "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                                "operations": ["CREATE"], "resources": ["pods"]}]},
                        "variables": [{"name": k, "expression": v} for k, v in variables.items()],
                        "validations": [{"expression": text}]}}
        with tempfile.TemporaryDirectory() as workdir:
            return {n: v for (_, _, n), (v, _) in _verdicts([doc], PODS, workdir, "t").items()}

    plain, as_true, as_false = run(expression), run(t), run(f)
    if not expression.startswith("object.metadata.?"):
        assert "error" in plain.values()                 # the errors are exercised
    assert "error" not in [*as_true.values(), *as_false.values()]
    assert as_true == {n: "pass" if v == "pass" else "fail" for n, v in plain.items()}
    assert as_false == {n: "pass" if v == "fail" else "fail" for n, v in plain.items()}


def test_what_cannot_be_made_total_is_refused_by_field(tmp_path: Path) -> None:
    src = tmp_path / "p.yaml"
    src.write_text(yaml.safe_dump(_policy(["object.spec.containers.size() > 0",
                                           "int(object.metadata.labels.app) > 0"])))
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert ("ClusterPolicy 'p' not converted: spec.rules[0].validate.cel.expressions[1].expression: the function "
            "int() in 'int(object.metadata.labels.app)': its errors cannot be made a failure") in result.stderr
    assert not (tmp_path / "out" / "p.yaml").exists()


def test_cel_preconditions_on_a_pattern_rule_are_refused() -> None:
    doc = _policy(["true"], pre=["true"])
    rule = doc["spec"]["rules"][0]
    rule["validate"] = {"message": "no", "pattern": {"spec": {"containers": [{"name": "?*"}]}}}
    conv = convert_policy(doc)
    assert conv.refusals and conv.refusals[0].startswith("spec.rules[0].celPreconditions: Kyverno evaluates")


@present(shared("corpus"), "convert: every legacy ClusterPolicy")
def test_every_legacy_cluster_policy_converted_decides_as_the_original() -> None:
    """All ClusterPolicies of kyverno-policies-legacy (`convert_oracle.py --all`): every conversion kyrec
    writes has 0 verdict differences from its original on the policy's test resources and their variants."""
    from tests.consistency import convert_oracle as oracle

    results = [oracle.run_pair(p) for p in oracle.every_legacy_policy()]
    assert len(results) >= 460
    assert [(p.name, p.reason) for p in results if p.status == "invalid conversion"] == []
    converted = [p for p in results if p.subjects]
    assert len(converted) >= 190
    # no generate rule's downstreams differ
    assert [d.line() for p in converted for d in p.ours if d.downstream] == []
    assert sum(p.subjects for p in converted) > 30000
    # no verdict and no mutated object differs; before the variants left out the objects the API server refuses
    # (tests/consistency/test_convert_refused_variants.py), 6 verdicts (require-cpu-limits) and 3 mutated objects
    # (add-runtimeclassname, add-labels) differed, all on containers without a name or Service ports without a
    # port, and those variants are counted instead
    assert [(p.name, d.line()) for p in converted for d in p.ours if d.verdict] == []
    assert sum(p.refused for p in converted) > 1000


def test_a_string_method_with_an_int_argument_is_refused_not_made_false() -> None:
    """`indexOf(s, i)` takes an int: read as the all-string overload its check would be false everywhere (a
    validation that always fails); it is refused instead."""
    conv = convert_policy(_policy(["object.spec.containers[0].name.indexOf('a', 0) >= 0"]))
    assert conv.documents == []
    assert conv.refusals[0].startswith("spec.rules[0].validate.cel.expressions[0].expression: the method indexOf()")
