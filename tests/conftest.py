"""Session-wide test settings: say at the end which groups over ../shared did not run (tests/shared_inputs.py)
and whether the real API server tests did not (tests/realapi/fixture.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.shared_inputs import NOT_RUN

# the real kube-apiserver (session-scoped, built on demand) and the two-back-end `backend` fixture
# the OCI registry of the registry tests (session-scoped, built on demand)
pytest_plugins = ["tests.realapi.fixture", "tests.realapi.backends", "tests.registry.fixture"]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # imported here, not above: the plugin module must be first imported by pytest (assertion rewriting)
    from tests.realapi.fixture import TIMINGS, UNAVAILABLE

    if TIMINGS:
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in TIMINGS.items())
        terminalreporter.write_line(f"real API server / registry: {timings}")
    if UNAVAILABLE:
        terminalreporter.section("not run: real API server / registry tests", sep="-", yellow=True)
        for what, why in sorted(UNAVAILABLE.items()):
            terminalreporter.write_line(f"{what}: {why} (CI=true makes this a failure)")
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
