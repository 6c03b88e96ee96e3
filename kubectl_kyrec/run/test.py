"""`test`: run Kyverno CLI test suites (`kyverno-test.yaml`) unchanged."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import ExitCode, FailedRead, InputError, worst
from kubectl_kyrec.model import EvalError, Source

if TYPE_CHECKING:
    from kubectl_kyrec.testsuite.row_types import Mode, SuiteRun


@dataclass(frozen=True)
class TestRunOptions:
    now: datetime.datetime
    mode: Mode
    file_name: str = "kyverno-test.yaml"
    require_tests: bool = False
    # rows kyrec cannot evaluate (policy kinds or rules it does not evaluate) do not fail the run
    allow_not_evaluated: bool = False
    fail_only: bool = False         # the document lists failing rows only (`--fail-only`)
    registry: Any = None            # `--registry` (load.registry.Registry): None, offline


@dataclass
class TestResult:
    __test__ = False  # not a pytest class

    mode: Mode
    file_name: str
    files: list[str]
    runs: list[SuiteRun]
    load_errors: list[tuple[str, Source | None]]
    notices: list[str] = field(default_factory=list)       # the suites' notices (part of the document)
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
        # exit 3, an input error (errors.py): the paths given hold nothing to check, as an -r path that
        # holds no document; 1 would say rows were checked and failed
        where = Source(paths[0]) if len(paths) == 1 else None
        below = "" if where else f" below {', '.join(paths)}"
        raise InputError(f"no {options.file_name} found{below} (--require-tests: nothing would be checked)", where)
    runs, load_errors = run_files(files, now=options.now, mode=options.mode, registry=options.registry)
    notices = sorted({str(n) for run in runs for n in run.notices})
    if not files:
        # in the document too: a JSON or JUnit reader otherwise sees `0 passed, 0 failed`, a clean run
        notices.insert(0, f"no {options.file_name} found below {', '.join(paths)}")
    return TestResult(options.mode, options.file_name, list(files), runs, load_errors, notices,
                      allow_not_evaluated=options.allow_not_evaluated, fail_only=options.fail_only)
