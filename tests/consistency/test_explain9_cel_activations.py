"""`explain` from the engine's own run (issue 35), a ClusterPolicy's `validate.cel` rule with params: the tree
shows each param's activation as the engine made it for the rule (evaluate/classic/engine.py `_cel` hands the
same activations to evaluate_cel_rule and to explain's cel_nodes), so explain reads the params no more often
than eval does, and each `params[i]` node holds that param's values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.evaluate.classic import validate_cel

POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: cel-params
spec:
  validationFailureAction: Audit
  rules:
  - name: replicas
    match:
      any:
      - resources:
          kinds: [Deployment]
    validate:
      cel:
        paramKind: {apiVersion: v1, kind: ConfigMap}
        paramRef:
          selector: {matchLabels: {kind: limits}}
        expressions:
        - expression: "object.spec.replicas <= int(params.data.max)"
          messageExpression: "'max ' + params.data.max"
  - name: missing
    match:
      any:
      - resources:
          kinds: [Deployment]
    validate:
      cel:
        paramKind: {apiVersion: v1, kind: ConfigMap}
        paramRef: {name: nope}
        expressions:
        - expression: "true"
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep, namespace: default}
spec:
  replicas: 5
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: nginx}]}}
"""
STATE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: low, namespace: default, labels: {kind: limits}}
data: {max: "3"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: high, namespace: default, labels: {kind: limits}}
data: {max: "10"}
"""


def _run(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], int]:
    """The command's JSON document, and how many times the rules' params were read (validate_cel._params)."""
    for name, text in (("policy.yaml", POLICY), ("deployment.yaml", DEPLOYMENT), ("state.yaml", STATE)):
        (tmp_path / name).write_text(text)
    calls = []
    params = validate_cel._params
    monkeypatch.setattr(validate_cel, "_params", lambda *a: calls.append(a) or params(*a))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, [command, "-p", "policy.yaml", "-r", "deployment.yaml", "--state", "state.yaml",
                                      "--now", "2026-12-04T00:00:00Z", "-o", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return json.loads(result.stdout), len(calls)


def _node(node: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in node.get("children", []) if c["name"] == name)


def test_explain_reads_each_rules_params_once_as_eval_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, eval_reads = _run("eval", tmp_path, monkeypatch)
    document, explain_reads = _run("explain", tmp_path, monkeypatch)
    assert eval_reads == 2          # one read per cel rule evaluated on the Deployment
    assert explain_reads == eval_reads
    [tree] = [e for e in document["explanations"] if e["policyKind"] == "ClusterPolicy"]
    assert [(r["rule"], r["result"]) for r in tree["results"]] == [("replicas", "fail"), ("missing", "error")]
    cel = _node(_node(_node(tree["tree"], "rule replicas"), "validate"), "cel")
    # each param's activation: the low limit (3) fails the Deployment's 5 replicas, the high one (10) does not
    first, second = (_node(_node(cel, f"params[{i}]"), "validations") for i in (0, 1))
    assert first["outcome"] == "[0] not true" and first["children"][0]["outcome"] == "false"
    assert first["children"][0]["detail"] == "message: 'max ' + params.data.max"
    assert second["outcome"] == "all true"
    missing = _node(_node(_node(tree["tree"], "rule missing"), "validate"), "cel")
    assert missing["children"] == [{"name": "params", "outcome": "error", "detail": 'configmaps "nope" not found'}]
