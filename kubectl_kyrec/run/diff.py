"""`diff`: what the policies say should exist against a state. Read-only.

Two domains: downstreams of generating policies (docs/semantics/downstreams.md) and policy reports of validating
policies (section 5). Both by default; `only_downstreams` or `only_reports` narrows to one. Beside the
downstreams (a downstream-like domain of its own, `deletion`): what each DeletingPolicy's next scheduled run
would delete from the state (reconcile/deletions.py).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import ExitCode, FailedRead, worst
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import EvalError
from kubectl_kyrec.reconcile.findings import Locate, locator_for
from kubectl_kyrec.run.unreadable import failed_reads, known_kinds, with_failed_reads

# what diff_inputs imports as it goes, the GeneratingPolicy engine (and the CEL libraries) first: `apply`
# imports them while its LISTs are answered (run/apply.py); one missing here is imported where it is used
EVALUATION_MODULES = ("kubectl_kyrec.evaluate.generating.engine", "kubectl_kyrec.run.generate",
                      "kubectl_kyrec.run.providers", "kubectl_kyrec.evaluate.policy_validation",
                      "kubectl_kyrec.run.select", "kubectl_kyrec.run.capture", "kubectl_kyrec.reconcile.selection",
                      "kubectl_kyrec.reconcile.classic_downstreams")

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
    from kubectl_kyrec.load.policy.generating import GeneratingPolicy
    from kubectl_kyrec.load.run_inputs.sources import Inputs, InputSource
    from kubectl_kyrec.model import Document, Ref
    from kubectl_kyrec.reconcile.causes import Evidence
    from kubectl_kyrec.reconcile.deletions import DeletionDiff
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff, StateIndex
    from kubectl_kyrec.reconcile.reports import ReportDiff


@dataclass(frozen=True)
class DiffRunOptions:
    now: datetime.datetime
    selection: Selection = Selection()      # -n, --kind, -l, --policy-name
    only_downstreams: bool = False
    only_reports: bool = False
    all_policies: bool = False
    report_api: str | None = None
    kyverno_config_path: str | None = None
    skip_resource_filters: bool = True       # Kyverno's reports controller flag, as installed by default
    jobs: int = 1                            # processes to evaluate in (`--jobs`)
    # compare reports even when the state holds none and --reports was not given (`apply --write-reports`
    # creates the missing ones)
    compare_reports: bool = False
    registry: Registry | None = None        # `--registry`: image verification against real registries
    # each finding's cause (reconcile/causes.py); `apply`, which shows none, skips them
    causes: bool = True


@dataclass
class DiffResult:
    downstreams: DownstreamDiff | None = None
    reports: ReportDiff | None = None
    # what the DeletingPolicies' next runs delete (None: the run has none, or compares reports only)
    deletions: DeletionDiff | None = None
    errors: list[EvalError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # where each object was read, for the file:line of CI formats (reconcile.findings.locator)
    locate: Locate | None = field(default=None, repr=False, compare=False)
    # reads that failed (a live read's, or a capture's record of them): the run is not complete (exit 5)
    failed_reads: list[FailedRead] = field(default_factory=list)
    # what Kyverno accepts with a warning (PolicySet.warning_lines): printed as `warning:` lines, never an exit code
    warnings: list[str] = field(default_factory=list)
    # the reports the policies imply, by (apiVersion, kind, namespace, name), built when first read: what
    # `apply` writes for a missing or stale one
    expected_reports: Callable[[], Mapping[tuple[str, str, str, str], Mapping[str, Any]]] = field(
        default=dict, repr=False, compare=False)

    @property
    def exit_code(self) -> ExitCode:
        from kubectl_kyrec.reconcile.reports import ReportClass

        code = ExitCode.INPUT if self.errors else ExitCode.CLEAN
        findings = bool(self.downstreams and self.downstreams.findings) or bool(
            self.deletions and self.deletions.findings)
        if self.reports is not None:
            # orphan reports describe nothing in scope; everything else that is not current is a finding
            findings = findings or any(c.klass not in (ReportClass.CURRENT, ReportClass.ORPHAN) and c.in_scope
                                       for c in self.reports.changes)
        return with_failed_reads(worst(code, ExitCode.FINDINGS) if findings else code, self.failed_reads)

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        from kubectl_kyrec.render.diff_output import diff_parts

        return "DiffResult", diff_parts(self.downstreams, self.reports, self.errors, self.notices, self.deletions)


def run_diff(options: DiffRunOptions, source: InputSource) -> DiffResult:
    return diff_inputs(options, source.read())


def diff_inputs(options: DiffRunOptions, inputs: Inputs) -> DiffResult:
    """`diff` on what a source read (`apply` plans from the same result, over the same scope)."""
    from kubectl_kyrec.run.providers import validated_for_run
    from kubectl_kyrec.run.select import check_policy_names, nothing_selected, resolve_kinds, selects_any

    selection = options.selection
    check_policy_names(selection.policy_names, inputs.policies)
    inputs, _ = validated_for_run(inputs, options.now, options.registry)
    if selection.kinds:
        selection = dataclasses.replace(selection, kinds=resolve_kinds(selection.kinds, inputs.kinds, inputs.subjects))
        options = dataclasses.replace(options, selection=selection)
    both = options.only_downstreams == options.only_reports
    run = DiffResult(errors=[EvalError(e.message, e.source) for e in inputs.policies.located_errors()],
                     notices=[str(n) for n in inputs.notices],
                     locate=locator_for(inputs.resources, inputs.state.objects, inputs.state.source == "files"),
                     failed_reads=failed_reads(inputs.state), warnings=inputs.policies.warning_lines())
    outcome = None
    if both or options.only_downstreams:
        outcome, run.downstreams = run_downstreams(inputs, now=options.now, selection=selection,
                                                   complete=options.all_policies)
        run.errors.extend(outcome.errors)
        run.notices.extend(str(n) for n in outcome.notices)
        run.notices.extend(evaluation_notices(outcome, selection))
        compared = any(c.actual is not None and c.expected is not None for c in run.downstreams.changes)
        if compared and not inputs.state.has_managed_fields:
            # kubectl hides managedFields unless asked; without them no field can be told to be foreign
            run.notices.append("the state has no managedFields, so fields another manager added to a generated "
                               "object (foreign-fields drift) cannot be seen: in-sync may hide them. Capture with "
                               "kubectl get ... -o json --show-managed-fields")
    if (both or options.only_downstreams) and inputs.policies.deleting:
        run.deletions, errors, notices = run_deletions(inputs, now=options.now, selection=selection,
                                                       kyverno_config_path=options.kyverno_config_path)
        run.errors.extend(e for e in errors if e not in run.errors)
        run.notices.extend(notices)
    has_reports = any(is_report(d.obj) for d in inputs.state.objects)
    if both and not has_reports and not options.compare_reports and (
            inputs.policies.validating or inputs.policies.admission or inputs.policies.classic
            or inputs.policies.image_validating):
        # the default diff compares reports only when the state holds some (a dump without them would
        # make every report "missing"); --reports asks for the comparison regardless. Reports that could not
        # be read are no evidence that there are none: that is said instead (and the run exits 5)
        unread = unread_report_kinds(inputs)
        run.notices.append(f"the policy reports could not be read ({', '.join(unread)}): report checks skipped"
                           if unread else
                           "the state holds no policy reports: report checks skipped (use --reports to run them)")
    if options.only_reports or (both and (has_reports or options.compare_reports)):
        run.reports, errors, notices, run.expected_reports = run_reports(inputs, options, generating=outcome)
        # a refused policy's error comes from the generate run and the report evaluation alike: once
        run.errors.extend(e for e in errors if e not in run.errors)
        run.notices.extend(notices)
    if options.causes:
        with_causes(run, inputs, options)
    from kubectl_kyrec.reconcile.downstreams import Reason
    from kubectl_kyrec.run.capture import run_gaps

    # (a GeneratingPolicy's trigger that failed on a lookup not read names no target kind: nothing to capture)
    not_captured = [(c.object.api_version, c.object.kind) for c in (run.downstreams.changes if run.downstreams
                    else ()) if c.reason is Reason.KIND_NOT_CAPTURED and c.object.kind]
    gaps = run_gaps(inputs, selection.namespace or "", not_captured)
    if gaps:
        run.notices.append(gaps)
    filters = selection.text()
    if filters and not selects_any(selection, inputs.subjects) and (
            run.reports is None or not any(c.in_scope for c in run.reports.changes)) and (
            run.deletions is None or not run.deletions.changes):
        run.notices.append(nothing_selected(filters, len(inputs.subjects)))
    return run


def cause_evidence(inputs: Inputs, *, now: datetime.datetime, kyverno_config_path: str | None,
                   skip_resource_filters: bool) -> Evidence:
    """What the causes of a run's findings are read from (reconcile/causes.py): the state's UpdateRequests,
    policies, RBAC objects and Kyverno's Deployments, Kyverno's configuration, and (live) the cluster's
    answers to access reviews."""
    from kubectl_kyrec.load.run_inputs.kyverno_config import kyverno_config_for, load_kyverno_config
    from kubectl_kyrec.reconcile.causes import Evidence

    objs = inputs.state.objs
    config = load_kyverno_config(kyverno_config_path) if kyverno_config_path else kyverno_config_for(objs)
    kinds = inputs.kinds

    def resource_of(api_version: str, kind: str) -> tuple[str, str] | None:
        info = kinds.by_kind(api_version, kind) if kinds is not None else None
        return (info.group, info.resource) if info is not None else None

    def listed(api_version: str, kind: str, namespace: str) -> bool | None:
        return inputs.state.is_listed(api_version, kind, namespace)

    return Evidence.of(objs, now=now, admission_filters=config.resource_filters,
                       scan_filters=config.background_scan_filters(skip_resource_filters=skip_resource_filters),
                       listed=listed, access=inputs.access.allowed if inputs.access is not None else None,
                       resource_of=resource_of, update_request_threshold=config.update_request_threshold,
                       read_failure=inputs.state.read_failure, serves=inputs.state.serves)


def review_notice(inputs: Inputs) -> list[str]:
    """A live run whose access reviews were refused says so: Kyverno's permissions are then decided from the
    RBAC objects the run read, as an offline run of a capture decides them (the RBAC authorizer only)."""
    if inputs.access is not None and inputs.access.failure:
        return [f"Kyverno's permissions were not asked of the cluster ({inputs.access.failure}): they are decided "
                "from the RBAC objects read, as the RBAC authorizer would, where those could be read (grant the role "
                "kyrec-review-kyverno-permissions of docs/rbac.yaml for the cluster's own answer)"]
    return []


def with_causes(run: DiffResult, inputs: Inputs, options: DiffRunOptions) -> None:
    """Every change that is not in-sync or current with its cause (reconcile/causes.py)."""
    from kubectl_kyrec.reconcile.causes import downstream_cause, report_cause
    from kubectl_kyrec.reconcile.downstreams import DownstreamClass, DownstreamDiff
    from kubectl_kyrec.reconcile.reports import ReportClass

    if run.downstreams is None and run.reports is None:
        return
    evidence = cause_evidence(inputs, now=options.now, kyverno_config_path=options.kyverno_config_path,
                              skip_resource_filters=options.skip_resource_filters)
    if run.downstreams is not None:
        run.downstreams = DownstreamDiff(tuple(
            c if c.klass is DownstreamClass.IN_SYNC else dataclasses.replace(c, cause=downstream_cause(
                klass=str(c.klass), reason=str(c.reason) if c.reason else None, enforced=c.enforced,
                policy=c.policy, trigger=c.trigger, actual=c.actual, ev=evidence, obj=c.object))
            for c in run.downstreams.changes), run.downstreams.out_of_scope)
    if run.reports is not None:
        owed = {status.subject.uid: status.results for status in run.reports.subjects}
        run.reports = dataclasses.replace(run.reports, changes=tuple(
            c if c.klass is ReportClass.CURRENT else dataclasses.replace(c, cause=report_cause(
                subject=c.subject, next_scan=str(c.next_scan) if c.next_scan else None,
                next_scan_reason=c.next_scan_reason, oldest_ephemeral_age_s=c.oldest_ephemeral_age_s,
                ev=evidence, policies=owing(owed, c.subject), klass=str(c.klass)))
            for c in run.reports.changes))
    run.notices.extend(review_notice(inputs))


def owing(owed: Mapping[str, Sequence[tuple[str, str]]], subject: Any) -> list[str]:
    """The policies that owe `subject` results (its expected (policy, result) pairs), in their order."""
    if subject is None:
        return []
    return list(dict.fromkeys(policy for policy, _ in owed.get(subject.uid, ())))


def run_deletions(inputs: Inputs, *, now: datetime.datetime, selection: Selection,
                  kyverno_config_path: str | None = None) -> tuple[DeletionDiff, list[EvalError], list[str]]:
    """Each DeletingPolicy's next run over the state's objects (never -r manifests: a deletion is of what
    exists), held to the reads it depends on, inside the run's filters."""
    from kubectl_kyrec.evaluate.deleting.engine import DeleteOptions, run_deleting
    from kubectl_kyrec.load.run_inputs.kyverno_config import kyverno_config_for, load_kyverno_config
    from kubectl_kyrec.reconcile.deletions import diff_deletions
    from kubectl_kyrec.reconcile.reads import ReadRecord
    from kubectl_kyrec.run.generate import subject_filter
    from kubectl_kyrec.run.providers import environments_for

    state = inputs.state
    policies = [p for p in inputs.policies.deleting if selection.holds_policy(p.key)]
    config = load_kyverno_config(kyverno_config_path) if kyverno_config_path else kyverno_config_for(state.objs)

    def filtered(kind: str, namespace: str, name: str, api_version: str) -> bool:
        return config.filtered(kind, namespace, name, api_version=api_version)

    outcome = run_deleting(policies, state.objects, kinds=inputs.kinds, envs=environments_for(inputs, now).envs,
                           options=DeleteOptions(now=now, namespace_labels=inputs.values.namespace_labels,
                                                 filtered=filtered),
                           exceptions=inputs.policies.exceptions, cluster_times=cluster_policy_times(state.objects),
                           locate=inputs.policies.locate)
    keep = subject_filter(selection)

    def keep_kind(ref: Ref) -> bool:
        # a LIST the run could not make: shown unless it lies wholly outside -n or --kind
        return not ((selection.namespace and ref.namespace and ref.namespace != selection.namespace)
                    or (selection.kinds and ref.kind not in selection.kinds))

    diff = diff_deletions(outcome, ReadRecord.of(state), kind_of=inputs.kinds.kind_of,
                          known_unreadable=known_kinds(inputs), policies_from_state=inputs.policies_from_state,
                          keep=lambda o: keep(o.subject), keep_kind=keep_kind,
                          scope_namespace=selection.namespace or "")
    return diff, list(outcome.errors), [str(n) for n in outcome.notices]


def cluster_policy_times(state: Sequence[Document]) -> dict[str, tuple[str, str]]:
    """(creationTimestamp, status.lastExecutionTime) of the DeletingPolicies the state holds, by key: when
    a policy given as a manifest runs next is the cluster's copy's business."""
    out: dict[str, tuple[str, str]] = {}
    for doc in state:
        if doc.kind in ("DeletingPolicy", "NamespacedDeletingPolicy") and \
                doc.api_version.startswith("policies.kyverno.io/"):
            meta = doc.obj.get("metadata") or {}
            status = doc.obj.get("status") or {}
            key = f"{doc.namespace}/{doc.name}" if doc.kind.startswith("Namespaced") else doc.name
            out[key] = (str(meta.get("creationTimestamp") or ""),
                        str(status.get("lastExecutionTime") or "") if isinstance(status, dict) else "")
    return out


def cluster_policies(state: Sequence[Document]) -> dict[str, GeneratingPolicy]:
    """The generating policies a state captured from the cluster holds, by name (unreadable ones left out)."""
    from kubectl_kyrec.errors import InputError
    from kubectl_kyrec.load.policy.generating import parse_generating_policy

    out: dict[str, GeneratingPolicy] = {}
    for doc in state:
        if doc.kind in ("GeneratingPolicy", "NamespacedGeneratingPolicy") and \
                doc.api_version.startswith("policies.kyverno.io/"):
            try:
                out[doc.name] = parse_generating_policy(doc)
            except InputError:
                continue
    return out


def evaluation_notices(outcome: GeneratingOutcome, selection: Selection) -> list[str]:
    """Triggers whose downstreams could not be worked out: each failure, and a count per policy of those
    needing request data (their owned downstreams are `undetermined`; nothing is reported missing). Only
    of the triggers and policies inside the user's filters: the run evaluated all of them."""
    from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
    from kubectl_kyrec.run.generate import subject_filter

    notices = []
    needs: dict[str, int] = {}
    registry: dict[str, int] = {}
    keep = subject_filter(selection)
    said = (TriggerStatus.ERROR, TriggerStatus.NEEDS_REQUEST, TriggerStatus.NEEDS_REGISTRY)
    for o in outcome.outcomes:
        # the filters asked only of an outcome there is something to say of (of 3,000 creates, none)
        if o.status not in said or not (selection.holds_policy(o.policy.key) and keep(o.trigger)):
            continue
        if o.status is TriggerStatus.ERROR:
            notices.append(f"{o.policy.key}: {o.trigger.ref.display()}: {o.message}")
        elif o.status is TriggerStatus.NEEDS_REQUEST:
            needs[o.policy.key] = needs.get(o.policy.key, 0) + 1
        elif o.status is TriggerStatus.NEEDS_REGISTRY:
            registry[o.policy.key] = registry.get(o.policy.key, 0) + 1
    notices.extend(f"{policy}: the downstreams of {count} trigger(s) depend on request.userInfo; give it with "
                   "--values to evaluate them" for policy, count in needs.items())
    notices.extend(f"{policy}: the downstreams of {count} trigger(s) depend on image data from a registry "
                   "(needs-registry); run with --registry to evaluate them" for policy, count in registry.items())
    return notices


def run_downstreams(inputs: Inputs, *, now: datetime.datetime, selection: Selection,
                    complete: bool) -> tuple[GeneratingOutcome, DownstreamDiff]:
    from kubectl_kyrec.reconcile.classic_downstreams import (
        classic_outcomes,
        cluster_classic_policies,
        diff_classic_downstreams,
        is_classic_downstream,
    )
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff, StateIndex, diff_downstreams, unread_triggers
    from kubectl_kyrec.reconcile.downstreams import _order as change_order
    from kubectl_kyrec.run.generate import generate_for_inputs

    # every policy over every trigger, whatever the filters: whether a downstream is an orphan, a conflict
    # or a duplicate depends on what the other triggers and policies generate; the filters choose the
    # findings shown and acted on (selected_downstreams), never their class
    outcome = generate_for_inputs(inputs, now=now, selection=Selection())
    trigger_uids = {s.ref.uid for s in outcome.triggers} if inputs.resources else None
    names = {d.name for d in inputs.policies.generating}
    gpol, classic = classic_outcomes(outcome)
    index = StateIndex.build(inputs.state.objs, inputs.state.is_listed, inputs.state.secret_salts)
    # classic downstreams (labelled with a rule-name) are the classic diff's, never the GeneratingPolicies'
    classic_objs = [o for o in index.generated if is_classic_downstream(o)]
    index.generated = [o for o in index.generated if not is_classic_downstream(o)]
    diff = diff_downstreams(gpol, index, complete_policy_set=complete,
                            trigger_uids=trigger_uids, known_policies=names,
                            cluster_policies=cluster_policies(inputs.state.objects))
    changes, out_of_scope = diff_classic_downstreams(
        classic, index, classic_objs, complete_policy_set=complete, trigger_uids=trigger_uids,
        known_policies={p.meta.key for p in inputs.policies.classic},
        cluster_policies=cluster_classic_policies(inputs.state.objects))
    if changes or out_of_scope:
        diff = DownstreamDiff(tuple(sorted((*diff.changes, *changes), key=change_order)),
                              diff.out_of_scope + out_of_scope)
    # a trigger whose evaluation failed on a lookup the state did not read: its downstreams are undetermined
    diff = DownstreamDiff(tuple(unread_triggers(diff.changes, outcome.outcomes)),
                          diff.out_of_scope)
    diff = held_downstreams(diff, inputs, outcome, triggers_from_state=trigger_uids is None)
    return outcome, selected_downstreams(diff, index, selection)


def selected_downstreams(diff: DownstreamDiff, index: StateIndex, selection: Selection) -> DownstreamDiff:
    """Only the findings inside the user's filters (reconcile/selection.py); the rest count as out of scope."""
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff
    from kubectl_kyrec.reconcile.selection import holds_downstream

    if not selection.narrows:
        return diff
    kept = tuple(c for c in diff.changes
                 if holds_downstream(selection, c, index.by_uid.get(c.trigger.uid) if c.trigger else None))
    return DownstreamDiff(kept, diff.out_of_scope + len(diff.changes) - len(kept))


def held_downstreams(diff: DownstreamDiff, inputs: Inputs, outcome: GeneratingOutcome, *,
                     triggers_from_state: bool) -> DownstreamDiff:
    """Every downstream finding with the reads it depends on; undetermined where one was not listed
    (reconcile/reads.py: the rule that keeps a failed LIST from becoming a write or a delete)."""
    from kubectl_kyrec.evaluate.classic.generate_objects import ClassicGenerateRule
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff
    from kubectl_kyrec.reconcile.reads import (
        ReadRecord,
        downstream_reads,
        evaluation_reads,
        exception_reads,
        hold_unread,
    )

    state = inputs.state
    record = ReadRecord.of(state)
    known = known_kinds(inputs)
    policies = {p.key: p for p in outcome.policies}
    reads_of: dict[str, tuple[Any, ...]] = {}
    changes = []
    for change in diff.changes:
        policy = policies.get(change.policy)
        if policy is not None and change.policy not in reads_of:
            # with the cluster's policies come the cluster's exceptions: one unread could exempt a trigger
            reads_of[change.policy] = (*evaluation_reads(policy.raw, known),
                                       *(exception_reads() if inputs.policies_from_state else ()))
        classic = isinstance(policy, ClassicGenerateRule) if policy is not None else \
            _classic_labelled(change.actual)
        namespace = change.object.namespace if (policy is None or policy.namespaced) else ""
        depends_on = downstream_reads(change, policy_reads=reads_of.get(change.policy), classic=classic,
                                      policy_namespace=namespace, triggers_from_state=triggers_from_state,
                                      policies_from_state=inputs.policies_from_state)
        changes.append(hold_unread(change, depends_on, record))
    return DownstreamDiff(tuple(changes), diff.out_of_scope)


def unread_report_kinds(inputs: Inputs) -> list[str]:
    """The report kinds whose LIST failed (live, or as a capture recorded it), by kind."""
    from kubectl_kyrec.expect.reports import REPORT_KINDS

    kinds = {(api.rpartition("/")[0], kind) for api, pair in REPORT_KINDS.items() for kind in pair}
    return sorted({k.kind for k in inputs.state.unreadable if (k.api_version.rpartition("/")[0], k.kind) in kinds})


def _classic_labelled(obj: Mapping[str, Any] | None) -> bool:
    from kubectl_kyrec.reconcile.classic_downstreams import is_classic_downstream

    return obj is not None and is_classic_downstream(obj)


def is_report(obj: Mapping[str, Any]) -> bool:
    """A PolicyReport or ClusterPolicyReport of either report API."""
    from kubectl_kyrec.expect.reports import REPORT_KINDS

    return obj.get("kind") in REPORT_KINDS.get(str(obj.get("apiVersion", "")), ())


def reporting(inputs: Inputs) -> bool:
    """Whether the run's policies put results in reports (a GeneratingPolicy in its trigger's, too)."""
    pols = inputs.policies
    return bool(pols.validating or pols.admission or pols.generating or pols.classic or pols.image_validating)


def run_reports(inputs: Inputs, options: DiffRunOptions, generating: GeneratingOutcome | None = None
                ) -> tuple[ReportDiff | None, list[EvalError], list[str],
                           Callable[[], Mapping[tuple[str, str, str, str], Mapping[str, Any]]]]:
    """The report domain of `diff`: the same comparison `coverage` makes; and the expected reports by
    name, built when asked for.

    `generating`: the downstream domain's evaluation of the GeneratingPolicies, reused for their results.
    """
    from kubectl_kyrec.run.reports import report_diff_for, undetermined_notices

    if not reporting(inputs):
        return None, [], [], dict
    diff, scope = report_diff_for(inputs, now=options.now, report_api=options.report_api,
                                  kyverno_config_path=options.kyverno_config_path,
                                  all_policies=options.all_policies, selection=options.selection,
                                  generating=generating,
                                  skip_resource_filters=options.skip_resource_filters, jobs=options.jobs,
                                  registry=options.registry)
    def expected() -> dict[tuple[str, str, str, str], Mapping[str, Any]]:
        out: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
        for report in scope.expected:
            meta = report.get("metadata") or {}
            out[(str(report.get("apiVersion")), str(report.get("kind")), str(meta.get("namespace") or ""),
                 str(meta.get("name")))] = report
        return out

    return (diff, list(scope.outcome.errors),
            [*(str(n) for n in scope.outcome.notices), *undetermined_notices(diff, scope)], expected)
