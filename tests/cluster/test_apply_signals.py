"""`apply` under real SIGINT and SIGTERM, in a child process against the API double: the summary is always
printed, the exit is 130 (143), the object whose answer never came is `unknown` and the rest are
`not-attempted`, and the counts agree with what the server holds.

The child is the console command, started as test_ctrl_c starts it (SIGINT at Python's default, or
ignored, whatever this suite was started with); each test waits for a request the double logs or a line
the child writes, never for a fixed time, and every wait has a deadline. Each runs with one write in flight
(`--concurrency 1`, the plan's order) and with the default parallel writer (8).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.interrupts import GRACE_SECONDS
from tests.cluster.test_ctrl_c import DEADLINE, POLICY, console, finish, wait_for
from tests.kubeapi.server import ApiServer

TEAMS = [f"team-{i:02}" for i in range(12)]
CONCURRENCY = pytest.mark.parametrize("concurrency", [1, 8])


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as server:
        for name in TEAMS:
            server.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        server.kubeconfig(tmp_path / "kubeconfig")
        server.clear_log()
        yield server


def start(api: ApiServer, tmp_path: Path, *args: str, sigint: str = "default_int_handler",
          concurrency: int = 1) -> subprocess.Popen[str]:
    return console(["apply", "-p", POLICY, "--yes", "--concurrency", str(concurrency), *args], tmp_path,
                   sigint=sigint)


def created(api: ApiServer) -> set[str]:
    """The namespaces whose ConfigMap the server holds."""
    listed = api.store.list(api.catalogue.by_kind("v1", "ConfigMap"), "v1", "")  # type: ignore[arg-type]
    return {item["metadata"]["namespace"] for item in listed["items"]}


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    return {o["object"]["namespace"]: o["status"] for o in doc["outcomes"]}


@CONCURRENCY
@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGINT, 130, "interrupted"),
                                                       (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_signal_between_writes_stops_there_and_prints_the_summary(api: ApiServer, tmp_path: Path, signum: int,
                                                                      code: int, line: str, concurrency: int) -> None:
    # every write takes a little while, so that the run is still writing when the signal comes (with 8 in
    # flight, long enough that the first 8 are still in flight then: the other 4 are never sent)
    api.inject("/configmaps/base$", method="PATCH", delay=0.05 if concurrency == 1 else 1.0, times=None)
    child = start(api, tmp_path, "-o", "json", concurrency=concurrency)
    wait_for(api, "PATCH", "/configmaps/base$", 4)
    child.send_signal(signum)
    returncode, out, err = finish(child)
    assert returncode == code, err
    doc = json.loads(out)
    summary = doc["summary"]
    assert set(summary) == {"done", "dry-run", "failed", "refused", "not-attempted", "unknown", "failedReads"}
    done = {ns for ns, status in statuses(doc).items() if status == "done"}
    # each answer came within the grace: nothing unknown, and what is done is what the server holds
    assert summary["unknown"] == 0 and done == created(api)
    assert 4 <= summary["done"] < len(TEAMS) and summary["done"] + summary["not-attempted"] == len(TEAMS)
    assert len(api.writes()) == summary["done"]
    assert err.splitlines()[-1] == f"{line}: {summary['not-attempted']} not attempted"
    assert "Traceback" not in err


def test_a_signal_during_a_slow_request_makes_that_object_unknown(api: ApiServer, tmp_path: Path) -> None:
    api.inject("/namespaces/team-03/configmaps/base$", method="PATCH", delay=GRACE_SECONDS + 10)
    child = start(api, tmp_path)
    wait_for(api, "PATCH", "/namespaces/team-03/configmaps/base$")
    child.send_signal(signal.SIGINT)
    returncode, out, err = finish(child)
    assert returncode == 130, err
    rows = {line.split()[3].split("/")[0]: line.split()[0] for line in out.splitlines()
            if line.split()[:1] in (["done"], ["unknown"], ["not-attempted"])}
    assert rows == {**{ns: "done" for ns in TEAMS[:3]}, "team-03": "unknown",
                    **{ns: "not-attempted" for ns in TEAMS[4:]}}
    assert out.splitlines()[-1] == ("summary: done: 3, dry-run: 0, failed: 0, refused: 0, "
                                    f"not-attempted: {len(TEAMS) - 4}, unknown: 1")
    assert "waiting up to" in err and "1 unknown (the server may or may not have written them)" in err
    assert len(api.requests("PATCH")) == 4        # nothing sent after the signal


def test_in_parallel_a_slow_request_is_unknown_and_the_rows_keep_the_plans_order(api: ApiServer,
                                                                                 tmp_path: Path) -> None:
    """8 in flight: the writes after team-03 are answered before it, and some may not have been sent when
    the signal comes. Each row is still printed in the plan's order, team-03's as `unknown`; what is `done`
    is what the server holds, and nothing else was sent."""
    api.inject("/namespaces/team-03/configmaps/base$", method="PATCH", delay=GRACE_SECONDS + 10)
    child = start(api, tmp_path, concurrency=8)
    wait_for(api, "PATCH", "/namespaces/team-03/configmaps/base$")
    wait_for(api, "PATCH", "/namespaces/team-07/configmaps/base$")      # the first 8 were sent together
    child.send_signal(signal.SIGINT)
    returncode, out, err = finish(child)
    assert returncode == 130, err
    rows = [(line.split()[3].split("/")[0], line.split()[0]) for line in out.splitlines()
            if line.split()[:1] in (["done"], ["unknown"], ["not-attempted"])]
    assert [ns for ns, _ in rows] == TEAMS
    status = dict(rows)
    assert status["team-03"] == "unknown"
    done = {ns for ns, st in rows if st == "done"}
    assert done == created(api) and done >= {ns for ns in TEAMS[:8] if ns != "team-03"}
    assert {st for ns, st in rows if ns not in done | {"team-03"}} <= {"not-attempted"}
    assert len(api.requests("PATCH")) == len(done) + 1        # the done ones and the unknown one, no more
    left = len(TEAMS) - len(done) - 1
    assert out.splitlines()[-1] == (f"summary: done: {len(done)}, dry-run: 0, failed: 0, refused: 0, "
                                    f"not-attempted: {left}, unknown: 1")
    assert "waiting up to" in err and "1 unknown (the server may or may not have written them)" in err


@CONCURRENCY
def test_a_second_signal_stops_waiting_for_the_answer(api: ApiServer, tmp_path: Path, concurrency: int) -> None:
    api.inject("/namespaces/team-03/configmaps/base$", method="PATCH", delay=GRACE_SECONDS + 10)
    child = start(api, tmp_path, "-o", "json", concurrency=concurrency)
    wait_for(api, "PATCH", "/namespaces/team-03/configmaps/base$")
    child.send_signal(signal.SIGINT)
    deadline = time.monotonic() + DEADLINE
    while "waiting up to" not in (child.stderr.readline() if child.stderr else "waiting up to"):
        assert time.monotonic() < deadline
    child.send_signal(signal.SIGINT)
    second = time.monotonic()
    returncode, out, err = finish(child)
    assert time.monotonic() - second < GRACE_SECONDS      # it did not wait the grace out
    assert returncode == 130
    assert statuses(json.loads(out))["team-03"] == "unknown"


def test_a_signal_while_reading_prints_an_empty_summary(api: ApiServer, tmp_path: Path) -> None:
    api.inject("/api/v1/namespaces$", method="GET", delay=30)
    child = start(api, tmp_path, "-o", "json")
    wait_for(api, "GET", "/api/v1/namespaces$")
    child.send_signal(signal.SIGTERM)
    returncode, out, err = finish(child)
    assert returncode == 143, err
    doc = json.loads(out)
    assert doc["kind"] == "ApplyResult" and doc["outcomes"] == [] and set(doc["summary"].values()) == {0}
    assert err.splitlines()[-1] == "terminated (SIGTERM): while reading; nothing written"
    assert api.writes() == []


@CONCURRENCY
def test_an_ignored_sigint_stays_ignored(api: ApiServer, tmp_path: Path, concurrency: int) -> None:
    api.inject("/configmaps/base$", method="PATCH", delay=0.05, times=None)
    child = start(api, tmp_path, "-o", "json", sigint="SIG_IGN", concurrency=concurrency)
    wait_for(api, "PATCH", "/configmaps/base$", 2)
    child.send_signal(signal.SIGINT)
    returncode, out, err = finish(child)
    assert returncode == 0, err
    assert json.loads(out)["summary"]["done"] == len(TEAMS) == len(created(api))
