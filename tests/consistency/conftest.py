"""Fixtures the consistency tests share."""

from __future__ import annotations

from typing import Any

import pytest

import kubectl_kyrec.run.eval as run_module


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each run's EvalResult, as run_eval returned it to the command."""
    runs: list[Any] = []
    real = run_module.run_eval

    def spy(*args: Any, **kwargs: Any) -> Any:
        run = real(*args, **kwargs)
        runs.append(run)
        return run

    monkeypatch.setattr(run_module, "run_eval", spy)
    return runs
