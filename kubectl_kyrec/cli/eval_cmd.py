"""`kubectl kyrec eval`: policies x resources -> results, expected reports. No cluster needed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.ci_outputs import ci_flags, nonzero_counts
from kubectl_kyrec.cli.common import (
    OutputFormat,
    emit_warnings,
    exit_with,
    handle_errors,
    jobs_flag,
    kubectl_flags,
    parse_now,
    parse_outputs,
    registry_access,
    report_run,
    resolve_jobs,
    selection_of,
)
from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.render.dispatch import Output, OutputSpec, write_outputs
from kubectl_kyrec.run.eval import FAIL_ON, counts_as_failure

if TYPE_CHECKING:
    from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun
    from kubectl_kyrec.model import ResultPairs
    from kubectl_kyrec.render.eval_output import TableTally
    from kubectl_kyrec.render.result_spill import ResultSpill
    from kubectl_kyrec.run.eval import EvalResult

EVAL_FORMATS = (OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.YAML, OutputFormat.JSON,
                OutputFormat.REPORTS, OutputFormat.GITHUB, OutputFormat.JUNIT, OutputFormat.SARIF)

@click.command("eval")
@flags.policy
@flags.resource
@flags.kustomize
@flags.exception
@flags.state
@click.option("--json", "json_paths", multiple=True,
              help="JSON/YAML documents (any shape) for ValidatingPolicies with evaluation.mode JSON.")
@click.option("--http-payload", "http_paths", multiple=True,
              help="HTTP check requests (JSON) for ValidatingPolicies with evaluation.mode HTTP.")
@click.option("--envoy-payload", "envoy_paths", multiple=True,
              help="Envoy CheckRequests (JSON) for ValidatingPolicies with evaluation.mode Envoy.")
@click.option("--live", is_flag=True, help="Read the cluster of the current context (kubeconfig) as the state.")
@flags.crd
@flags.values
@flags.context_file
@flags.now
@flags.outputs(EVAL_FORMATS)
@click.option("--fail-on", type=click.Choice(list(FAIL_ON)), default="fail", show_default=True,
              help="Which results make the exit code 1.")
@click.option("--fail-on-actions", multiple=True, type=click.Choice(["Deny", "Audit", "Warn"]),
              help="Count only results of policies with these validationActions.")
@flags.selector
@flags.policy_name
@flags.kind
@click.option("--report-api", type=click.Choice(["wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1"]),
              default="wgpolicyk8s.io/v1alpha2", show_default=True, help="API of the expected reports.")
@click.option("--base-policy", "base_policy_paths", multiple=True,
              help="The policies before the change: print what the change does. Exit 1 when a result fails "
                   "(--fail-on) or the change introduces a failure, a downstream change or a denied request.")
@click.option("--only-changes", is_flag=True,
              help="With --base-policy: exit 1 only on what the change introduces, not on results that fail "
                   "before and after it.")
@flags.no_mutate
@flags.registry
@flags.insecure_registry
@flags.registry_config
@click.option("--write-mutated", "write_mutated_dir", metavar="DIR",
              help="Write the manifests as admission would store them (defaulted, mutated) under DIR.")
@click.option("--old", "old_paths", multiple=True,
              help="The manifests before the change: changed ones are evaluated as UPDATE, removed ones as DELETE.")
@click.option("--old-ref", metavar="REF",
              help="Like --old, with the -r paths as the git ref REF holds them (e.g. origin/main).")
@click.option("--show-all", is_flag=True,
              help="Table: list passing and skipped results too (by default they are counted, not listed).")
@flags.exit_code
@jobs_flag
@ci_flags
@kubectl_flags
@handle_errors
def eval_command(policy_paths: tuple[str, ...], resource_paths: tuple[str, ...],
                 exception_paths: tuple[str, ...], state_paths: tuple[str, ...], live: bool,
                 json_paths: tuple[str, ...], http_paths: tuple[str, ...], envoy_paths: tuple[str, ...],
                 crd_paths: tuple[str, ...],
                 values_path: str | None, context_path: str | None, now_text: str | None,
                 outputs: tuple[str, ...], fail_on: str, fail_on_actions: tuple[str, ...], selector: str | None,
                 policy_names: tuple[str, ...], kinds: tuple[str, ...], report_api: str,
                 base_policy_paths: tuple[str, ...], only_changes: bool, no_mutate: bool, registry: bool,
                 insecure_registries: tuple[str, ...], registry_config: str | None, write_mutated_dir: str | None,
                 old_paths: tuple[str, ...], old_ref: str | None, show_all: bool, exit_code_flag: bool, jobs: int,
                 **kube: object) -> None:
    """Evaluate policies against resources offline.

    Prints a row per result that fails, errs or warns, then the counts per policy (every result with
    -o wide or --show-all); `-o reports` prints the PolicyReports Kyverno's background scan would write.
    Exit 1 when a result fails (see --fail-on), 3 on bad input. With --base-policy, the change tables
    follow: RESULT is the result before -> after the change (`- -> fail`: a new result; -o wide: CHANGE,
    BEFORE, AFTER); what the change introduces fails the run too, and with --only-changes only that does.

    \b
    Example:
      kubectl kyrec eval -p policies/ -r manifests/
      kubectl kyrec eval -p policies/ -r manifests/ -o github -o sarif=kyrec.sarif --baseline kyrec-baseline.json
    """
    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun
    from kubectl_kyrec.load.files import reading_files
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.findings import from_results
    from kubectl_kyrec.render import eval_output
    from kubectl_kyrec.render.progress import Progress, writing_output
    from kubectl_kyrec.render.result_spill import SpilledFindings
    from kubectl_kyrec.run.eval import EvalRunOptions, run_eval

    specs = parse_outputs(list(outputs), EVAL_FORMATS)
    now = parse_now(now_text)
    kustomize_dirs: Any = kube.get("kustomize_dirs", ())
    _check_inputs(live, policy_paths, (*resource_paths, *kustomize_dirs), state_paths,
                  (*json_paths, *http_paths, *envoy_paths))
    _check_admission(resource_paths, kustomize_dirs, no_mutate, write_mutated_dir, old_paths, old_ref)
    if only_changes and not base_policy_paths:
        raise UsageError("--only-changes counts what a policy change introduces: it needs --base-policy")
    # the outputs that can take the results as they are decided keep only what they need of them (the table on
    # stdout: its counts and listed rows; JSON, YAML, reports, JUnit, SARIF, GitHub: a spill to a temporary
    # file, read back as each writes): the run keeps none
    # (issue 36); any other output, a baseline and --base-policy read them all
    ci_options = CiOptions.from_flags(kube)
    tally = spill = None
    if _streams(specs, base_policy_paths, ci_options):
        from kubectl_kyrec.cli.terminal import output_width
        from kubectl_kyrec.render.result_spill import ResultSpill

        if any(s.format is OutputFormat.TABLE for s in specs):
            # a table fitted to a terminal's width keeps its rows to fit them; on a pipe or in a file it need not
            tally = eval_output.TableTally(show_all, spill=output_width(None) is None)
        elif any(s.format is OutputFormat.WIDE for s in specs):
            # -o wide lists every result, never fitted: its rows are spilled wherever it goes
            tally = eval_output.TableTally(True, spill=True, wide=True)
        if any(s.format not in _TABLES for s in specs):
            spill = ResultSpill()
    # those outputs read -r and --state as the run evaluates them, where nothing else needs every manifest
    # (--write-mutated, --old and --old-ref do; run/eval.py decides the rest): what they need of an input object
    # once its results are handed on is in those results, but for JSON's and YAML's `admission` entries, which
    # go to the spill with them (the stored objects with them)
    stream = (tally is not None or spill is not None) and write_mutated_dir is None \
        and not old_paths and old_ref is None
    admitted = spill.add_admissions if spill is not None and stream \
        and any(s.format in _DOCUMENTS for s in specs) else None
    beside: Any = None
    if stream and resolve_jobs(jobs) > 1:
        # with workers, half of a large state's first pass is read in one of them (load/run_inputs/state.py)
        from kubectl_kyrec.evaluate.fan_out import call_beside

        beside = call_beside
    source: Any = FileSource(policy_paths=policy_paths, resource_paths=resource_paths, kustomize_dirs=kustomize_dirs,
                             exception_paths=exception_paths, state_paths=state_paths, crd_paths=crd_paths,
                             values_path=values_path, context_path=context_path,
                             schema=policy_schema_check(), stream_resources=stream, beside=beside)
    if live:                # eval reads the cluster only when asked (docs/architecture.md#the-command-line)
        from kubectl_kyrec.cluster.live_source import live_source

        source = live_source(source, kube, reports=False, downstreams=True)
    elif not policy_paths:
        # a state that holds policies (a capture) needs no -p: they are the complete set, as a live run's are
        from kubectl_kyrec.run.state_policies import StatePoliciesSource

        source = StatePoliciesSource(source, "eval needs policies: -p PATH")
    options = EvalRunOptions(now=now, selection=selection_of(kube, selector, policy_names, kinds),
                             report_api=report_api, fail_on=fail_on, fail_on_actions=fail_on_actions,
                             base_policy_paths=base_policy_paths, only_changes=only_changes, json_paths=json_paths,
                             http_paths=http_paths, envoy_paths=envoy_paths, jobs=resolve_jobs(jobs),
                             mutate=not no_mutate, old_paths=old_paths, old_ref=old_ref,
                             resource_paths=resource_paths,
                             registry=registry_access(registry, insecure_registries, registry_config, now))
    # the phases on a terminal: the input files counted as they are opened, the evaluation's rate and time
    # left, then `writing output` while a pipe or a file gets it
    with Progress.on_terminal("evaluated", phase="loading inputs") as progress, reading_files(progress.loading):
        run = run_eval(options, source, on_subject=progress.tick, on_total=progress.expect,
                       on_results=_handed_to(tally, spill), on_admissions=admitted)
    run.handed = spill
    emit_warnings(run.warnings)
    report_run(run)
    if write_mutated_dir is not None:
        from kubectl_kyrec.render.mutated_manifests import HEADER, mutated_files
        from kubectl_kyrec.render.sink import write_owned_files

        write_owned_files(write_mutated_dir, mutated_files(run.admissions), HEADER, "--write-mutated")
    results = run.results
    ci = CiRun.prepare("eval", from_results(results) if spill is None else SpilledFindings(spill), ci_options,
                       run.failed_reads)
    with writing_output():
        try:
            write_outputs(run, specs, _outputs(run, ci, show_all=show_all, tally=tally), extra=ci.document_extra)
        finally:
            if spill is not None:
                spill.close()
        # handed on, the results are not there to be counted: the spill counted them
        ci.finish(specs, counts=None if spill is None else nonzero_counts(spill.counts, ("pass", "fail")))
    # a baseline accepts findings, not what a --base-policy change does
    unaccepted = [r for r, f in zip(results, ci.findings) if not f.baselined] if ci.baseline_used else results
    code = run.exit_code if run.only_changes else ci.exit_code(
        run.exit_code, run.change_fails or counts_as_failure(unaccepted, fail_on, fail_on_actions))
    exit_with(code, exit_code_flag, run.failed_reads)


# the formats that take a run's results as they are decided (a table only on stdout, and one of the two: `-o
# table=FILE` and `-o wide=FILE` read the whole run, as the tests compare the streamed tables with them)
_TABLES = frozenset((OutputFormat.TABLE, OutputFormat.WIDE))   # a set: completion reads the one tuple of formats
_STREAMED = frozenset((OutputFormat.JSON, OutputFormat.YAML, OutputFormat.REPORTS, OutputFormat.JUNIT,
                       OutputFormat.SARIF, OutputFormat.GITHUB))
_DOCUMENTS = frozenset((OutputFormat.JSON, OutputFormat.YAML))     # the run's document: `admission` too


def _streams(specs: Sequence[OutputSpec], base_policy_paths: Sequence[str], ci_options: CiOptions) -> bool:
    """Whether the run hands its results on as they are decided rather than keeping them: every output can
    take them so, and no baseline or --base-policy compares them all."""
    return all(s.format in _STREAMED or (s.format in _TABLES and s.path is None) for s in specs) \
        and sum(s.format in _TABLES for s in specs) <= 1 \
        and not base_policy_paths and not ci_options.baseline_path and not ci_options.write_baseline_path


def _handed_to(tally: TableTally | None, spill: ResultSpill | None) -> Callable[[ResultPairs], object] | None:
    """run_eval's `on_results`: each chunk to the table's tally and to the spill, whichever the outputs need."""
    if tally is None and spill is None:
        return None

    def hand(pairs: ResultPairs) -> None:
        if tally is not None:
            tally.add(pairs.results)
        if spill is not None:
            spill.add(pairs)

    return hand


def _check_inputs(live: bool, policy_paths: Sequence[str], resource_paths: Sequence[str],
                  state_paths: Sequence[str], payload_paths: Sequence[str]) -> None:
    """Usage errors before anything is read. `payload_paths`: --json, --http-payload, --envoy-payload."""
    if live and state_paths:
        raise UsageError("--live and --state exclude each other")
    if not policy_paths and not live and not state_paths:
        raise UsageError("eval needs policies: -p PATH, or a --state (a capture) or --live that holds some")
    if not resource_paths and not state_paths and not live and not payload_paths:
        raise UsageError("eval needs resources: -r PATH, -k DIR, --state PATH or --live, or payloads: --json PATH, "
                         "--http-payload PATH, --envoy-payload PATH")


def _check_admission(resource_paths: Sequence[str], kustomize_dirs: Sequence[str], no_mutate: bool,
                     write_mutated_dir: str | None, old_paths: Sequence[str], old_ref: str | None) -> None:
    """Usage errors of the admission flags: they are about manifests (-r, -k)."""
    manifests = bool(resource_paths or kustomize_dirs)
    if old_paths and old_ref is not None:
        raise UsageError("--old and --old-ref exclude each other")
    if (old_paths or old_ref is not None) and not manifests:
        raise UsageError("--old and --old-ref compare manifests: give them with -r or -k")
    if old_ref is not None and not resource_paths:
        raise UsageError("--old-ref reads the -r paths at the ref: give the manifests with -r")
    if write_mutated_dir is not None and (no_mutate or not manifests):
        raise UsageError("--write-mutated writes admitted manifests: it needs -r or -k, and not --no-mutate")


def _outputs(run: EvalResult, ci: CiRun, *, show_all: bool, tally: TableTally | None = None
             ) -> dict[OutputFormat, Output]:
    """eval's own formats for the output seam (JSON and YAML are the run's document)."""
    import functools

    from kubectl_kyrec.cli.terminal import output_width
    from kubectl_kyrec.render import eval_output

    baselined = ci.baselined(run.results)

    def github(spec: OutputSpec) -> str:
        from kubectl_kyrec.render.impact_output import github_annotations

        text = ci.render("github")
        return text + "".join(line + "\n" for line in github_annotations(run.impact)) \
            if run.impact is not None else text

    return {
        # the table: the terminal's width on a terminal, none on a pipe
        OutputFormat.TABLE: lambda spec: functools.partial(eval_output.write_table, run, show_all=show_all,
                                                           width=output_width(spec.path), baselined=baselined,
                                                           tally=tally),
        OutputFormat.WIDE: lambda spec: functools.partial(eval_output.write_table, run, wide=True,
                                                          baselined=baselined, tally=tally),
        OutputFormat.REPORTS: lambda spec: functools.partial(eval_output.write_reports, run),
        **ci.outputs(("junit", "sarif")), OutputFormat.GITHUB: github,
    }
