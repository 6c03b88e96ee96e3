"""`capture`: the state a later offline run needs, as one JSON List that records what was listed.

The same LISTs a live `diff` with the same policies makes (cluster/live.py), written in the capture format
(docs/architecture.md#reading-a-live-cluster) that the state reader turns back into the same ClusterState: the listed
and unreadable kinds ride on the List's annotations, and objects keep their managedFields (kubectl hides them by
default; the foreign-fields check needs them). Secret values are written as salted digests unless asked otherwise
(load/run_inputs/secret_digests.py): a capture is kept for later runs, and drift needs only equality.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from kubectl_kyrec.errors import ExitCode, FailedRead
from kubectl_kyrec.run.unreadable import failed_reads, with_failed_reads

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.live_source import KindsLiveSource, KubescapeLiveSource, LiveSource
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState

LISTED = "kyrec.io/listed"
UNREADABLE = "kyrec.io/unreadable"
SERVED = "kyrec.io/served"
EVIDENCE_UNREAD = "kyrec.io/evidence-unread"


@dataclass
class CaptureResult:
    document: dict[str, Any]
    secrets: int = 0                 # Secrets whose values are written in clear, for the warning
    requests: Mapping[str, int] = field(default_factory=dict)
    # the LISTs that failed: recorded in the file too, and the capture exits 5 (not a complete state)
    failed_reads: list[FailedRead] = field(default_factory=list)
    # what the command says beside the file: a -n that matched nothing (as `kubectl get -n nope`)
    notices: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        return with_failed_reads(ExitCode.CLEAN, self.failed_reads)

    def write(self, stream: TextIO) -> None:
        """The List as `json.dumps(indent=1)` prints it, written piece by piece as it is encoded: that encoder
        (pure Python, as every indented one) would otherwise hold millions of small strings and then the whole
        text, about 9x the file (bench/RESULTS.md, bench/live_scale.py)."""
        json.dump(self.document, stream, indent=1)
        stream.write("\n")

    def counts(self) -> str:
        """What was captured, for the summary line of a capture written to a file (`12 objects, 9 kinds
        listed`; the reads that failed too)."""
        annotations = self.document.get("metadata", {}).get("annotations", {})
        listed = len(json.loads(annotations.get(LISTED, "[]")))
        objects = len(self.document.get("items") or [])
        parts = [f"{objects} object{'s' if objects != 1 else ''}", f"{listed} kind{'s' if listed != 1 else ''} listed"]
        if self.failed_reads:
            failed = len(self.failed_reads)
            parts.append(f"{failed} read{'s' if failed != 1 else ''} failed")
        return ", ".join(parts)


def capture_document(state: ClusterState, secret_salt: bytes | None = None) -> dict[str, Any]:
    """The capture of `state`; with `secret_salt`, every Secret's values digested with it and the salt
    recorded (the objects of `state` are left as they are)."""
    from kubectl_kyrec.load.run_inputs.secret_digests import SALT_ANNOTATION, digest_secret, is_secret, salt_text

    listed = [k.to_json() for k in sorted(state.listed)]
    # each failed read with how it ended, so that an offline run on the file says it as the live run did
    unreadable = [{**k.to_json(), "verb": r.verb, "resource": r.resource, "status": r.status, "reason": r.reason,
                   "message": r.message} for k, r in sorted(state.unreadable.items())]
    annotations = {LISTED: json.dumps(listed, separators=(",", ":")),
                   UNREADABLE: json.dumps(unreadable, separators=(",", ":"))}
    if state.evidence_unread:
        # the evidence reads that failed (a restricted reader's Deployments in kyverno): an offline run names
        # them where a cause could not be decided, as the live run did
        annotations[EVIDENCE_UNREAD] = json.dumps([{**k.to_json(), "message": m} for k, m in
                                                   sorted(state.evidence_unread.items())], separators=(",", ":"))
    if state.served is not None:
        # what the server served: an offline run then never advises capturing a kind that cannot be listed
        annotations[SERVED] = json.dumps([{"apiVersion": v, "kind": k} for v, k in sorted(state.served)],
                                         separators=(",", ":"))
    items = state.objs
    if secret_salt is not None:
        items = [digest_secret(o, secret_salt) if is_secret(o) else o for o in items]
        if any(is_secret(o) for o in items):
            annotations[SALT_ANNOTATION] = salt_text(secret_salt)
    return {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": annotations}, "items": items}


def run_capture(source: LiveSource, include_secret_values: bool = False) -> CaptureResult:
    """`include_secret_values`: Secrets as the server gave them (the result counts those with values, for
    the warning); by default their values are digests."""
    from kubectl_kyrec.load.run_inputs.secret_digests import is_secret, new_salt
    from kubectl_kyrec.load.run_inputs.selection import Selection
    from kubectl_kyrec.run.select import nothing_selected, selects_any

    inputs = source.read()
    state = inputs.state
    secrets = sum(1 for d in state.objects if is_secret(d.obj) and (d.obj.get("data") or d.obj.get("stringData")))
    client = source.client
    document = capture_document(state, None if include_secret_values else new_salt())
    notices = []
    if source.namespace and not selects_any(Selection(namespace=source.namespace), state.objects):
        notices.append(nothing_selected(f"-n {source.namespace}", len(state.objects)))
    return CaptureResult(document, secrets if include_secret_values else 0, dict(client.counts) if client else {},
                         failed_reads(state), notices)


def run_kubescape_capture(source: KubescapeLiveSource) -> CaptureResult:
    """`capture --producer kubescape`: the reads `coverage --producer kubescape` makes live, both copies of
    every summary included (the plain LIST's metadata row and the fullSpec LIST's payload: their
    resourceVersions are what `split` compares), so that the file classifies as the live run did."""
    state = source.read_state()
    requests: dict[str, int] = {}
    if source.last is not None:
        requests = {"list": source.last.list_requests}
    return CaptureResult(capture_document(state), 0, requests, failed_reads(state))


def run_kinds_capture(source: KindsLiveSource, include_secret_values: bool = False) -> CaptureResult:
    """`capture --kind KIND...`: the named kinds only, each LIST recorded as listed even when it found nothing
    (what `kubectl get -o json` cannot record: its empty List names no kind). What a run's notice advises
    capturing, so that the finding it left undecided is decided by passing the file with another --state."""
    from kubectl_kyrec.load.run_inputs.secret_digests import is_secret, new_salt

    state = source.read_state()
    secrets = sum(1 for d in state.objects if is_secret(d.obj) and (d.obj.get("data") or d.obj.get("stringData")))
    client = source.client
    document = capture_document(state, None if include_secret_values else new_salt())
    return CaptureResult(document, secrets if include_secret_values else 0, dict(client.counts) if client else {},
                         failed_reads(state))
