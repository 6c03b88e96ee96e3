"""`kyrec test` over several suites: a policy Kyverno's validation refuses fails its own suite, at the line of
the offending field, and the other suites still run (kk: commands/test/test.go skips an invalid policy,
whose rows then fail)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

POLICY = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: {name}
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "pod {{{{ request.object.metadata.name }}}} needs a team"
      deny:
        conditions:
          any:
          - key: "{key}"
            operator: Equals
            value: ""
"""
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, labels: {team: a}}\n" \
      "spec: {containers: [{name: c, image: i}]}\n"


def _suite(root: Path, name: str, key: str) -> None:
    (root / name).mkdir()
    (root / name / "policy.yaml").write_text(POLICY.format(name=name, key=key))
    (root / name / "pod.yaml").write_text(POD)
    (root / name / "kyverno-test.yaml").write_text(
        f"apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: {name}\npolicies: [policy.yaml]\n"
        f"resources: [pod.yaml]\nresults:\n- policy: {name}\n  rule: r\n  resources: [p]\n  kind: Pod\n"
        "  result: pass\n")


def test_the_refused_policy_fails_its_suite_and_the_others_run(tmp_path: Path) -> None:
    _suite(tmp_path, "good", "{{ request.object.metadata.labels.team || '' }}")
    _suite(tmp_path, "bad", "{{ request.object.metadata.labels.[?? }}")
    result = CliRunner().invoke(cli, ["test", str(tmp_path), "-o", "json"])
    assert result.exit_code == 3
    rows = {r["policy"]: (r["status"], r["reason"]) for r in json.loads(result.stdout)["rows"]}
    assert rows == {"good": ("pass", "ok"), "bad": ("fail", "load-error")}
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f'error: {tmp_path / "bad" / "policy.yaml"}:17: ClusterPolicy "bad": '
                      "spec.rules[0].validate.deny.conditions.any[0].key: policy contains invalid variables: "
                      "variable substitution failed for rule r: failed to resolve request.object.metadata.labels.[?? "
                      "at path /validate/deny/conditions/any/0/key: invalid JMESPath query "
                      "request.object.metadata.labels.[??: SyntaxError: Bad jmespath expression: Unknown token ?"]
