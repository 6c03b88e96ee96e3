"""ImageValidatingPolicy rows in `kyrec test`: a row whose answer needs a registry ends `undetermined` and is
no pass; what the test's context file answers (image data) and what comes before any registry (an
exception) are decided."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASE = Path(__file__).resolve().parents[2] / "testdata" / "testrun" / "image-validating"


def test_rows_needing_a_registry_are_no_pass_and_the_rest_are_decided() -> None:
    result = CliRunner().invoke(cli, ["test", str(CASE), "-o", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    rows = [(r["policy"], r["resource"], r["expected"], r["actual"], r["status"], r["reason"])
            for r in doc["rows"]]
    assert sorted(rows) == [
        ("non-root", "default/app", "pass", "pass", "pass", "ok"),
        ("non-root", "default/rooted", "fail", "fail", "pass", "ok"),
        ("signed", "default/app", "pass", "undetermined", "fail", "result-mismatch"),
        ("signed", "default/legacy", "skip", "skip", "pass", "ok"),
    ]
    [undetermined] = [r for r in doc["rows"] if r["actual"] == "undetermined"]
    assert undetermined["message"].startswith("needs-registry: validation 0 needs a registry: verifyImageSignatures(")
    assert doc["summary"]["notEvaluated"] == 0
