"""`test`: run Kyverno CLI test suites (`kyverno-test.yaml`) unchanged."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import ExitCode, FailedRead, InputError, worst
from kubectl_kyrec.model import EvalError, Source

if TYPE_CHECKING:
    from kubectl_kyrec.testsuite.rows import Mode, SuiteRun


@dataclass(frozen=True)
class TestRunOptions:
    now: datetime.datetime
    mode: Mode
    file_name: str = "kyverno-test.yaml"
    require_tests: bool = False
    # rows kyrec cannot evaluate (policy kinds or rules it does not evaluate) do not fail the run
    allow_not_evaluated: bool = False
    fail_only: bool = False         # the document lists failing rows only (`--fail-only`)


@dataclass
class TestResult:
    __test__ = False  # not a pytest class

    mode: Mode
    file_name: str
    files: list[str]
    runs: list[SuiteRun]
    load_errors: list[tuple[str, Source | None]]
    notices: list[str] = field(default_factory=list)       # the suites' notices (part of the document)
    searched: list[str] = field(default_factory=list)      # the paths searched
    allow_not_evaluated: bool = False
    fail_only: bool = False
    failed_reads: list[FailedRead] = field(default_factory=list)     # a test run reads no cluster

    @property
    def errors(self) -> list[EvalError]:
        """Test files that did not load, then each suite's errors (policies, resources), in that order."""
        return [EvalError(m, s) for m, s in [*self.load_errors, *((m, s) for r in self.runs for m, s in r.errors)]]

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        from kubectl_kyrec.render.suite_output import suite_parts

        return "TestResult", suite_parts(self.runs, self.mode, fail_only=self.fail_only, load_errors=self.load_errors,
                                         notices=self.notices, allow_not_evaluated=self.allow_not_evaluated)

    @property
    def not_evaluated(self) -> int:
        """Rows kyrec could not evaluate: a suite that passes only because of them checked less than it says."""
        return sum(1 for run in self.runs for row in run.rows if not row.evaluated)

    @property
    def found_none(self) -> str | None:
        """The notice that no test file was found, or None."""
        return None if self.files else f"no {self.file_name} found below {', '.join(self.searched)}"

    @property
    def exit_code(self) -> ExitCode:
        code = ExitCode.INPUT if self.load_errors or any(run.errors for run in self.runs) else ExitCode.CLEAN
        if any(not row.passed for run in self.runs for row in run.rows) or (
                self.not_evaluated and not self.allow_not_evaluated):
            code = worst(code, ExitCode.FINDINGS)
        return code


def run_test(options: TestRunOptions, paths: Sequence[str]) -> TestResult:
    """Every test file named `options.file_name` below `paths`, loaded and run."""
    from kubectl_kyrec.testsuite.runner import run_files
    from kubectl_kyrec.testsuite.suite import find_test_files

    files = find_test_files(list(paths), options.file_name)
    if not files and options.require_tests:
        raise InputError(f"no test files named {options.file_name} found below {', '.join(paths)}")
    runs, load_errors = run_files(files, now=options.now, mode=options.mode)
    notices = sorted({str(n) for run in runs for n in run.notices})
    return TestResult(options.mode, options.file_name, list(files), runs, load_errors, notices, list(paths),
                      options.allow_not_evaluated, options.fail_only)
