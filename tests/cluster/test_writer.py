"""The writer carries a plan out, one outcome per object: failures do not stop the rest, an interrupt stops
between objects, a report is created and never overwritten."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

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


@pytest.fixture()
def sigint_default() -> Iterator[None]:
    """Python's own SIGINT handler for the test, whatever the suite was started with (a background job of a
    shell without job control inherits SIGINT ignored), and the suite's put back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_interrupt_stops_between_objects(api: ApiServer, kube: KubeClient, sigint_default: None) -> None:
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
    assert len(api.writes()) == 1 and guard.signum == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler      # the handler it found, put back


def test_an_ignored_sigint_stays_ignored(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        def on_outcome(outcome: Outcome) -> None:
            signal.raise_signal(signal.SIGINT)

        outcomes = execute(kube, Plan((_cm("a"), _cm("b"))), resolve_kind=found.find, on_outcome=on_outcome)
        assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_the_request_in_flight_is_unknown_when_its_answer_does_not_come(api: ApiServer, kube: KubeClient,
                                                                         sigint_default: None) -> None:
    found = discover(kube)
    api.inject("/configmaps/b$", method="PATCH", delay=10)
    told: list[str] = []
    guard = Interrupt(grace=0.2, notify=told.append)

    def interrupt_once_b_is_in_flight() -> None:
        deadline = time.monotonic() + 30
        while not api.requests("PATCH", "/configmaps/b$") and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_b_is_in_flight, daemon=True).start()
    start = time.monotonic()
    outcomes = execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"))), resolve_kind=found.find, interrupt=guard)
    assert time.monotonic() - start < 8         # the grace, not the 10 s the answer takes
    assert [o.status for o in outcomes] == [Status.DONE, Status.UNKNOWN, Status.NOT_ATTEMPTED]
    assert outcomes[1].message.startswith("interrupted while waiting for the server's answer: the create may or "
                                          "may not have been made")
    assert told and "waiting up to 0.2 s" in told[0]
    assert [r.path.rsplit("/", 1)[-1] for r in api.writes()] == ["a", "b"]


def test_an_answer_within_the_grace_is_reported_as_it_came(api: ApiServer, kube: KubeClient,
                                                          sigint_default: None) -> None:
    found = discover(kube)
    api.inject("/configmaps/b$", method="PATCH", delay=0.5)
    guard = Interrupt(grace=20)

    def interrupt_once_b_is_in_flight() -> None:
        deadline = time.monotonic() + 30
        while not api.requests("PATCH", "/configmaps/b$") and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_b_is_in_flight, daemon=True).start()
    outcomes = execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"))), resolve_kind=found.find, interrupt=guard)
    assert [o.status for o in outcomes] == [Status.DONE, Status.DONE, Status.NOT_ATTEMPTED]


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
