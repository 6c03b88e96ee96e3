"""A test-suite run as CI findings (JUnit, SARIF, GitHub annotations): each row a case of its test, located at
its results entry in the test file. Here, not in reconcile/findings.py, because a SuiteRun is this layer's."""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_kyrec.model import Ref, Source
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.testsuite.row_types import SuiteRun


def from_test_runs(runs: Sequence[SuiteRun]) -> list[Finding]:
    """A test row is a case of its test; its location is the results entry in the test file."""
    out = []
    for run in runs:
        suite = f"{run.file}: {run.test}" if run.test else run.file
        for row in run.rows:
            subject = Ref("", row.kind, "", row.resource, "")
            # a row kyrec could not evaluate was neither passed nor failed: a CI view shows it skipped
            outcome = "skip" if not row.evaluated else "pass" if row.passed else "fail"
            # a decided row says what it expected and what it got first, as a test runner's assertion does
            message = row.message if not row.evaluated else (
                f"expected {row.expected}, got {row.actual or 'no result'} ({row.reason})"
                + (f": {row.message}" if row.message else ""))
            out.append(Finding(command="test", suite=suite, policy=row.policy, rule=row.rule, subject=subject,
                               outcome=outcome, message=message, message_class=row.reason or outcome,
                               location=row.location or Source(run.file)))
        for message, where in run.errors:
            out.append(Finding(command="test", suite=suite, policy="", rule="", subject=None, outcome="error",
                               message=message, message_class="error", location=where or Source(run.file)))
    return out
