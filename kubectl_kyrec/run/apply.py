"""`apply`: the diff against the live cluster, the plan it implies (reconcile/plan.py), and the writer
carrying it out (cluster/writer.py). Always live: a plan from files could only be applied to a cluster
that may have changed since, so `--state` is refused by the command."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.cluster.writer import DryRun, Outcome, Status, execute
from kubectl_kyrec.errors import ExitCode, worst
from kubectl_kyrec.model import EvalError
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange, PlanOptions, plan_changes
from kubectl_kyrec.run.unreadable import unreadable_lines, with_unreadable

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.cluster.state import ClusterState
    from kubectl_kyrec.interrupts import Interrupt
    from kubectl_kyrec.k8s.labels import Selector
    from kubectl_kyrec.model import Ref
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff
    from kubectl_kyrec.reconcile.reports import ReportDiff


@dataclass(frozen=True)
class ApplyRunOptions:
    now: datetime.datetime
    plan: PlanOptions = field(default_factory=PlanOptions)
    dry_run: DryRun = DryRun.NONE
    namespace: str | None = None
    selector: Selector | None = None
    policy_names: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    all_policies: bool = False
    report_api: str | None = None
    # --downstreams / --reports: one domain only, as in `diff`; neither: downstreams, and reports when the
    # cluster holds some (or --write-reports asks for them)
    only_downstreams: bool = False
    only_reports: bool = False


@dataclass
class ApplyResult:
    plan: Plan
    outcomes: list[Outcome] = field(default_factory=list)
    downstreams: DownstreamDiff | None = None
    reports: ReportDiff | None = None
    errors: list[EvalError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    requests: Mapping[str, int] = field(default_factory=dict)
    declined: bool = False
    # the live read's LISTs that failed: nothing was written on them (reconcile/reads.py), and exit 5
    unreadable: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        counts = {str(s): 0 for s in Status}
        counts.update(Counter(str(o.status) for o in self.outcomes))
        return counts

    @property
    def exit_code(self) -> ExitCode:
        code = ExitCode.INPUT if self.errors else ExitCode.CLEAN
        if any(o.status is Status.FAILED for o in self.outcomes):
            code = worst(code, ExitCode.APPLY_FAILED)
        return with_unreadable(code, self.unreadable)

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        return "ApplyResult", [
            ("fieldManager", self.plan.field_manager), ("force", self.plan.force),
            ("outcomes", [o.to_json() for o in self.outcomes]), ("summary", self.summary()),
            ("errors", [{"message": e.message, "location": e.source.as_location() if e.source else None}
                        for e in self.errors]),
            ("notices", list(self.notices))]


def compute_plan(options: ApplyRunOptions, source: LiveSource) -> ApplyResult:
    """Read the cluster, diff, and plan; nothing is written."""
    from kubectl_kyrec.reconcile.reads import ReadRecord
    from kubectl_kyrec.run.diff import evaluation_notices, is_report, run_downstreams
    from kubectl_kyrec.run.reports import report_diff_for, undetermined_notices
    from kubectl_kyrec.run.select import check_policy_names, resolve_kinds

    inputs = source.read()
    # as diff does: a mistyped --policy-name or --kind is refused, not a plan that silently does nothing
    check_policy_names(options.policy_names, inputs.policies)
    if options.kinds:
        options = replace(options, kinds=resolve_kinds(options.kinds, inputs.kinds, inputs.subjects))
    result = ApplyResult(Plan(()), notices=[str(n) for n in inputs.notices], unreadable=unreadable_lines(inputs.state))
    complete = options.all_policies or source.policies_from_cluster
    both = options.only_downstreams == options.only_reports
    outcome = None
    if both or options.only_downstreams:
        outcome, result.downstreams = run_downstreams(inputs, now=options.now, policy_names=options.policy_names,
                                                      complete=complete, namespace=options.namespace,
                                                      kinds=options.kinds, selector=options.selector)
        result.errors.extend(outcome.errors)
        result.notices.extend(str(n) for n in outcome.notices)
        result.notices.extend(evaluation_notices(outcome))
    expected: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    if options.only_reports or (both and (options.plan.write_reports
                                          or any(is_report(d.obj) for d in inputs.state.objects))):
        diff, scope = report_diff_for(inputs, now=options.now, report_api=options.report_api,
                                      kyverno_config_path=None, all_policies=complete,
                                      namespace=options.namespace or "", policy_names=options.policy_names,
                                      kinds=options.kinds, selector=options.selector, generating=outcome)
        result.reports = diff
        result.notices.extend(undetermined_notices(diff))
        for report in scope.expected:
            meta = report.get("metadata") or {}
            expected[(str(report.get("apiVersion")), str(report.get("kind")), str(meta.get("namespace") or ""),
                      str(meta.get("name")))] = report
    state = inputs.state

    def actual_of(ref: Ref) -> Mapping[str, Any] | None:
        doc = state.get_object(ref.api_version, ref.kind, ref.namespace, ref.name)
        return doc.obj if doc is not None else None

    def expected_of(ref: Ref) -> Mapping[str, Any] | None:
        return expected.get((ref.api_version, ref.kind, ref.namespace, ref.name))

    plan = plan_changes(result.downstreams, result.reports, options.plan, actual_of=actual_of,
                        expected_of=expected_of, record=ReadRecord.of(state))
    result.plan = Plan(tuple(_unless_unread(c, state) for c in plan.changes), plan.field_manager, plan.force)
    return result


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
              interrupt: Interrupt | None = None) -> ApplyResult:
    """Plan, show it (`on_plan`), ask `confirm` (False declines every write), carry the plan out; a signal
    while writing stops between objects (`interrupt` records it, cluster/writer.py)."""
    result = compute_plan(options, source)
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
                              interrupt=interrupt)
    result.requests = dict(client.counts)
    return result
