"""The only code in kyrec that writes to a cluster: it carries out a Plan and records an outcome per object
(docs/architecture.md#writing-corrections; docs/output.md, `ApplyResult`).

- create/apply: server-side apply (`application/apply-patch+yaml`) with the plan's field manager and force;
  a missing report is a POST, so that it can never overwrite one that appeared since the read.
- delete: DeleteOptions with preconditions {uid, resourceVersion} from the read. A 409 means the object
  changed since; it is reported, never retried. So is a 409 without field conflicts on a re-apply, which
  carries the read's resourceVersion.
- `--dry-run=server` sends `dryRun=All` and reports what the server answered; `client` sends nothing.
- One failure does not stop the others.
- At most `concurrency` requests in flight (`apply --concurrency`, docs/commands.md), sent from worker
  threads; the plan's order is kept between its tiers (`tiers`: an object after the Namespace or CRD the plan
  writes for it, every create and update before the first delete), and each outcome is handed on in the
  plan's order whatever order the answers come in. 1 is the plan's order, one request at a time.
- SIGINT or SIGTERM (kubectl_kyrec.interrupts) stop new requests: the objects not sent are `not-attempted`.
  The main thread only waits for answers, so a signal is seen at once: the answers of the requests in flight
  are awaited for a short grace (a second signal ends the wait), and an object whose answer did not come is
  `unknown` (the server may or may not have written it), never dropped nor counted as done.
"""

from __future__ import annotations

import enum
import functools
import queue
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cluster.client import APPLY_PATCH, JSON, KubeClient, Response, RetriesExhausted
from kubectl_kyrec.errors import ClusterError
from kubectl_kyrec.interrupts import Interrupt
from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange, rank

REPORT_FIELD_MANAGER = "kyrec"


class DryRun(enum.StrEnum):
    NONE = "none"
    SERVER = "server"
    CLIENT = "client"


class Status(enum.StrEnum):
    DONE = "done"
    DRY_RUN = "dry-run"
    FAILED = "failed"
    REFUSED = "refused"
    NOT_ATTEMPTED = "not-attempted"
    UNKNOWN = "unknown"             # the request was sent and its answer never came (interrupted)


@dataclass(frozen=True)
class Outcome:
    change: PlannedChange
    status: Status
    http_status: int | None = None
    conflicts: tuple[tuple[str, str], ...] = ()      # (manager, field path)
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"action": str(self.change.action), "class": str(self.change.klass),
                "object": self.change.object.to_json(),
                "status": str(self.status), "httpStatus": self.http_status,
                "conflicts": [{"manager": m, "field": f} for m, f in self.conflicts], "message": self.message}


def object_path(info: ResourceInfo, namespace: str, name: str | None) -> str:
    base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    scope = f"/namespaces/{namespace}" if info.namespaced and namespace else ""
    return f"{base}{scope}/{info.resource}" + (f"/{name}" if name else "")


_MANAGER = re.compile(r'conflict with "((?:[^"\\]|\\.)*)"')


def _status_body(response: Response) -> Mapping[str, Any]:
    try:
        body = response.json()
    except ClusterError:
        return {}
    return body if isinstance(body, Mapping) else {}


def conflicts_of(response: Response) -> tuple[tuple[str, str], ...]:
    """(manager, field) from a 409 apply conflict's details.causes (type FieldManagerConflict)."""
    causes = (_status_body(response).get("details") or {}).get("causes") or []
    out = []
    for cause in causes:
        # metav1.StatusCause serialises its Type as "reason" (a real server never sends "type")
        if not isinstance(cause, Mapping) or cause.get("reason") != "FieldManagerConflict":
            continue
        m = _MANAGER.search(str(cause.get("message") or ""))
        out.append((m.group(1) if m else str(cause.get("message") or ""), str(cause.get("field") or "")))
    return tuple(out)


__all__ = ["DryRun", "Interrupt", "Outcome", "Status", "execute", "not_attempted", "tiers"]

# how often the wait for a request in flight looks at the signals recorded meanwhile
_POLL_SECONDS = 0.05


def not_attempted(change: PlannedChange, why: str) -> Outcome:
    """What an object the run stopped before gets: a skip stays `refused` (it would never be written)."""
    if change.action is Action.SKIP:
        return Outcome(change, Status.REFUSED, message=change.message)
    return Outcome(change, Status.NOT_ATTEMPTED, message=why)


class _Workers:
    """`size` worker threads that make the requests while the main thread waits for their answers, so that
    the main thread can answer a signal while requests are in flight (a signal handler runs only in the main
    thread, and only between bytecodes: never inside a blocking socket read). Answers come back on one
    queue as (index, outcome or the exception the request raised)."""

    def __init__(self, size: int) -> None:
        self._jobs: queue.SimpleQueue[tuple[int, Callable[[], Outcome]] | None] = queue.SimpleQueue()
        self.answers: queue.SimpleQueue[tuple[int, Outcome | BaseException]] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"kyrec-writer-{n}", daemon=True)
                         for n in range(size)]
        for thread in self._threads:
            thread.start()
        self.abandoned = False

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            index, call = job
            try:
                answer: Outcome | BaseException = call()
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
                answer = exc
            self.answers.put((index, answer))

    def send(self, index: int, call: Callable[[], Outcome]) -> None:
        self._jobs.put((index, call))

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        if not self.abandoned:
            # the threads end at once; waiting for them keeps the process single-threaded afterwards
            # (fan_out forks only then)
            for thread in self._threads:
                thread.join()


def tiers(changes: tuple[PlannedChange, ...]) -> list[int]:
    """For each change, the index where its tier starts: a change is sent only once every change before its
    tier has been answered. A tier is a run of neighbours of the same kind of action (writes, deletes, skips)
    and the same rank (reconcile/plan.py: CRDs, Namespaces, other cluster-scoped kinds, then namespaced kinds
    by what others refer to): the plan's order is kept between tiers, so an object waits for the Namespace
    or CRD the plan writes for it, and every create and update is answered before the first delete."""
    starts: list[int] = []
    previous: tuple[int, int] | None = None
    for index, change in enumerate(changes):
        key = (0 if change.action is Action.DELETE else 1 if change.writes else 2, rank(change.object))
        starts.append(index if key != previous else starts[-1])
        previous = key
    return starts


def execute(client: KubeClient | None, plan: Plan, *, resolve_kind: Callable[[str, str], ResourceInfo | None],
            dry_run: DryRun = DryRun.NONE, on_outcome: Callable[[Outcome], None] | None = None,
            interrupt: Interrupt | None = None, concurrency: int = 1,
            on_answer: Callable[[int, int], None] | None = None) -> list[Outcome]:
    """Carry out `plan`; `client` may be None only for a client-side dry run. At most `concurrency` requests
    are in flight (1: one after the other, in the plan's order), within the order `tiers` keeps. Outcomes
    are handed to `on_outcome` in the plan's order whatever order the answers come in; `on_answer(done,
    planned)` is told the number of requests answered so far, 0 before the first is sent, then after each
    answer."""
    changes = plan.changes
    outcomes: list[Outcome | None] = [None] * len(changes)
    starts = tiers(changes)
    sending = client is not None and dry_run is not DryRun.CLIENT
    planned = sum(1 for c in changes if c.writes) if sending else 0
    guard = interrupt or Interrupt()
    emitted = 0         # outcomes[:emitted] are all there and handed on
    answered = 0

    def record(index: int, outcome: Outcome) -> None:
        nonlocal emitted
        outcomes[index] = outcome
        while emitted < len(changes) and (ready := outcomes[emitted]) is not None:
            emitted += 1
            if on_outcome is not None:
                on_outcome(ready)

    with guard.installed():
        guard.defer()
        workers = _Workers(max(1, min(concurrency, planned))) if planned else None
        if planned and on_answer is not None:
            on_answer(0, planned)
        in_flight: set[int] = set()
        failure: BaseException | None = None
        deadline: float | None = None
        try:
            following = 0       # the next change to start
            while emitted < len(changes):
                stop = guard.requested or failure is not None
                while not stop and following < len(changes) and emitted >= starts[following] and \
                        len(in_flight) < max(1, concurrency):
                    change = changes[following]
                    if workers is None or not change.writes:
                        record(following, _one(client, plan, change, resolve_kind, dry_run))
                    else:
                        in_flight.add(following)
                        workers.send(following, functools.partial(_one, client, plan, change, resolve_kind,
                                                                  dry_run))
                    following += 1
                if stop and not in_flight:
                    break
                if not in_flight:
                    continue
                assert workers is not None
                try:
                    index, answer = workers.answers.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    if guard.signum is None:
                        continue
                    if deadline is None:
                        deadline = time.monotonic() + guard.grace
                        if guard.notify is not None and not guard.hard:
                            guard.notify(_waiting(guard.grace, len(in_flight)))
                    if guard.hard or time.monotonic() >= deadline:
                        workers.abandoned = True
                        break
                    continue
                in_flight.discard(index)
                if isinstance(answer, BaseException):
                    failure = failure or answer     # the first one is raised once the others are answered
                    continue
                answered += 1
                record(index, answer)
                if on_answer is not None:
                    on_answer(answered, planned)
            if failure is not None:
                raise failure
            for index in sorted(in_flight):
                record(index, _unknown(changes[index]))
            for index in range(len(changes)):
                if outcomes[index] is None:
                    record(index, not_attempted(changes[index], "interrupted before this object"))
        finally:
            if workers is not None:
                workers.close()
    return [o for o in outcomes if o is not None]


def _waiting(grace: float, count: int) -> str:
    what = "the answer to the request" if count == 1 else f"the answers to the {count} requests"
    return f"waiting up to {grace:g} s for {what} in flight (interrupt again to stop waiting)"


def _unknown(change: PlannedChange) -> Outcome:
    return Outcome(change, Status.UNKNOWN, message=f"interrupted while waiting for the server's answer: the "
                                                   f"{change.action} may or may not have been made "
                                                   "(`kubectl kyrec diff` tells)")


def _one(client: KubeClient | None, plan: Plan, change: PlannedChange,
         resolve_kind: Callable[[str, str], ResourceInfo | None], dry_run: DryRun) -> Outcome:
    if change.action is Action.SKIP:
        return Outcome(change, Status.REFUSED, message=change.message)
    if dry_run is DryRun.CLIENT:
        return Outcome(change, Status.DRY_RUN, message=f"would {change.action} ({change.message})")
    ref = change.object
    info = resolve_kind(ref.api_version, ref.kind)
    if info is None:
        return Outcome(change, Status.FAILED, message=f"the cluster does not serve {ref.api_version} {ref.kind}")
    assert client is not None
    dry = {"dryRun": "All"} if dry_run is DryRun.SERVER else {}
    try:
        if change.action is Action.DELETE:
            response = _delete(client, info, change, dry_run is DryRun.SERVER)
        elif change.domain == "report" and change.action is Action.CREATE:
            response = client.request("POST", object_path(info, ref.namespace, None), body=dict(change.body or {}),
                                      query={"fieldManager": REPORT_FIELD_MANAGER, **dry}, content_type=JSON,
                                      category="create")
        elif change.action is Action.UPDATE:
            response = client.request("PUT", object_path(info, ref.namespace, ref.name), body=dict(change.body or {}),
                                      query={"fieldManager": plan.field_manager, **dry}, content_type=JSON,
                                      category="update")
        else:
            query = {"fieldManager": plan.field_manager, **({"force": "true"} if plan.force else {}), **dry}
            response = client.request("PATCH", object_path(info, ref.namespace, ref.name),
                                      body=dict(change.body or {}), query=query, content_type=APPLY_PATCH,
                                      category="apply")
    except RetriesExhausted as exc:
        return Outcome(change, Status.FAILED, message=str(exc))
    return _outcome(client, change, info, response, dry_run)


def _delete(client: KubeClient, info: ResourceInfo, change: PlannedChange, server_dry_run: bool) -> Response:
    ref = change.object
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1",
                               "preconditions": {"uid": change.precondition_uid,
                                                 "resourceVersion": change.precondition_resource_version}}
    if change.propagation_policy:
        # a DeletingPolicy's deletionPropagationPolicy (kk: pkg/controllers/deleting/controller.go)
        options["propagationPolicy"] = change.propagation_policy
    if server_dry_run:
        options["dryRun"] = ["All"]
    return client.request("DELETE", object_path(info, ref.namespace, ref.name), body=options,
                          content_type=JSON, category="delete")


_DONE = {"create": "created", "apply": "applied", "update": "updated", "delete": "deleted"}


def _rbac_verb(change: PlannedChange) -> str:
    """The verb the API server authorizes the request as (the method _one sends)."""
    if change.action is Action.DELETE:
        return "delete"
    if change.action is Action.UPDATE:
        return "update"
    return "create" if change.domain == "report" and change.action is Action.CREATE else "patch"


def _outcome(client: KubeClient, change: PlannedChange, info: ResourceInfo, response: Response,
             dry_run: DryRun) -> Outcome:
    code = response.status
    done = _DONE[str(change.action)]
    if response.ok:
        status = Status.DRY_RUN if dry_run is DryRun.SERVER else Status.DONE
        text = done if change.action is Action.DELETE else f"{done} (server answered {code})"
        return Outcome(change, status, code, message=("server dry run: " if status is Status.DRY_RUN else "") + text)
    if change.action is Action.DELETE and code == 404:
        return Outcome(change, Status.DONE, code, message="already gone (404)")
    if code == 409:
        return _conflict(change, response, done)
    resource = f"{info.resource}.{info.group}" if info.group else info.resource
    err = client.fail(response, _rbac_verb(change), resource, change.object.namespace, "")
    return Outcome(change, Status.FAILED, code, message=str(err))


def _conflict(change: PlannedChange, response: Response, done: str) -> Outcome:
    """A 409, worded by what its Status says it is: fields other managers own (a server-side apply without
    force: details.causes of type FieldManagerConflict), an object that appeared since the read (reason
    AlreadyExists), or one that changed since (reason Conflict: the resourceVersion or uid precondition
    the request carried). None of them is retried."""
    message = response.status_message()
    conflicts = conflicts_of(response)
    if conflicts:
        fields: dict[str, list[str]] = {}
        for manager, path in conflicts:
            fields.setdefault(manager, []).append(path)
        owned = "; ".join(f'{", ".join(paths)} owned by "{manager}"' for manager, paths in sorted(fields.items()))
        return Outcome(change, Status.FAILED, 409, conflicts,
                       f"not {done}: field manager conflict: {owned} (--force takes them over, as Kyverno does)")
    reason = _status_body(response).get("reason")
    first = message.splitlines()[0] if message else "409"
    if reason == "AlreadyExists":
        what = "a report" if change.domain == "report" else "the object"
        return Outcome(change, Status.FAILED, 409, message=f"{what} appeared since the read; not overwritten: {first}")
    if reason == "Conflict":
        return Outcome(change, Status.FAILED, 409,
                       message=f"changed since it was read, not {done} (not retried): {first}")
    return Outcome(change, Status.FAILED, 409, message=f"not {done}: 409 {first}")
