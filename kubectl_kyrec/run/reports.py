"""The report checks' shared step (`coverage`, `diff --reports`): expected reports against the state."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.evaluate.admission_chain import NEEDS_REGISTRY
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
from kubectl_kyrec.expect.report_scope import ReportScope
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.load.run_inputs.sources import Inputs
from kubectl_kyrec.model import Ref, Result
from kubectl_kyrec.reconcile.reports import DEFAULT_SCAN_INTERVAL, ReportChange, ReportClass, ReportDiff
from kubectl_kyrec.reconcile.selection import holds_report

if TYPE_CHECKING:
    pass


def report_diff_for(inputs: Inputs, *, now: datetime.datetime, report_api: str | None,
                    kyverno_config_path: str | None, all_policies: bool,
                    selection: Selection, scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL,
                    generating: GeneratingOutcome | None = None,
                    skip_resource_filters: bool = True, jobs: int = 1,
                    registry: Registry | None = None) -> tuple[ReportDiff, ReportScope]:
    """Evaluate the subjects as the background scan would and classify every report against that.

    `registry`: `--registry`, image verification against the registries image references name, as the
    background scan verifies (kk: pkg/controllers/report/utils/scanner.go runs VerifyAndPatchImages and the
    ImageValidatingPolicy engine); None: those results are undetermined and their reports left out.

    `generating`: the generating policies (GeneratingPolicies, classic generate rules) already evaluated
    over every trigger (else done here): their results are in the triggers' reports.
    """
    from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
    from kubectl_kyrec.evaluate.classic.mutate_existing_preview import mutate_existing_rule_keys
    from kubectl_kyrec.evaluate.pipeline import EvalOptions
    from kubectl_kyrec.expect.report_scope import report_scope, undetermined_pairs
    from kubectl_kyrec.load.run_inputs.kyverno_config import kyverno_config_for, load_kyverno_config
    from kubectl_kyrec.reconcile.reports import detect_report_api, diff_reports
    from kubectl_kyrec.run.providers import environments_for, state_lookups

    state_objs = inputs.state.objs
    api = report_api or detect_report_api(state_objs)
    # every subject by every policy, whatever the filters: a report holds the results of all the policies,
    # and whether it is current, stale or missing depends on all of them; the filters choose the findings
    # shown and acted on (selected_reports), never their class
    options = EvalOptions(now=now, user_info=inputs.values.user_info,
                          namespace_labels=inputs.values.namespace_labels, namespaces=inputs.values.namespaces,
                          report_api=api, jobs=jobs, registry=registry,
                          # a lookup the state cannot answer is the error eval gives (run/providers.py)
                          classic=ClassicOptions(registry=registry, state_lookups=state_lookups(inputs.state))
                          if inputs.policies.classic else None)
    if generating is None and generates(inputs):
        from kubectl_kyrec.run.generate import generate_for_inputs

        generating = generate_for_inputs(inputs, now=now, selection=Selection())
    run_envs = environments_for(inputs, now)
    scope = report_scope(inputs.policies, inputs.subjects, inputs.state.objects, kinds=inputs.kinds,
                         libraries=run_envs.libraries, options=options, generating=generating, envs=run_envs.envs)
    config = load_kyverno_config(kyverno_config_path) if kyverno_config_path else kyverno_config_for(state_objs)
    diff = diff_reports(scope.expected, scope.subjects, state_objs, now=now,
                        policy_versions=scope.policy_versions, scan_interval=scan_interval, report_api=api,
                        # a default install's reports controller runs with --skipResourceFilters=true
                        resource_filters=config.background_scan_filters(skip_resource_filters=skip_resource_filters),
                        policies=None if all_policies else scope.policy_keys,
                        evaluated_uids=scope.evaluated_uids, undetermined=undetermined_pairs(generating, scope.outcome),
                        history_rules=mutate_existing_rule_keys(inputs.policies.classic))
    diff = held_reports(diff, inputs)
    diff = unread_results(diff, [*scope.outcome.results, *(o.result for o in (generating.outcomes if generating
                                                                               else ()) if o.result is not None)])
    return selected_reports(diff, inputs, selection), scope


def unread_results(diff: ReportDiff, results: Iterable[Result]) -> ReportDiff:
    """The report of a subject one of whose results the engine made `undetermined` because it rests on a lookup
    the state did not read, or whose LIST failed (admission_chain.py unread_of), is `undetermined` with that
    reason: Kyverno reads what it looks up and reports its answer, so what the report should hold is not known
    (docs/architecture.md, partial reads), and apply leaves it. So is one the comparison found stale, missing
    or current (current without the result Kyverno would add), and one it found nothing for (no report, and
    no decided result that would make one: Kyverno writes one there)."""
    import dataclasses

    from kubectl_kyrec.evaluate.admission_chain import unread_of
    from kubectl_kyrec.reconcile.reports import expected_identity

    unread: dict[str, tuple[str, str, Ref]] = {}
    for r in results:
        reason = unread_of(r)
        if reason is not None:
            unread.setdefault(r.subject.uid, (reason, f"{r.policy}: {r.message}", r.subject))
    if not unread:
        return diff
    changes = []
    found: set[str] = set()
    for c in diff.changes:
        if c.subject is not None:
            found.add(c.subject.uid)
        why = unread.get(c.subject.uid) if c.subject is not None and c.klass in (
            ReportClass.STALE, ReportClass.MISSING, ReportClass.CURRENT) else None
        if why is not None:
            c = dataclasses.replace(c, klass=ReportClass.UNDETERMINED, reason=why[0],
                                    message=f"cannot tell: {why[1]}; from what was read it looks {c.klass}")
        changes.append(c)
    changes.extend(ReportChange(ReportClass.UNDETERMINED, reason, subject, expected_identity(subject, diff.report_api),
                                message=f"cannot tell: {said}; from what was read no report is owed")
                   for uid, (reason, said, subject) in unread.items() if uid not in found)
    return dataclasses.replace(diff, changes=tuple(changes))


def generates(inputs: Inputs) -> bool:
    """Whether the run has a generating policy: a GeneratingPolicy or a classic generate rule, each of which
    puts a result in its trigger's report."""
    return bool(inputs.policies.generating) or any(r.type == "generate" for p in inputs.policies.classic
                                                   for r in p.rules)


def described_ref(report: Mapping[str, Any] | None) -> Ref | None:
    """What a report says it is about (its scope, else its first owner), as a ref; None when it says nothing."""
    from kubectl_kyrec.reconcile.reports import described_kind, described_uid

    if report is None or (kind := described_kind(report)) is None:
        return None
    given = report.get("scope")
    scope: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    meta = report.get("metadata") or {}
    return Ref(kind[0], kind[1], str(scope.get("namespace") or meta.get("namespace") or ""),
               str(scope.get("name") or ""), described_uid(report))


def selected_reports(diff: ReportDiff, inputs: Inputs, selection: Selection) -> ReportDiff:
    """Only the report findings, and the subjects in scope, inside the user's filters (reconcile/selection.py).
    Every subject was evaluated by every policy, so a finding kept has the class it has unfiltered; this
    decides which are kept: by the subject (or, when it is gone, the report itself) and, with --policy-name,
    by the policies the report concerns: those that owe the subject results or whose results it holds, and
    for a report apply may delete (an orphan, a duplicate) every policy of its results (deleting it must not
    take other policies' results with it)."""
    import dataclasses

    if not selection.narrows:
        return diff
    state = inputs.state
    by_uid = {str((d.obj.get("metadata") or {}).get("uid") or ""): d.obj for d in state.objects}
    owed = {status.subject.uid: {policy for policy, _ in status.results} for status in diff.subjects}

    def report_of(ref: Ref | None) -> Mapping[str, Any] | None:
        doc = state.get_object(ref.api_version, ref.kind, ref.namespace, ref.name) if ref is not None else None
        return doc.obj if doc is not None else None

    def holds(subject_ref: Ref | None, report_ref: Ref | None, deletable: bool) -> bool:
        obj = report_of(report_ref)
        policies = {str(r.get("policy") or "") for r in (obj or {}).get("results") or [] if isinstance(r, Mapping)}
        if not deletable and subject_ref is not None:
            policies |= owed.get(subject_ref.uid, set())
        subject = by_uid.get(subject_ref.uid) if subject_ref is not None else None
        return holds_report(selection, subject_ref or described_ref(obj), subject, obj, policies,
                            deletable=deletable)

    changes = tuple(c for c in diff.changes
                    if holds(c.subject, c.report, c.klass in (ReportClass.ORPHAN, ReportClass.DUPLICATE)))
    kept = [i for i, status in enumerate(diff.subjects) if holds(status.subject, status.report, False)]
    return dataclasses.replace(
        diff, changes=changes, subjects=tuple(diff.subjects[i] for i in kept),
        verdicts=tuple(diff.verdicts[i] for i in kept),
        filtered_subjects=tuple(r for r in diff.filtered_subjects if holds(r, None, False)))


def held_reports(diff: ReportDiff, inputs: Inputs) -> ReportDiff:
    """Every report finding with the reads it depends on; undetermined where one was not listed
    (reconcile/reads.py). What the expected results come from: the policy kinds when the policies are the
    state's, and whatever the run's policies look at when evaluated."""
    import dataclasses

    from kubectl_kyrec.reconcile.reads import (
        ReadRecord,
        evaluation_reads,
        hold_unread_report,
        report_reads,
        reporting_policy_reads,
    )
    from kubectl_kyrec.run.unreadable import known_kinds

    state = inputs.state
    record = ReadRecord.of(state)
    known = known_kinds(inputs)
    pols = inputs.policies
    policy_reads = list(reporting_policy_reads()) if inputs.policies_from_state else []
    docs: list[Mapping[str, Any]] = [*(p.raw for p in pols.validating), *(p.raw for p in pols.admission),
                                     *(p.raw for p in pols.generating), *(p.raw for p in pols.classic),
                                     *(p.raw for p in pols.image_validating)]
    for doc in docs:
        policy_reads.extend(evaluation_reads(doc, known))
    policy_reads = list(dict.fromkeys(policy_reads))

    def actual(change: ReportChange) -> Mapping[str, Any] | None:
        doc = state.get_object(change.report.api_version, change.report.kind, change.report.namespace,
                               change.report.name)
        return doc.obj if doc is not None else None

    changes = tuple(hold_unread_report(c, report_reads(c, actual(c) if c.subject is None else None,
                                                       policy_reads=policy_reads), record)
                    for c in diff.changes)
    return dataclasses.replace(diff, changes=changes)


def undetermined_notices(diff: ReportDiff, scope: ReportScope) -> list[str]:
    """One notice per policy whose report results kyrec could not decide, and so did not compare, naming why
    (the reasons of its undetermined results in `scope`); one naming the policy kinds kyrec does not evaluate
    whose results were left out."""
    by_policy: dict[str, int] = {}
    for policy, _ in diff.undetermined:
        by_policy[policy] = by_policy.get(policy, 0) + 1
    why: dict[str, list[str]] = {}
    for r in scope.undetermined:
        why.setdefault(r.policy, []).append(undetermined_reason(r.message))
    notices = [f"{policy}: its report results for {count} subject(s) are undetermined "
               f"({'; '.join(dict.fromkeys(why.get(policy, ['kyrec cannot decide them'])))}): not compared"
               for policy, count in by_policy.items()]
    # mutate-existing entries say what the background controller found on the targets when it processed the
    # trigger; the state holds the targets as they are now (patched, most likely)
    notices.extend(f"{policy} rule {rule}: the mutate-existing entries in {count} report(s) record the targets as "
                   "Kyverno's background controller found them when it processed the trigger, which the state "
                   "does not show: not compared" for policy, rule, count in diff.left_out_rules)
    left_out = diff.left_out_notice()       # results of policy kinds kyrec does not evaluate
    return [*notices, left_out] if left_out else notices


def undetermined_reason(message: str) -> str:
    """Why a result is undetermined, as a notice names it (with what would decide it) from the result's message:
    a registry read offline (admission_chain.py registry_reason), request.userInfo --values did not give
    (evaluate/generating/engine.py), or else the message itself."""
    if message.startswith(f"{NEEDS_REGISTRY}: "):
        return f"they depend on image data from a registry ({NEEDS_REGISTRY}); run with --registry"
    if "request.userInfo" in message:
        return "they depend on request.userInfo; give it with --values"
    return message
