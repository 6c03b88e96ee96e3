"""The loading half of the report checks, shared by `coverage` and `diff --reports`."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.evaluate.report_scope import ReportScope
from kubectl_kyrec.reconcile.reports import ReportDiff


def compute_report_diff(*, policy_paths: Sequence[str], resource_paths: Sequence[str],
                        exception_paths: Sequence[str], state_paths: Sequence[str], crd_paths: Sequence[str],
                        context_path: str | None, kyverno_config_path: str | None, report_api: str | None,
                        scan_interval: datetime.timedelta, all_policies: bool, now: datetime.datetime,
                        namespace: str = "") -> tuple[ReportDiff, ReportScope]:
    from kubectl_kyrec.cel.context import LibraryContext
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.cli.inputs import read_inputs
    from kubectl_kyrec.cli.providers import provider_for
    from kubectl_kyrec.evaluate.pipeline import EvalOptions
    from kubectl_kyrec.evaluate.report_scope import report_scope
    from kubectl_kyrec.load.kyverno_config import kyverno_config_for, load_kyverno_config
    from kubectl_kyrec.reconcile.reports import detect_report_api, diff_reports

    if not policy_paths:
        raise UsageError("needs policies: -p PATH")
    if not state_paths:
        raise UsageError("needs the cluster state: --state PATH")
    inputs = read_inputs(policy_paths=policy_paths, resource_paths=resource_paths,
                         exception_paths=exception_paths, state_paths=state_paths, crd_paths=crd_paths,
                         values_path=None, context_path=context_path)
    state_objs = [d.obj for d in inputs.state]
    api = report_api or detect_report_api(state_objs)
    subjects = inputs.resources if resource_paths else inputs.state
    if namespace:
        subjects = [d for d in subjects if d.namespace == namespace]
    scope = report_scope(inputs.policies, subjects, inputs.state, kinds=inputs.kinds,
                         libraries=library_factory(LibraryContext(now=now, provider=provider_for(inputs))),
                         options=EvalOptions(now=now, report_api=api))
    config = load_kyverno_config(kyverno_config_path) if kyverno_config_path else kyverno_config_for(state_objs)
    diff = diff_reports(scope.expected, scope.subjects, state_objs, now=now,
                        policy_versions=scope.policy_versions, scan_interval=scan_interval, report_api=api,
                        resource_filters=config.resource_filters,
                        policies=None if all_policies else scope.policy_keys,
                        evaluated_uids=scope.evaluated_uids)
    return diff, scope
