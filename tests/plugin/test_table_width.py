"""The width tables are fitted to, as kubectl decides it: `COLUMNS` wherever the output goes, else the
terminal's width on a terminal, else (a pipe, a file) no limit at all. Fitting never cuts (render/fit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli import terminal
from kubectl_kyrec.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "testdata" / "examples"
EVAL = ["eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources")]


def test_a_pipe_has_no_limit_unless_columns_says_one() -> None:
    assert terminal.table_width(is_tty=False, environ={}) is None
    assert terminal.table_width(is_tty=False, environ={"COLUMNS": "200"}) == 200
    assert terminal.table_width(is_tty=False, environ={"COLUMNS": "0"}) is None
    # a file, even when stdout is a terminal
    assert terminal.output_width("table.txt", environ={}) is None
    assert terminal.output_width("table.txt", environ={"COLUMNS": "100"}) == 100


def test_width_of_a_terminal_is_its_own_unless_columns_says_another() -> None:
    assert terminal.table_width(is_tty=True, environ={"COLUMNS": "132"}) == 132
    assert terminal.table_width(is_tty=True, environ={"COLUMNS": "60"}) == 60
    assert terminal.table_width(is_tty=True, environ={}, size=lambda: 90) == 90
    # nonsense in COLUMNS: the terminal's size (here, no terminal at all: the fallback)
    assert terminal.table_width(is_tty=True, environ={"COLUMNS": "wide"}, size=lambda: 100) == 100


def _eval(monkeypatch: pytest.MonkeyPatch, *, tty: bool, columns: str | None, extra: tuple[str, ...] = (),
          size: int = 80) -> str:
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: tty)
    monkeypatch.setattr(terminal, "_terminal_columns", lambda: size)
    return CliRunner().invoke(cli, [*EVAL, *extra], catch_exceptions=False).stdout


MESSAGE = "every container needs a memory limit below 2Gi"


def _row(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("limit-memory ") and " fail" in line)


def test_eval_table_on_a_pipe_is_one_line_per_row_whatever_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _eval(monkeypatch, tty=False, columns=None, size=40)
    row = _row(out)
    assert MESSAGE in row and "Pod shop/batch" in row and "workloads.yaml:16" in row
    assert "MESSAGE" in out.splitlines()[0] and "LOCATION" in out.splitlines()[0]


def test_eval_table_on_a_narrow_terminal_moves_messages_under_their_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    for narrow in (_eval(monkeypatch, tty=True, columns=None, size=80),
                   _eval(monkeypatch, tty=False, columns="80")):       # COLUMNS rules a pipe too
        lines = narrow.splitlines()
        assert max(len(line) for line in lines) <= 80 and "MESSAGE" not in lines[0]
        row = lines.index(_row(narrow))
        assert "shop po/batch" in lines[row] and lines[row + 1] == "    " + MESSAGE
    wide = _eval(monkeypatch, tty=True, columns="200")
    assert MESSAGE in _row(wide) and "MESSAGE" in wide.splitlines()[0]
    assert max(len(line) for line in wide.splitlines()) <= 200


def test_a_file_has_no_limit_even_from_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "table.txt"
    _eval(monkeypatch, tty=True, columns=None, size=40, extra=("-o", f"table={target}"))
    assert MESSAGE in _row(target.read_text())


def test_diff_and_test_tables_use_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    data = Path(__file__).resolve().parents[2] / "testdata"
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    monkeypatch.setattr(terminal, "_terminal_columns", lambda: 200)
    out = CliRunner().invoke(cli, ["test", str(data / "testrun")]).stdout
    assert "testrun/failing-row/kyverno-test.yaml:17" not in out      # relative to the suites given
    assert "failing-row/kyverno-test.yaml:17" in out and "require-team-label" in out
    args = ["diff", "--now", "2026-11-29T00:00:00Z", "--reports", "-p", str(data / "coverage-cli" / "policy.yaml"),
            "--state", str(data / "coverage-cli" / "state.json")]
    assert "PolicyReport shop/11111111-0000-0000-0000-000000000002" in CliRunner().invoke(cli, args).stdout
    monkeypatch.setattr(terminal, "_terminal_columns", lambda: 60)
    out = CliRunner().invoke(cli, args).stdout.split("--- ")[0]
    assert "shop polr/11111111-0000-0000-0000-000000000002" in out


def test_coverage_table_uses_it_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[2] / "testdata" / "coverage-cli"
    args = ["coverage", "--now", "2026-11-29T00:00:00Z", "-p", str(data / "policy.yaml"),
            "--state", str(data / "state.json"), "--exclusions", str(data / "exclusions.yaml")]
    report = "PolicyReport shop/11111111-0000-0000-0000-000000000002"
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: False)
    assert report in CliRunner().invoke(cli, args).stdout
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    monkeypatch.setattr(terminal, "_terminal_columns", lambda: 70)
    out = CliRunner().invoke(cli, args).stdout
    assert "shop polr/11111111-0000-0000-0000-000000000002" in out
    assert "an entry that matches nothing is reported as unused" in " ".join(out.split())
    # a file has no limit, even from a terminal
    CliRunner().invoke(cli, [*args, "-o", f"table={tmp_path / 'coverage.txt'}"])
    assert report in (tmp_path / "coverage.txt").read_text()
