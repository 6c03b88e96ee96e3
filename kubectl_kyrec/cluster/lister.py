"""Paginated LISTs: one per resource type and scope a run needs, `limit`/`continue` pages, a label selector
where it narrows the read. No per-object GET.

A 410 on a continue token (the server compacted the revision the pages were read at) restarts that list
from the beginning, once. A 403 makes that one type unreadable and the run goes on; so do 5xx answers and
timeouts that outlast the client's retries. Unreachable servers, TLS failures and 401 end the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cluster.client import ForbiddenError, KubeClient, RetriesExhausted, StatusError
from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo

PAGE_SIZE = 500


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
              progress: Progress | None = None) -> list[ListOutcome]:
    return [list_all(client, r, page_size=page_size, progress=progress) for r in requests]
