"""Kyverno's controllers as ground truth, live (tests/realapi/kyverno_truth.py): each scenario on a fresh real API
server with Kyverno's background and reports controllers running out of cluster. Needs Kyverno's binaries in
KYVERNO_BIN_DIR and skips visibly without them (CI has no Kyverno: there the recorded scenarios are replayed
offline by tests/differential/test_truth_replay.py instead, so the skip is not a failure under CI=true either)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realapi import kyverno_truth


@pytest.mark.parametrize("name", list(kyverno_truth.SCENARIOS))
def test_kyverno_settles_where_kyrec_says_and_keeps_what_kyrec_fixes(name: str, tmp_path: Path) -> None:
    try:
        kyverno_truth.bin_dir()
    except kyverno_truth.Unavailable as exc:
        pytest.skip(f"Kyverno's controllers not available: {exc}")
    try:
        kyverno_truth.run_scenario(name, record=False, workdir=tmp_path, log=lambda _: None)
    except kyverno_truth.Unavailable as exc:
        pytest.skip(str(exc))
