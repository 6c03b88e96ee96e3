"""A ClusterPolicy Kyverno refuses (user variables in a background policy, kk pkg/validation/policy/background.go)
never reaches the cluster, so its generate rules create nothing: eval lists no downstream for it and diff
expects none, each reports the refusal once (exit 3), whether the report evaluation runs beside it or not."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

POLICY = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: gen-user
spec:
  background: {background}
  rules:
  - name: cm
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: by-{{{{ request.userInfo.username }}}}
      namespace: "{{{{ request.object.metadata.name }}}}"
      synchronize: true
      data:
        data: {{a: b}}
  - name: labelled
    match:
      any:
      - resources:
          kinds: [Namespace]
    validate:
      pattern:
        metadata:
          labels:
            team: "?*"
"""
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: blue, uid: u1}\n"
REFUSED = "only select variables are allowed in background mode"


def _files(tmp_path: Path, background: str) -> tuple[str, str]:
    (tmp_path / "pol.yaml").write_text(POLICY.format(background=background))
    (tmp_path / "ns.yaml").write_text(NAMESPACE)
    return str(tmp_path / "pol.yaml"), str(tmp_path / "ns.yaml")


@pytest.mark.parametrize("args", [
    ("eval", "-o", "json"),
    ("diff", "-o", "json"),
    ("diff", "--reports", "-o", "json"),
], ids=["eval", "diff", "diff-reports"])
def test_a_refused_policy_generates_nothing_and_is_reported_once(tmp_path: Path, args: tuple[str, ...]) -> None:
    policy, namespace = _files(tmp_path, "true")
    inputs = ["-r", namespace] if args[0] == "eval" else ["--state", namespace]
    result = CliRunner().invoke(cli, [*args, "-p", policy, *inputs, "--now", "2026-12-01T00:00:00Z"])
    assert result.exit_code == 3, result.output
    assert result.stderr.count(REFUSED) == 1, result.stderr
    assert "Traceback" not in result.output
    if args[0] == "eval":
        assert '"downstreams": []' in result.stdout and '"results": []' in result.stdout
    else:
        assert '"domain": "downstream"' not in result.stdout


def test_the_same_policy_for_admission_only_generates(tmp_path: Path) -> None:
    """background: false is allowed to read the user: the rule runs (undetermined without --values)."""
    policy, namespace = _files(tmp_path, "false")
    result = CliRunner().invoke(cli, ["eval", "-p", policy, "-r", namespace, "-o", "json"])
    assert REFUSED not in result.stderr
    assert '"result": "undetermined"' in result.stdout
