"""Session-wide test settings: say at the end which groups over ../shared did not run (tests/shared_inputs.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.shared_inputs import NOT_RUN


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not NOT_RUN:
        return
    terminalreporter.section("not run: ../shared inputs missing", sep="-", yellow=True)
    for what, path in sorted(NOT_RUN.items()):
        terminalreporter.write_line(f"{what}: {path} is missing (CI=true makes this a failure)")


@pytest.fixture(autouse=True)
def _no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS sets the width of every table, wherever it goes (cli/terminal.py): a shell that exports it
    would change the tables the tests read. A test that wants a width sets it."""
    monkeypatch.delenv("COLUMNS", raising=False)
