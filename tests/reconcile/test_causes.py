"""Causes (issue 28): the evidence rules of reconcile/causes.py, each on the smallest state that shows it.
The diff golden cases testdata/diff/cause-* hold them end to end."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.load.run_inputs.kyverno_config import parse_resource_filters
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


# ---- Kyverno's permissions, flags, the cluster's policy, the objects' history (the remainder of issue 28) ----

def _resource_of(api_version: str, kind: str) -> tuple[str, str] | None:
    return {("v1", "ConfigMap"): ("", "configmaps"), ("v1", "Pod"): ("", "pods")}.get((api_version, kind))


CM = Ref("v1", "ConfigMap", "team-a", "team-config", "cm-1")
# Kyverno's background controller as its chart installs it: the account it runs as is confirmed
BACKGROUND = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
    "name": "kyverno-background-controller", "namespace": "kyverno",
    "labels": {"app.kubernetes.io/component": "background-controller", "app.kubernetes.io/part-of": "kyverno"}},
    "spec": {"template": {"spec": {"serviceAccountName": "kyverno-background-controller",
                                   "containers": [{"name": "controller"}]}}}}


def test_a_live_review_answers_before_the_state_s_rbac_and_names_only_the_denied_verbs() -> None:
    asked: list[Any] = []

    def review(req: Any) -> bool | None:
        asked.append((req.user, req.verb, req.resource, req.namespace, req.name))
        return req.verb == "get" and req.name == "team-config"      # a rule with resourceNames: [team-config]

    ev = Evidence.of([BACKGROUND], now=NOW, access=review, resource_of=_resource_of, listed=lambda *a: None)
    cause = downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                             ev=ev, obj=CM)
    assert cause.kind == "rbac" and cause.evidence == ()
    assert cause.message.startswith("Kyverno's background controller (service account "
                                     "kyverno/kyverno-background-controller) may not create configmaps in namespace "
                                     "team-a (SubjectAccessReview)")
    user = "system:serviceaccount:kyverno:kyverno-background-controller"
    # every name first; a refused get again for the object's own name; a create names none (a POST)
    assert asked == [(user, "get", "configmaps", "team-a", ""), (user, "get", "configmaps", "team-a", "team-config"),
                     (user, "create", "configmaps", "team-a", "")]


def _live_listed(api_version: str, kind: str, namespace: str) -> bool | None:
    """A live diff of a reader refused the RBAC kinds: Kyverno's UpdateRequests, ConfigMaps and Deployments read,
    the RBAC objects not (their LISTs failed)."""
    return None if api_version.startswith("rbac.") else True


def test_no_answer_anywhere_or_an_account_nothing_confirms_is_no_rbac_cause() -> None:
    ev = Evidence.of([BACKGROUND], now=NOW, access=lambda req: None, resource_of=_resource_of,
                     listed=_live_listed, read_failure=lambda api, kind, ns: "forbidden"
                     if api.startswith("rbac.") else None)
    cause = downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                             ev=ev, obj=CM)
    # no guess; but the reads that could have decided are named, with their failure (issue 33 item 9)
    assert (cause.kind, cause.message) == (
        "unknown", "nothing the state holds says why, and it lacks evidence that could: ClusterRoleBindings (could "
                   "not be read: forbidden), ClusterRoles (could not be read: forbidden), RoleBindings in namespace "
                   "team-a (could not be read: forbidden), Roles in namespace team-a (could not be read: forbidden)")
    # denied, but to the chart's default account that no Deployment and no binding of the state names: Kyverno
    # may run as another one (or not at all), so the denial says nothing
    ev = Evidence.of([], now=NOW, access=lambda req: False, resource_of=_resource_of, listed=_live_listed)
    assert downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                            ev=ev, obj=CM) is UNKNOWN


# Kubernetes' bootstrap binding (k8s: plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go): every
# authenticated user, so every service account, may create self-reviews. It names no account of Kyverno's.
BASIC_USER = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "system:basic-user"},
               "rules": [{"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"],
                          "verbs": ["create"]}]},
              {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "system:basic-user"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:basic-user"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                             "name": "system:authenticated"}]}]


def test_a_binding_to_every_authenticated_user_is_no_proof_that_kyverno_runs_as_the_account() -> None:
    """Issue 33 item 4: a capture of a cluster without Kyverno holds the bootstrap RBAC objects; the binding of
    system:basic-user to system:authenticated applies to the chart's default account as to every other, and was
    taken as proof that the account exists ("may not get/create configmaps"), where the live run said nothing."""
    listed = lambda api, kind, ns: True      # noqa: E731  every RBAC kind listed everywhere, as a capture does
    without = Evidence.of(BASIC_USER, now=NOW, resource_of=_resource_of, listed=listed)
    assert downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                            ev=without, obj=CM).kind != "rbac"
    # with Kyverno's Deployment naming the account, the same objects decide: nothing grants it configmaps
    running = Evidence.of([*BASIC_USER, BACKGROUND], now=NOW, resource_of=_resource_of, listed=listed)
    cause = downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                             ev=running, obj=CM)
    assert cause.kind == "rbac" and "may not get/create configmaps in namespace team-a" in cause.message
    assert [r.name for r in cause.evidence] == ["system:basic-user"]


def test_a_drift_needs_update_an_orphan_delete_and_only_when_kyverno_would_act() -> None:
    denied = Evidence.of([BACKGROUND], now=NOW, access=lambda req: False, resource_of=_resource_of)
    drift = downstream_cause(klass="drifted", reason="changed-fields", enforced=True, policy="p", trigger=TRIGGER,
                             actual=None, ev=denied, obj=CM)
    assert "may not get/update configmaps" in drift.message
    orphan = downstream_cause(klass="orphan", reason="trigger-gone", enforced=True, policy="p", trigger=TRIGGER,
                              actual=None, ev=denied, obj=CM)
    assert "may not delete configmaps" in orphan.message
    sync_off = downstream_cause(klass="drifted", reason="changed-fields", enforced=False, policy="p", trigger=TRIGGER,
                                actual=None, ev=denied, obj=CM)
    assert sync_off.message.endswith("does not synchronize: Kyverno leaves its downstreams as they are")


def test_the_service_account_comes_from_the_admission_controller_s_flag() -> None:
    admission = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "kyverno-admission-controller", "namespace": "kyverno", "labels": {
            "app.kubernetes.io/component": "admission-controller", "app.kubernetes.io/part-of": "kyverno"}},
        "spec": {"template": {"spec": {"containers": [{"name": "kyverno", "args": [
            "--backgroundServiceAccountName=system:serviceaccount:platform:kyv-bg",
            "--reportsServiceAccountName", "system:serviceaccount:platform:kyv-rp"]}]}}}}
    users: list[str] = []
    ev = Evidence.of([admission], now=NOW, access=lambda req: users.append(req.user) or False,
                     resource_of=_resource_of)
    assert "(service account platform/kyv-bg)" in downstream_cause(
        klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None, ev=ev, obj=CM).message
    assert "(service account platform/kyv-rp) may not get/list/watch pods cluster-wide" in report_cause(
        subject=POD, next_scan=None, next_scan_reason=None, oldest_ephemeral_age_s=None, ev=ev).message
    assert set(users) == {"system:serviceaccount:platform:kyv-bg", "system:serviceaccount:platform:kyv-rp"}


def test_a_cel_policy_s_condition_status_names_the_failing_condition() -> None:
    policy = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "v"},
              "status": {"conditionStatus": {"ready": False, "conditions": [
                  {"type": "WebhookConfigured", "status": "True", "message": "Webhook configured."},
                  {"type": "RBACPermissionsGranted", "status": "False",
                   "message": "Policy is not ready for reporting, missing permissions: x."}]}}}
    ev = Evidence.of([policy], now=NOW)
    cause = report_cause(subject=POD, next_scan="full", next_scan_reason=None, oldest_ephemeral_age_s=None, ev=ev,
                         policies=["v"], klass="missing")
    assert cause.message == ("policy v is not ready: RBACPermissionsGranted: Policy is not ready for reporting, "
                             "missing permissions: x.")


def test_a_classic_policy_labelled_out_of_reporting() -> None:
    policy = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
              "metadata": {"name": "c", "labels": {"reports.kyverno.io/disabled": ""}}}
    cause = report_cause(subject=POD, next_scan="full", next_scan_reason=None, oldest_ephemeral_age_s=None,
                         ev=Evidence.of([policy], now=NOW), policies=["c"], klass="stale")
    assert cause.message == ("the cluster's policy c has the label reports.kyverno.io/disabled: the reports "
                             "controller leaves it out")
    # an orphan report is no report Kyverno failed to write
    assert report_cause(subject=POD, next_scan=None, next_scan_reason=None, oldest_ephemeral_age_s=None,
                        ev=Evidence.of([policy], now=NOW), policies=["c"], klass="orphan") is UNKNOWN


def _ephemeral(i: int) -> dict[str, Any]:
    return {"apiVersion": "reports.kyverno.io/v1", "kind": "EphemeralReport",
            "metadata": {"name": f"e{i}", "namespace": "a", "labels": {"audit.kyverno.io/source": "background-scan"}}}


def test_the_background_reports_breaker() -> None:
    controller = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "kyverno-reports-controller", "namespace": "kyverno"},
                  "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["--maxBackgroundReports=2"]}]}}}}
    full = Evidence.of([controller, *(_ephemeral(i) for i in range(3))], now=NOW)
    assert report_cause(subject=POD, next_scan=None, next_scan_reason=None, oldest_ephemeral_age_s=None,
                        ev=full).message == ("the reports controller creates no ephemeral report while more than 2 "
                                             "exist (--maxBackgroundReports); the state holds 3")
    at_limit = Evidence.of([controller, *(_ephemeral(i) for i in range(2))], now=NOW)
    assert report_cause(subject=POD, next_scan=None, next_scan_reason=None, oldest_ephemeral_age_s=None,
                        ev=at_limit) is UNKNOWN


def _managed(*entries: tuple[str, str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"manager": m, "operation": op, "time": t, "fieldsV1": f} for m, op, t, f in entries]


def test_a_trigger_that_stopped_matching_names_who_changed_it_after_the_downstream() -> None:
    trigger = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "team-a", "uid": "ns-a", "labels": {"tier": "none"}, "managedFields": _managed(
            ("kubectl-create", "Update", "2026-08-01T00:00:00Z", {"f:metadata": {"f:labels": {"f:tier": {}}}}),
            ("kubectl-label", "Update", "2026-08-20T00:00:00Z", {"f:metadata": {"f:labels": {"f:tier": {}}}}))}}
    downstream = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "c", "namespace": "team-a", "creationTimestamp": "2026-08-02T00:00:00Z"}}
    cause = _cause(trigger, klass="orphan", reason="no-longer-matches", enforced=False, actual=downstream)
    # sync off: the policy's setting comes first; with sync on, the history is the cause
    assert cause.message.endswith("does not synchronize: Kyverno leaves its downstreams as they are")
    cause = _cause(trigger, klass="orphan", reason="no-longer-matches", actual=downstream)
    assert (cause.kind, cause.message) == ("history", "Namespace team-a no longer matches: changed by kubectl-label "
                                                      "(Update) at 2026-08-20T00:00:00Z, which owns its labels tier, "
                                                      "after the downstream was made")
    # changes older than the downstream say nothing about why the trigger stopped matching
    downstream["metadata"]["creationTimestamp"] = "2026-08-21T00:00:00Z"
    assert _cause(trigger, klass="orphan", reason="no-longer-matches", actual=downstream) is UNKNOWN


def test_an_unowned_object_kyverno_once_wrote_names_who_changed_it_since() -> None:
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a", "managedFields":
            _managed(("kyverno", "Update", "2026-08-05T00:00:00Z", {"f:data": {}}),
                     ("kubectl-edit", "Update", "2026-08-06T00:00:00Z", {"f:metadata": {"f:labels": {}}}))}}
    cause = _cause(klass="conflict", reason="unowned", actual=live)
    assert cause.message == ("written by Kyverno (kyverno), then changed by kubectl-edit (Update) at "
                             "2026-08-06T00:00:00Z: its labels no longer mark it as Kyverno's")
    live["metadata"]["managedFields"] = live["metadata"]["managedFields"][1:]     # never Kyverno's: no history
    assert _cause(klass="conflict", reason="unowned", actual=live) is UNKNOWN


def test_the_update_request_threshold_is_named_when_the_requests_made_before_the_trigger_reach_it() -> None:
    trigger = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "team-a", "uid": "ns-a", "creationTimestamp": "2026-09-01T10:00:00Z"}}
    queue = [_ur("Pending", name=f"t{i}", created=f"2026-09-01T0{i}:00:00Z") for i in range(3)]
    for i, ur in enumerate(queue):
        ur["metadata"]["name"] = f"ur-{i}"
    ev = Evidence.of([trigger, *queue], now=NOW, update_request_threshold=3)
    cause = downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                             ev=ev)
    assert (cause.kind, cause.message) == (
        "kyverno-config", "Kyverno creates no update request while 3 or more exist (updateRequestThreshold): 3 the "
                          "state holds were made before Namespace team-a, so its admission made none")
    # one of them made after the trigger: its admission may have found fewer; the queue is what is known
    queue[2]["metadata"]["creationTimestamp"] = "2026-09-01T11:00:00Z"
    ev = Evidence.of([trigger, *queue], now=NOW, update_request_threshold=3)
    assert downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                            ev=ev).kind == "update-request-queue"


def test_the_threshold_is_read_from_kyverno_s_configmap() -> None:
    from kubectl_kyrec.load.run_inputs.kyverno_config import kyverno_config_from_configmap

    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kyverno", "namespace": "kyverno"},
          "data": {"updateRequestThreshold": "50"}}
    assert kyverno_config_from_configmap(cm).update_request_threshold == 50
    cm["data"]["updateRequestThreshold"] = "lots"           # strconv.ParseInt fails: Kyverno keeps its default
    assert kyverno_config_from_configmap(cm).update_request_threshold == 1000


# ---- `unknown` names the evidence the state lacks (issue 33 item 9) ------------------------------------------

def _dump_listed(*kinds: str) -> Any:
    """A plain `kubectl get` dump: listed (everywhere) are the kinds it holds objects of, nothing else."""
    return lambda api_version, kind, namespace: True if kind in kinds else None


def test_a_plain_dump_without_rolebindings_names_them_and_the_capture_that_decides() -> None:
    # Kyverno's Deployment and the cluster-wide RBAC are in the dump; a RoleBinding in team-a could still grant
    ev = Evidence.of([*BASIC_USER, BACKGROUND], now=NOW, resource_of=_resource_of,
                     listed=_dump_listed("ClusterRole", "ClusterRoleBinding", "Deployment", "UpdateRequest",
                                         "ConfigMap"))
    cause = downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                             ev=ev, obj=CM)
    assert cause.kind == "unknown"
    assert cause.message == (
        "nothing the state holds says why, and it lacks evidence that could: RoleBindings in namespace team-a, "
        "Roles in namespace team-a; capture them with: kubectl kyrec capture --kind "
        "rolebindings.rbac.authorization.k8s.io,roles.rbac.authorization.k8s.io -A -o more-state.json, and pass "
        "it with another --state")
    assert cause.text == f"unknown: {cause.message}"
    # with them listed (none grants), the denial is decided
    decided = Evidence.of([*BASIC_USER, BACKGROUND], now=NOW, resource_of=_resource_of, listed=lambda *a: True)
    assert downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                            ev=decided, obj=CM).kind == "rbac"


def test_without_kyverno_s_deployments_their_absence_is_named_with_what_would_then_decide() -> None:
    ev = Evidence.of([], now=NOW, resource_of=_resource_of, listed=_dump_listed("UpdateRequest", "ConfigMap"))
    cause = downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                             ev=ev, obj=CM)
    # which account Kyverno runs as, and the RBAC objects that decide that account's permissions: one capture
    assert "lacks evidence that could: Deployments in namespace kyverno, ClusterRoleBindings, ClusterRoles, " \
           "RoleBindings in namespace team-a, Roles in namespace team-a; capture them with: kubectl kyrec capture " \
           "--kind deployments.apps,clusterrolebindings.rbac.authorization.k8s.io," in cause.message
    # Deployments listed and none of Kyverno's: Kyverno's permissions are no question, nothing lacks
    listed = Evidence.of([], now=NOW, resource_of=_resource_of,
                         listed=_dump_listed("UpdateRequest", "ConfigMap", "Deployment"))
    assert downstream_cause(klass="missing", reason=None, enforced=True, policy="p", trigger=TRIGGER, actual=None,
                            ev=listed, obj=CM) is UNKNOWN


def test_a_read_that_failed_is_named_with_its_failure_and_no_capture_advice() -> None:
    ev = Evidence.of([], now=NOW, resource_of=_resource_of, listed=_dump_listed("ConfigMap", "Deployment"),
                     read_failure=lambda api, kind, ns: "forbidden: cannot list updaterequests.kyverno.io"
                     if kind == "UpdateRequest" else None)
    cause = downstream_cause(klass="drifted", reason="changed-fields", enforced=True, policy="p", trigger=TRIGGER,
                             actual=None, ev=ev, obj=CM)
    assert cause.message == ("nothing the state holds says why, and it lacks evidence that could: UpdateRequests in "
                             "namespace kyverno (could not be read: forbidden: cannot list updaterequests.kyverno.io)")
    # a kind the server does not serve has no object to capture (a cluster without Kyverno's CRDs)
    unserved = Evidence.of([], now=NOW, resource_of=_resource_of, listed=_dump_listed("ConfigMap", "Deployment"),
                           serves=lambda api, kind: kind != "UpdateRequest")
    assert downstream_cause(klass="drifted", reason="changed-fields", enforced=True, policy="p", trigger=TRIGGER,
                            actual=None, ev=unserved, obj=CM) is UNKNOWN


def test_a_missing_report_names_the_reports_controller_s_deployment_when_nothing_else_decides() -> None:
    ev = Evidence.of([], now=NOW, resource_of=_resource_of, listed=_dump_listed("ConfigMap"))
    cause = report_cause(subject=POD, next_scan="none", next_scan_reason=None, oldest_ephemeral_age_s=None, ev=ev,
                         klass="missing")
    assert cause.kind == "unknown" and cause.message.startswith(
        "nothing the state holds says why, and it lacks evidence that could: Deployments in namespace kyverno, "
        "ClusterRoleBindings, ClusterRoles; capture them with: kubectl kyrec capture --kind deployments.apps,")
    # an orphan report is not explained by what keeps Kyverno from writing one: nothing is said to lack
    assert report_cause(subject=POD, next_scan="none", next_scan_reason=None, oldest_ephemeral_age_s=None, ev=ev,
                        klass="orphan") is UNKNOWN
