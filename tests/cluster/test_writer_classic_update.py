"""The plan's update of a classic downstream without useServerSideApply, against the API double: a PUT of the
whole object as kyverno-generate, conditional on the read's resourceVersion
(tests/classic/test_generate_server_side_apply.py has the diff and plan side)."""

from __future__ import annotations

from kubectl_kyrec.cluster.client import KubeClient
from kubectl_kyrec.cluster.discovery import discover
from kubectl_kyrec.cluster.writer import Status, execute
from kubectl_kyrec.reconcile.plan import Action, Plan, PlanOptions, plan_downstream
from tests.classic.test_generate_server_side_apply import FOREIGN, change_for
from tests.kubeapi.server import ApiServer


def test_the_update_replaces_the_object_and_fails_when_it_changed(api: ApiServer, kube: KubeClient) -> None:
    api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blue"}})
    [seeded] = api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "blue"},
                         "data": {"level": "info", "extra": "x"}})
    live = {**FOREIGN, "metadata": {**FOREIGN["metadata"], "resourceVersion": seeded["metadata"]["resourceVersion"]}}
    planned = plan_downstream(change_for(False, live), PlanOptions())
    assert planned is not None and planned.action is Action.UPDATE
    found = discover(kube)
    [done] = execute(kube, Plan((planned,)), resolve_kind=found.find)
    assert done.status is Status.DONE and done.message.startswith("updated")
    [put] = api.requests("PUT", "/configmaps/settings$")
    assert put.query == {"fieldManager": "kyverno-generate"}
    stored = kube.get_json("/api/v1/namespaces/blue/configmaps/settings")
    assert stored["data"] == {"level": "info"}                      # the other manager's field is gone
    [again] = execute(kube, Plan((planned,)), resolve_kind=found.find)  # the read's resourceVersion is stale now
    assert again.status is Status.FAILED and again.http_status == 409
    assert again.message.startswith("changed since it was read, not updated")
