"""convert: a kyverno.io/v2 PolicyException -> a policies.kyverno.io/v1 PolicyException naming the converted
policies, and `--verify` with each exception beside its policy on both sides (convert/exception.py,
run/convert.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.exception import convert_exception
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify


def _rule(name: str, pattern: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"message": name, "pattern": pattern}}


POLICY = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "host-ns"},
          "spec": {"validationFailureAction": "Enforce", "rules": [
              _rule("host-ns", {"spec": {"=(hostNetwork)": False, "=(hostPID)": False}}),
              _rule("labels", {"metadata": {"labels": {"team": "?*"}}})]}}


def _exception(rule_names: list[str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
            "metadata": {"name": "tools", "namespace": "delta"},
            "spec": {"exceptions": [{"policyName": "host-ns", "ruleNames": rule_names}],
                     "match": {"any": [{"resources": {"kinds": ["Pod", "Deployment", "CronJob"],
                                                      "namespaces": ["delta"], "names": ["tool-*"]}}]},
                     **spec}}


def _pod_spec(**fields: Any) -> dict[str, Any]:
    return {**fields, "containers": [{"name": "c", "image": "nginx"}]}


RESOURCES = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tool-a", "namespace": "delta"},
     "spec": _pod_spec(hostNetwork=True)},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "namespace": "delta", "labels": {"team": "x"}},
     "spec": _pod_spec(hostNetwork=True)},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tool-d", "namespace": "delta"},
     "spec": {"selector": {"matchLabels": {"a": "b"}},
              "template": {"metadata": {"labels": {"a": "b"}}, "spec": _pod_spec(hostPID=True)}}},
    {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tool-cj", "namespace": "delta"},
     "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
         "spec": _pod_spec(hostPID=True, restartPolicy="Never")}}}}},
]


def _converted(exception: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    conv = convert_policy(POLICY)
    assert conv.refusals == []
    docs, keys = convert_exception(exception, {"host-ns": conv})
    assert keys == ["host-ns"]
    return conv, docs


def test_exception_naming_every_rule_and_variant_exempts_the_same_subjects() -> None:
    exception = _exception(["host-ns", "labels", "autogen-*"])
    conv, docs = _converted(exception)
    [doc] = docs
    assert doc["apiVersion"] == "policies.kyverno.io/v1" and doc["metadata"] == {"name": "tools", "namespace": "delta"}
    assert doc["spec"]["policyRefs"] == [{"name": "host-ns", "kind": "ValidatingPolicy"}]
    assert [c["name"] for c in doc["spec"]["matchConditions"]] == ["match"]
    diffs, count = verify(POLICY, conv.documents, RESOURCES, extra=([exception], docs))
    assert diffs == [] and count > 20
    # not vacuous: without its conversion, the classic exception's exemptions show as differences
    missing, _ = verify(POLICY, conv.documents, RESOURCES, extra=([exception], []))
    shown = {(d.subject, d.original, d.converted) for d in missing if d.variant == "as given"}
    assert shown == {("Pod/delta/tool-a", "pass", "fail"), ("Deployment/delta/tool-d", "pass", "fail"),
                     ("CronJob/delta/tool-cj", "pass", "fail")}


def test_controller_variants_not_named_are_left_out_of_the_cel_exception() -> None:
    """The classic exception names the Pod rules only: Deployments and CronJobs are still checked by the
    autogen rules. A CEL exception exempts the policy's autogen variants too, so those kinds are left out."""
    exception = _exception(["host-ns", "labels"])
    conv, docs = _converted(exception)
    conditions = docs[0]["spec"]["matchConditions"]
    assert conditions[1]["name"] == "autogen-rules-not-named"
    assert "'Deployment'" in conditions[1]["expression"] and "'CronJob'" in conditions[1]["expression"]
    diffs, _ = verify(POLICY, conv.documents, RESOURCES, extra=([exception], docs))
    assert diffs == []
    unrestricted = copy.deepcopy(docs)
    unrestricted[0]["spec"]["matchConditions"] = conditions[:1]
    diffs, _ = verify(POLICY, conv.documents, RESOURCES, extra=([exception], unrestricted))
    assert {(d.subject, d.original, d.converted) for d in diffs if d.variant == "as given"} == {
        ("Deployment/delta/tool-d", "fail", "pass"), ("CronJob/delta/tool-cj", "fail", "pass")}


def test_refused_by_field() -> None:
    conv = convert_policy(POLICY)

    def refusal(exception: dict[str, Any]) -> str:
        try:
            convert_exception(exception, {"host-ns": conv})
        except Exception as err:  # noqa: BLE001 - the refusal's text is what is asserted
            return str(err)
        return ""

    assert refusal(_exception(["host-ns"])).startswith(
        "spec.exceptions[0]: names rules ['host-ns'] of the converted policy 'host-ns', which also holds ['labels']")
    assert refusal(_exception(["*"], conditions={"all": []})).startswith("spec.conditions: ")
    assert refusal(_exception(["*"], podSecurity=[{"controlName": "Host Namespaces"}])).startswith("spec.podSecurity: ")
    subjects = _exception(["*"])
    subjects["spec"]["match"]["any"][0]["subjects"] = [{"kind": "User", "name": "u"}]
    assert refusal(subjects).startswith("spec.match.any[0].subjects: ")
    other = _exception(["*"])
    other["spec"]["exceptions"][0]["policyName"] = "elsewhere"
    assert refusal(other).startswith("spec.exceptions[0].policyName: policy 'elsewhere' is not among")


def test_cli_converts_an_exception_with_its_policy_and_refuses_one_without(tmp_path: Path) -> None:
    policies = tmp_path / "policies.yaml"
    policies.write_text(yaml.safe_dump_all([POLICY, _exception(["host-ns", "labels", "autogen-*"])]))
    resources = tmp_path / "resources.yaml"
    resources.write_text(yaml.safe_dump_all(RESOURCES))
    out = tmp_path / "out"
    run = CliRunner().invoke(cli, ["convert", "-p", str(policies), "-o", str(out), "--verify", "-r", str(resources)])
    assert run.exit_code == 0, run.output
    assert "PolicyException 'tools': converted exactly" in run.output
    assert "0 verdict difference(s)" in run.output
    assert yaml.safe_load((out / "tools.yaml").read_text())["kind"] == "PolicyException"
    alone = tmp_path / "alone.yaml"
    alone.write_text(yaml.safe_dump(_exception(["*"])))
    run = CliRunner().invoke(cli, ["convert", "-p", str(alone), "-o", str(tmp_path / "out2")])
    assert run.exit_code == 1
    assert "PolicyException 'tools' not converted: spec.exceptions[0].policyName: policy 'host-ns'" in run.output
