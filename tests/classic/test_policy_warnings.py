"""Kyverno's warnings for classic policies it accepts (kubectl_kyrec/classic/policy_warnings.py; kk:
pkg/validation/policy/validate.go Validate, api/kyverno/v1 GeneratePattern.Validate): each one with Kyverno's
text and its field, the near miss that gets none, and every command that prints them (`warning:` on stderr,
the exit code unchanged; `lint --strict` exits 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.classic.policy_warnings import (
    AUTOGEN_EXCLUSION,
    JSON_PATCH_ON_POD,
    LOWERCASE_ACTION,
    SCALE,
    STATUS,
    policy_warnings,
)
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify

MATCH = {"any": [{"resources": {"kinds": ["Pod"]}}]}
PATTERN = {"message": "m", "pattern": {"metadata": {"labels": {"a": "?*"}}}}


def _policy(rules: list[dict[str, Any]], spec: dict[str, Any] | None = None,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": meta,
            "spec": {**(spec or {}), "rules": [{"name": f"r{i}", "match": MATCH, **r} for i, r in enumerate(rules)]}}


def _warnings(doc: dict[str, Any]) -> list[tuple[str | None, str]]:
    policy = classify(documents_from_text(json.dumps(doc), "p.json")).classic[0]
    return [(w.field, w.message.removeprefix('ClusterPolicy "p": ')) for w in policy_warnings(policy)]


def _deny(operator: str) -> dict[str, Any]:
    return {"validate": {"message": "m", "deny": {"conditions": {"all": [
        {"key": "{{ request.object.metadata.name }}", "operator": operator, "value": ["a"]}]}}}}


# (id, policy, the warnings Kyverno gives: (field, text))
WARNED = [
    ("lowercase-action", _policy([{"validate": PATTERN}], {"validationFailureAction": "enforce"}),
     [("spec.validationFailureAction", LOWERCASE_ACTION)]),
    ("lowercase-override", _policy([{"validate": PATTERN}], {"validationFailureAction": "Audit",
                                                            "validationFailureActionOverrides": [
                                                                {"action": "audit", "namespaces": ["a"]}]}),
     [("spec.validationFailureAction", LOWERCASE_ACTION)]),
    ("json-patch-on-pod", _policy([{"match": {"resources": {"kinds": ["Pod"]}},
                                    "mutate": {"patchesJson6902": "- op: add\n  path: /metadata/labels/a\n"
                                                                  "  value: b\n"}}]),
     [("spec.rules[0].mutate.patchesJson6902", JSON_PATCH_ON_POD)]),
    ("autogen-exclusion", _policy([{"validate": PATTERN}],
                                  annotations={"pod-policies.kyverno.io/autogen-controllers": "Deployment,Job"}),
     [("metadata.annotations[pod-policies.kyverno.io/autogen-controllers]", AUTOGEN_EXCLUSION)]),
    ("replicas-without-scale", _policy([{"validate": {"message": "m", "pattern": {"spec": {"replicas": "<5"}}}}]),
     [("spec.rules[0].validate", SCALE)]),
    ("status-without-subresource", _policy([{"validate": {"message": "m",
                                                          "pattern": {"status": {"phase": "Running"}}}}]),
     [("spec.rules[0].validate", STATUS)]),
    ("deprecated-operator", _policy([_deny("In"), _deny("NotIn")]),
     [("spec.rules[0].validate", 'Operator In has been deprecated and will be removed soon. Use these instead: '
                                 '["AllIn" "AnyIn"]'),
      ("spec.rules[1].validate", 'Operator NotIn has been deprecated and will be removed soon. Use these instead: '
                                 '["AllNotIn" "AnyNotIn"]')]),
    # mutateDigest off: Kyverno refuses it on for an Audit policy (ImageVerification.Validate)
    ("predicate-type", _policy([{"verifyImages": [{"imageReferences": ["ghcr.io/*"], "mutateDigest": False,
                                                   "attestations": [{"predicateType": "https://slsa.dev/provenance/v0.2",
                                                                     "conditions": []}]}]}]),
     [("spec.rules[0].verifyImages[0].attestations[0].predicateType",
       "predicateType has been deprecated use 'type: https://slsa.dev/provenance/v0.2' instead of "
       "'predicateType: https://slsa.dev/provenance/v0.2'")]),
    ("clone-variables", _policy([{"generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                                               "namespace": "{{ request.object.metadata.name }}",
                                               "clone": {"namespace": "{{ request.object.metadata.namespace }}",
                                                         "name": "src"}}}]),
     [("spec.rules[0].generate", "variables in spec.rules[0].generate.clone/cloneList would lead to incorrect "
                                 "synchronization behavior")]),
    # one text once, as the API server passes warnings
    ("repeated-once", _policy([_deny("In"), _deny("In")]),
     [("spec.rules[0].validate", 'Operator In has been deprecated and will be removed soon. Use these instead: '
                                 '["AllIn" "AnyIn"]')]),
]

NOT_WARNED = [
    ("capital-action", _policy([{"validate": PATTERN}], {"validationFailureAction": "Enforce"})),
    ("json-patch-on-deployment", _policy([{"match": {"resources": {"kinds": ["Deployment"]}},
                                           "mutate": {"patchesJson6902": "- op: add\n  path: /metadata/labels/a\n"
                                                                         "  value: b\n"}}])),
    ("autogen-every-controller", _policy([{"validate": PATTERN}], annotations={
        "pod-policies.kyverno.io/autogen-controllers": "DaemonSet,Deployment,Job,StatefulSet,CronJob"})),
    ("autogen-none", _policy([{"validate": PATTERN}], annotations={"pod-policies.kyverno.io/autogen-controllers":
                                                                   "none"})),
    ("replicas-with-scale", _policy([{"match": {"any": [{"resources": {"kinds": ["Deployment/scale"]}}]},
                                      "validate": {"message": "m", "pattern": {"spec": {"replicas": "<5"}}}}])),
    # deny conditions are left out of the subresource search
    ("status-in-deny-conditions", _policy([{"validate": {"message": "m", "deny": {"conditions": {"any": [
        {"key": "{{ request.object.status.phase }}", "operator": "Equals", "value": "x"}]}}}}])),
    ("current-operators", _policy([_deny("AnyIn"), _deny("AllNotIn")])),
    ("clone-without-variables", _policy([{"generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                                                       "namespace": "{{ request.object.metadata.name }}",
                                                       "clone": {"namespace": "default", "name": "src"}}}])),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_each_warning_with_kyvernos_text(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert _warnings(doc) == expected


@pytest.mark.parametrize("doc", [c[1] for c in NOT_WARNED], ids=[c[0] for c in NOT_WARNED])
def test_no_warning_for_the_near_miss(doc: dict[str, Any]) -> None:
    assert _warnings(doc) == []


POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, labels: {a: b}}\n"
       "spec: {containers: [{name: c, image: nginx}]}\n")
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n"


def _files(tmp_path: Path) -> tuple[Path, int]:
    policy = tmp_path / "p.yaml"
    policy.write_text(yaml.safe_dump(_policy([{"validate": PATTERN}], {"validationFailureAction": "enforce"}),
                                     sort_keys=False))
    line = next(i for i, t in enumerate(policy.read_text().splitlines(), 1) if "validationFailureAction" in t)
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "state.yaml").write_text(POD + "---\n" + NAMESPACE)
    return policy, line


@pytest.mark.parametrize("command", ["eval", "diff", "explain"])
def test_commands_print_the_warning_and_keep_their_exit_code(tmp_path: Path, command: str) -> None:
    policy, line = _files(tmp_path)
    args = {"eval": ["eval", "-p", str(policy), "-r", str(tmp_path / "pod.yaml")],
            "diff": ["diff", "--state", str(tmp_path / "state.yaml"), "-p", str(policy)],
            "explain": ["explain", "-p", str(policy), "-r", str(tmp_path / "pod.yaml"), "-n", "default", "Pod/p"]}
    result = CliRunner().invoke(cli, args[command])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert f'warning: {policy}:{line}: ClusterPolicy "p": {LOWERCASE_ACTION}' in result.stderr.splitlines()
    assert LOWERCASE_ACTION not in result.stdout


def test_lint_lists_the_warning_and_strict_fails_on_it(tmp_path: Path) -> None:
    policy, line = _files(tmp_path)
    result = CliRunner().invoke(cli, ["lint", "-p", str(policy)])
    assert result.exit_code == 0
    assert f'{policy}:{line}: warning: ClusterPolicy "p": {LOWERCASE_ACTION}' in result.stdout
    assert CliRunner().invoke(cli, ["lint", "--strict", "-p", str(policy)]).exit_code == 1


def test_a_refused_policy_gets_no_warning(tmp_path: Path) -> None:
    """Kyverno's refusal is what the user must act on; the policy is not used."""
    doc = _policy([{"validate": {"message": "{{ nothere }}", "pattern": {"a": "b"}}}],
                  {"validationFailureAction": "enforce"})
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(cli, ["lint", "-p", str(tmp_path / "p.yaml"), "-o", "json"])
    assert result.exit_code == 3
    problems = json.loads(result.stdout)["problems"]
    assert [p["severity"] for p in problems] == ["error"]
