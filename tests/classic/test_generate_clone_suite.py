"""`cloneSourceResource` in a test's results (kk: cmd/cli/kubectl-kyverno/commands/test/test.go,
processor/generate.go): testdata/classic/generate-clone-suite."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import pytest

from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import run_files

SUITE = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "generate-clone-suite"
NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)


def _rows(path: Path, mode: Mode) -> list[tuple[int, str, str, bool, str]]:
    runs, load_errors = run_files([str(path / "kyverno-test.yaml")], now=NOW, mode=mode)
    assert load_errors == [] and runs[0].errors == []
    return [(r.location.line if r.location else 0, r.resource, r.actual, r.passed, r.reason) for r in runs[0].rows]


@pytest.mark.parametrize("mode", list(Mode))
def test_clone_sources_come_from_each_rules_first_entry(mode: Mode) -> None:
    assert _rows(SUITE, mode) == [
        (9, "team-a", "pass", True, "ok"),                    # the Secret cloned from regcred-source.yaml
        (18, "team-b", "pass", True, "ok"),                   # still that source: the later file is not read
        (26, "team-a", "pass", False, "generated-mismatch"),  # regcred-wrong.yaml is not the clone
        (32, "team-a", "pass", True, "ok"),                   # cloneList: only the share=yes ConfigMap
        (39, "team-a", "pass", True, "ok"),                   # a source among `resources`, as a cluster has it
    ]


def test_without_clone_source_the_clone_fails(tmp_path: Path) -> None:
    copy = tmp_path / "suite"
    shutil.copytree(SUITE, copy)
    test = copy / "kyverno-test.yaml"
    test.write_text(test.read_text().replace("  cloneSourceResource: regcred-source.yaml\n", ""))
    rows = _rows(copy, Mode.STRICT)
    # the first pull-secret entry now gives no file, so the rule's source is missing for every trigger
    assert [(line, actual, reason) for line, _, actual, _, reason in rows[:3]] == [
        (9, "error", "generated-mismatch"), (17, "error", "generated-mismatch"),
        (25, "error", "generated-mismatch")]
    assert rows[3][3] and rows[4][3]


def test_a_missing_clone_source_file_is_the_rows_load_error(tmp_path: Path) -> None:
    copy = tmp_path / "suite"
    shutil.copytree(SUITE, copy)
    (copy / "configs-source.yaml").unlink()
    runs, _ = run_files([str(copy / "kyverno-test.yaml")], now=NOW, mode=Mode.STRICT)
    row = next(r for r in runs[0].rows if r.location is not None and r.location.line == 32)
    assert not row.passed and row.reason == "load-error" and "cloneSourceResource" in row.message
