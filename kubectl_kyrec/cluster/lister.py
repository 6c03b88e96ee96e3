"""Paginated LISTs: one per resource type and scope a run needs, `limit`/`continue` pages, a label selector
where it narrows the read. No per-object GET.

A 410 on a continue token (the server compacted the revision the pages were read at) restarts that list
from the beginning, once. A 403 makes that one type unreadable and the run goes on; so do 5xx answers and
timeouts that outlast the client's retries. Unreachable servers, TLS failures and 401 end the run.

`list_many` has up to READS_IN_FLIGHT lists under way at once, from worker threads (each list's pages one
after the other), and returns the outcomes in the order asked: a run reads one list per kind a policy or
Kyverno's downstreams could name (about 90 on a cluster with Kyverno's CRDs), and one after the other they
waited on the server for most of `apply`'s reading (bench/apply_probe.py).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cluster.client import ForbiddenError, KubeClient, RetriesExhausted, StatusError
from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo

PAGE_SIZE = 500
# lists under way at once; kubectl's own client allows a burst of 10 requests before it slows down
READS_IN_FLIGHT = 4
# how often the main thread, waiting for the lists, looks at the signals recorded meanwhile
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class ListRequest:
    info: ResourceInfo
    namespace: str = ""             # "" = all namespaces (or a cluster-scoped kind)
    label_selector: str = ""
    # "fullSpec" asks Kubescape storage for its stored payloads rather than its metadata rows
    resource_version: str = ""
    # evidence only (UpdateRequests, for a finding's cause): no finding depends on it, so a refusal is said
    # in a notice and the run goes on, complete
    evidence: bool = False

    @property
    def path(self) -> str:
        info = self.info
        base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
        if self.namespace and info.namespaced:
            return f"{base}/namespaces/{self.namespace}/{info.resource}"
        return f"{base}/{info.resource}"

    @property
    def resource(self) -> str:
        return f"{self.info.resource}.{self.info.group}" if self.info.group else self.info.resource

    def describe(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        sel = f" -l {self.label_selector}" if self.label_selector else ""
        return f"{self.resource}{where}{sel}"


@dataclass
class ListOutcome:
    request: ListRequest
    items: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None        # set when the type could not be read (403, retries exhausted, ...)
    forbidden: bool = False
    status: int = 0                 # the HTTP code of a final error answer
    reason: str = ""                # its Status reason (Forbidden, ...), or Timeout when no answer came
    pages: int = 0
    restarts: int = 0
    resource_version: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def failed_read(self) -> FailedRead:
        """The record every output gives of this LIST, when it failed."""
        req = self.request
        return FailedRead("list", req.info.api_version, req.info.kind, req.resource, req.namespace,
                          self.status or None, self.reason, self.error or "unreadable")


Progress = Callable[[str], None]


def list_all(client: KubeClient, request: ListRequest, *, page_size: int = PAGE_SIZE,
             progress: Progress | None = None) -> ListOutcome:
    """Every object of one type and scope, as full objects (apiVersion and kind filled in: a LIST of a
    built-in kind leaves them out of its items)."""
    outcome = ListOutcome(request)
    info = request.info
    api_version, kind = info.api_version, info.kind
    token = ""
    while True:
        query = {"limit": page_size, "continue": token, "labelSelector": request.label_selector,
                 "resourceVersion": request.resource_version}
        try:
            response = client.request("GET", request.path, query=query, category="list")
        except RetriesExhausted as exc:
            outcome.error = str(exc)
            outcome.reason = "Timeout" if "timed out" in str(exc) else "ConnectionReset"
            return outcome
        outcome.pages += 1
        if response.status == 410 and token:
            if outcome.restarts >= 1:
                outcome.error = f"list {request.describe()}: the continue token expired again after a restart (410)"
                outcome.status, outcome.reason = 410, "Expired"
                return outcome
            outcome.restarts += 1
            outcome.items.clear()
            token = ""
            continue
        if not response.ok:
            err: StatusError = client.fail(response, "list", request.resource, request.namespace, request.path)
            outcome.error = str(err)
            outcome.status = response.status
            outcome.reason = response.status_reason() or ("Forbidden" if response.status == 403 else "")
            outcome.forbidden = isinstance(err, ForbiddenError)
            return outcome
        doc = response.json(request.path)
        for item in doc.get("items") or []:
            if isinstance(item, dict):
                if "apiVersion" not in item or "kind" not in item:
                    item = {"apiVersion": api_version, "kind": kind, **item}
                outcome.items.append(item)
        meta = doc.get("metadata") or {}
        outcome.resource_version = str(meta.get("resourceVersion") or "")
        token = str(meta.get("continue") or "")
        if progress is not None:
            remaining = meta.get("remainingItemCount")
            more = f", {remaining} to go" if isinstance(remaining, int) else ""
            progress(f"listing {request.describe()}: {len(outcome.items)}{more}")
        if not token:
            return outcome


def list_many(client: KubeClient, requests: Iterable[ListRequest], *, page_size: int = PAGE_SIZE,
              progress: Progress | None = None, in_flight: int = READS_IN_FLIGHT) -> list[ListOutcome]:
    """Every request's outcome, in the order asked, with up to `in_flight` lists under way at once. The
    main thread only waits, so a signal is seen at once (the lists under way are abandoned: reads, nothing
    to undo); an error that ends the run (401, unreachable) is raised once the lists under way are answered.
    The worker threads are gone when this returns: the process forks its `--jobs` workers later."""
    asked = list(requests)
    if in_flight <= 1 or len(asked) <= 1:
        return [list_all(client, r, page_size=page_size, progress=progress) for r in asked]
    outcomes: list[ListOutcome | None] = [None] * len(asked)
    jobs: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(asked)):
        jobs.put(index)
    answers: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
    stop = threading.Event()
    drawing = threading.Lock()

    def shown(message: str) -> None:
        assert progress is not None
        with drawing:        # one line on the terminal, redrawn by one thread at a time
            progress(message)

    def work() -> None:
        while not stop.is_set():
            try:
                index = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                outcomes[index] = list_all(client, asked[index], page_size=page_size,
                                           progress=shown if progress is not None else None)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
                stop.set()
                answers.put(exc)
                return
            answers.put(None)

    threads = [threading.Thread(target=work, name=f"kyrec-reader-{n}", daemon=True)
               for n in range(min(in_flight, len(asked)))]
    for thread in threads:
        thread.start()
    failure: BaseException | None = None
    waiting = len(asked)
    try:
        while waiting and not (failure is not None and not any(t.is_alive() for t in threads)):
            try:
                answer = answers.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            waiting -= 1
            failure = failure or answer
    finally:
        stop.set()          # on a signal, no new list is started; the ones under way are left to their threads
    for thread in threads:
        thread.join()
    if failure is not None:
        raise failure
    return [o for o in outcomes if o is not None]
