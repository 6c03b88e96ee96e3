"""convert -o DIR: two conversions of one name would share DIR/<name>.yaml; neither is written, each is
refused naming the other (exit 1), and a file the user already had there is left as it was (run/convert.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli


def _policy(kind: str, label: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": {"name": "same", **meta},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                "validate": {"message": "m", "pattern": {"metadata": {"labels": {label: "?*"}}}}}]}}


def test_two_policies_of_one_name_are_refused_and_nothing_is_overwritten(tmp_path: Path) -> None:
    policies = tmp_path / "policies.yaml"
    policies.write_text(yaml.safe_dump_all([_policy("ClusterPolicy", "a"), _policy("Policy", "b", namespace="dev"),
                                            {**_policy("ClusterPolicy", "c"), "metadata": {"name": "other"}}]))
    second = policies.read_text().splitlines().index("---") + 2      # the Policy's first line
    out = tmp_path / "out"
    out.mkdir()
    (out / "same.yaml").write_text("# the user's own file\n")
    run = CliRunner().invoke(cli, ["convert", "-p", str(policies), "-o", str(out)])
    assert run.exit_code == 1, run.output
    lines = [line for line in run.output.splitlines() if "not converted" in line]
    assert lines == [
        f"ClusterPolicy 'same' not converted: metadata.name: same.yaml would also hold Policy 'same' "
        f"({policies}:{second}); neither is written (one name, one output file)",
        f"Policy 'same' not converted: metadata.name: same.yaml would also hold ClusterPolicy 'same' ({policies}:1); "
        "neither is written (one name, one output file)"]
    assert (out / "same.yaml").read_text() == "# the user's own file\n"
    # the policy of another name is written as usual
    assert "ClusterPolicy 'other': converted" in run.output
    assert yaml.safe_load((out / "other.yaml").read_text())["kind"] == "ValidatingPolicy"
