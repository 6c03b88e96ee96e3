"""Causes (issue 28): the evidence rules of reconcile/causes.py, each on the smallest state that shows it.
The diff golden cases testdata/diff/cause-* hold them end to end."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.load.kyverno_config import parse_resource_filters
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.causes import UNKNOWN, Evidence, downstream_cause, report_cause

NOW = datetime.datetime(2026, 9, 1, 12, 0, tzinfo=datetime.UTC)
TRIGGER = Ref("v1", "Namespace", "", "team-a", "ns-a")
POD = Ref("v1", "Pod", "kube-system", "coredns-1", "pod-1")


def _ur(state: str, *, api: str = "kyverno.io/v2", created: str = "2026-09-01T09:00:00Z",
        **resource: Any) -> dict[str, Any]:
    spec = {"apiVersion": "v1", "kind": "Namespace", "namespace": "", "name": "team-a", **resource}
    return {"apiVersion": api, "kind": "UpdateRequest",
            "metadata": {"name": "ur-1", "namespace": "kyverno", "uid": "u1", "creationTimestamp": created},
            "spec": {"policy": "p", "requestType": "generate", "resource": spec},
            "status": {"state": state, "retryCount": 2, "message": "boom"}}


def _cause(*objects: dict[str, Any], klass: str = "missing", reason: str | None = None, enforced: bool = True,
           actual: dict[str, Any] | None = None, **filters: Any):
    ev = Evidence.of(objects, now=NOW, **filters)
    return downstream_cause(klass=klass, reason=reason, enforced=enforced, policy="p", trigger=TRIGGER,
                            actual=actual, ev=ev)


def test_a_failed_update_request_of_the_trigger_is_named_with_its_message_and_retries() -> None:
    cause = _cause(_ur("Failed"))
    assert (cause.kind, cause.message) == ("update-request", "update request ur-1 Failed after 2 retries: boom")


def test_a_v1beta1_request_matches_by_uid_and_a_skip_one_gives_its_age() -> None:
    cause = _cause(_ur("Skip", api="kyverno.io/v1beta1", uid="ns-a", name="renamed"))
    assert cause.message == "update request ur-1 Skip, 3h old, 2 retries: boom"


def test_completed_requests_and_other_policies_requests_say_nothing() -> None:
    other = _ur("Failed")
    other["spec"]["policy"] = "q"
    assert _cause(_ur("Completed"), other) is UNKNOWN


def test_pending_requests_of_the_policy_for_other_triggers_are_a_queue() -> None:
    cause = _cause(_ur("Pending", name="team-b"), _ur("Pending", name="team-c", created="2026-09-01T11:00:00Z"))
    assert cause.kind == "update-request-queue"
    assert cause.message == "2 update request(s) pending for this policy, the oldest 3h old"
    assert len(cause.evidence) == 2


def test_the_filter_entry_that_skips_a_trigger_is_named_only_for_a_missing_downstream() -> None:
    filters = parse_resource_filters("[Event,*,*][Namespace,*,team-*]")
    assert "[Namespace,*,team-*]" in _cause(admission_filters=filters).message
    assert _cause(admission_filters=filters, klass="drifted") is UNKNOWN


def test_a_policy_not_ready_in_the_state_is_named() -> None:
    policy = {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": "p"},
              "status": {"conditions": [{"type": "Ready", "status": "False", "message": "CEL compile error"}]}}
    cause = _cause(policy)
    assert (cause.kind, cause.message) == ("policy", "policy p is not ready: CEL compile error")


def test_sync_off_drift_and_predating_triggers_are_the_policy_s_settings() -> None:
    assert "does not synchronize" in _cause(klass="drifted", reason="changed-fields", enforced=False).message
    assert "generateExisting is off" in _cause(reason="predates-policy", enforced=False).message


def test_the_latest_foreign_manager_of_a_drift_is_named_kyverno_s_own_are_not() -> None:
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a", "managedFields": [
        {"manager": "kyverno", "operation": "Update", "time": "2026-08-05T00:00:00Z"},
        {"manager": "helm", "operation": "Apply", "time": "2026-08-02T00:00:00Z"},
        {"manager": "kubectl-edit", "operation": "Update", "time": "2026-08-03T00:00:00Z"}]}}
    assert _cause(klass="drifted", actual=live).message == "changed by kubectl-edit (Update) at 2026-08-03T00:00:00Z"
    live["metadata"]["managedFields"] = live["metadata"]["managedFields"][:1]
    assert _cause(klass="drifted", actual=live) is UNKNOWN


def test_report_causes_filter_then_ephemeral_then_rescan_else_unknown() -> None:
    ev = Evidence.of([], now=NOW, scan_filters=parse_resource_filters("[*/*,kube-system,*]"))
    assert report_cause(subject=POD, next_scan="full", next_scan_reason="x", oldest_ephemeral_age_s=None,
                        ev=ev).message.endswith("resourceFilters entry [*/*,kube-system,*]")
    ev = Evidence.of([], now=NOW)
    assert report_cause(subject=POD, next_scan="none", next_scan_reason=None, oldest_ephemeral_age_s=300,
                        ev=ev).message == "results wait in ephemeral reports for the aggregator, the oldest 5m old"
    assert report_cause(subject=POD, next_scan="partial", next_scan_reason="policy-changed",
                        oldest_ephemeral_age_s=None, ev=ev).message == \
        "Kyverno's next background scan of the subject is partial (policy-changed)"
    assert report_cause(subject=POD, next_scan="none", next_scan_reason=None, oldest_ephemeral_age_s=None,
                        ev=ev) is UNKNOWN
