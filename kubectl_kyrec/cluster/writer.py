"""The only code in kyrec that writes to a cluster: it carries out a Plan, one object at a time, and records
an outcome per object (DESIGN section 3, `apply` contract).

- create/apply: server-side apply (`application/apply-patch+yaml`) with the plan's field manager and force;
  a missing report is a POST, so that it can never overwrite one that appeared since the read.
- delete: DeleteOptions with preconditions {uid, resourceVersion} from the read. A 409 means the object
  changed since; it is reported, never retried. So is a 409 without field conflicts on a re-apply, which
  carries the read's resourceVersion.
- `--dry-run=server` sends `dryRun=All` and reports what the server answered; `client` sends nothing.
- One failure does not stop the others. Ctrl-C stops between objects: the object in flight finishes and
  the rest are `not-attempted`.
"""

from __future__ import annotations

import contextlib
import enum
import re
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cluster.client import APPLY_PATCH, JSON, KubeClient, Response, RetriesExhausted
from kubectl_kyrec.errors import ClusterError
from kubectl_kyrec.load.kinds import ResourceInfo
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange

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


def conflicts_of(response: Response) -> tuple[tuple[str, str], ...]:
    """(manager, field) from a 409 apply conflict's details.causes."""
    try:
        body = response.json()
    except ClusterError:
        return ()
    causes = ((body or {}).get("details") or {}).get("causes") or [] if isinstance(body, Mapping) else []
    out = []
    for cause in causes:
        # metav1.StatusCause serialises its Type as "reason" (a real server never sends "type")
        if cause.get("reason") != "FieldManagerConflict":
            continue
        m = _MANAGER.search(str(cause.get("message") or ""))
        out.append((m.group(1) if m else str(cause.get("message") or ""), str(cause.get("field") or "")))
    return tuple(out)


class Interrupt:
    """SIGINT sets a flag instead of raising, so the request in flight completes; a second one raises."""

    def __init__(self) -> None:
        self.requested = False

    @contextlib.contextmanager
    def deferred(self) -> Iterator[Interrupt]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.getsignal(signal.SIGINT)

        def handler(signum: int, frame: Any) -> None:
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True

        signal.signal(signal.SIGINT, handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


def execute(client: KubeClient | None, plan: Plan, *, resolve_kind: Callable[[str, str], ResourceInfo | None],
            dry_run: DryRun = DryRun.NONE, on_outcome: Callable[[Outcome], None] | None = None,
            interrupt: Interrupt | None = None) -> list[Outcome]:
    """Carry out `plan`; `client` may be None only for a client-side dry run."""
    outcomes: list[Outcome] = []
    guard = interrupt or Interrupt()
    with guard.deferred():
        for change in plan.changes:
            if guard.requested and change.writes:
                outcome = Outcome(change, Status.NOT_ATTEMPTED, message="interrupted before this object")
            else:
                outcome = _one(client, plan, change, resolve_kind, dry_run)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return outcomes


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
    return _outcome(client, change, response, dry_run)


def _delete(client: KubeClient, info: ResourceInfo, change: PlannedChange, server_dry_run: bool) -> Response:
    ref = change.object
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1",
                               "preconditions": {"uid": change.precondition_uid,
                                                 "resourceVersion": change.precondition_resource_version}}
    if server_dry_run:
        options["dryRun"] = ["All"]
    return client.request("DELETE", object_path(info, ref.namespace, ref.name), body=options,
                          content_type=JSON, category="delete")


def _outcome(client: KubeClient, change: PlannedChange, response: Response, dry_run: DryRun) -> Outcome:
    code = response.status
    if response.ok:
        status = Status.DRY_RUN if dry_run is DryRun.SERVER else Status.DONE
        verb = {"create": "created", "apply": "applied", "update": "updated", "delete": "deleted"}[str(change.action)]
        if change.action is not Action.DELETE:
            verb += f" (server answered {code})"
        return Outcome(change, status, code, message=("server dry run: " if status is Status.DRY_RUN else "") + verb)
    message = response.status_message()
    if change.action is Action.DELETE and code == 404:
        return Outcome(change, Status.DONE, code, message="already gone (404)")
    if code == 409 and change.action is Action.UPDATE:
        return Outcome(change, Status.FAILED, code,
                       message=f"changed since it was read, not updated (not retried): {message}")
    if code == 409 and change.action is Action.DELETE:
        return Outcome(change, Status.FAILED, code,
                       message=f"changed since it was read, not deleted (not retried): {message}")
    if code == 409 and change.domain == "report" and change.action is Action.CREATE:
        return Outcome(change, Status.FAILED, code, message=f"a report appeared since the read; not overwritten: "
                                                            f"{message}")
    if code == 409 and change.action is Action.APPLY and not conflicts_of(response):
        return Outcome(change, Status.FAILED, code,
                       message=f"changed since it was read, not applied (not retried): {message}")
    if code == 409:
        conflicts = conflicts_of(response)
        managers = sorted({m for m, _ in conflicts})
        hint = f"; fields owned by {', '.join(managers)}" if managers else ""
        return Outcome(change, Status.FAILED, code, conflicts, f"{message.splitlines()[0]}{hint}")
    err = client.fail(response, str(change.action), change.object.kind, change.object.namespace, "")
    return Outcome(change, Status.FAILED, code, message=str(err))
