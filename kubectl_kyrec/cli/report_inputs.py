"""The report checks' shared step (`coverage`, `diff --reports`): expected reports against the state."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from kubectl_kyrec.cli.inputs import Inputs
from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.evaluate.generating import GeneratingOutcome
from kubectl_kyrec.evaluate.report_scope import ReportScope
from kubectl_kyrec.reconcile.reports import DEFAULT_SCAN_INTERVAL, ReportDiff


def report_diff_for(inputs: Inputs, *, now: datetime.datetime, report_api: str | None,
                    kyverno_config_path: str | None, all_policies: bool,
                    scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL, namespace: str = "",
                    policy_names: tuple[str, ...] = (), kinds: tuple[str, ...] = (),
                    selector: dict[str, Any] | None = None, generating: GeneratingOutcome | None = None
                    ) -> tuple[ReportDiff, ReportScope]:
    """Evaluate the subjects as the background scan would and classify every report against that.

    `generating`: the GeneratingPolicies already evaluated over the same subjects (else done here).
    """
    from kubectl_kyrec.cel.context import LibraryContext
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.cli.providers import provider_for
    from kubectl_kyrec.evaluate.pipeline import EvalOptions
    from kubectl_kyrec.evaluate.report_scope import report_scope
    from kubectl_kyrec.load.kyverno_config import kyverno_config_for, load_kyverno_config
    from kubectl_kyrec.reconcile.reports import detect_report_api, diff_reports

    state_objs = [d.obj for d in inputs.state]
    api = report_api or detect_report_api(state_objs)
    subjects = inputs.resources if inputs.resources else inputs.state
    if namespace:
        subjects = [d for d in subjects if d.namespace == namespace]
    options = EvalOptions(now=now, user_info=inputs.values.user_info,
                          namespace_labels=inputs.values.namespace_labels, namespaces=inputs.values.namespaces,
                          selector=selector,
                          policy_names=policy_names, kinds=kinds, report_api=api)
    if generating is None and inputs.policies.generating:
        from kubectl_kyrec.cli.diff_cmd import generate_for_inputs

        generating = generate_for_inputs(inputs, now=now, policy_names=policy_names, namespace=namespace or None,
                                         kinds=kinds, selector=selector)
    scope = report_scope(inputs.policies, subjects, inputs.state, kinds=inputs.kinds,
                         libraries=library_factory(LibraryContext(now=now, provider=provider_for(inputs))),
                         options=options, generating=generating)
    config = load_kyverno_config(kyverno_config_path) if kyverno_config_path else kyverno_config_for(state_objs)
    diff = diff_reports(scope.expected, scope.subjects, state_objs, now=now,
                        policy_versions=scope.policy_versions, scan_interval=scan_interval, report_api=api,
                        resource_filters=config.resource_filters,
                        policies=None if all_policies else scope.policy_keys,
                        evaluated_uids=scope.evaluated_uids)
    return diff, scope


def compute_report_diff(*, policy_paths: Sequence[str], resource_paths: Sequence[str],
                        exception_paths: Sequence[str], state_paths: Sequence[str], crd_paths: Sequence[str],
                        context_path: str | None, kyverno_config_path: str | None, report_api: str | None,
                        scan_interval: datetime.timedelta, all_policies: bool, now: datetime.datetime,
                        namespace: str = "") -> tuple[ReportDiff, ReportScope]:
    from kubectl_kyrec.cli.inputs import read_inputs

    if not policy_paths:
        raise UsageError("needs policies: -p PATH")
    if not state_paths:
        raise UsageError("needs the cluster state: --state PATH")
    inputs = read_inputs(policy_paths=policy_paths, resource_paths=resource_paths,
                         exception_paths=exception_paths, state_paths=state_paths, crd_paths=crd_paths,
                         values_path=None, context_path=context_path)
    return report_diff_for(inputs, now=now, report_api=report_api, kyverno_config_path=kyverno_config_path,
                           all_policies=all_policies, scan_interval=scan_interval, namespace=namespace)
