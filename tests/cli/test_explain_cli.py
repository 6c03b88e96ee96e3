"""`explain` reads its inputs as `eval` does: a state that holds policies (a capture) needs no `-p`, and one
that holds none is the usage error `eval` gives."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode

EXAMPLES = Path(__file__).resolve().parents[2] / "testdata" / "examples"


def test_a_capture_is_its_own_policy_set() -> None:
    result = CliRunner().invoke(cli, ["explain", "--state", str(EXAMPLES / "cluster.yaml"), "pod/batch", "-n",
                                      "shop", "--policy-name", "require-owner-label"])
    assert result.exit_code == ExitCode.CLEAN, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "ValidatingPolicy require-owner-label  x  Pod shop/batch"
    assert "│  └─ result: fail  (pod batch needs an owner label)" in lines


def test_a_state_without_policies_needs_p(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    state.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: []}\n")
    result = CliRunner().invoke(cli, ["explain", "--state", str(state)])
    assert result.exit_code == ExitCode.USAGE
    assert "explain needs policies: -p PATH (the state holds no policies)" in result.stderr
