"""Golden cases for `kubectl kyrec test`: testdata/testrun/<case>/ holds a Kyverno test suite and
`expected.yaml`, the rows, summary, exit code and errors of each mode.

Rewrite the expectations on purpose with `KYREC_UPDATE_GOLDEN=1 pytest tests/testrun`, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "testdata" / "testrun"
UPDATE = os.environ.get("KYREC_UPDATE_GOLDEN") == "1"
MODES = {"strict": ["--strict"], "kyverno": []}


def case_names() -> list[str]:
    return sorted(p.parent.name for p in CASES.glob("*/expected.yaml"))


def row_line(row: dict[str, Any]) -> str:
    text = (f"{row['status']} {row['reason']} {row['policy']} {row['kind']} {row['resource']} "
            f"{row['expected']}->{row['actual'] or '-'}")
    return text + " (diff)" if row.get("diff") else text


def relative(location: dict[str, Any] | None, case: Path) -> str:
    if location is None:
        return ""
    path = os.path.relpath(location["file"], case)
    return f"{path}:{location['line']}" if location["line"] else path


def observe(case: Path, mode: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["test", str(case), "-o", "json", *MODES[mode]])
    doc = json.loads(result.stdout)
    assert doc["apiVersion"] == "kyrec/v1" and doc["kind"] == "TestResult" and doc["mode"] == mode
    observed = {
        "exit": result.exit_code,
        "summary": doc["summary"],
        "rows": [row_line(r) for r in doc["rows"]],
        "errors": [f"{relative(e['location'], case)}: {e['message']}" for e in doc["errors"]],
    }
    if doc["warnings"]:     # cases without warnings keep the expectations they had before warnings existed
        observed["warnings"] = [f"{relative(w['location'], case)}: {w['reason']} {w['policy']} {w['kind']} "
                                f"{w['resource']}: {w['message']}" for w in doc["warnings"]]
    return observed


@pytest.mark.parametrize("name", case_names())
def test_golden(name: str) -> None:
    case = CASES / name
    expected_path = case / "expected.yaml"
    observed = {mode: observe(case, mode) for mode in MODES}
    if UPDATE:
        expected_path.write_text(yaml.safe_dump(observed, sort_keys=False, width=200))
    expected = yaml.safe_load(expected_path.read_text())
    assert observed == expected


def test_every_case_has_expectations() -> None:
    dirs = sorted(p.name for p in CASES.iterdir() if p.is_dir())
    assert dirs == case_names()
