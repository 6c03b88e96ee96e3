"""`kubectl kyrec lint`: a policy repository's pre-merge check. Every policy document below the paths is
loaded through the one file load path every command uses (load/run_inputs/sources.py FileSource: the schema the cluster
would use, then the parsers' own checks), and every problem is a row of the result: nothing is evaluated.

Exit 3 when any policy would be refused, 1 with --strict when there are warnings only, else 0.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import ExitCode, FailedRead, InputError
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.load.run_inputs.sources import FileSource
from kubectl_kyrec.model import EvalError, Source
from kubectl_kyrec.reconcile.findings import Finding


@dataclass(frozen=True)
class LintProblem:
    source: Source | None
    message: str                 # `Kind "name": field: what is wrong`
    field: str | None
    severity: str = "error"      # error | warning

    def to_json(self) -> dict[str, Any]:
        return {"file": self.source.file if self.source else "", "line": self.source.line if self.source else 0,
                "field": self.field or "", "severity": self.severity, "message": self.message}

    @property
    def line(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{'warning: ' if self.severity == 'warning' else ''}{self.message}"


@dataclass
class LintResult:
    problems: list[LintProblem]
    policies: int                          # policy documents read
    strict: bool = False
    notices: list[str] = field(default_factory=list)

    # RunResult: the problems are the output, not inputs the run could not use
    errors: Sequence[EvalError] = ()
    failed_reads: Sequence[FailedRead] = ()      # lint reads files only

    @property
    def error_count(self) -> int:
        return sum(1 for p in self.problems if p.severity == "error")

    @property
    def warning_count(self) -> int:
        return len(self.problems) - self.error_count

    @property
    def exit_code(self) -> ExitCode:
        if self.error_count:
            return ExitCode.INPUT
        if self.strict and self.warning_count:
            return ExitCode.FINDINGS
        return ExitCode.CLEAN

    def summary(self) -> dict[str, int]:
        return {"policies": self.policies, "errors": self.error_count, "warnings": self.warning_count}

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        return "LintResult", iter((("summary", self.summary()), ("problems", [p.to_json() for p in self.problems]),
                                   ("notices", list(self.notices))))

    def findings(self) -> list[Finding]:
        """The problems as the CI formats take them (`-o sarif`, `-o github`): one finding each, at its
        file:line, its rule `kyrec/lint/<severity>`."""
        # the rule names the document and the field, so that each problem has a fingerprint of its own
        return [Finding("lint", "lint", "", f"{p.message.split(': ', 1)[0]} {p.field or ''}".strip(), None,
                        "error" if p.severity == "error" else "warn", p.message,
                        "invalid-policy" if p.severity == "error" else "policy-warning", p.source)
                for p in self.problems]


def _count(policies: PolicySet) -> int:
    kept = (policies.validating, policies.admission, policies.bindings, policies.exceptions, policies.generating,
            policies.image_validating, policies.classic, policies.classic_exceptions, policies.deleting,
            policies.mutating, policies.mutating_admission, policies.mutating_bindings, policies.others)
    refused = {e.source.file + ":" + str(e.source.line) for e in policies.errors if e.source is not None}
    return sum(len(k) for k in kept) + len(refused)


def _problem(error: InputError, severity: str) -> LintProblem:
    return LintProblem(error.source, error.message, error.field, severity)


def run_lint(files: FileSource, *, now: datetime.datetime, strict: bool = False) -> LintResult:
    """Every problem of every policy document `files` names (its policy paths): the schema's and the parsers'
    (the file load path), then Kyverno's own policy validation, as every command runs it
    (evaluate/policy_validation.py). `now`: the clock the validation compiles CEL environments with."""
    from kubectl_kyrec.evaluate.policy_validation import validated_inputs

    inputs = validated_inputs(files.read(), now)
    policies = inputs.policies
    problems = [_problem(e, "error") for e in policies.located_errors()]
    problems.extend(_problem(policies.locate(w), "warning") for w in policies.warnings)
    problems.sort(key=lambda p: (p.source.file if p.source else "", p.source.line if p.source else 0))
    return LintResult(problems, _count(policies), strict, [str(n) for n in inputs.notices])
