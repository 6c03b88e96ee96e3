"""Kubescape vulnerability summaries as claims about running containers (docs/semantics/kubescape.md).

**Subjects.** One per (namespace, top-level workload, container) of the running Pods in the state. The top
workload is found by following `ownerReferences` (the controller reference, else the first) through the
objects the state holds: Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob, Pod -> StatefulSet (a
Node's reference on a mirror Pod is not followed, as k8s-interface ignores it); an
owner the state does not hold ends the walk at the reference's kind and name (kyrec does not guess a
Deployment from a ReplicaSet's name). That is the workload `kubescape.io/wlid` names
(`wlid://cluster-<c>/namespace-<ns>/<kind>-<name>`, kind in lower case). The expected image identity is
each running container's `status.containerStatuses[].imageID`; replicas running different images all
count (a summary of any of them is not `image-changed`). Out of scope, counted by rule in `outOfScope`
and never silently:

- `not-running`: a Pod whose phase is not Running (Pending: no image yet);
- `completed-pod`: phase Succeeded or Failed (Jobs that finished; their containers no longer run);
- `unscanned-namespace`: a namespace the scanner is configured not to scan (`skip_namespaces`, the
  operator's `excludeNamespaces`);
- `init-container`, `ephemeral-container`: they do not run for the Pod's life (one count per container).

**Claims.** `VulnerabilityManifestSummary` objects, keyed by the `kubescape.io/wlid` and
`kubescape.io/workload-container-name` annotations. The state may hold two copies of one summary (by
namespace and name): a plain LIST serves the storage's *metadata rows* (every counter zero, references
blank, or no spec at all), a `resourceVersion=fullSpec` LIST the stored *payloads*. A copy with a filled
spec is a payload. Freshness (image id, timestamp, status) is read from the metadata copy when there is one,
since that is what the scanner itself and every plain reader see; severities and references come from the
payload copy only.

**Judgement of the kept summary** (stale reasons in this order):

- `image-changed`: `kubescape.io/image-id` is none of the running image ids (compared by digest when both
  carry one, after dropping a `docker-pullable://`-style scheme);
- `scan-failed`: `kubescape.io/status` is a failure value (`FAILURE_STATUSES`; storage itself writes
  `too-large` and clears the spec of an object it cannot store);
- `no-result`: a stub: both reads return it with an empty spec (kubevuln's `StoreCVESummaryStub` writes one,
  status `initializing` or `ready`, before a scan has a result). Only knowable when the state holds a
  fullSpec read (some copy is filled); with the plain read alone every copy is empty;
- `not-rescanned`: `now - kubescape.io/timestamp` exceeds the scan period plus the grace (or the timestamp is
  absent or not Unix seconds). The period defaults from the `kubevuln-scheduler` CronJob's schedule when the
  state holds it, else daily (kubevuln's default schedule);
- integrity: both copies with different resourceVersions: `split`; both reads present and equal: `intact`;
  only one copy (or only one of the two reads in the whole state): `undetermined`, never assumed intact;
- pairing: `spec.vulnerabilitiesRef.all` (and `.relevant` when set) must name a `VulnerabilityManifest` that
  exists at the namespace and name given. When it does not, the summary is unpaired (`not-found`) and
  `resolvesIn` lists the namespaces where a manifest of that name does exist (kubevuln writes manifests to the
  scanner's namespace but points the reference at the workload's: the seed's symptom). A stub, or a
  payload without an `all` reference: `no-reference`. Undetermined (`paired` null, never assumed paired):
  no payload copy (`payload-not-read`), or no manifest in the state at all (`manifests-not-read`).

**Leftovers.** A summary whose key is an out-of-scope container (rule above) is ignored; one whose workload
has no running Pod is an orphan `workload-gone`; one whose workload runs without that container,
`container-gone`; one without a readable wlid or container annotation, `unkeyed`.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.claims import (
    IGNORED,
    Claim,
    Classification,
    Expectation,
    Integrity,
    Judgement,
    Leftover,
    Pairing,
    classify,
)

GROUP_VERSION = "spdx.softwarecomposition.kubescape.io/v1beta1"
SUMMARY_KIND = "VulnerabilityManifestSummary"
MANIFEST_KIND = "VulnerabilityManifest"

ANNOTATION_WLID = "kubescape.io/wlid"
ANNOTATION_CONTAINER = "kubescape.io/workload-container-name"
ANNOTATION_IMAGE_ID = "kubescape.io/image-id"
ANNOTATION_TIMESTAMP = "kubescape.io/timestamp"
ANNOTATION_STATUS = "kubescape.io/status"

# k8s-interface instanceidhandler/v1/helpers/keys.go: the statuses that say the scan did not produce a result
FAILURE_STATUSES = frozenset({"failed", "too-large", "unauthorize", "missing-runtime", "incomplete"})
SEVERITIES = ("critical", "high", "medium", "low", "negligible", "unknown")

SCANNER_NAMESPACE = "kubescape"
# the operator chart's documented excludeNamespaces example; installs set their own (`--skip-namespaces`)
DEFAULT_SKIP_NAMESPACES = ("kubescape", "kube-system", "kube-public")
SCHEDULER_NAME = "kubevuln-scheduler"
DEFAULT_SCAN_PERIOD = datetime.timedelta(days=1)

_WLID_RE = re.compile(r"^wlid://cluster-(?P<cluster>[^/]*)/namespace-(?P<ns>[^/]*)/(?P<kind>[a-z]+)-(?P<name>.+)$")
_SCHEME_RE = re.compile(r"^[a-z-]+://")


@dataclass(frozen=True)
class ScanSchedule:
    period: datetime.timedelta
    grace: datetime.timedelta
    source: str                    # where the period came from


def schedule_from(state: Iterable[Mapping[str, Any]], *, scanner_namespace: str = SCANNER_NAMESPACE,
                  period: datetime.timedelta | None = None,
                  grace: datetime.timedelta | None = None) -> ScanSchedule:
    """The scan period: given, else the kubevuln-scheduler CronJob's schedule, else daily; grace a quarter."""
    source = "flag"
    if period is None:
        period, source = DEFAULT_SCAN_PERIOD, "default (daily)"
        for obj in state:
            meta = _meta(obj)
            if (obj.get("kind") == "CronJob" and meta.get("name") == SCHEDULER_NAME
                    and meta.get("namespace") == scanner_namespace):
                schedule = str(_map(obj.get("spec")).get("schedule") or "")
                found = cron_period(schedule)
                if found is not None:
                    period, source = found, f"CronJob {scanner_namespace}/{SCHEDULER_NAME} {schedule!r}"
                break
    # a quarter of the period: a daily scan that ran late by a few hours is not yet a missed one
    return ScanSchedule(period, grace if grace is not None else period / 4, source)


def cron_period(schedule: str) -> datetime.timedelta | None:
    """The interval of the simple cron schedules a scan uses; None for anything irregular."""
    fields = schedule.split()
    if len(fields) != 5:
        return None
    minute, hour, dom, month, dow = fields
    if month != "*" or not minute.isdigit():
        return None
    if dom == "*" and dow == "*":
        if hour.isdigit():
            return datetime.timedelta(days=1)
        if hour == "*":
            return datetime.timedelta(hours=1)
        m = re.fullmatch(r"\*/(\d+)", hour)
        if m and 0 < int(m.group(1)) <= 24:
            return datetime.timedelta(hours=int(m.group(1)))
        return None
    if dom == "*" and hour.isdigit() and dow.isdigit():
        return datetime.timedelta(days=7)
    return None


@dataclass(frozen=True)
class KubescapeOptions:
    now: datetime.datetime
    schedule: ScanSchedule = ScanSchedule(DEFAULT_SCAN_PERIOD, DEFAULT_SCAN_PERIOD / 4, "default (daily)")
    skip_namespaces: frozenset[str] = frozenset(DEFAULT_SKIP_NAMESPACES)
    namespace: str = ""            # only this namespace ("" all)


@dataclass(frozen=True)
class ContainerSubject:
    """A (namespace, top workload, container) and the image ids it runs."""

    key: str
    workload: Ref
    container: str
    image_ids: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SummaryCopies:
    """One summary as read: its metadata-row copy and/or its payload copy."""

    metadata: Mapping[str, Any] | None
    payload: Mapping[str, Any] | None
    stub: bool = False         # both reads empty: kubevuln's stub written before (or instead of) a result

    @property
    def shown(self) -> Mapping[str, Any]:
        found = self.metadata if self.metadata is not None else self.payload
        assert found is not None
        return found


@dataclass(frozen=True)
class Severities:
    critical: int = 0
    high: int = 0
    relevant_critical: int = 0
    relevant_high: int = 0


@dataclass(frozen=True)
class KubescapeClassification:
    outcome: Classification
    subjects: Mapping[str, ContainerSubject]
    summaries: Mapping[Ref, SummaryCopies]
    severities: Mapping[Ref, Severities]
    out_of_scope: tuple[tuple[str, int], ...]
    reads: tuple[tuple[str, bool], ...]
    schedule: ScanSchedule


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_meta(obj).get("annotations"))


def _ref(obj: Mapping[str, Any]) -> Ref:
    meta = _meta(obj)
    return Ref(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), str(meta.get("namespace") or ""),
               str(meta.get("name") or ""), str(meta.get("uid") or ""))


def subject_key(namespace: str, kind: str, name: str, container: str) -> str:
    return f"{namespace}/{kind.lower()}/{name}/{container}"


def parse_wlid(wlid: str) -> tuple[str, str, str] | None:
    """(namespace, kind in lower case, name) from `wlid://cluster-<c>/namespace-<ns>/<kind>-<name>`."""
    m = _WLID_RE.match(wlid)
    return (m.group("ns"), m.group("kind"), m.group("name")) if m else None


def image_identity(image_id: str) -> str:
    """What two image ids are compared by: the digest when there is one, else the id without a scheme."""
    bare = _SCHEME_RE.sub("", image_id.strip())
    return bare[bare.index("@") + 1:] if "@sha256:" in bare else bare


def summary_name(kind: str, name: str, container: str) -> str:
    """kubevuln's GetCVESummaryK8sResourceName: `<kind>-<name>-<container>`, lower case."""
    return f"{kind}-{name}-{container}".lower()


def is_payload(summary: Mapping[str, Any]) -> bool:
    """A filled spec (a reference or a counter set) came from the payload; an empty one from a metadata row."""
    spec = _map(summary.get("spec"))
    refs = _map(spec.get("vulnerabilitiesRef"))
    if any(_map(refs.get(k)).get("name") for k in ("all", "relevant")):
        return True
    severities = _map(spec.get("severities"))
    return any(_map(severities.get(s)).get(k) for s in SEVERITIES for k in ("all", "relevant"))


# --- subjects ---------------------------------------------------------------------------------------------


class _Owners:
    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self.by_uid: dict[str, Mapping[str, Any]] = {}
        self.by_name: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for obj in objects:
            meta = _meta(obj)
            kind, ns, name = str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name"))
            if kind in ("ReplicaSet", "Deployment", "Job", "CronJob", "StatefulSet", "DaemonSet",
                        "ReplicationController"):
                if meta.get("uid"):
                    self.by_uid[str(meta["uid"])] = obj
                self.by_name[(kind, ns, name)] = obj

    def top(self, pod: Mapping[str, Any]) -> Ref:
        """Follow controller owner references as far as the state holds the owners."""
        current = _ref(pod)
        obj: Mapping[str, Any] | None = pod
        seen: set[str] = set()
        while obj is not None:
            owner = _controller(obj)
            if owner is None:
                break
            ref = Ref(str(owner.get("apiVersion") or ""), str(owner.get("kind") or ""), current.namespace,
                      str(owner.get("name") or ""), str(owner.get("uid") or ""))
            if ref.uid in seen:
                break
            seen.add(ref.uid)
            current = ref
            obj = self.by_uid.get(ref.uid) or self.by_name.get((ref.kind, ref.namespace, ref.name))
        return current


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    # k8s-interface's IgnoreOwnerReference: a Node owns mirror Pods but is no workload, the Pod is its own top
    owners = [o for o in _meta(obj).get("ownerReferences") or []
              if isinstance(o, Mapping) and o.get("kind") != "Node"]
    for owner in owners:
        if owner.get("controller"):
            return owner
    return owners[0] if owners else None


def container_subjects(state: Iterable[Mapping[str, Any]], options: KubescapeOptions
                       ) -> tuple[dict[str, ContainerSubject], dict[str, int], set[str]]:
    """Subjects by key, out-of-scope counts by rule, and the keys of out-of-scope containers."""
    objects = list(state)
    owners = _Owners(objects)
    images: dict[str, list[str]] = {}
    first: dict[str, tuple[Ref, str, Mapping[str, str]]] = {}
    out: dict[str, int] = {}
    outside: set[str] = set()

    def skip(rule: str, n: int = 1) -> None:
        out[rule] = out.get(rule, 0) + n

    for pod in objects:
        if pod.get("kind") != "Pod" or pod.get("apiVersion") != "v1":
            continue
        meta = _meta(pod)
        ns = str(meta.get("namespace") or "")
        if options.namespace and ns != options.namespace:
            continue
        spec, status = _map(pod.get("spec")), _map(pod.get("status"))
        workload = owners.top(pod)
        names = [str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c, Mapping)]
        keys = [subject_key(ns, workload.kind, workload.name, n) for n in names]
        for kind, other in (("initContainers", "init-container"), ("ephemeralContainers", "ephemeral-container")):
            extra = [str(c.get("name")) for c in spec.get(kind) or [] if isinstance(c, Mapping)]
            if extra:
                skip(other, len(extra))
                outside.update(subject_key(ns, workload.kind, workload.name, n) for n in extra)
        phase = str(status.get("phase") or "")
        rule: str | None = ("unscanned-namespace" if ns in options.skip_namespaces
                else "completed-pod" if phase in ("Succeeded", "Failed")
                else "not-running" if phase != "Running" else None)
        if rule is not None:
            skip(rule, len(keys))       # counted in containers, as the other rules are
            outside.update(keys)
            continue
        running = {str(c.get("name")): str(c.get("imageID") or "") for c in status.get("containerStatuses") or []
                   if isinstance(c, Mapping)}
        labels = {str(k): str(v) for k, v in _map(meta.get("labels")).items()}
        for name, key in zip(names, keys, strict=True):
            images.setdefault(key, [])
            if running.get(name):
                images[key].append(running[name])
            first.setdefault(key, (workload, name, labels))
    subjects = {key: ContainerSubject(key, first[key][0], first[key][1], tuple(dict.fromkeys(images[key])),
                                      first[key][2])
                for key in first}
    # a container that runs somewhere in the workload is in scope even if another Pod of it completed
    outside.difference_update(subjects)
    return subjects, out, outside


# --- claims -----------------------------------------------------------------------------------------------


def _summary_key(summary: Mapping[str, Any]) -> str:
    ann = _annotations(summary)
    parsed = parse_wlid(str(ann.get(ANNOTATION_WLID) or ""))
    container = str(ann.get(ANNOTATION_CONTAINER) or "")
    if parsed is None or not container:
        return ""
    ns, kind, name = parsed
    return subject_key(ns, kind, name, container)


def _created(obj: Mapping[str, Any]) -> datetime.datetime | None:
    text = _meta(obj).get("creationTimestamp")
    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _severities(payload: Mapping[str, Any] | None) -> Severities | None:
    if payload is None:
        return None
    sev = _map(_map(payload.get("spec")).get("severities"))

    def n(level: str, which: str) -> int:
        value = _map(sev.get(level)).get(which)
        return int(value) if isinstance(value, int) else 0

    return Severities(n("critical", "all"), n("high", "all"), n("critical", "relevant"), n("high", "relevant"))


def classify_vulnerabilities(state: Sequence[Mapping[str, Any]], options: KubescapeOptions
                             ) -> KubescapeClassification:
    subjects, out_of_scope, outside = container_subjects(state, options)

    copies: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    manifests: dict[str, set[str]] = {}
    for obj in state:
        if obj.get("apiVersion") != GROUP_VERSION:
            continue
        meta = _meta(obj)
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if obj.get("kind") == SUMMARY_KIND:
            if not options.namespace or key[0] == options.namespace:
                copies.setdefault(key, []).append(obj)
        elif obj.get("kind") == MANIFEST_KIND:
            manifests.setdefault(key[1], set()).add(key[0])

    # a fullSpec read happened when any copy is filled; only then can two empty copies be a stub's two reads
    payload_read = any(is_payload(c) for group in copies.values() for c in group)
    summaries: dict[Ref, SummaryCopies] = {}
    for group in copies.values():
        filled = [c for c in group if is_payload(c)]
        empty = [c for c in group if not is_payload(c)]
        if filled:
            pair = SummaryCopies(empty[0] if empty else None, filled[0])
        elif len(empty) >= 2 and payload_read:
            pair = SummaryCopies(empty[0], empty[1], stub=True)
        else:
            pair = SummaryCopies(empty[0], None)
        summaries[_ref(pair.shown)] = pair
    has_metadata = any(p.metadata is not None for p in summaries.values())
    has_payload = any(p.payload is not None for p in summaries.values())

    expectations = [
        Expectation(s.key, s.workload,
                    Ref(GROUP_VERSION, SUMMARY_KIND, s.workload.namespace,
                        summary_name(s.workload.kind, s.workload.name, s.container), ""),
                    facet=s.container)
        for s in subjects.values()]
    claims = [Claim(_summary_key(p.shown), ref, _created(p.shown)) for ref, p in summaries.items()]
    running_workloads = {k.rsplit("/", 1)[0] for k in subjects}

    def integrity(pair: SummaryCopies) -> Integrity:
        # both copies at hand means both reads were made; one copy alone can never prove agreement
        if pair.metadata is None or pair.payload is None:
            return Integrity.UNDETERMINED
        if str(_meta(pair.metadata).get("resourceVersion")) != str(_meta(pair.payload).get("resourceVersion")):
            return Integrity.SPLIT
        return Integrity.INTACT

    def pairing(pair: SummaryCopies) -> Pairing:
        if pair.payload is None:
            return Pairing(None, None, "payload-not-read")
        if pair.stub:
            return Pairing(False, None, "no-reference")
        refs = _map(_map(pair.payload.get("spec")).get("vulnerabilitiesRef"))
        for which in ("all", "relevant"):
            target = _map(refs.get(which))
            name = str(target.get("name") or "")
            if not name:
                if which == "all":
                    return Pairing(False, None, "no-reference")
                continue
            ref = Ref(GROUP_VERSION, MANIFEST_KIND, str(target.get("namespace") or ""), name, "")
            if not manifests:
                return Pairing(None, ref, "manifests-not-read")
            where = manifests.get(name, set())
            if ref.namespace not in where:
                return Pairing(False, ref, "not-found", tuple(sorted(where)))
        return Pairing(True)

    def inspect(claim: Claim) -> Judgement:
        pair = summaries[claim.ref]
        return Judgement(integrity=integrity(pair), pairing=pairing(pair))

    def judge(expectation: Expectation, claim: Claim) -> Judgement:
        pair = summaries[claim.ref]
        ann = _annotations(pair.shown)
        reasons: list[str] = []
        subject = subjects.get(expectation.key)
        if subject is not None:
            running = {image_identity(i) for i in subject.image_ids}
            if image_identity(str(ann.get(ANNOTATION_IMAGE_ID) or "")) not in running:
                reasons.append("image-changed")
        if str(ann.get(ANNOTATION_STATUS) or "") in FAILURE_STATUSES:
            reasons.append("scan-failed")
        elif pair.stub:
            reasons.append("no-result")
        written = _unix(ann.get(ANNOTATION_TIMESTAMP))
        limit = options.schedule.period + options.schedule.grace
        if written is None or options.now - written > limit:
            reasons.append("not-rescanned")
        return Judgement(stale=tuple(reasons), integrity=integrity(pair), pairing=pairing(pair))

    def leftover(key: str, rest: Sequence[Claim]) -> Leftover:
        if not key:
            reason = "unkeyed"
        elif key in outside:
            return IGNORED
        elif key.rsplit("/", 1)[0] in running_workloads:
            reason = "container-gone"
        else:
            reason = "workload-gone"
        return Leftover(orphan_reasons=tuple(reason for _ in rest))

    outcome = classify(expectations, claims, judge, leftover, inspect)
    severities = {ref: sev for ref, pair in summaries.items() if (sev := _severities(pair.payload)) is not None}
    reads = (("metadata", has_metadata), ("payload", has_payload), ("manifests", bool(manifests)))
    return KubescapeClassification(outcome, subjects, summaries, severities, tuple(sorted(out_of_scope.items())),
                                   reads, options.schedule)


def _unix(value: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromtimestamp(int(str(value)), tz=datetime.UTC)
    except (TypeError, ValueError, OverflowError):
        return None
