"""Golden cases for `kyrec eval` downstreams: testdata/generating/<case>/ (policies, resources, state) and
the exact `downstreams` of the EvalResult document in case.yaml. KYREC_UPDATE_GOLDEN=1 rewrites them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASES = Path(__file__).resolve().parents[2] / "testdata" / "generating"
UPDATE = os.environ.get("KYREC_UPDATE_GOLDEN") == "1"


def _cases() -> list[Path]:
    return sorted(p.parent for p in CASES.glob("*/case.yaml"))


def run_eval(case: Path, *extra: str) -> tuple[dict[str, Any], Any]:
    spec = yaml.safe_load((case / "case.yaml").read_text())
    args = ["eval", "--now", "2026-09-01T12:00:00Z"]
    for flag, key in (("-p", "policies"), ("-r", "resources"), ("--state", "state")):
        for name in spec.get(key) or []:
            args += [flag, str(case / name)]
    return spec, CliRunner().invoke(cli, [*args, *extra], catch_exceptions=False)


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_eval_downstreams(case: Path) -> None:
    spec, result = run_eval(case, "-o", "json")
    doc = json.loads(result.stdout)
    if UPDATE:
        spec["downstreams"] = doc["downstreams"]
        (case / "case.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=110))
        return
    assert not doc["errors"]
    assert doc["downstreams"] == spec["downstreams"]


def test_table_lists_downstreams() -> None:
    _, result = run_eval(CASES / "namespaced-template")
    assert "Generated downstreams:" in result.stdout
    assert "shop/service-monitor  Deployment shop/cart  Service shop/cart-metrics" in result.stdout


def test_yaml_prints_the_objects_masked() -> None:
    _, result = run_eval(CASES / "secret-clone-masked", "-o", "yaml")
    doc = yaml.safe_load(result.stdout)
    (item,) = doc["downstreams"]
    assert item["object"]["data"] == {".dockerconfigjson": "***"}
    assert "eyJhdXRocyI6e319" not in result.stdout and "dG9wLXNlY3JldC10b2tlbg" not in result.stdout
