"""`kubectl kyrec convert` (issue 38): what it writes, what it refuses, and that --verify finds differences
(so its 0 on the corpus is a result, not a blind spot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify
from tests.shared_inputs import present, shared


def _policy(validate: dict[str, Any], **rule: Any) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", "annotations": {"policies.kyverno.io/title": "T",
                                                      "pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"validationFailureAction": "Enforce", "background": False, "failurePolicy": "Ignore",
                     "webhookTimeoutSeconds": 7,
                     "rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                "validate": {"message": "no", **validate}, **rule}]}}


def _pod(name: str, spec: dict[str, Any], labels: dict[str, str] | None = None,
         namespace: str = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


PODS = [
    _pod("plain", {"containers": [{"name": "a", "image": "nginx:1.2"}]}, {"app": "x"}),
    _pod("latest", {"containers": [{"name": "a", "image": "nginx:latest", "securityContext": {"privileged": True}}]}),
    _pod("two", {"hostNetwork": True, "containers": [
        {"name": "a", "image": "r.io/a:1", "resources": {"limits": {"memory": "3Gi"}},
         "ports": [{"containerPort": 80}]},
        {"name": "b", "image": "b", "securityContext": {"runAsNonRoot": True, "privileged": False}}]}),
    _pod("init", {"initContainers": [{"name": "i", "image": "busybox"}],
                  "containers": [{"name": "a", "image": "a:1", "resources": {"limits": {"memory": "512Mi"}}}]},
         {"team": "t"}, namespace="kube-system"),
]

PATTERNS = {
    "wildcards and negated values": {"pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}},
    "conditional anchor": {"pattern": {"spec": {"containers": [{"(name)": "a", "image": "*:*"}]}}},
    "equality anchor": {"pattern": {"spec": {"=(hostNetwork)": False}}},
    "negation anchor": {"pattern": {"spec": {"X(hostNetwork)": "null"}}},
    "existence anchor": {"pattern": {"spec": {"^(containers)": [{"securityContext": {"runAsNonRoot": True}}]}}},
    "nested equality in lists": {"pattern": {"spec": {"containers": [
        {"=(securityContext)": {"=(privileged)": False}}]}}},
    "quantities": {"pattern": {"spec": {"containers": [{"=(resources)": {"=(limits)": {"=(memory)": "<=2Gi"}}}]}}},
    "ranges": {"pattern": {"spec": {"containers": [{"=(ports)": [{"containerPort": "1-1024"}]}]}}},
    "alternatives": {"pattern": {"metadata": {"labels": {"app": "x | y"}}}},
    "anyPattern": {"anyPattern": [{"spec": {"hostNetwork": False}}, {"metadata": {"labels": {"app": "?*"}}}]},
    "deny with In": {"deny": {"conditions": {"any": [
        {"key": "{{ request.object.metadata.namespace }}", "operator": "AnyIn", "value": ["kube-system"]}]}}},
    "deny with Equals and a default": {"deny": {"conditions": {"all": [
        {"key": "{{ request.object.spec.hostNetwork || `false` }}", "operator": "Equals", "value": True}]}}},
    "foreach with a pattern": {"foreach": [{"list": "request.object.spec.containers",
                                            "pattern": {"image": "!busybox*"}}]},
    # with defaults: a key an element can lack is Kyverno's error, passed over but on the last element, and
    # such foreach conditions are refused (test_convert_conditions_exact.py)
    "foreach with deny and preconditions": {"foreach": [{
        "list": "request.object.spec.containers",
        "preconditions": {"all": [{"key": "{{ element.name || '' }}", "operator": "Equals", "value": "a"}]},
        "deny": {"conditions": {"any": [{"key": "{{ element.image || '' }}", "operator": "Equals",
                                         "value": "nginx:latest"}]}}}]},
    "foreach over a list that may be missing": {"foreach": [
        {"list": "request.object.spec.initContainers", "pattern": {"image": "!busybox*"}}]},
    "foreach over a multiselect, flattened": {"foreach": [
        {"list": "request.object.spec.[initContainers, containers][]", "pattern": {"image": "!busybox*"}}]},
    "projection, filter and pipe": {"deny": {"conditions": {"any": [
        {"key": "{{ request.object.spec.containers[?securityContext.privileged == `true`] | length(@) }}",
         "operator": "GreaterThan", "value": 0},
        {"key": "{{ request.object.spec.containers[].ports[].containerPort || `[]` }}", "operator": "AnyIn",
         "value": [80]}]}}},
    "a literal key in AnyNotIn": {"deny": {"conditions": {"all": [
        {"key": "ALL", "operator": "AnyNotIn",
         "value": "{{ request.object.spec.containers[].securityContext.capabilities.drop[] || `[]` }}"}]}}},
    "contains on a list": {"deny": {"conditions": {"any": [
        {"key": "{{ contains(request.object.spec.containers[].name, 'b') }}", "operator": "Equals", "value": True}]}}},
    "index and default": {"deny": {"conditions": {"all": [
        {"key": "{{ request.object.spec.containers[0].name || '' }}", "operator": "Equals", "value": "b"}]}}},
}


@pytest.mark.parametrize("case", sorted(PATTERNS))
def test_converted_rule_decides_as_the_original(case: str) -> None:
    original = _policy(PATTERNS[case])
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, subjects = verify(original, conv.documents, PODS)
    assert [d.line() for d in diffs if d.verdict] == []
    assert subjects > len(PODS)          # the variants were evaluated too


def test_verify_is_not_blind() -> None:
    """A conversion that is wrong by one character is caught on the given resources."""
    original = _policy(PATTERNS["wildcards and negated values"])
    wrong = convert_policy(original).documents
    wrong[0]["spec"]["validations"][0]["expression"] = "!(" + wrong[0]["spec"]["validations"][0]["expression"] + ")"
    diffs, _ = verify(original, wrong, PODS)
    assert any(d.subject == "Pod/default/plain" and d.original == "pass" and d.converted == "fail" for d in diffs)


def test_convert_writes_settings_and_name(tmp_path: Path) -> None:
    src = tmp_path / "p.yaml"
    src.write_text(yaml.safe_dump(_policy(PATTERNS["equality anchor"])))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "p.yaml").read_text()
    assert text.startswith("# converted by kubectl kyrec convert from ClusterPolicy 'p'")
    doc = yaml.safe_load(text)
    assert doc["kind"] == "ValidatingPolicy" and doc["metadata"]["name"] == "p"
    assert doc["metadata"]["annotations"] == {"policies.kyverno.io/title": "T"}
    spec = doc["spec"]
    assert spec["validationActions"] == ["Deny"]
    assert spec["evaluation"] == {"background": {"enabled": False}}
    assert spec["failurePolicy"] == "Ignore" and spec["webhookConfiguration"] == {"timeoutSeconds": 7}
    assert spec["autogen"] == {"podControllers": {"controllers": []}}
    assert spec["validations"][0]["message"] == "no"


def test_convert_refuses_by_field_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "p.yaml"
    src.write_text(yaml.safe_dump(_policy({"deny": {"conditions": {"any": [
        {"key": "{{ images.containers.*.tag }}", "operator": "AnyIn", "value": ["latest"]}]}}})))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 1
    assert "ClusterPolicy 'p' not converted: spec.rules[0].validate.deny.conditions.any[0].key:" in result.stderr
    assert not (out / "p.yaml").exists()


def test_convert_bad_input_is_exit_3(tmp_path: Path) -> None:
    src = tmp_path / "p.yaml"
    src.write_text("kind: ClusterPolicy\n  bad: [\n")
    result = CliRunner().invoke(cli, ["convert", "-p", str(src)])
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: {src}:") or f"{src}:" in result.stderr
    assert "Traceback" not in result.output


def test_verify_exit_1_on_a_verdict_difference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_kyrec.convert import policy as policy_module

    original = _policy(PATTERNS["wildcards and negated values"])
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(original))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(PODS))
    real = policy_module.convert_policy

    def broken(doc: dict[str, Any], kinds: Any = None) -> Any:
        conv = real(doc, kinds)
        conv.documents[0]["spec"]["validations"][0]["expression"] = "false"
        return conv

    import kubectl_kyrec.run.convert as run_convert

    monkeypatch.setattr(run_convert, "convert_policy", broken)
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "--verify",
                                      "-r", str(tmp_path / "pods.yaml")])
    assert result.exit_code == 1, result.output
    assert "p: Pod/default/plain (as given): original pass, converted fail" in result.output


@present(shared("corpus"), "convert: the corpus pairs")
def test_corpus_pairs_converted_decide_as_originals() -> None:
    """Every pair's ClusterPolicy that kyrec converts decides as the original on both pairs' test resources
    and their variants (the figures: tests/consistency/convert_oracle.py)."""
    from tests.consistency import convert_oracle as oracle

    results = [oracle.run_pair(p) for p in oracle.pairs()]
    converted = [p for p in results if not p.reason or p.reason == "no test resources"]
    assert [(p.name, p.reason) for p in results if p.status == "invalid conversion"] == []
    assert len(results) >= 108
    assert len(converted) >= 60
    assert sum(p.subjects for p in converted) > 10000
    assert {p.name: [d.line() for d in p.ours if d.verdict] for p in converted if any(d.verdict for d in p.ours)} \
        == {}


def test_a_conversion_kyrec_cannot_load_is_refused(tmp_path: Path) -> None:
    """validate.cel keeps its operations: when kyrec's loader refuses the result (here a type error), nothing
    is written."""
    src = tmp_path / "p.yaml"
    expression = "object.spec.containers.size() < 'a'"
    src.write_text(yaml.safe_dump(_policy({"cel": {"expressions": [{"expression": expression}]}})))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 1
    assert "ClusterPolicy 'p' not converted: the converted CEL does not load in kyrec:" in result.stderr
    assert not (out / "p.yaml").exists()


def test_message_difference_is_reported_not_a_verdict() -> None:
    original = _policy(PATTERNS["wildcards and negated values"])
    conv = convert_policy(original)
    conv.documents[0]["spec"]["validations"][0]["message"] = "another message"
    diffs, _ = verify(original, conv.documents, PODS)
    assert diffs and all(not d.verdict for d in diffs)
    assert any("message differs" in d.line() and "Pod/default/latest" in d.line() for d in diffs)


def test_converted_policies_pass_lint(tmp_path: Path) -> None:
    """What convert writes is what the cluster would admit: Kyverno's CRD schema and kyrec's own checks."""
    src = tmp_path / "src"
    src.mkdir()
    for i, case in enumerate(sorted(PATTERNS)):
        doc = _policy(PATTERNS[case])
        doc["metadata"]["name"] = f"p{i}"
        (src / f"p{i}.yaml").write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    linted = CliRunner().invoke(cli, ["lint", "-p", str(out)])
    assert linted.exit_code == 0, linted.output
    assert f"{len(PATTERNS)} policy document(s) checked: 0 error(s)" in linted.output


def test_written_policies_have_no_yaml_aliases(tmp_path: Path) -> None:
    """Two resource rules share one operations list: written out in full, not as `&id001`/`*id001`."""
    doc = _policy(PATTERNS["equality anchor"])
    doc["spec"]["rules"][0]["match"] = {"any": [{"resources": {"kinds": ["Pod", "Service"]}}]}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output + result.stderr
    text = (tmp_path / "out" / "p.yaml").read_text()
    rules = yaml.safe_load(text)["spec"]["matchConstraints"]["resourceRules"]
    assert len(rules) == 2 and "&id" not in text and "*id" not in text


def test_verify_on_a_captured_state_leaves_its_policies_alone(tmp_path: Path) -> None:
    """A captured state is a List holding the cluster's own policies beside its objects: --verify evaluates
    the given policies on the objects, and neither varies the state's policies nor loads them as policies
    (it did: exit 3, "ValidatingPolicy 'limit-memory-v1': spec.validationActions[0]: Unsupported value")."""
    original = _policy(PATTERNS["wildcards and negated values"])
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(original))
    items = [*PODS,
             {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "other"},
              "spec": {"validationActions": ["Deny"], "validations": [{"expression": "true"}]}},
             {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
              "metadata": {"name": "b"}, "spec": {"policyName": "x", "validationActions": ["Deny"]}}]
    (tmp_path / "state.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "--verify",
                                      "--state", str(tmp_path / "state.yaml")])
    assert result.exit_code == 0, result.output
    assert "other" not in result.output
