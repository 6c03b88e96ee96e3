"""`kubectl kyrec apply`: carry out the plan `diff` implies, on the live cluster (run.apply)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import (
    emit_errors,
    emit_notices,
    exit_with,
    handle_errors,
    kubectl_flags,
    parse_now,
    selection_of,
)
from kubectl_kyrec.cluster.client import MAX_IN_FLIGHT
from kubectl_kyrec.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.cluster.writer import Outcome
    from kubectl_kyrec.reconcile.plan import Plan
    from kubectl_kyrec.render.progress import Handle
    from kubectl_kyrec.run.apply import ApplyResult, ApplyRunOptions


def plan_lines(plan: Plan) -> list[str]:
    writes = plan.writes
    head = (f"plan: {len(writes)} write(s) as field manager {plan.field_manager}"
            + (" with force" if plan.force else " without force") + f", {len(plan.changes) - len(writes)} skipped")
    lines = [head]
    for change in plan.changes:
        ref = change.object
        where = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
        reason = f"{change.klass}" + (f"/{change.reason}" if change.reason else "")
        lines.append(f"  {change.action:<7} {ref.kind} {where} ({reason}): {change.message}")
    return lines


def outcome_line(outcome: Outcome) -> str:
    ref = outcome.change.object
    where = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
    code = f" [{outcome.http_status}]" if outcome.http_status else ""
    return f"{outcome.status:<13} {outcome.change.action:<7} {ref.kind} {where}{code}: {outcome.message}"


@click.command("apply")
@flags.live_policy
@flags.live_resource
@flags.exception
@flags.state(hidden=True)
@flags.values
@flags.kyverno_config
@flags.skip_resource_filters
@flags.now
@click.option("--prune", is_flag=True, help="Delete orphaned downstreams, and orphan and duplicate policy reports "
              "(with uid/resourceVersion preconditions).")
@click.option("--deletions", is_flag=True, help="Carry out the DeletingPolicies' scheduled deletions now, each "
              "conditional on the uid and resourceVersion read, with the policy's propagation policy.")
@flags.only_downstreams
@flags.only_reports
@click.option("--write-reports", is_flag=True, help="Also create missing reports (never overwrites one).")
@click.option("--field-manager", default="kyverno-generate", show_default=True,
              help="Field manager of the server-side applies.")
@click.option("--force/--no-force", default=True, show_default=True,
              help="Take fields over from other managers (as Kyverno does); --no-force reports 409 conflicts.")
@click.option("--dry-run", "dry_run", type=click.Choice(["none", "server", "client"]), default="none",
              show_default=True, help="server: send dryRun=All; client: send nothing.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before writing (needed without a terminal).")
@click.option("--concurrency", type=click.IntRange(1, MAX_IN_FLIGHT), default=8, show_default=True, metavar="N",
              help="Writes in flight at once (as kubectl diff's flag); 1 writes one object after the other in the "
                   "plan's order. Objects still wait for the Namespace or CRD the plan writes for them, and "
                   "deletes for every create and update; outcomes are printed in the plan's order.")
@flags.all_policies
@flags.policy_name
@flags.kind
@flags.selector
@click.option("-o", "--output", "output", type=click.Choice(["table", "json", "yaml"]), default="table",
              show_default=True)
@kubectl_flags
@handle_errors
def apply_command(policy_paths: tuple[str, ...], resource_paths: tuple[str, ...], exception_paths: tuple[str, ...],
                  state_paths: tuple[str, ...], values_path: str | None, kyverno_config_path: str | None,
                  skip_resource_filters: bool, now_text: str | None, prune: bool, deletions: bool,
                  only_downstreams: bool, only_reports: bool, write_reports: bool, field_manager: str, force: bool,
                  dry_run: str, yes: bool, concurrency: int,
                  all_policies: bool, policy_names: tuple[str, ...], kinds: tuple[str, ...], selector: str | None,
                  output: str, **kube: object) -> None:
    """Correct drift on the cluster of the current context.

    Computes the plan `diff` shows and carries it out: missing and drifted downstreams by server-side apply
    (as kyverno-generate, with force, as Kyverno writes them); orphans deleted only with --prune, each
    delete conditional on the uid and resourceVersion read; what DeletingPolicies' next runs delete only with
    --deletions. Never touches conflict, undetermined,
    trigger-unknown or unenforced objects, nor anything outside -n, -l, --kind, --policy-name; never writes
    or deletes on a read that failed. Exit 4 when a write failed, 5 on a cluster error.

    \b
    Example:
      kubectl kyrec apply -p policies/ --dry-run=server
    """
    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.cluster.live_source import live_source
    from kubectl_kyrec.cluster.writer import DryRun
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.plan import PlanOptions
    from kubectl_kyrec.run.apply import ApplyRunOptions

    mode = DryRun(dry_run)
    _check_flags(state_paths, field_manager, only_downstreams and write_reports, mode is DryRun.NONE and not yes)
    files = FileSource(policy_paths=policy_paths, resource_paths=resource_paths, exception_paths=exception_paths,
                       values_path=values_path, schema=policy_schema_check())
    # no reads for causes (Kyverno's UpdateRequests and Deployments, the RBAC objects, access reviews): apply
    # names none, and evidence decides no write (cluster/live.py); `diff` shows them
    source = live_source(files, kube, reports=not only_downstreams, downstreams=not only_reports, offline=False,
                         update_requests=False)
    options = ApplyRunOptions(
        now=parse_now(now_text), dry_run=mode, selection=selection_of(kube, selector, policy_names, kinds),
        all_policies=all_policies,
        only_downstreams=only_downstreams, only_reports=only_reports, kyverno_config_path=kyverno_config_path,
        skip_resource_filters=skip_resource_filters, concurrency=concurrency,
        plan=PlanOptions(prune=prune, reports=prune, write_reports=write_reports, deletions=deletions,
                         field_manager=field_manager, force=force))
    exit_with(_Session(source, yes=yes, output=output).carry_out(options))


def _check_flags(state_paths: tuple[str, ...], field_manager: str, downstreams_and_write_reports: bool,
                 would_ask: bool) -> None:
    """Usage errors before anything is read. `would_ask`: the run writes and --yes was not given."""
    if state_paths:
        raise UsageError("apply works on the live cluster, not on --state files: a plan from files could "
                         "overwrite changes made since they were written; drop --state")
    if not field_manager.strip():
        # the API server refuses every server-side apply without one (fieldManager is required)
        raise UsageError("--field-manager: must not be empty")
    if downstreams_and_write_reports:
        raise UsageError("--write-reports creates reports: it cannot go with --downstreams")
    if would_ask and not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError("apply writes to the cluster and there is no terminal to ask on: pass --yes, or "
                         "--dry-run=server|client to see what it would do")


class _Session:
    """One apply on a terminal or in a script: the plan shown, the question asked, each outcome printed as
    it comes, and what a signal leaves behind."""

    def __init__(self, source: LiveSource, *, yes: bool, output: str) -> None:
        self.source = source
        self.yes = yes
        self.output = output
        self.table = output == "table"
        self.prompting = False
        self.planned: list[ApplyResult] = []
        self.seen: list[Outcome] = []
        self.progress: Handle | None = None      # `applied N of T writes` on stderr, on a terminal only
        # the progress line goes before a line printed on the same terminal
        self.shared_terminal = self.table and sys.stdout.isatty()

    def confirm(self, result: ApplyResult) -> bool:
        if self.yes:
            return True
        context = self.source.client.config.context if self.source.client else "?"
        self.prompting = True
        answer = click.confirm(f"apply {len(result.plan.writes)} write(s) to context {context}?", err=True)
        self.prompting = False
        return answer

    def show_plan(self, result: ApplyResult) -> None:
        from kubectl_kyrec.errors import incomplete_line

        self.planned.append(result)
        self._clear_progress()      # `evaluating and planning` goes before the plan's lines
        if result.failed_reads and self.table:
            # the first line on stdout, as every command's table starts when reads failed (render/dispatch.py)
            click.echo(incomplete_line(result.failed_reads))
        # one write for the whole plan: a line at a time was an isatty check, a write and a flush per planned
        # object before the first of 3,000 creates could be sent (bench/apply_prewrite.py); same text
        click.echo("\n".join(plan_lines(result.plan)), err=not self.table)

    def on_outcome(self, outcome: Outcome) -> None:
        self.seen.append(outcome)
        if self.table:
            if self.shared_terminal:
                self._clear_progress()
            click.echo(outcome_line(outcome))

    def on_answer(self, done: int, planned: int) -> None:
        progress = self.progress
        if progress is None or progress.tick is None or progress.expect is None:
            return
        if done == 0:       # the writes start: the rate counts from here
            progress.expect(planned)
        else:
            progress.tick(None)

    def _planning(self) -> None:
        if self.progress is not None and self.progress.phase is not None:
            self.progress.phase("evaluating and planning")

    def _clear_progress(self) -> None:
        if self.progress is not None and self.progress.clear is not None:
            self.progress.clear()

    def _notify(self, line: str) -> None:
        self._clear_progress()
        click.echo(f"interrupted: {line}", err=True)

    def carry_out(self, options: ApplyRunOptions) -> ExitCode:
        """Run the apply; the result printed, the exit code returned."""
        from kubectl_kyrec.interrupts import Interrupt, Interrupted
        from kubectl_kyrec.load.files import reading_files
        from kubectl_kyrec.render.progress import Progress
        from kubectl_kyrec.run.apply import run_apply

        # SIGINT/SIGTERM: while reading and planning they end the run at once (nothing written); from the first
        # write on, the writer sends no new request. Either way the summary below is printed, then exit 130/143.
        guard = Interrupt(notify=self._notify)
        with guard.installed():
            try:
                guard.arm()
                # the phases on a terminal: `loading N files`, the LISTs, `evaluating and planning`, then
                # `applied N of T writes` (the plan's lines in between)
                with Progress.on_terminal("applied", phase="loading inputs", unit="writes", every=1) as progress, \
                        reading_files(progress.loading):
                    self.progress = progress
                    result = run_apply(options, self.source, confirm=self.confirm, on_plan=self.show_plan,
                                       on_outcome=self.on_outcome, interrupt=guard, on_answer=self.on_answer,
                                       on_read=self._planning)
                guard.defer()
            except Interrupted:
                result = self._interrupted()
            _print_result(result, self.output)
            if guard.signum is None:
                return result.exit_code
            counts = result.summary()
            detail = f"{counts['not-attempted']} not attempted" if self.planned else "while reading; nothing written"
            if counts["unknown"]:
                detail += f", {counts['unknown']} unknown (the server may or may not have written them)"
            click.echo(f"{Interrupted(guard.signum).line}: {detail}", err=True)
            return ExitCode(Interrupted(guard.signum).exit_code)

    def _interrupted(self) -> ApplyResult:
        """What an interrupted run did: the plan's objects past the last outcome not attempted."""
        from kubectl_kyrec.cluster.writer import not_attempted
        from kubectl_kyrec.reconcile.plan import Plan
        from kubectl_kyrec.run.apply import ApplyResult
        from kubectl_kyrec.run.unreadable import failed_reads

        if self.prompting:
            click.echo(err=True)        # end the line the confirmation prompt left open
        # interrupted while planning, after the read: its failed LISTs are still said
        source = self.source
        result = self.planned[-1] if self.planned else ApplyResult(
            Plan(()), failed_reads=failed_reads(source.last.state) if source.last is not None else [])
        # a signal landing after the writer's last object still finds the outcomes it recorded
        seen = len(self.seen)
        result.outcomes = [*self.seen, *(not_attempted(c, "interrupted before this object")
                                         for c in result.plan.changes[seen:])]
        for outcome in result.outcomes[seen:]:
            self.on_outcome(outcome)
        return result


def _print_result(result: ApplyResult, output: str) -> None:
    emit_notices(result.notices)
    emit_errors(result.errors)
    if result.declined:
        click.echo("declined: nothing written", err=True)
    if output == "table":
        summary = result.summary()
        click.echo("summary: " + ", ".join(f"{k}: {v}" for k, v in summary.items()))
    else:
        from kubectl_kyrec.render.envelope import run_document, to_json, to_yaml, whole_document

        doc = whole_document(run_document(result))
        click.echo(to_json(doc) if output == "json" else to_yaml(doc), nl=False)
    for read in result.failed_reads:     # before an interruption's line, which says how the run ended
        click.echo(read.line(), err=True)
