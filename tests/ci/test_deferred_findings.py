"""CiRun's findings made on first use: a run that never reads them does not make them."""

from __future__ import annotations

from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun
from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.reconcile.findings import DeferredFindings, Finding


def _finding(outcome: str) -> Finding:
    return Finding(command="coverage", suite="coverage", policy="", rule="", subject=None, outcome=outcome,
                   message="m", message_class="c")


def test_findings_are_made_once_and_only_when_read() -> None:
    made: list[int] = []

    def make() -> list[Finding]:
        made.append(1)
        return [_finding("pass"), _finding("fail")]

    ci = CiRun.prepare("coverage", DeferredFindings(make), CiOptions())
    # no baseline: the exit code and finishing with stdout outputs read nothing
    assert ci.exit_code(ExitCode.FINDINGS) is ExitCode.FINDINGS
    ci.finish(())
    assert made == []
    assert [f.outcome for f in ci.findings] == ["pass", "fail"]
    assert len(ci.findings) == 2 and ci.findings[1].outcome == "fail" and ci.findings[:1][0].outcome == "pass"
    assert made == [1]
