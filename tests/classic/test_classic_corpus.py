"""The classic-policy corpus (kyverno/policies: classic directories and `*-cel` ones) through `kyrec test`.

The evaluated rows that fail must be exactly those listed in the `| legacy modes | row |` table of
docs/compatibility.md with their causes; strict mode must pass at least 97% of the evaluated rows of each
half. Rows of rule types kyrec does not evaluate (mutate, generate, verifyImages, podSecurity) are
`not-evaluated`, neither passed nor failed, and counted apart. The corpus is read in place.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import run_files
from kubectl_kyrec.testsuite.suite import find_test_files
from tests.shared_inputs import require, shared

ROOT = Path(__file__).resolve().parents[2]
CORPUS = shared("corpus/kyverno-policies-legacy")
DOC = ROOT / "docs" / "compatibility.md"
NOW = datetime.datetime(2026, 8, 1, tzinfo=datetime.UTC)
MODE_NAMES = {"strict": Mode.STRICT, "kyverno": Mode.KYVERNO}

Key = tuple[str, str, str, str]


def listed_rows(text: str) -> dict[Mode, set[Key]]:
    out: dict[Mode, set[Key]] = {mode: set() for mode in Mode}
    in_table = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:2] == ["legacy modes", "row"]:
            in_table = True
            continue
        if not cells:
            in_table = False
            continue
        if not in_table or set(cells[0]) <= set("-"):
            continue
        for name in (m.strip() for m in cells[0].split(",")):
            out[MODE_NAMES[name]].add((cells[1], cells[2], cells[3], cells[4]))
    return out


def _dirs(cel: bool) -> list[str]:
    return sorted(str(p) for p in CORPUS.iterdir() if p.is_dir() and p.name.endswith("-cel") == cel)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[Mode, bool], tuple[int, int, int, set[Key]]]:
    require(CORPUS, "kyrec test over the kyverno-policies-legacy corpus")
    out = {}
    for cel in (False, True):
        files = find_test_files(_dirs(cel))
        for mode in Mode:
            suites, load_errors = run_files(files, now=NOW, mode=mode)
            assert load_errors == []
            rows = [row for suite in suites for row in suite.rows]
            evaluated = [r for r in rows if r.evaluated]
            failing = {(f"{os.path.relpath(r.location.file, CORPUS)}:{r.location.line}" if r.location else r.file,
                        r.policy, r.kind, r.resource) for r in evaluated if not r.passed}
            out[(mode, cel)] = (len(rows), len(evaluated), sum(1 for r in evaluated if not r.passed), failing)
    return out


def test_the_corpus_has_the_expected_size(runs: dict[tuple[Mode, bool], tuple[int, int, int, set[Key]]]) -> None:
    assert len(find_test_files(_dirs(False))) == 226
    assert runs[(Mode.STRICT, False)][0] == 1847
    assert runs[(Mode.STRICT, True)][0] == 1545


@pytest.mark.parametrize("mode", list(Mode), ids=[m.value for m in Mode])
def test_failing_rows_are_exactly_the_listed_ones(runs: dict[tuple[Mode, bool], tuple[int, int, int, set[Key]]],
                                                  mode: Mode) -> None:
    listed = listed_rows(DOC.read_text(encoding="utf-8"))[mode]
    failing = runs[(mode, False)][3] | runs[(mode, True)][3]
    assert sorted(failing - listed) == [], "rows that fail but docs/compatibility.md does not list"
    assert sorted(listed - failing) == [], "rows docs/compatibility.md lists that now pass: update the page"


@pytest.mark.parametrize("cel", [False, True], ids=["classic", "cel"])
def test_strict_mode_passes_at_least_97_percent(runs: dict[tuple[Mode, bool], tuple[int, int, int, set[Key]]],
                                                cel: bool) -> None:
    _, evaluated, failed, _ = runs[(Mode.STRICT, cel)]
    assert (evaluated - failed) / evaluated >= 0.97
