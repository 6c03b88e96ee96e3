"""`eval` results for CI systems: JUnit XML, SARIF 2.1.0 and GitHub annotations.

Each keeps the subject's file:line, so a pull-request check can point at the manifest that failed. The
formats themselves live in render/junit.py, render/sarif.py and render/github.py, shared by every command
through `reconcile.findings.Finding`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_kyrec.model import Result
from kubectl_kyrec.reconcile.findings import from_results
from kubectl_kyrec.render import github, junit, sarif


def render_junit(results: Sequence[Result]) -> str:
    """A `<testsuites>` document: a suite per policy, a case per subject; fail is a failure, error an error."""
    return junit.render(from_results(results), name="kyrec eval")


def render_sarif(results: Sequence[Result], *, root: str | None = None) -> str:
    """SARIF 2.1.0: a rule per policy, a result per failing, erroring or warning (policy, subject)."""
    return sarif.render(from_results(results), root=root)


def render_github(results: Sequence[Result]) -> str:
    """Annotations, 10 per level as GitHub shows them (the full list goes to the step summary)."""
    return github.render(from_results(results))
