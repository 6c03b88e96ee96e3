"""Request data as Kyverno's CLI gives it (issue 8): `--values` takes a Kyverno CLI UserInfo file too, and
`test` never suggests a flag it does not have."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
GIVEN = ROOT / "testdata" / "diff" / "needs-request-given"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_values_accepts_a_kyverno_cli_userinfo_file(tmp_path: Path) -> None:
    userinfo = tmp_path / "user.yaml"
    userinfo.write_text("apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\nclusterRoles: [admin]\n"
                        "userInfo:\n  username: alice\n  groups: [dev]\n")
    code, out, err = run("diff", "-p", str(GIVEN / "policy.yaml"), "--state", str(GIVEN / "state.yaml"),
                         "--values", str(userinfo), "-o", "json")
    assert code == 0, err
    assert [(c["class"], c["object"]["name"]) for c in json.loads(out)["changes"]] == [("in-sync", "creator-admin")]


def test_values_refuses_other_kinds_naming_both_it_takes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = run("diff", "-p", str(GIVEN / "policy.yaml"), "--state", str(GIVEN / "state.yaml"),
                       "--values", str(bad))
    assert code == 3 and "Values or UserInfo" in err


def test_test_command_never_suggests_crd(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {name: p}\nspec:\n"
        "  matchConstraints:\n    resourceRules:\n    - {apiGroups: ['*'], apiVersions: ['*'], operations: [CREATE],"
        " resources: ['*']}\n  validations:\n  - expression: 'true'\n")
    (tmp_path / "resource.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    (tmp_path / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\npolicies: [policy.yaml]\n"
        "resources: [resource.yaml]\nresults:\n- {policy: p, rule: p, resources: [w], kind: Widget, result: pass,"
        " isValidatingPolicy: true}\n")
    _, _, err = run("test", str(tmp_path))
    assert "unknown kind example.com/v1/Widget" in err
    assert "--crd" not in err
    assert "CustomResourceDefinition to the test's resources" in err
