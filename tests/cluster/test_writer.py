"""The writer carries a plan out, one outcome per object: failures do not stop the rest, an interrupt stops
new requests, a report is created and never overwritten. Each test runs with one request in flight and with
8 (`apply --concurrency`); tests/cluster/test_parallel_writes.py has what only the parallel writer does."""

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

CONCURRENCY = pytest.mark.parametrize("concurrency", [1, 8])


def _cm(name: str) -> PlannedChange:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": name}}
    return PlannedChange(Action.CREATE, "downstream", "missing", None, Ref("v1", "ConfigMap", "default", name, "u"),
                         body=body, message="ssa")


@CONCURRENCY
def test_one_failure_does_not_stop_the_others(api: ApiServer, kube: KubeClient, concurrency: int) -> None:
    found = discover(kube)
    api.inject("/configmaps/b$", status=500, times=None)
    plan = Plan((_cm("a"), _cm("b"), _cm("c")))
    outcomes = execute(kube, plan, resolve_kind=found.find, concurrency=concurrency)
    assert [(o.change.object.name, o.status, o.http_status) for o in outcomes] == [
        ("a", Status.DONE, 201), ("b", Status.FAILED, 500), ("c", Status.DONE, 201)]
    assert len(api.requests("PATCH", "/configmaps/b$")) == 1          # a write is not retried on 5xx


@CONCURRENCY
def test_an_unserved_kind_fails_that_object_only(api: ApiServer, kube: KubeClient, concurrency: int) -> None:
    found = discover(kube)
    odd = PlannedChange(Action.CREATE, "downstream", "missing", None, Ref("x.io/v1", "Thing", "default", "t", "u"),
                        body={}, message="")
    [first, second] = execute(kube, Plan((odd, _cm("a"))), resolve_kind=found.find, concurrency=concurrency)
    assert first.status is Status.FAILED and first.message == "the cluster does not serve x.io/v1 Thing"
    assert second.status is Status.DONE


@pytest.fixture()
def sigint_default() -> Iterator[None]:
    """Python's own SIGINT handler for the test, whatever the suite was started with (a background job of a
    shell without job control inherits SIGINT ignored), and the suite's put back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@CONCURRENCY
def test_interrupt_stops_between_objects(api: ApiServer, kube: KubeClient, sigint_default: None,
                                         concurrency: int) -> None:
    found = discover(kube)
    guard = Interrupt()
    seen: list[Outcome] = []

    def on_outcome(outcome: Outcome) -> None:
        seen.append(outcome)
        if len(seen) == 1:
            signal.raise_signal(signal.SIGINT)      # Ctrl-C while the first object's answer is being handled

    # with 2 in flight, a and b are sent together and c waits for a free place, which the signal takes away
    # (b answers after a: its place is not free before the signal)
    api.inject("/configmaps/b$", method="PATCH", delay=0.3)
    outcomes = execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"))), resolve_kind=found.find, on_outcome=on_outcome,
                       interrupt=guard, concurrency=min(concurrency, 2))
    sent = 1 if concurrency == 1 else 2
    assert [o.status for o in outcomes] == [Status.DONE] * sent + [Status.NOT_ATTEMPTED] * (3 - sent)
    assert [o.status for o in seen] == [o.status for o in outcomes]
    assert len(api.writes()) == sent and guard.signum == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler      # the handler it found, put back


@CONCURRENCY
def test_an_ignored_sigint_stays_ignored(api: ApiServer, kube: KubeClient, concurrency: int) -> None:
    found = discover(kube)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        def on_outcome(outcome: Outcome) -> None:
            signal.raise_signal(signal.SIGINT)

        outcomes = execute(kube, Plan((_cm("a"), _cm("b"))), resolve_kind=found.find, on_outcome=on_outcome,
                           concurrency=concurrency)
        assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


@CONCURRENCY
def test_the_request_in_flight_is_unknown_when_its_answer_does_not_come(api: ApiServer, kube: KubeClient,
                                                                         sigint_default: None,
                                                                         concurrency: int) -> None:
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
    outcomes = execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"))), resolve_kind=found.find, interrupt=guard,
                       concurrency=concurrency)
    assert time.monotonic() - start < 8         # the grace, not the 10 s the answer takes
    # in parallel, c was sent with b and answered before the signal: done, in its place in the plan
    last = Status.NOT_ATTEMPTED if concurrency == 1 else Status.DONE
    assert [o.status for o in outcomes] == [Status.DONE, Status.UNKNOWN, last]
    assert outcomes[1].message.startswith("interrupted while waiting for the server's answer: the create may or "
                                          "may not have been made")
    assert told and "waiting up to 0.2 s for the answer to the request in flight" in told[0]
    assert sorted(r.path.rsplit("/", 1)[-1] for r in api.writes()) == (["a", "b"] if concurrency == 1
                                                                       else ["a", "b", "c"])


@CONCURRENCY
def test_an_answer_within_the_grace_is_reported_as_it_came(api: ApiServer, kube: KubeClient,
                                                          sigint_default: None, concurrency: int) -> None:
    found = discover(kube)
    api.inject("/configmaps/b$", method="PATCH", delay=0.5)
    guard = Interrupt(grace=20)

    def interrupt_once_b_is_in_flight() -> None:
        deadline = time.monotonic() + 30
        while not api.requests("PATCH", "/configmaps/b$") and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_b_is_in_flight, daemon=True).start()
    outcomes = execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"))), resolve_kind=found.find, interrupt=guard,
                       concurrency=concurrency)
    last = Status.NOT_ATTEMPTED if concurrency == 1 else Status.DONE      # in parallel, c went with b
    assert [o.status for o in outcomes] == [Status.DONE, Status.DONE, last]


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
