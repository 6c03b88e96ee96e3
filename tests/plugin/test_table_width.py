"""Tables use the terminal's width when stdout is a terminal (COLUMNS, else the terminal's size, as
shutil.get_terminal_size and kubectl-like tools read it) and 80 columns on a pipe or in a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli import terminal
from kubectl_kyrec.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "testdata" / "examples"
EVAL = ["eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources")]


def test_width_of_a_pipe_is_80_whatever_columns_says() -> None:
    assert terminal.table_width(is_tty=False, environ={"COLUMNS": "200"}) == 80


def test_width_of_a_terminal_is_its_own() -> None:
    assert terminal.table_width(is_tty=True, environ={"COLUMNS": "132"}) == 132
    assert terminal.table_width(is_tty=True, environ={"COLUMNS": "60"}) == 60
    # nonsense in COLUMNS: the terminal's size (here, no terminal at all: the fallback)
    assert terminal.table_width(is_tty=True, environ={"COLUMNS": "wide"}, size=lambda: 100) == 100


def _eval(monkeypatch: pytest.MonkeyPatch, *, tty: bool, columns: str, extra: tuple[str, ...] = ()) -> str:
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: tty)
    return CliRunner().invoke(cli, [*EVAL, *extra], catch_exceptions=False).stdout


MESSAGE = "every container needs a memory limit below 2Gi"


def test_eval_table_on_a_wide_terminal_keeps_messages_in_their_column(monkeypatch: pytest.MonkeyPatch) -> None:
    narrow = _eval(monkeypatch, tty=False, columns="200")
    wide = _eval(monkeypatch, tty=True, columns="200")
    # 80 columns: the message does not fit its column, so it is whole on a line of its own under its row
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80 and "MESSAGE" not in lines[0]
    row = next(i for i, line in enumerate(lines) if line.startswith("limit-memory "))
    assert lines[row + 1] == "    " + MESSAGE
    rows = [line for line in wide.splitlines() if line.startswith("limit-memory ") and " fail " in line]
    assert len(rows) == 1 and MESSAGE in rows[0] and "MESSAGE" in wide.splitlines()[0]
    assert max(len(line) for line in wide.splitlines()) <= 200


def test_a_file_gets_80_columns_even_from_a_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "table.txt"
    _eval(monkeypatch, tty=True, columns="200", extra=("-o", f"table={target}"))
    assert "    " + MESSAGE in target.read_text().splitlines()


def test_diff_and_test_tables_use_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    data = Path(__file__).resolve().parents[2] / "testdata"
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    out = CliRunner().invoke(cli, ["test", str(data / "testrun")]).stdout
    assert "testrun/failing-row/kyverno-test.yaml:17" not in out      # relative to the suites given
    assert "failing-row/kyverno-test.yaml:17" in out and "require-team-label" in out
    report = "PolicyReport shop/11111111-0000-0000-0000-000000000002"
    out = CliRunner().invoke(cli, ["diff", "--now", "2026-11-29T00:00:00Z", "--reports",
                                   "-p", str(data / "coverage-cli" / "policy.yaml"),
                                   "--state", str(data / "coverage-cli" / "state.json")]).stdout
    assert report in out.split("--- ")[0]


def test_coverage_table_uses_it_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[2] / "testdata" / "coverage-cli"
    args = ["coverage", "--now", "2026-11-29T00:00:00Z", "-p", str(data / "policy.yaml"),
            "--state", str(data / "state.json"), "--exclusions", str(data / "exclusions.yaml")]
    report = "PolicyReport shop/11111111-0000-0000-0000-000000000002"
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: False)
    assert report not in CliRunner().invoke(cli, args).stdout
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    out = CliRunner().invoke(cli, args).stdout
    assert report in out and "an entry that matches nothing is reported as unused" in out
    assert max(len(line) for line in out.splitlines()) <= 200
    # a file gets 80 even from a terminal
    CliRunner().invoke(cli, [*args, "-o", f"table={tmp_path / 'coverage.txt'}"])
    assert report not in (tmp_path / "coverage.txt").read_text()
