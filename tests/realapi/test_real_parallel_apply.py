"""The parallel writer (`apply --concurrency`, cluster/writer.py) on the real kube-apiserver, whose
NamespaceLifecycle admission refuses an object in a Namespace not there yet (the API double does not): objects
in Namespaces the plan creates are all written, preconditioned deletes run in parallel (a stale one is a 409),
and `apply` run twice with 8 in flight creates every object, in the plan's order, then has nothing to write.
(That an object is sent only after its Namespace's answer is timed on the double,
tests/cluster/test_parallel_writes.py: on loopback the Namespace's create usually wins the race anyway.)"""

from __future__ import annotations

import json
from pathlib import Path

from kubectl_kyrec.cluster.client import connect
from kubectl_kyrec.cluster.connection import ConnectionOptions
from kubectl_kyrec.cluster.discovery import discover
from kubectl_kyrec.cluster.writer import Status, execute
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange
from tests.realapi.fixture import RealServer, plural_path
from tests.realapi.test_real_only import DATA, NOW, kyrec


def _create(kind: str, namespace: str, name: str) -> PlannedChange:
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, **({"namespace": namespace}
                                                                           if namespace else {})}}
    return PlannedChange(Action.CREATE, "downstream", "missing", None, Ref("v1", kind, namespace, name, "u"),
                         body=body, message="ssa")


def test_objects_wait_for_the_namespace_and_deletes_run_with_their_preconditions(realapi: RealServer) -> None:
    kube = connect(ConnectionOptions(kubeconfig=str(realapi.kubeconfig), context="admin"))
    found = discover(kube)
    spaces = [realapi.unique("parallel") for _ in range(8)]
    fresh = spaces[0]
    names = [f"cm-{i:02}" for i in range(24)]
    # 16 in flight: without the wait, the first ConfigMaps would be sent with the 8 Namespaces
    others = [_create("ConfigMap", ns, "cm") for ns in spaces[1:]]
    plan = Plan((*(_create("Namespace", "", ns) for ns in spaces), *(_create("ConfigMap", fresh, n) for n in names),
                 *others))
    outcomes = execute(kube, plan, resolve_kind=found.find, concurrency=16)
    assert [o.status for o in outcomes] == [Status.DONE] * len(plan.changes), [
        o.message for o in outcomes if o.status is not Status.DONE]
    live = {n: realapi.kube.get(plural_path("v1", "configmaps", fresh, n)) for n in names}
    assert all(live.values())
    # the deletes in parallel, each conditional on the uid and resourceVersion read; one read is stale
    stale = names[5]
    changed = realapi.kube.apply(plural_path("v1", "configmaps", fresh, stale),
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": stale},
                                  "data": {"changed": "yes"}}, "someone")
    assert changed.status == 200, changed
    deletes = Plan(tuple(
        PlannedChange(Action.DELETE, "downstream", "orphan", None, Ref("v1", "ConfigMap", fresh, n, "u"),
                      precondition_uid=live[n]["metadata"]["uid"],
                      precondition_resource_version=live[n]["metadata"]["resourceVersion"], message="delete")
        for n in names))
    gone = execute(kube, deletes, resolve_kind=found.find, concurrency=8)
    assert [o.change.object.name for o in gone] == names
    assert {o.change.object.name: (o.status, o.http_status) for o in gone if o.status is not Status.DONE} == {
        stale: (Status.FAILED, 409)}
    assert [n for n in names if realapi.kube.get(plural_path("v1", "configmaps", fresh, n))] == [stale]


def test_apply_in_parallel_creates_every_object_then_has_nothing_to_write(realapi: RealServer,
                                                                        tmp_path: Path) -> None:
    name, prefix = realapi.unique("parallel-config"), realapi.unique("par")
    text = (DATA / "gpol-configmap.yaml").read_text().replace("name: base-config", f"name: {name}")
    policy = tmp_path / "policy.yaml"
    policy.write_text(text.replace('startsWith("team-")', f'startsWith("{prefix}-")'))
    namespaces = [f"{prefix}-{i:02}" for i in range(30)]
    realapi.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces))
    first = kyrec(realapi, tmp_path, "apply", "-p", str(policy), "--yes", "-o", "json", "--concurrency", "8", *NOW)
    assert first.exit_code == 0, first.stderr
    outcomes = json.loads(first.stdout)["outcomes"]
    assert [(o["object"]["namespace"], o["status"]) for o in outcomes] == [(n, "done") for n in namespaces]
    assert all(realapi.kube.get(plural_path("v1", "configmaps", n, "base")) for n in namespaces)
    again = kyrec(realapi, tmp_path, "apply", "-p", str(policy), "--yes", "-o", "json", "--concurrency", "8", *NOW)
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["outcomes"] == []
