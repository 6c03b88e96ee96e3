"""`coverage`: every subject in scope has exactly one current report, or says why not."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubectl_kyrec.errors import ExitCode, FailedRead, worst
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.model import EvalError
from kubectl_kyrec.reconcile.findings import Locate, locator_for
from kubectl_kyrec.reconcile.reports import DEFAULT_SCAN_INTERVAL
from kubectl_kyrec.render.envelope import error_entries
from kubectl_kyrec.run.unreadable import failed_reads, with_failed_reads

if TYPE_CHECKING:
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
    from kubectl_kyrec.load.run_inputs.sources import Inputs, InputSource
    from kubectl_kyrec.producers.kubescape_coverage import VulnerabilityCoverage
    from kubectl_kyrec.reconcile.coverage import Coverage
    from kubectl_kyrec.reconcile.reports import ReportChange, ReportDiff


@dataclass(frozen=True)
class CoverageRunOptions:
    now: datetime.datetime
    namespace: str = ""
    report_api: str | None = None
    kyverno_config_path: str | None = None
    scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL
    all_policies: bool = False
    exclusions_path: str | None = None
    skip_resource_filters: bool = True       # Kyverno's reports controller flag, as installed by default
    jobs: int = 1                            # processes to evaluate in (`--jobs`)
    registry: Registry | None = None        # `--registry`: image verification against real registries


@dataclass
class CoverageResult:
    coverage: Coverage
    notices: list[str] = field(default_factory=list)
    errors: list[EvalError] = field(default_factory=list)
    # where each object was read, for the file:line of CI formats (reconcile.findings.locator)
    locate: Locate | None = field(default=None, repr=False, compare=False)
    # reads that failed (a live read's, or a capture's record of them): the run is not complete (exit 5)
    failed_reads: list[FailedRead] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        code = worst(self.coverage.exit_code, ExitCode.INPUT) if self.errors else self.coverage.exit_code
        return with_failed_reads(code, self.failed_reads)

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        return "CoverageResult", [*self.coverage.to_json().items(), ("errors", error_entries(self.errors))]


def run_coverage(options: CoverageRunOptions, source: InputSource) -> CoverageResult:
    from kubectl_kyrec.load.run_inputs.exclusions import load_exclusions
    from kubectl_kyrec.load.run_inputs.selection import Selection
    from kubectl_kyrec.reconcile.coverage import compute_coverage
    from kubectl_kyrec.run.capture import run_gaps
    from kubectl_kyrec.run.diff import review_notice
    from kubectl_kyrec.run.providers import validated_for_run
    from kubectl_kyrec.run.reports import report_diff_for, undetermined_notices
    from kubectl_kyrec.run.select import nothing_selected, selects_any

    exclusions = load_exclusions(options.exclusions_path, now=options.now) if options.exclusions_path else ()
    inputs, _ = validated_for_run(source.read(), options.now, options.registry)
    diff, scope = report_diff_for(inputs, now=options.now, report_api=options.report_api,
                                  kyverno_config_path=options.kyverno_config_path,
                                  all_policies=options.all_policies, scan_interval=options.scan_interval,
                                  selection=Selection(namespace=options.namespace),
                                  skip_resource_filters=options.skip_resource_filters, jobs=options.jobs,
                                  registry=options.registry)
    gaps = run_gaps(inputs, options.namespace)
    errors = [EvalError(e.message, e.source) for e in inputs.policies.located_errors()]
    errors.extend(scope.outcome.errors)
    notices = [str(n) for n in [*inputs.notices, *scope.outcome.notices]] + undetermined_notices(diff, scope)
    if gaps:
        notices.append(gaps)
    notices.extend(unread_subject_notices(inputs))
    if options.namespace and not selects_any(Selection(namespace=options.namespace), inputs.subjects):
        # as `kubectl get -n nope`: a notice, not an error
        notices.append(nothing_selected(f"-n {options.namespace}", len(inputs.subjects)))
    cov = with_gap_causes(compute_coverage(diff, scope.subjects, exclusions), diff, inputs, options)
    notices.extend(review_notice(inputs))
    return CoverageResult(cov, notices, errors,
                          locate=locator_for(inputs.resources, inputs.state.objects, inputs.state.source == "files"),
                          failed_reads=failed_reads(inputs.state))


def with_gap_causes(cov: Coverage, diff: ReportDiff, inputs: Inputs, options: CoverageRunOptions) -> Coverage:
    """Every gap (a subject neither current nor excluded) with its cause, as `diff` gives its report change
    one (run/diff.py, reconcile/causes.py): from the subject's report change, the policies that owe it
    results and the same evidence."""
    import dataclasses

    from kubectl_kyrec.reconcile.causes import report_cause
    from kubectl_kyrec.reconcile.claims import ClaimClass
    from kubectl_kyrec.run.diff import cause_evidence, owing

    if not cov.gaps:
        return cov
    evidence = cause_evidence(inputs, now=options.now, kyverno_config_path=options.kyverno_config_path,
                              skip_resource_filters=options.skip_resource_filters)
    owed = {status.subject.uid: status.results for status in diff.subjects}
    changes: dict[tuple[str, str], ReportChange] = {}
    for each in diff.changes:
        if each.subject is not None:
            changes.setdefault((each.subject.uid, str(each.klass)), each)
    rows = []
    for row in cov.subjects:
        if row.status in (ClaimClass.CURRENT, ClaimClass.EXCLUDED):
            rows.append(row)
            continue
        change = changes.get((row.subject.uid, row.status))
        rows.append(dataclasses.replace(row, cause=report_cause(
            subject=row.subject, next_scan=str(change.next_scan) if change and change.next_scan else None,
            next_scan_reason=change.next_scan_reason if change else None,
            oldest_ephemeral_age_s=change.oldest_ephemeral_age_s if change else None, ev=evidence,
            policies=owing(owed, row.subject), klass=row.status)))
    return dataclasses.replace(cov, subjects=tuple(rows))


def unread_subject_notices(inputs: Inputs) -> list[str]:
    """Coverage counts only the subjects it read: a kind whose LIST failed is a gap in the scope itself,
    said here (the exit code is 5) rather than left to look covered."""
    return [f"coverage is incomplete: {k.kind} objects{f' in {k.namespace}' if k.namespace else ''} could not be "
            f"read, so they are not in the scope ({read.message})"
            for k, read in sorted(inputs.state.unreadable.items())]


@dataclass(frozen=True)
class VulnerabilityRunOptions:
    """`coverage --producer kubescape`: the scan period and grace default from the scanner's schedule."""

    now: datetime.datetime
    namespace: str = ""
    exclusions_path: str | None = None
    scan_period: datetime.timedelta | None = None
    scan_grace: datetime.timedelta | None = None
    skip_namespaces: tuple[str, ...] | None = None
    scanner_namespace: str = "kubescape"


class StateSource(Protocol):
    def read_state(self) -> ClusterState:
        """The cluster state only: this producer needs no policies."""


@dataclass
class VulnerabilityResult:
    coverage: VulnerabilityCoverage
    notices: list[str] = field(default_factory=list)
    # empty: this run never refuses an input
    errors: list[EvalError] = field(default_factory=list)
    # the LISTs that failed, as in every other run: shown by every output, exit 5
    failed_reads: list[FailedRead] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        return with_failed_reads(self.coverage.exit_code, self.failed_reads)

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        return "CoverageResult", [*self.coverage.to_json().items(), ("errors", error_entries(self.errors))]


def run_vulnerability_coverage(options: VulnerabilityRunOptions, source: StateSource) -> VulnerabilityResult:
    from kubectl_kyrec.load.run_inputs.exclusions import load_exclusions
    from kubectl_kyrec.producers.kubescape import (
        DEFAULT_SKIP_NAMESPACES,
        KubescapeOptions,
        schedule_from,
    )
    from kubectl_kyrec.producers.kubescape_coverage import vulnerability_coverage

    exclusions = load_exclusions(options.exclusions_path, now=options.now) if options.exclusions_path else ()
    state = source.read_state()
    objects = state.objs
    schedule = schedule_from(objects, scanner_namespace=options.scanner_namespace, period=options.scan_period,
                             grace=options.scan_grace)
    skip = options.skip_namespaces if options.skip_namespaces is not None else DEFAULT_SKIP_NAMESPACES
    kube_options = KubescapeOptions(options.now, schedule, frozenset(skip), options.namespace)
    cov = vulnerability_coverage(objects, kube_options, exclusions)
    notices: list[str] = []
    reads = dict(cov.reads)
    if not (reads["metadata"] and reads["payload"]):
        notices.append("the state holds only one read of the summaries (plain LIST or fullSpec LIST): split is "
                       "undetermined; give both to detect it")
    if not reads["manifests"]:
        notices.append("the state holds no VulnerabilityManifest: pairing cannot be checked")
    return VulnerabilityResult(cov, notices, failed_reads=failed_reads(state))
