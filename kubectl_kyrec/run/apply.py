"""`apply`: the diff against the live cluster, the plan it implies (reconcile/plan.py), and the writer
carrying it out (cluster/writer.py). Always live: a plan from files could only be applied to a cluster
that may have changed since, so `--state` is refused by the command."""

from __future__ import annotations

import datetime
import importlib
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.cluster.writer import DryRun, Outcome, Status, execute
from kubectl_kyrec.errors import ExitCode, FailedRead, worst
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import EvalError
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange, PlanOptions, plan_changes
from kubectl_kyrec.render.envelope import error_entries
from kubectl_kyrec.run.unreadable import with_failed_reads

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.interrupts import Interrupt
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
    from kubectl_kyrec.model import Ref
    from kubectl_kyrec.reconcile.deletions import DeletionDiff
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff
    from kubectl_kyrec.reconcile.reports import ReportDiff
    from kubectl_kyrec.run.diff import DiffRunOptions


@dataclass(frozen=True)
class ApplyRunOptions:
    now: datetime.datetime
    plan: PlanOptions = field(default_factory=PlanOptions)
    dry_run: DryRun = DryRun.NONE
    selection: Selection = Selection()      # -n, --kind, -l, --policy-name: every action stays inside
    all_policies: bool = False
    report_api: str | None = None
    # --downstreams / --reports: one domain only, as in `diff`; neither: downstreams, and reports when the
    # cluster holds some (or --write-reports asks for them)
    only_downstreams: bool = False
    only_reports: bool = False
    kyverno_config_path: str | None = None
    skip_resource_filters: bool = True
    jobs: int = 1
    concurrency: int = 8            # --concurrency: writes in flight at once (cluster/writer.py)

    def diff_options(self, *, complete: bool) -> DiffRunOptions:
        """What `diff` with the same flags compares: the plan's scope is the diff's. `complete`: the policies
        are all there are (--all-policies, or the cluster's own)."""
        from kubectl_kyrec.run.diff import DiffRunOptions

        return DiffRunOptions(now=self.now, selection=self.selection, only_downstreams=self.only_downstreams,
                              only_reports=self.only_reports, all_policies=complete, report_api=self.report_api,
                              kyverno_config_path=self.kyverno_config_path,
                              skip_resource_filters=self.skip_resource_filters, jobs=self.jobs,
                              compare_reports=self.plan.write_reports,
                              # the plan and the outcomes name no cause: neither decides what is written
                              causes=False)


@dataclass
class ApplyResult:
    plan: Plan
    outcomes: list[Outcome] = field(default_factory=list)
    downstreams: DownstreamDiff | None = None
    reports: ReportDiff | None = None
    deletions: DeletionDiff | None = None
    errors: list[EvalError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    requests: Mapping[str, int] = field(default_factory=dict)
    declined: bool = False
    # the live read's LISTs that failed: nothing was written on them (reconcile/reads.py), and exit 5
    failed_reads: list[FailedRead] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        counts = {str(s): 0 for s in Status}
        counts.update(Counter(str(o.status) for o in self.outcomes))
        return counts

    @property
    def exit_code(self) -> ExitCode:
        code = ExitCode.INPUT if self.errors else ExitCode.CLEAN
        if any(o.status is Status.FAILED for o in self.outcomes):
            code = worst(code, ExitCode.APPLY_FAILED)
        return with_failed_reads(code, self.failed_reads)

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        return "ApplyResult", [
            ("fieldManager", self.plan.field_manager), ("force", self.plan.force),
            ("outcomes", [o.to_json() for o in self.outcomes]), ("summary", self.summary()),
            ("errors", error_entries(self.errors)),
            ("notices", list(self.notices))]


def compute_plan(options: ApplyRunOptions, source: LiveSource, *,
                 on_read: Callable[[], None] | None = None) -> ApplyResult:
    """Read the cluster, diff it as `diff` does (run.diff: the same scope, filters and Kyverno
    configuration), and plan; nothing is written. `on_read`: called once everything is read (the terminal's
    progress moves on to evaluating and planning)."""
    from kubectl_kyrec.reconcile.reads import ReadRecord
    from kubectl_kyrec.run.diff import EVALUATION_MODULES, diff_inputs

    ahead: list[threading.Thread] = []
    inputs = source.read(while_listing=lambda: ahead.append(_import_ahead(EVALUATION_MODULES)))
    for thread in ahead:
        thread.join()
    if on_read is not None:
        on_read()
    diff = diff_inputs(options.diff_options(complete=options.all_policies or source.policies_from_cluster), inputs)
    result = ApplyResult(Plan(()), downstreams=diff.downstreams, reports=diff.reports, deletions=diff.deletions,
                         errors=diff.errors, notices=diff.notices, failed_reads=diff.failed_reads)
    expected = diff.expected_reports()
    state = inputs.state

    def actual_of(ref: Ref) -> Mapping[str, Any] | None:
        doc = state.get_object(ref.api_version, ref.kind, ref.namespace, ref.name)
        return doc.obj if doc is not None else None

    def expected_of(ref: Ref) -> Mapping[str, Any] | None:
        return expected.get((ref.api_version, ref.kind, ref.namespace, ref.name))

    plan = plan_changes(result.downstreams, result.reports, options.plan, actual_of=actual_of,
                        expected_of=expected_of, record=ReadRecord.of(state), deletions=result.deletions)
    result.plan = Plan(tuple(_unless_unread(c, state) for c in plan.changes), plan.field_manager, plan.force)
    return result


def _import_ahead(names: tuple[str, ...]) -> threading.Thread:
    """`names` imported on a thread of their own, started as the LISTs are sent: the main thread waits on the
    server then, and the evaluation's modules are a tenth of a second of CPU it would spend after the reads
    (bench/apply_prewrite.py). Joined before the diff (which may fork workers). A module that cannot be
    imported is left to the import where it is used, which raises it there."""
    def run() -> None:
        for name in names:
            try:
                importlib.import_module(name)
            except ImportError:
                return

    thread = threading.Thread(target=run, name="kyrec-import-ahead", daemon=True)
    thread.start()
    return thread


def _unless_unread(change: PlannedChange, state: ClusterState) -> PlannedChange:
    """A create or apply whose kind the read did not list could land on an object kyrec never saw (an
    unowned one, which Kyverno would skip): refused."""
    ref = change.object
    if change.action in (Action.CREATE, Action.APPLY, Action.UPDATE) and \
            state.is_listed(ref.api_version, ref.kind, ref.namespace) is not True:
        return replace(change, action=Action.SKIP, message=f"not written: {ref.kind} objects were not read "
                                                           "(cannot tell whether one is already there)")
    return change


def run_apply(options: ApplyRunOptions, source: LiveSource, *, confirm: Callable[[ApplyResult], bool],
              on_plan: Callable[[ApplyResult], None] | None = None,
              on_outcome: Callable[[Outcome], None] | None = None,
              interrupt: Interrupt | None = None,
              on_answer: Callable[[int, int], None] | None = None,
              on_read: Callable[[], None] | None = None) -> ApplyResult:
    """Plan, show it (`on_plan`), ask `confirm` (False declines every write), carry the plan out; a signal
    while writing stops new requests (`interrupt` records it, cluster/writer.py). `on_outcome` gets each
    outcome in the plan's order, `on_answer(done, planned)` the count of writes answered as they come,
    `on_read()` the end of the reads."""
    result = compute_plan(options, source, on_read=on_read)
    if on_plan is not None:
        on_plan(result)
    if result.errors:
        return result       # a policy that does not evaluate: nothing is written on a partial picture
    if result.plan.writes and options.dry_run is DryRun.NONE and not confirm(result):
        result.declined = True
        return result
    client, found = source.open()
    result.outcomes = execute(client if options.dry_run is not DryRun.CLIENT else None, result.plan,
                              resolve_kind=found.find, dry_run=options.dry_run, on_outcome=on_outcome,
                              interrupt=interrupt, concurrency=options.concurrency, on_answer=on_answer)
    result.requests = dict(client.counts)
    return result
