"""Tests over ../shared cannot pass by vanishing (tests/shared_inputs.py): run pytest on a few of them with
the shared directory pointed at nothing, with and without CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["tests/expect/test_resource_hash.py", "tests/conformance/test_admission_scenarios.py",
           "tests/cli/test_diff_golden.py"]


def _pytest(module: str, tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["KYREC_SHARED"] = str(tmp_path / "no-shared-here")
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", module], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module", MODULES)
def test_under_ci_a_missing_shared_directory_fails(module: str, tmp_path: Path) -> None:
    proc = _pytest(module, tmp_path, ci=True)
    assert proc.returncode != 0, proc.stdout
    assert "CI=true and" in proc.stdout and "is missing" in proc.stdout


@pytest.mark.parametrize("module", MODULES)
def test_elsewhere_each_group_is_one_visible_skip(module: str, tmp_path: Path) -> None:
    proc = _pytest(module, tmp_path, ci=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not run: ../shared inputs missing" in proc.stdout
    summary = proc.stdout.split("not run: ../shared inputs missing")[1]
    assert str(tmp_path / "no-shared-here") in summary
    # one skip per group, never one per would-be case
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED [")]
    assert skips and all(line.startswith("SKIPPED [1]") for line in skips), skips


def test_a_present_corpus_that_yields_nothing_fails(tmp_path: Path) -> None:
    (tmp_path / "no-shared-here" / "vectors").mkdir(parents=True)
    (tmp_path / "no-shared-here" / "vectors" / "resource-hash.json").write_text("[]")
    proc = _pytest("tests/expect/test_resource_hash.py", tmp_path, ci=False)
    assert proc.returncode != 0
    assert "present but yields no cases" in proc.stdout
