"""Reinvocation checked against the real kube-apiserver (issue 37): a MutatingAdmissionPolicy whose mutation is
not idempotent (it counts) is applied twice when it says reinvocationPolicy IfNeeded, even alone: once it
patched the object, the plugin marks every IfNeeded invocation for the reinvocation round
(policy/mutating/dispatcher.go, `Dirty`), and once when it says Never. kyrec's admission chain must admit the
same object (docs/admission.md, "Reinvocation")."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import RealServer, plural_path

GROUP = "admissionregistration.k8s.io/v1"
COUNT = ('Object{metadata: Object.metadata{labels: {"count": '
         'string(int(object.metadata.?labels["count"].orValue("0")) + 1)}}}')


def _policy(name: str, selector: str, reinvocation: str) -> list[dict[str, Any]]:
    match = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["configmaps"]}],
             "objectSelector": {"matchLabels": {selector: "yes"}}}
    return [{"apiVersion": GROUP, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name},
             "spec": {"matchConstraints": match, "failurePolicy": "Fail", "reinvocationPolicy": reinvocation,
                      "mutations": [{"patchType": "ApplyConfiguration",
                                     "applyConfiguration": {"expression": COUNT}}]}},
            {"apiVersion": GROUP, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name},
             "spec": {"policyName": name}}]


def _server_count(realapi: RealServer, cm: dict[str, Any]) -> str:
    """The `count` label of the object the server would store (dryRun), once the policy is active (the
    plugin's informers take a moment to see a new policy)."""
    path = plural_path("v1", "configmaps", cm["metadata"]["namespace"])
    deadline = time.monotonic() + 60
    while True:
        answer = realapi.kube.request("POST", path, cm, query={"dryRun": "All"})
        assert answer.status == 201, answer
        count = (answer.json()["metadata"].get("labels") or {}).get("count")
        if count is not None or time.monotonic() > deadline:
            assert count is not None, "the policy never applied"
            return str(count)
        time.sleep(0.5)


def _kyrec_count(tmp_path: Path, docs: list[dict[str, Any]], cm: dict[str, Any], expected: str) -> str:
    check = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "count"},
             "spec": {"validationActions": ["Audit"], "matchConstraints": {"resourceRules": [{
                 "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
                      "validations": [{"expression": f"object.metadata.labels['count'] == '{expected}'",
                                       "messageExpression": "'count is ' + object.metadata.labels['count']"}]}}
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([*docs, check]))
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(cm))
    run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policies.yaml"), "-r", str(tmp_path / "cm.yaml"),
                                   "-o", "json"])
    assert run.exit_code in (0, 1), run.output
    [result] = [r for r in json.loads(run.output)["results"] if r["policy"] == "count"]
    return f"{result['result']}: {result.get('message', '')}"


@pytest.mark.parametrize(("reinvocation", "expected"), [("IfNeeded", "2"), ("Never", "1")])
def test_kyrec_admits_what_the_api_server_stores(realapi: RealServer, tmp_path: Path, reinvocation: str,
                                                 expected: str) -> None:
    name, selector = realapi.unique("reinv"), realapi.unique("reinv-sel")
    namespace = realapi.namespace("reinv")
    docs = _policy(name, selector, reinvocation)
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "cm", "namespace": namespace, "labels": {selector: "yes"}}}
    realapi.seed(*docs)
    try:
        assert _server_count(realapi, cm) == expected
        assert _kyrec_count(tmp_path, docs, cm, expected).startswith("pass")
    finally:
        realapi.kube.delete(plural_path(GROUP, "mutatingadmissionpolicybindings", name=name))
        realapi.kube.delete(plural_path(GROUP, "mutatingadmissionpolicies", name=name))
