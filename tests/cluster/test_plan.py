"""The apply plan is pure: computed from diff results, no server (reconcile/plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.downstreams import DownstreamChange, DownstreamClass, DownstreamDiff, Reason
from kubectl_kyrec.reconcile.plan import Action, PlanOptions, plan_changes, rank
from kubectl_kyrec.reconcile.reports import ReportChange, ReportClass, ReportDiff

TRIGGER = Ref("v1", "Namespace", "", "team-a", "t-uid")


def _obj(kind: str, ns: str, name: str, uid: str = "u", rv: str = "7") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": rv, "creationTimestamp": "x",
                            "managedFields": [{"manager": "m"}], "labels": {"a": "b"}}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"k": "v"}, "status": {"x": 1}}


def _change(klass: DownstreamClass, reason: Reason | None = None, *, enforced: bool = True, prune: bool = False,
            kind: str = "ConfigMap", ns: str = "team-a", name: str = "c") -> DownstreamChange:
    obj = _obj(kind, ns, name)
    return DownstreamChange(klass, reason, enforced, "pol", TRIGGER, Ref("v1", kind, ns, name, "u"),
                            expected=obj, actual=obj, prune=prune)


def _plan(*changes: DownstreamChange, **options: Any) -> list[tuple[str, str, str]]:
    plan = plan_changes(DownstreamDiff(tuple(changes)), None, PlanOptions(**options))
    return [(str(c.action), c.object.kind, c.object.name) for c in plan.changes]


def test_missing_and_drifted_are_applied_without_server_metadata() -> None:
    plan = plan_changes(DownstreamDiff((_change(DownstreamClass.MISSING), _change(DownstreamClass.DRIFTED,
                                                                                   Reason.CHANGED_FIELDS, name="d"),
                                        _change(DownstreamClass.IN_SYNC, name="s"))), None, PlanOptions())
    assert [(c.action, c.object.name) for c in plan.changes] == [(Action.CREATE, "c"), (Action.APPLY, "d")]
    body = plan.changes[0].body
    assert body is not None
    assert set(body["metadata"]) == {"name", "namespace", "labels"} and "status" not in body
    assert plan.field_manager == "kyverno-generate" and plan.force


@pytest.mark.parametrize("change", [
    _change(DownstreamClass.CONFLICT, Reason.UNOWNED),
    _change(DownstreamClass.UNDETERMINED, Reason.NEEDS_REQUEST, enforced=False),
    _change(DownstreamClass.ORPHAN, Reason.TRIGGER_UNKNOWN, enforced=False, prune=True),
    _change(DownstreamClass.DRIFTED, Reason.CHANGED_FIELDS, enforced=False),
    _change(DownstreamClass.MISSING, Reason.PREDATES_POLICY, enforced=False),
    _change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, enforced=False, prune=True),
], ids=["conflict", "undetermined", "trigger-unknown", "drift-not-enforced", "predates-policy", "sync-off-orphan"])
def test_never_written_whatever_the_flags(change: DownstreamChange) -> None:
    for options in (PlanOptions(), PlanOptions(prune=True, reports=True, write_reports=True, force=True)):
        plan = plan_changes(DownstreamDiff((change,)), None, options)
        assert [c.action for c in plan.changes] == [Action.SKIP]
        assert plan.writes == ()


def test_orphans_are_deleted_only_with_prune_and_preconditions() -> None:
    orphan = _change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, prune=True)
    assert _plan(orphan) == [("skip", "ConfigMap", "c")]
    plan = plan_changes(DownstreamDiff((orphan,)), None, PlanOptions(prune=True))
    [delete] = plan.changes
    assert delete.action is Action.DELETE
    assert (delete.precondition_uid, delete.precondition_resource_version) == ("u", "7")
    # a clone of a deleted policy stays, as Kyverno leaves it
    clone = _change(DownstreamClass.ORPHAN, Reason.POLICY_GONE, prune=False)
    assert _plan(clone, prune=True) == [("skip", "ConfigMap", "c")]


def test_a_delete_without_uid_or_resource_version_is_refused() -> None:
    change = DownstreamChange(DownstreamClass.ORPHAN, Reason.NOT_DESIRED, True, "pol", TRIGGER,
                              Ref("v1", "ConfigMap", "a", "c", "u"), actual={"metadata": {"name": "c"}}, prune=True)
    [item] = plan_changes(DownstreamDiff((change,)), None, PlanOptions(prune=True)).changes
    assert item.action is Action.SKIP and "no uid and resourceVersion" in item.message


def test_order_namespaces_and_cluster_scoped_first_deletes_last_in_reverse() -> None:
    changes = (
        _change(DownstreamClass.MISSING, kind="Deployment", name="web"),
        _change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, prune=True, kind="Namespace", ns="", name="old-ns"),
        _change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, prune=True, kind="ConfigMap", name="old-cm"),
        _change(DownstreamClass.MISSING, kind="ClusterRole", ns="", name="role"),
        _change(DownstreamClass.MISSING, kind="ConfigMap", name="cm"),
        _change(DownstreamClass.MISSING, kind="Namespace", ns="", name="ns"),
        _change(DownstreamClass.CONFLICT, Reason.UNOWNED, kind="Secret", name="s"),
    )
    assert _plan(*changes, prune=True) == [
        ("create", "Namespace", "ns"), ("create", "ClusterRole", "role"), ("create", "ConfigMap", "cm"),
        ("create", "Deployment", "web"), ("delete", "ConfigMap", "old-cm"), ("delete", "Namespace", "old-ns"),
        ("skip", "Secret", "s")]
    assert rank(Ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "x", "u")) == 0


def _report(klass: ReportClass, name: str, reason: str | None = None) -> ReportChange:
    return ReportChange(klass, reason, None, Ref("wgpolicyk8s.io/v1alpha2", "PolicyReport", "a", name, name))


def test_reports_orphans_duplicates_and_missing() -> None:
    diff = ReportDiff("wgpolicyk8s.io/v1alpha2", (
        _report(ReportClass.ORPHAN, "gone", "subject-gone"), _report(ReportClass.ORPHAN, "unknown", "subject-unknown"),
        _report(ReportClass.DUPLICATE, "dup"), _report(ReportClass.MISSING, "new"),
        _report(ReportClass.STALE, "old", "outcome-changed"), _report(ReportClass.CURRENT, "ok")), ())
    live = {n: _obj("PolicyReport", "a", n, uid=n, rv="3") for n in ("gone", "unknown", "dup", "old")}
    expected = {"new": {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
                        "metadata": {"name": "new", "namespace": "a"}, "results": []}}

    def plan(**options: Any) -> dict[str, str]:
        p = plan_changes(None, diff, PlanOptions(**options), actual_of=lambda ref: live.get(ref.name),
                         expected_of=lambda ref: expected.get(ref.name))
        return {c.object.name: str(c.action) for c in p.changes}

    assert plan() == {"gone": "skip", "unknown": "skip", "dup": "skip", "new": "skip", "old": "skip"}
    assert plan(reports=True) == {"gone": "delete", "unknown": "skip", "dup": "delete", "new": "skip",
                                  "old": "skip"}
    assert plan(reports=True, write_reports=True) == {"gone": "delete", "unknown": "skip", "dup": "delete",
                                                      "new": "create", "old": "skip"}


def test_field_manager_and_force_travel_with_the_plan() -> None:
    plan = plan_changes(DownstreamDiff((_change(DownstreamClass.MISSING),)), None,
                        PlanOptions(field_manager="me", force=False))
    assert (plan.field_manager, plan.force) == ("me", False)
    assert plan.changes[0].message == "server-side apply as me"
