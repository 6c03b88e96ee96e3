"""`kubectl kyrec coverage`: every subject in scope has exactly one current report, or says why not."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.ci_outputs import ci_flags
from kubectl_kyrec.cli.common import (
    OutputFormat,
    exit_with,
    handle_errors,
    input_phases,
    jobs_flag,
    kubectl_flags,
    parse_now,
    parse_outputs,
    registry_access,
    report_run,
    resolve_jobs,
    state_source,
)
from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.golang import time as go_time
from kubectl_kyrec.render.dispatch import OutputSpec, write_outputs

if TYPE_CHECKING:
    from kubectl_kyrec.run.coverage import StateSource

FORMATS = (OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.JSON, OutputFormat.YAML, OutputFormat.JUNIT,
           OutputFormat.SARIF, OutputFormat.GITHUB)


def duration_flag(text: str, flag: str = "--scan-interval") -> datetime.timedelta:
    """A duration flag as Kyverno's take them (Go's time.ParseDuration: `1h`, `30m`, `1h30m`, `90s`); a
    negative one is refused, as no interval or grace can be."""
    try:
        ns = go_time.parse_duration(text)
    except go_time.GoTimeError:
        ns = -1
    if ns < 0:
        raise UsageError(f"{flag}: {text!r} is not a duration like 1h or 30m")
    return go_time.to_timedelta(ns)


@click.command("coverage")
@flags.policy
@flags.resource
@flags.exception
@flags.state
@flags.crd
@flags.context_file
@flags.kyverno_config
@flags.skip_resource_filters
@flags.report_api
@click.option("--scan-interval", default="1h", show_default=True,
              help="Kyverno's --backgroundScanInterval, for the next-scan decision.")
@flags.all_policies
@flags.now
@flags.registry
@flags.insecure_registry
@flags.registry_config
@click.option("--producer", type=click.Choice(["kyverno", "kubescape"]), default="kyverno", show_default=True,
              help="Whose results: Kyverno policy reports, or Kubescape vulnerability summaries.")
@click.option("--scan-period", "scan_period", help="kubescape: how often the scanner rescans "
              "(default: the kubevuln-scheduler CronJob's schedule in the state, else 24h).")
@click.option("--scan-grace", "scan_grace", help="kubescape: how late a rescan may be (default: a quarter of "
              "the period).")
@click.option("--skip-namespaces", "skip_namespaces",
              help="kubescape: namespaces the scanner does not scan, comma-separated (the operator's "
                   "excludeNamespaces; default kubescape,kube-system,kube-public).")
@click.option("--scanner-namespace", default="kubescape", show_default=True,
              help="kubescape: where the scanner runs (its kubevuln-scheduler CronJob).")
@click.option("--exclusions", "exclusions_path", help="YAML: subjects allowed to lack a current report, with a reason.")
@flags.outputs(FORMATS)
@flags.exit_code
@jobs_flag
@ci_flags
@kubectl_flags
@handle_errors
def coverage_command(policy_paths: tuple[str, ...], resource_paths: tuple[str, ...],
                     exception_paths: tuple[str, ...], state_paths: tuple[str, ...], crd_paths: tuple[str, ...],
                     context_path: str | None, kyverno_config_path: str | None, report_api: str | None,
                     scan_interval: str, all_policies: bool, now_text: str | None, registry: bool,
                     insecure_registries: tuple[str, ...], registry_config: str | None, producer: str,
                     scan_period: str | None, scan_grace: str | None, skip_namespaces: str | None,
                     scanner_namespace: str, exclusions_path: str | None, skip_resource_filters: bool,
                     outputs: tuple[str, ...], exit_code_flag: bool, jobs: int, **kube: object) -> None:
    """Check policy-report (or vulnerability-summary) coverage of a cluster state.

    Each subject in scope (a resource owed at least one report result, after Kyverno's resourceFilters)
    is current, or named missing, stale, duplicate, misnamed, or excluded. Totals come only from the
    current reports. Exit 1 while any subject is neither current nor excluded.

    With --producer kubescape, subjects are the running containers (namespace, top workload, container)
    and claims their VulnerabilityManifestSummaries; give both reads of the summaries in --state (kubectl
    get -o json, and get --raw '...?resourceVersion=fullSpec'; `kyrec capture --producer kubescape` writes
    both) so split summaries are found. A subject is current only when its summary is also intact and
    paired (else split or unpaired); totals (critical, high, relevant) are refused while any subject is
    neither current nor excluded.

    COVERS (excluded subjects) names the gap an exclusion accepts (missing, stale, ...). With --producer
    kubescape, INTEGRITY says whether a summary's listed metadata and stored payload agree (split: they
    differ; undetermined: only one read) and UNPAIRED why its VulnerabilityManifest reference finds none;
    the table folds both into REASON to fit the terminal, -o wide shows them as columns, every cell whole.

    \b
    Example:
      kubectl kyrec coverage -p policies/ --state state.json --exclusions exclusions.yaml
    """

    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun, coverage_findings
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.findings import DeferredFindings
    from kubectl_kyrec.render.coverage_table import render_coverage
    from kubectl_kyrec.run.coverage import CoverageRunOptions, run_coverage

    specs = parse_outputs(list(outputs), FORMATS)
    now = parse_now(now_text)
    if producer == "kubescape":
        _refuse((("-p", policy_paths), ("-r", resource_paths), ("-e", exception_paths), ("--report-api", report_api),
                 ("--context-file", context_path), ("--kyverno-config", kyverno_config_path),
                 ("--registry", registry)), "kyverno")
        _vulnerability_coverage(
            _kubescape_source(state_paths, kube), specs, now=now, namespace=str(kube.get("namespace") or ""),
            exclusions_path=exclusions_path, scan_period=scan_period, scan_grace=scan_grace,
            skip_namespaces=skip_namespaces, scanner_namespace=scanner_namespace, exit_code_flag=exit_code_flag)
        return
    _refuse((("--scan-period", scan_period), ("--scan-grace", scan_grace), ("--skip-namespaces", skip_namespaces)),
            "kubescape")
    interval = duration_flag(scan_interval)
    source, all_policies = state_source(
        FileSource(policy_paths=policy_paths, resource_paths=resource_paths, exception_paths=exception_paths,
                   state_paths=state_paths, crd_paths=crd_paths, context_path=context_path,
                   schema=policy_schema_check()),
        kube, reports=True, downstreams=False, all_policies=all_policies)
    options = CoverageRunOptions(now=now, namespace=str(kube.get("namespace") or ""), report_api=report_api,
                                 kyverno_config_path=kyverno_config_path, scan_interval=interval,
                                 all_policies=all_policies, exclusions_path=exclusions_path,
                                 skip_resource_filters=skip_resource_filters, jobs=resolve_jobs(jobs),
                                 registry=registry_access(registry, insecure_registries, registry_config, now))
    with input_phases(source) as phased:
        run = run_coverage(options, phased)
    report_run(run)
    ci = CiRun.prepare("coverage", DeferredFindings(lambda: coverage_findings(run)), CiOptions.from_flags(kube),
                       run.failed_reads)

    def table(spec: OutputSpec) -> str:
        return render_coverage(run.coverage, *_table_layout(spec), baselined=ci.baselined(run.coverage.subjects))

    write_outputs(run, specs, {**ci.outputs(), OutputFormat.TABLE: table, OutputFormat.WIDE: table},
                  extra=ci.document_extra)
    ci.finish(specs, _counts(run.coverage.counts))
    exit_with(ci.exit_code(run.exit_code), exit_code_flag, run.failed_reads)


def _refuse(flags: Sequence[tuple[str, object]], producer: str) -> None:
    """A usage error for the first of `flags` given: each is for `producer` only."""
    given = [flag for flag, value in flags if value]
    if given:
        raise UsageError(f"{given[0]} is for --producer {producer}")


def _kubescape_source(state_paths: tuple[str, ...], kube: dict[str, object]) -> StateSource:
    """The files given, or (as kubectl does: no --state) the cluster of the current context."""
    from kubectl_kyrec.load.run_inputs.sources import FileSource

    if state_paths:
        return FileSource(state_paths=state_paths)
    from kubectl_kyrec.cluster.live_source import KubescapeLiveSource, connection_options, terminal_progress

    return KubescapeLiveSource(connection_options(kube), namespace=str(kube.get("namespace") or ""),
                               progress=terminal_progress())


def _vulnerability_coverage(source: StateSource, specs: list[OutputSpec], *, now: datetime.datetime, namespace: str,
                            exclusions_path: str | None, scan_period: str | None, scan_grace: str | None,
                            skip_namespaces: str | None, scanner_namespace: str, exit_code_flag: bool) -> None:
    from kubectl_kyrec.cli.ci_outputs import files_only_summary
    from kubectl_kyrec.render.coverage_table import render_vulnerability_coverage
    from kubectl_kyrec.run.coverage import VulnerabilityRunOptions, run_vulnerability_coverage

    options = VulnerabilityRunOptions(
        now=now, namespace=namespace, exclusions_path=exclusions_path,
        scan_period=duration_flag(scan_period, "--scan-period") if scan_period else None,
        scan_grace=duration_flag(scan_grace, "--scan-grace") if scan_grace else None,
        skip_namespaces=tuple(n.strip() for n in skip_namespaces.split(",") if n.strip())
        if skip_namespaces is not None else None,
        scanner_namespace=scanner_namespace)
    unsupported = [spec.format.value for spec in specs
                   if spec.format not in (OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.JSON,
                                          OutputFormat.YAML)]
    if unsupported:
        # the CI formats speak of policies and rules; vulnerability summaries have neither yet
        raise UsageError(f"-o {unsupported[0]} is not available with --producer kubescape (table, wide, json, "
                         "yaml)")
    run = run_vulnerability_coverage(options, source)
    report_run(run)

    def table(spec: OutputSpec) -> str:
        return render_vulnerability_coverage(run.coverage, *_table_layout(spec))

    write_outputs(run, specs, {OutputFormat.TABLE: table, OutputFormat.WIDE: table})
    files_only_summary("kyrec coverage", _counts(run.coverage.counts, "summaries"), specs)
    exit_with(run.exit_code, exit_code_flag, run.failed_reads)


def _counts(counts: Sequence[tuple[str, int]], reports: str = "reports") -> str:
    """`6 in scope (1 current, 3 missing), 1 orphan reports`: the counts table in one line. `reports`:
    what the producer writes (reports, summaries)."""
    from kubectl_kyrec.cli.ci_outputs import nonzero_counts

    statuses = {key: value for key, value in counts if key in _SUBJECT_STATUSES}
    others = {f"{key.removesuffix('Summaries')} {reports}" if key != "splitUndetermined"
              else "split undetermined": value
              for key, value in counts if key != "inScope" and key not in _SUBJECT_STATUSES}
    extra = nonzero_counts(others)
    return (f"{dict(counts).get('inScope', 0)} in scope ({nonzero_counts(statuses, ('current',))})"
            + (f", {extra}" if extra else ""))


_SUBJECT_STATUSES = frozenset(("current", "missing", "stale", "duplicate", "misnamed", "split", "unpaired",
                               "excluded"))


def _table_layout(spec: OutputSpec) -> tuple[bool, int | None]:
    """(wide, width): `-o wide` shows every cell whole; `-o table` is fitted to the terminal's width (no
    limit on a pipe or in a file; COLUMNS everywhere)."""
    from kubectl_kyrec.cli.terminal import output_width

    return spec.format is OutputFormat.WIDE, output_width(spec.path)
