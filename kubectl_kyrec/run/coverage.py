"""`coverage`: every subject in scope has exactly one current report, or says why not."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubectl_kyrec.errors import ExitCode, worst
from kubectl_kyrec.model import Source
from kubectl_kyrec.reconcile.findings import Locate, locator_for
from kubectl_kyrec.reconcile.reports import DEFAULT_SCAN_INTERVAL

if TYPE_CHECKING:
    from kubectl_kyrec.reconcile.coverage import Coverage
    from kubectl_kyrec.run.inputs import InputSource


@dataclass(frozen=True)
class CoverageRunOptions:
    now: datetime.datetime
    namespace: str = ""
    report_api: str | None = None
    kyverno_config_path: str | None = None
    scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL
    all_policies: bool = False
    exclusions_path: str | None = None


@dataclass
class CoverageResult:
    coverage: Coverage
    notices: list[str] = field(default_factory=list)
    errors: list[tuple[str, Source | None]] = field(default_factory=list)
    # where each object was read, for the file:line of CI formats (reconcile.findings.locator)
    locate: Locate | None = field(default=None, repr=False, compare=False)

    @property
    def exit_code(self) -> ExitCode:
        return worst(self.coverage.exit_code, ExitCode.INPUT) if self.errors else self.coverage.exit_code


def run_coverage(options: CoverageRunOptions, source: InputSource) -> CoverageResult:
    from kubectl_kyrec.load.exclusions import load_exclusions
    from kubectl_kyrec.reconcile.coverage import compute_coverage
    from kubectl_kyrec.run.reports import report_diff_for, undetermined_notices

    exclusions = load_exclusions(options.exclusions_path, now=options.now) if options.exclusions_path else ()
    inputs = source.read()
    diff, scope = report_diff_for(inputs, now=options.now, report_api=options.report_api,
                                  kyverno_config_path=options.kyverno_config_path,
                                  all_policies=options.all_policies, scan_interval=options.scan_interval,
                                  namespace=options.namespace)
    errors = [(e.message, e.source) for e in inputs.policies.located_errors()]
    errors.extend((e.message, e.source) for e in scope.outcome.errors)
    notices = [str(n) for n in [*inputs.notices, *scope.outcome.notices]] + undetermined_notices(diff)
    return CoverageResult(compute_coverage(diff, scope.subjects, exclusions), notices, errors,
                          locate=locator_for(inputs.resources, inputs.state.objects, inputs.state.source == "files"))
