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


@pytest.fixture
def streamed_inputs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each evaluation of the runs (evaluate/pipeline.py run_eval), whether its subjects were read as they
    were evaluated (an iterator) rather than whole (a sequence)."""
    from collections.abc import Sequence

    import kubectl_kyrec.evaluate.pipeline as pipeline

    seen: list[bool] = []
    real = pipeline.run_eval

    def spy(policies: Any, resources: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(not isinstance(resources, Sequence))
        return real(policies, resources, *args, **kwargs)

    monkeypatch.setattr(pipeline, "run_eval", spy)
    return seen
