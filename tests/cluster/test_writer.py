"""The writer carries a plan out, one outcome per object: failures do not stop the rest, an interrupt stops
between objects, a report is created and never overwritten."""

from __future__ import annotations

import signal
from typing import Any

from kubectl_kyrec.cluster.client import KubeClient
from kubectl_kyrec.cluster.discovery import discover
from kubectl_kyrec.cluster.writer import DryRun, Interrupt, Outcome, Status, execute
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange
from tests.kubeapi.server import ApiServer


def _cm(name: str) -> PlannedChange:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": name}}
    return PlannedChange(Action.CREATE, "downstream", "missing", None, Ref("v1", "ConfigMap", "default", name, "u"),
                         body=body, message="ssa")


def test_one_failure_does_not_stop_the_others(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    api.inject("/configmaps/b$", status=500, times=None)
    plan = Plan((_cm("a"), _cm("b"), _cm("c")))
    outcomes = execute(kube, plan, resolve_kind=found.find)
    assert [(o.change.object.name, o.status, o.http_status) for o in outcomes] == [
        ("a", Status.DONE, 201), ("b", Status.FAILED, 500), ("c", Status.DONE, 201)]
    assert len(api.requests("PATCH", "/configmaps/b$")) == 1          # a write is not retried on 5xx


def test_an_unserved_kind_fails_that_object_only(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    odd = PlannedChange(Action.CREATE, "downstream", "missing", None, Ref("x.io/v1", "Thing", "default", "t", "u"),
                        body={}, message="")
    [first, second] = execute(kube, Plan((odd, _cm("a"))), resolve_kind=found.find)
    assert first.status is Status.FAILED and first.message == "the cluster does not serve x.io/v1 Thing"
    assert second.status is Status.DONE


def test_interrupt_stops_between_objects(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    guard = Interrupt()
    seen: list[Outcome] = []

    def on_outcome(outcome: Outcome) -> None:
        seen.append(outcome)
        if len(seen) == 1:
            signal.raise_signal(signal.SIGINT)      # Ctrl-C while the first object's answer is being handled

    outcomes = execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"))), resolve_kind=found.find, on_outcome=on_outcome,
                       interrupt=guard)
    assert [o.status for o in outcomes] == [Status.DONE, Status.NOT_ATTEMPTED, Status.NOT_ATTEMPTED]
    assert len(api.writes()) == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_client_dry_run_sends_nothing(api: ApiServer) -> None:
    outcomes = execute(None, Plan((_cm("a"),)), resolve_kind=lambda a, k: None, dry_run=DryRun.CLIENT)
    assert [o.status for o in outcomes] == [Status.DRY_RUN] and api.requests() == []


def test_a_report_is_created_never_overwritten(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    report: dict[str, Any] = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
                              "metadata": {"name": "r", "namespace": "default"}, "results": []}
    change = PlannedChange(Action.CREATE, "report", "missing", None,
                           Ref("wgpolicyk8s.io/v1alpha2", "PolicyReport", "default", "r", "r"), body=report)
    [created] = execute(kube, Plan((change,)), resolve_kind=found.find)
    assert created.status is Status.DONE and api.requests("POST")[0].query == {"fieldManager": "kyrec"}
    [again] = execute(kube, Plan((change,)), resolve_kind=found.find)
    assert again.status is Status.FAILED and again.http_status == 409
    assert again.message.startswith("a report appeared since the read; not overwritten")
