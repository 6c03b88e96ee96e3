"""The parallel writer (`apply --concurrency`, cluster/writer.py): no more requests in flight than asked, the
plan's order kept where it matters (an object after the Namespace the plan creates for it, every create and
update before the first delete), outcomes handed on in the plan's order whatever order the answers come in,
and 1 is the plan's order, one request at a time. Against the API double; each request's start and end are
taken on the client side, around the transport."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from kubectl_kyrec.cluster.client import KubeClient, Response
from kubectl_kyrec.cluster.discovery import discover
from kubectl_kyrec.cluster.writer import Outcome, Status, execute, tiers
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange
from tests.kubeapi.server import ApiServer


@dataclass
class Sent:
    method: str
    name: str
    started: float
    ended: float = 0.0


class Watch:
    """Wraps the client's transport: every request's method, last path segment, start and end."""

    def __init__(self, kube: KubeClient) -> None:
        self.sent: list[Sent] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        inner = kube.transport

        class Transport:
            base_url = inner.base_url  # type: ignore[attr-defined]

            def auth_headers(_self) -> dict[str, str]:
                return inner.auth_headers()

            def send(_self, method: str, url: str, headers: Mapping[str, str], body: Any,
                     timeout: float | None) -> Response:
                entry = Sent(method, url.split("?")[0].rsplit("/", 1)[-1], time.monotonic())
                with self._lock:
                    self.sent.append(entry)
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                try:
                    return inner.send(method, url, headers, body, timeout)
                finally:
                    with self._lock:
                        self.in_flight -= 1
                        entry.ended = time.monotonic()

        kube.transport = Transport()

    def writes(self) -> list[Sent]:
        return [s for s in self.sent if s.method != "GET"]


def _cm(name: str, namespace: str = "default", action: Action = Action.CREATE) -> PlannedChange:
    if action is Action.DELETE:
        return PlannedChange(action, "downstream", "orphan", None, Ref("v1", "ConfigMap", namespace, name, "u"),
                             precondition_uid="u", precondition_resource_version="1", message="delete")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"k": name}}
    return PlannedChange(action, "downstream", "missing", None, Ref("v1", "ConfigMap", namespace, name, "u"),
                         body=body, message="ssa")


def _ns(name: str) -> PlannedChange:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    return PlannedChange(Action.CREATE, "downstream", "missing", None, Ref("v1", "Namespace", "", name, "u"),
                         body=body, message="ssa")


def test_tiers_follow_the_plans_ranks_and_actions() -> None:
    changes = (_ns("n1"), _ns("n2"), _cm("a", "n1"), _cm("b", "n2"), _cm("c", action=Action.DELETE),
               _cm("d", action=Action.DELETE), _ns("late"))
    # the Namespaces, then the ConfigMaps in them, then the deletes; a change out of the plan's order (the
    # last Namespace) starts a tier of its own: the order given is kept
    assert tiers(changes) == [0, 0, 2, 2, 4, 4, 6]


def test_no_more_requests_in_flight_than_asked_and_outcomes_in_the_plans_order(api: ApiServer,
                                                                              kube: KubeClient) -> None:
    found = discover(kube)
    watch = Watch(kube)
    api.inject("/configmaps/c00$", method="PATCH", delay=0.6)       # the first is answered last
    api.inject("/configmaps/c0[1-9]$", method="PATCH", delay=0.1, times=None)
    names = [f"c{i:02}" for i in range(10)]
    seen: list[str] = []
    answered: list[tuple[int, int]] = []
    outcomes = execute(kube, Plan(tuple(_cm(n) for n in names)), resolve_kind=found.find, concurrency=4,
                       on_outcome=lambda o: seen.append(o.change.object.name),
                       on_answer=lambda done, planned: answered.append((done, planned)))
    assert [o.change.object.name for o in outcomes] == names == seen
    assert all(o.status is Status.DONE for o in outcomes)
    assert watch.peak == 4
    first = watch.writes()[0]
    assert first.name == "c00"
    # the others were sent and answered while the first was in flight: in parallel, not one after the other
    assert sum(1 for s in watch.writes()[1:] if s.ended < first.ended) >= 4
    assert answered == [(n, 10) for n in range(11)]


def test_one_in_flight_is_the_plans_order(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    watch = Watch(kube)
    names = [f"c{i:02}" for i in range(6)]
    execute(kube, Plan(tuple(_cm(n) for n in names)), resolve_kind=found.find, concurrency=1)
    writes = watch.writes()
    assert [s.name for s in writes] == names and watch.peak == 1
    assert all(before.ended <= after.started for before, after in zip(writes, writes[1:], strict=False))


def test_an_object_waits_for_the_namespace_the_plan_creates(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    watch = Watch(kube)
    api.inject("/namespaces/fresh$", method="PATCH", delay=0.4)
    plan = Plan((_ns("fresh"), _ns("other"), *(_cm(f"c{i}", "fresh") for i in range(5))))
    outcomes = execute(kube, plan, resolve_kind=found.find, concurrency=8)
    assert [o.status for o in outcomes] == [Status.DONE] * 7
    fresh = next(s for s in watch.writes() if s.name == "fresh")
    assert all(s.started >= fresh.ended for s in watch.writes() if s.name.startswith("c"))


def test_deletes_wait_for_every_create_and_update(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    for name in ("old1", "old2"):
        api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    configmaps = api.catalogue.by_kind("v1", "ConfigMap")
    assert configmaps is not None
    live = {n: api.store.get(configmaps, "v1", "default", n) for n in ("old1", "old2")}
    watch = Watch(kube)
    api.inject("/configmaps/slow$", method="PATCH", delay=0.4)
    deletes = [PlannedChange(Action.DELETE, "downstream", "orphan", None, Ref("v1", "ConfigMap", "default", n, "u"),
                             precondition_uid=live[n]["metadata"]["uid"],
                             precondition_resource_version=live[n]["metadata"]["resourceVersion"], message="delete")
               for n in ("old1", "old2")]
    plan = Plan((_cm("fast"), _cm("slow"), *deletes))
    outcomes = execute(kube, plan, resolve_kind=found.find, concurrency=8)
    assert [(o.change.object.name, o.status) for o in outcomes] == [
        ("fast", Status.DONE), ("slow", Status.DONE), ("old1", Status.DONE), ("old2", Status.DONE)]
    slow = next(s for s in watch.writes() if s.name == "slow")
    assert all(s.started >= slow.ended for s in watch.writes() if s.method == "DELETE")


def test_an_error_that_ends_the_run_is_raised_once_the_others_are_answered(api: ApiServer,
                                                                          kube: KubeClient) -> None:
    """401 ends the run (cluster/client.py); the requests already in flight are answered first, and their
    outcomes handed on, so that what was written is said."""
    from kubectl_kyrec.errors import ClusterError

    found = discover(kube)
    # b's answer comes first: a and c are still in flight, d waits for a place and is never sent
    api.inject("/configmaps/[ac]$", method="PATCH", delay=0.3, times=None)
    api.inject("/configmaps/b$", method="PATCH", status=401)
    seen: list[Outcome] = []
    with pytest.raises(ClusterError, match="rejected the credentials"):
        execute(kube, Plan((_cm("a"), _cm("b"), _cm("c"), _cm("d"))), resolve_kind=found.find, concurrency=3,
                on_outcome=seen.append)
    assert [o.change.object.name for o in seen] == ["a"]   # c was answered too, but after b, which has none
    assert {r.path.rsplit("/", 1)[-1] for r in api.writes()} == {"a", "b", "c"}      # d was never sent


def _apply(api: ApiServer, tmp_path: Any, *args: str) -> Any:
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli
    from tests.cluster.test_ctrl_c import POLICY

    api.kubeconfig(tmp_path / "kubeconfig")
    return CliRunner().invoke(cli, ["apply", "-p", POLICY, "--yes", *args],
                              env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                   "XDG_CACHE_HOME": str(tmp_path / "cache")})


@pytest.mark.parametrize("terminal", [True, False])
def test_apply_shows_writes_done_of_planned_on_a_terminal_only(api: ApiServer, tmp_path: Any,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               terminal: bool) -> None:
    from kubectl_kyrec.render import progress

    monkeypatch.setattr(progress, "_is_terminal", lambda stream: terminal)
    for i in range(5):
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i}"}})
    result = _apply(api, tmp_path)
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("done ")]
    assert [line.split()[3] for line in lines] == [f"team-{i}/base" for i in range(5)]
    if terminal:
        assert "\rapplied 5 of 5 writes (" in result.stderr and result.stderr.endswith("\r\x1b[K")
    else:
        assert "applied" not in result.stderr and "\r" not in result.stderr


def test_concurrency_is_a_usage_error_outside_its_range(api: ApiServer, tmp_path: Any) -> None:
    for value in ("0", "65", "x"):
        result = _apply(api, tmp_path, "--concurrency", value)
        assert result.exit_code == 2, (value, result.output)
        assert "--concurrency" in result.stderr
    assert api.writes() == []
