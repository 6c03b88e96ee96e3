"""A policy given twice (the same file named twice, or a copy in another file or among -r's manifests) is
evaluated once, with a notice at the repeat: a cluster holds one object of a kind and name, and counting it
twice doubled every result and every report entry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "testdata" / "examples"


def _summary(*args: str) -> tuple[dict[str, int], str]:
    result = CliRunner().invoke(cli, ["eval", *args, "-o", "json"])
    return json.loads(result.stdout)["summary"], result.stderr


def test_a_policy_given_twice_counts_once(tmp_path: Path) -> None:
    policies, resources = str(EXAMPLES / "policies"), str(EXAMPLES / "resources")
    once, quiet = _summary("-p", policies, "-r", resources)
    assert "duplicate" not in quiet
    copy = tmp_path / "copy.yaml"
    shutil.copy(EXAMPLES / "policies" / "limit-memory.yaml", copy)
    for extra in (["-p", str(EXAMPLES / "policies" / "limit-memory.yaml")], ["-p", str(copy)],
                  ["-r", str(copy)]):
        twice, said = _summary("-p", policies, *extra, "-r", resources)
        assert twice == once
        assert said.count("duplicate policy document ValidatingPolicy limit-memory ignored") == 1, said
