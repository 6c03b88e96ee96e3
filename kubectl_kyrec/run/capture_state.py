"""`capture`: the state a later offline run needs, as one JSON List that records what was listed.

The same LISTs a live `diff` with the same policies makes (cluster/live.py), written in the capture format
(INTERFACES.md) that the state reader turns back into the same ClusterState: the listed and unreadable
kinds ride on the List's annotations, and objects keep their managedFields (kubectl hides them by default;
the foreign-fields check needs them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.live_source import KubescapeLiveSource, LiveSource
    from kubectl_kyrec.cluster.state import ClusterState

LISTED = "kyrec.io/listed"
UNREADABLE = "kyrec.io/unreadable"
SERVED = "kyrec.io/served"


@dataclass
class CaptureResult:
    document: dict[str, Any]
    secrets: int = 0                 # Secrets holding data, for the warning
    requests: Mapping[str, int] = field(default_factory=dict)

    def text(self) -> str:
        return json.dumps(self.document, indent=1) + "\n"


def capture_document(state: ClusterState) -> dict[str, Any]:
    listed = [k.to_json() for k in sorted(state.listed)]
    unreadable = [{**k.to_json(), "message": m} for k, m in sorted(state.unreadable.items())]
    annotations = {LISTED: json.dumps(listed, separators=(",", ":")),
                   UNREADABLE: json.dumps(unreadable, separators=(",", ":"))}
    if state.served is not None:
        # what the server served: an offline run then never advises capturing a kind that cannot be listed
        annotations[SERVED] = json.dumps([{"apiVersion": v, "kind": k} for v, k in sorted(state.served)],
                                         separators=(",", ":"))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": annotations}, "items": state.objs}


def run_capture(source: LiveSource) -> CaptureResult:
    inputs = source.read()
    state = inputs.state
    secrets = sum(1 for d in state.objects if d.kind == "Secret" and d.api_version == "v1"
                  and (d.obj.get("data") or d.obj.get("stringData")))
    client = source.client
    return CaptureResult(capture_document(state), secrets, dict(client.counts) if client else {})


def run_kubescape_capture(source: KubescapeLiveSource) -> CaptureResult:
    """`capture --producer kubescape`: the reads `coverage --producer kubescape` makes live, both copies of
    every summary included (the plain LIST's metadata row and the fullSpec LIST's payload: their
    resourceVersions are what `split` compares), so that the file classifies as the live run did."""
    state = source.read_state()
    requests: dict[str, int] = {}
    if source.last is not None:
        requests = {"list": source.last.list_requests}
    return CaptureResult(capture_document(state), 0, requests)
