"""`eval` compiles each CEL expression once (issue 36): the policy validation every command runs first
(evaluate/policy_validation.py) and the run share their environments, and an environment compiles a text
once (cel/engine.py Environment.compile), so the run evaluates the programs the validation compiled.

Counted where kyrec calls the CEL binding's compile, per (declared variables, text): the checking
environment (`variables` a plain dyn, cel/compiler.py) and the real one compile different texts or hold
different variables, so each is one key. Before, every expression was compiled twice (validation, then run).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cel import engine
from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "testdata" / "consistency" / "kinds"
RESOURCES = ROOT / "testdata" / "consistency" / "resources.yaml"
NOW = "2026-08-01T00:00:00Z"

# every kind `eval` compiles through the shared environments (an ImageValidatingPolicy's functions are bound
# to the run's registry, so it compiles in an environment of its own: not among them); the classic policy
# holds validate.cel rules, the mutating ones run through the admission chain
POLICIES = ("validatingpolicy.yaml", "namespacedvalidatingpolicy.yaml", "validatingadmissionpolicy.yaml",
            "mutatingpolicy.yaml", "mutatingadmissionpolicy.yaml", "generatingpolicy.yaml",
            "clusterpolicy-validate.yaml", "celpolicyexception.yaml")


class _Counting:
    """The binding's environment, its compile calls counted."""

    def __init__(self, env: Any, variables: tuple[str, ...], counts: Counter[tuple[tuple[str, ...], str]]) -> None:
        self._env = env
        self._variables = variables
        self._counts = counts

    def compile(self, text: str) -> Any:
        self._counts[(self._variables, text)] += 1
        return self._env.compile(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[tuple[str, ...], str]]:
    counts: Counter[tuple[tuple[str, ...], str]] = Counter()
    init = engine.Environment.__init__

    def counting_init(self: engine.Environment, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._env = _Counting(self._env, tuple(sorted(self.variables)), counts)

    monkeypatch.setattr(engine.Environment, "__init__", counting_init)
    return counts


def test_eval_compiles_each_expression_once(compiles: Counter[tuple[tuple[str, ...], str]]) -> None:
    args = ["eval", *(a for name in POLICIES for a in ("-p", str(KINDS / name))), "-r", str(RESOURCES),
            "--now", NOW, "-o", "json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    assert not doc.get("errors"), doc.get("errors")
    # the run evaluated every kind (the counts below would hold trivially for a run that compiled nothing)
    assert {r["policy"] for r in doc["results"]} >= {"vpol-team-label", "gpol-team-config"}, doc["results"]
    assert len(compiles) >= 20
    twice = {text: n for (_, text), n in compiles.items() if n > 1}
    assert twice == {}
