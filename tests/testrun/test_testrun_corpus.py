"""The conformance corpus through `kubectl kyrec test`, in both modes, against docs/compatibility.md.

Every corpus row that fails must be listed in a row table of docs/compatibility.md (header starting
`| modes | row |`), and every listed row must fail: the page and the run stay in step. Strict mode must
pass at least 97% of the rows. The corpus is read in place from ../shared/corpus (never copied).
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
CORPUS = shared("corpus/kyverno-policies")
DOC = ROOT / "docs" / "compatibility.md"
NOW = datetime.datetime(2026, 8, 1, tzinfo=datetime.UTC)
MODE_NAMES = {"strict": Mode.STRICT, "kyverno": Mode.KYVERNO}


Key = tuple[str, str, str, str]  # row (file:line relative to the corpus), policy, kind, resource


def listed_rows(text: str) -> dict[Mode, set[Key]]:
    """Rows of every table whose header starts `| modes | row |`, by mode."""
    out: dict[Mode, set[Key]] = {mode: set() for mode in Mode}
    in_table = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:2] == ["modes", "row"]:
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


@pytest.fixture(scope="module")
def runs() -> dict[Mode, tuple[int, int, set[Key], list[str]]]:
    require(CORPUS, "kyrec test over the kyverno-policies corpus")
    files = find_test_files([str(CORPUS)])
    out = {}
    for mode in Mode:
        suites, load_errors = run_files(files, now=NOW, mode=mode)
        rows = [row for suite in suites for row in suite.rows]
        failing = {
            (
                f"{os.path.relpath(r.location.file, CORPUS)}:{r.location.line}" if r.location else r.file,
                r.policy,
                r.kind,
                r.resource,
            )
            for r in rows
            if not r.passed
        }
        errors = [m for m, _ in load_errors] + [m for suite in suites for m, _ in suite.errors]
        out[mode] = (len(rows), sum(1 for r in rows if not r.passed), failing, errors)
    return out


def test_the_corpus_has_the_expected_size(runs: dict[Mode, tuple[int, int, set[Key], list[str]]]) -> None:
    assert len(find_test_files([str(CORPUS)])) == 102  # the fixture skips when the corpus is absent
    assert runs[Mode.STRICT][0] == 1372


@pytest.mark.parametrize("mode", list(Mode), ids=[m.value for m in Mode])
def test_failing_rows_are_exactly_the_listed_ones(
    runs: dict[Mode, tuple[int, int, set[Key], list[str]]], mode: Mode
) -> None:
    _, _, failing, errors = runs[mode]
    listed = listed_rows(DOC.read_text(encoding="utf-8"))[mode]
    assert errors == []
    assert sorted(failing - listed) == [], "rows that fail but docs/compatibility.md does not list"
    assert sorted(listed - failing) == [], "rows docs/compatibility.md lists that now pass: update the page"


def test_strict_mode_passes_at_least_97_percent(runs: dict[Mode, tuple[int, int, set[Key], list[str]]]) -> None:
    total, failed, _, _ = runs[Mode.STRICT]
    assert (total - failed) / total >= 0.97


def test_the_row_tables_are_read_by_mode() -> None:
    text = """
| modes | row | policy | kind | resource | expected → kyrec | cause |
|---|---|---|---|---|---|---|
| strict, kyverno | a/kyverno-test.yaml:3 | p | Pod | ns/x | pass → error | why |
| kyverno | a/kyverno-test.yaml:9 | q | Pod | y | fail → pass | why |

| other | table |
|---|---|
| strict | not a row |
"""
    rows = listed_rows(text)
    assert rows[Mode.STRICT] == {("a/kyverno-test.yaml:3", "p", "Pod", "ns/x")}
    assert rows[Mode.KYVERNO] == {
        ("a/kyverno-test.yaml:3", "p", "Pod", "ns/x"),
        ("a/kyverno-test.yaml:9", "q", "Pod", "y"),
    }
