"""`kubectl kyrec diff`: what the policies say should exist against a state (run.diff). Read-only."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.ci_outputs import ci_flags
from kubectl_kyrec.cli.common import (
    OutputFormat,
    OutputSpec,
    emit_warnings,
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
    selection_of,
    state_source,
    write_output,
)
from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.render.dispatch import write_outputs

if TYPE_CHECKING:
    from kubectl_kyrec.cli.external_diff import Command
    from kubectl_kyrec.reconcile.diff_pair import DiffPair
    from kubectl_kyrec.run.diff import DiffResult

DIFF_FORMATS = (OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.YAML, OutputFormat.JSON, OutputFormat.DIFF,
                OutputFormat.JUNIT, OutputFormat.SARIF, OutputFormat.GITHUB)


def _color(spec: OutputSpec, color: str) -> bool:
    from kubectl_kyrec.cli.terminal import color_enabled

    if spec.path is not None and color != "always":
        return False
    return color_enabled(color)


# the outputs a person reads: where KUBECTL_EXTERNAL_DIFF shows the unified diffs (a set: completion reads the
# one tuple of formats a command module declares as its `-o` values)
HUMAN_FORMATS = frozenset({OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.DIFF})


def render(run: DiffResult, spec: OutputSpec, *, color: str, unified: bool = True, show_all: bool = False,
           baselined: frozenset[int] = frozenset()) -> str:
    """One human output (table, wide, diff). `unified`: they include the built-in unified diffs (False when
    KUBECTL_EXTERNAL_DIFF shows them instead). `baselined`: the ids of the changes the baseline accepts,
    marked in the tables."""
    from kubectl_kyrec.render import diff_output
    from kubectl_kyrec.render.report_diff_table import render_report_diff

    wide = spec.format is OutputFormat.WIDE
    if spec.format in (OutputFormat.TABLE, OutputFormat.WIDE):
        from kubectl_kyrec.cli.terminal import output_width

        width = output_width(spec.path)
        report_table = (render_report_diff(run.reports, wide=wide, width=width, all_rows=show_all or wide,
                                           baselined=baselined)
                        if run.reports is not None else None)
        table = diff_output.render_table(run.downstreams, report_table, wide=wide, color=_color(spec, color),
                                         unified=unified, width=width, show_all=show_all, baselined=baselined,
                                         deletions=run.deletions)
        report_diffs = (diff_output.render_report_unified(run.reports, color=_color(spec, color))
                        if run.reports is not None and unified else "")
        # like the downstreams' unified diffs, each stale report's results follow the table
        return table + ("\n" + report_diffs if report_diffs else "")
    if not unified:
        return ""
    parts = [diff_output.render_unified(run.downstreams, color=_color(spec, color))
             if run.downstreams is not None else ""]
    if run.reports is not None:
        parts.append(diff_output.render_report_unified(run.reports, color=_color(spec, color)))
    return "".join(parts)


def _pairs(run: DiffResult) -> list[DiffPair]:
    """What the unified diffs show, downstreams then reports (the built-in order)."""
    out = [c.shown for c in (run.downstreams.changes if run.downstreams is not None else ()) if c.shown]
    out += [c.shown for c in (run.reports.changes if run.reports is not None else ()) if c.shown]
    return out


def _with_external(run: DiffResult, spec: OutputSpec, color: str, cmd: Command, show_all: bool,
                   baselined: frozenset[int]) -> str | None:
    """A human output whose unified diffs the KUBECTL_EXTERNAL_DIFF program shows, after kyrec's tables:
    its text, or None when the program was handed stdout itself (and kyrec's text written before it)."""
    from kubectl_kyrec.cli.external_diff import can_inherit, run_external
    from kubectl_kyrec.errors import incomplete_line
    from kubectl_kyrec.render.dispatch import TABLES

    text = render(run, spec, color=color, unified=False, show_all=show_all, baselined=baselined)
    pairs = _pairs(run)
    if not pairs:
        return text
    if spec.path is None and can_inherit():
        # kubectl hands the program its own stdout: a terminal stays a terminal for it (colour, pagers); kyrec
        # writes its tables first, so they start with the line write_outputs gives a partial run's tables
        if run.failed_reads and spec.format in TABLES:
            text = f"{incomplete_line(run.failed_reads)}\n{text}"
        if text:
            write_output(spec, text, color=_color(spec, color))
        run_external(cmd, pairs, inherit=True)
        return None
    shown = run_external(cmd, pairs, inherit=False)
    return text + ("\n" if text and shown else "") + shown


@click.command("diff")
@flags.policy
@flags.resource
@flags.kustomize
@flags.exception
@flags.state
@click.option("--live", is_flag=True, help="Read the cluster (kubeconfig) instead of --state.")
@flags.crd
@flags.values
@flags.context_file
@flags.kyverno_config
@flags.skip_resource_filters
@flags.now
@flags.registry
@flags.insecure_registry
@flags.registry_config
@flags.outputs(DIFF_FORMATS)
@flags.only_downstreams
@flags.only_reports
@flags.all_policies
@flags.policy_name
@flags.kind
@flags.selector
@flags.report_api
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour unified diffs (auto: on a terminal, not with NO_COLOR set or TERM=dumb).")
@click.option("--no-color", "color", flag_value="never", help="Same as --color=never.")
@click.option("--show-all", is_flag=True,
              help="Table: list in-sync downstreams and current reports too (by default they are counted, "
                   "not listed).")
@flags.exit_code
@jobs_flag
@ci_flags
@kubectl_flags
@handle_errors
def diff_command(policy_paths: tuple[str, ...], resource_paths: tuple[str, ...], exception_paths: tuple[str, ...],
                 state_paths: tuple[str, ...], live: bool, crd_paths: tuple[str, ...], values_path: str | None,
                 context_path: str | None, kyverno_config_path: str | None, skip_resource_filters: bool,
                 now_text: str | None, registry: bool, insecure_registries: tuple[str, ...],
                 registry_config: str | None,
                 outputs: tuple[str, ...], only_downstreams: bool, only_reports: bool, all_policies: bool,
                 policy_names: tuple[str, ...], kinds: tuple[str, ...], selector: str | None,
                 report_api: str | None, color: str, show_all: bool, exit_code_flag: bool, jobs: int,
                 **kube: object) -> None:
    """Compare what the policies should have produced with a cluster state.

    Downstreams are missing, drifted, in-sync, conflict, orphan or undetermined (with a reason); reports
    current, missing, stale, orphan, duplicate or misnamed. Exit 1 on findings Kyverno would act on,
    3 on bad input, 0 when everything is as the policies say.

    Report columns: NEXT SCAN is what Kyverno's background controller will do for the subject at its
    next pass (full: evaluate every policy again, partial: only policies whose version changed, none:
    nothing yet); OLDEST EPHEMERAL is the age of the oldest ephemeral report for the subject that the
    aggregator has not merged into its report yet (-: none waiting).

    KUBECTL_EXTERNAL_DIFF selects your own diff program for the unified diffs of the table, wide and
    diff outputs (never json or yaml), as kubectl diff does: it is run with two directories, LIVE-* and
    MERGED-*, holding one masked YAML file per drifted object or stale report (named
    <group>.<version>.<Kind>.<namespace>.<name>), then the variable's other words (only letters, digits,
    '-' and '=' are kept), e.g. KUBECTL_EXTERNAL_DIFF="colordiff -N -u". Its exit status 0 or 1 leaves
    kyrec's exit code as the findings decide it; above 1, or a program that cannot run, is exit 74.

    \b
    Example:
      kubectl kyrec diff -p policies/ --state state.json
      kubectl kyrec diff -p policies/ --reports -o wide        # the cluster of the current context
      KUBECTL_EXTERNAL_DIFF="diff -u -N --color=always" kubectl kyrec diff -p policies/ --state state.json
    """

    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun, diff_findings, diff_rows
    from kubectl_kyrec.cli.external_diff import command as external_diff_command
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.run.diff import DiffRunOptions, run_diff

    specs = parse_outputs(list(outputs), DIFF_FORMATS)
    now = parse_now(now_text)
    if live and state_paths:
        raise UsageError("--live and --state exclude each other")
    source, all_policies = state_source(
        FileSource(policy_paths=policy_paths, resource_paths=resource_paths, exception_paths=exception_paths,
                   state_paths=state_paths, crd_paths=crd_paths, values_path=values_path, context_path=context_path,
                   kustomize_dirs=kube.get("kustomize_dirs", ()),  # type: ignore[arg-type]
                   schema=policy_schema_check()),
        kube, reports=not only_downstreams, downstreams=not only_reports, all_policies=all_policies,
        needs="diff needs policies: -p PATH")
    options = DiffRunOptions(now=now, selection=selection_of(kube, selector, policy_names, kinds),
                             only_downstreams=only_downstreams, only_reports=only_reports,
                             all_policies=all_policies, report_api=report_api, kyverno_config_path=kyverno_config_path,
                             skip_resource_filters=skip_resource_filters, jobs=resolve_jobs(jobs),
                             registry=registry_access(registry, insecure_registries, registry_config, now))
    with input_phases(source) as phased:
        run = run_diff(options, phased)
    emit_warnings(run.warnings)
    report_run(run)
    ci = CiRun.prepare("diff", diff_findings(run), CiOptions.from_flags(kube), run.failed_reads)
    baselined = ci.baselined(diff_rows(run))
    external = external_diff_command(os.environ)

    def human(spec: OutputSpec) -> str | None:
        if external is not None:
            return _with_external(run, spec, color, external, show_all, baselined)
        return render(run, spec, color=color, show_all=show_all, baselined=baselined)

    # click strips escape sequences off a pipe unless told the colour is wanted
    write_outputs(run, specs, {**ci.outputs(), **dict.fromkeys(HUMAN_FORMATS, human)},
                  extra=ci.document_extra, color=lambda spec: _color(spec, color))
    ci.finish(specs, _counts(run))
    exit_with(ci.exit_code(run.exit_code), exit_code_flag, run.failed_reads)


def _counts(run: Any) -> str:
    """`downstreams 2 drifted, 3 in-sync; reports 1 current, 3 missing`: the tables' counts in one line."""
    from kubectl_kyrec.cli.ci_outputs import nonzero_counts

    parts = [f"{name} {nonzero_counts(domain.summary()) or 'none'}"
             for name, domain in (("downstreams", run.downstreams), ("reports", run.reports)) if domain is not None]
    return "; ".join(parts)
