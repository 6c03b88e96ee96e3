"""The live input source: files for what the user named, the cluster for the state (and, without `-p`, for
the policies, which are then the complete set).

It replaces only how the state is read (load/run_inputs/sources.py); everything past `Inputs` is the same as offline.
After `read()`, `last` holds what was read (requests made, unreadable kinds) for the command's exit code.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.cluster.connection import ConnectionOptions
from kubectl_kyrec.cluster.lister import Progress
from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.model import Notice

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.client import KubeClient
    from kubectl_kyrec.cluster.discovery import Discovered
    from kubectl_kyrec.cluster.live import LiveRead
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
    from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo
    from kubectl_kyrec.load.run_inputs.sources import FileSource, Inputs


def terminal_progress() -> Progress | None:
    """A one-line progress display on stderr, only on a terminal (docs/architecture.md#the-command-line)."""
    if not sys.stderr.isatty():
        return None

    def show(message: str) -> None:
        sys.stderr.write("\r\033[K" + message[:120])
        sys.stderr.flush()

    return show


def _end_progress(progress: Progress | None) -> None:
    if progress is not None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def policy_docs_of(inputs: Inputs) -> list[Mapping[str, Any]]:
    """The raw policy documents of a run (their resourceRules and expressions say what to read)."""
    pols = inputs.policies
    return [*(p.raw for p in pols.validating), *(p.raw for p in pols.admission), *(g.raw for g in pols.generating),
            *(b.raw for b in pols.bindings if hasattr(b, "raw")), *(c.raw for c in getattr(pols, "classic", ())),
            *(i.raw for i in pols.image_validating), *(d.raw for d in pols.deleting),
            *(m.raw for m in pols.mutating), *(m.raw for m in pols.mutating_admission)]


@dataclass
class LiveSource:
    files: FileSource
    connection: ConnectionOptions
    namespace: str = ""
    reports: bool = True
    downstreams: bool = True
    progress: Progress | None = None
    cache_dir: Path | None = None
    connect: Callable[..., KubeClient] | None = None
    # the evidence of findings' causes: Kyverno's Deployments and access reviews (diff, apply, capture);
    # `rbac_objects`: the RBAC objects too, for an offline run to decide Kyverno's permissions (capture)
    causes: bool = False
    rbac_objects: bool = False
    kinds: tuple[str, ...] = ()             # read whatever the policies match (ReadNeeds.kinds)
    update_requests: bool = True            # Kyverno's UpdateRequests, evidence of causes (ReadNeeds)
    client: KubeClient | None = field(default=None, init=False)
    discovered: Discovered | None = field(default=None, init=False)
    last: LiveRead | None = field(default=None, init=False)
    policies_from_cluster: bool = field(default=False, init=False)

    def open(self) -> tuple[KubeClient, Discovered]:
        from kubectl_kyrec.cluster.client import connect
        from kubectl_kyrec.cluster.discovery import default_cache_dir, discover

        if self.client is None or self.discovered is None:
            self.client = (self.connect or connect)(self.connection)
            self.discovered = discover(self.client, cache_dir=self.cache_dir or default_cache_dir())
        return self.client, self.discovered

    def read(self, *, while_listing: Callable[[], None] | None = None) -> Inputs:
        """The inputs with the cluster's state. `while_listing`: called once as the first LIST is sent (the
        files read, the client made, discovery known), to start work that needs no state meanwhile."""
        inputs = self._read(while_listing)
        assert self.discovered is not None and self.last is not None
        if self.discovered.from_cache and any(o.status == 404 for o in self.last.outcomes):
            # a LIST of a collection answers 404 only when its type is not served: the cached discovery is
            # out of date (a CRD removed since; kubectl re-discovers on a miss too). Ask again and read again,
            # once, rather than failing every run until the cache expires.
            from kubectl_kyrec.cluster.discovery import default_cache_dir, discover

            assert self.client is not None
            self.discovered = discover(self.client, cache_dir=self.cache_dir or default_cache_dir(), refresh=True)
            inputs = self._read()
        return inputs

    def _read(self, while_listing: Callable[[], None] | None = None) -> Inputs:
        from kubectl_kyrec.cluster.live import POLICY_KINDS, ReadNeeds, plan_reads, read_state
        from kubectl_kyrec.load.policy.policies import classify
        from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
        from kubectl_kyrec.load.run_inputs.kinds import KindTable

        inputs = self.files.read()
        client, found = self.open()
        context = client.config.context
        self.policies_from_cluster = not self.files.policy_paths
        # first the policy kinds: without -p they decide every other read
        policy_reqs = [r for r in plan_reads(ReadNeeds(downstreams=False, reports=False), found)
                       if (r.info.group, r.info.kind) in POLICY_KINDS]
        if while_listing is not None:
            while_listing()
        first = read_state(client, policy_reqs, context=context, progress=self.progress)
        policies = inputs.policies
        if self.policies_from_cluster:
            policies = classify(first.state.objects)
            inputs = dataclasses.replace(inputs, policies=policies, policies_from_state=True)
        needs = ReadNeeds(policy_docs=tuple(policy_docs_of(inputs)), policies_from_cluster=self.policies_from_cluster,
                          reports=self.reports, downstreams=self.downstreams, namespace=self.namespace,
                          causes=self.causes, rbac=self.rbac_objects, kinds=self.kinds,
                          update_requests=self.update_requests)
        done = {(r.info.group, r.info.kind) for r in policy_reqs}
        rest = [r for r in plan_reads(needs, found) if r.label_selector or (r.info.group, r.info.kind) not in done]
        second = read_state(client, rest, context=context, progress=self.progress)
        _end_progress(self.progress)
        state = ClusterState.from_objects(
            [*first.state.objects, *second.state.objects], listed=first.state.listed | second.state.listed,
            unreadable={**first.state.unreadable, **second.state.unreadable}, source="live",
            has_managed_fields=True, served=[(i.api_version, i.kind) for i in found.resources],
            evidence_unread={**first.state.evidence_unread, **second.state.evidence_unread})
        from kubectl_kyrec.cluster.live import LiveRead

        self.last = LiveRead(state, [*first.outcomes, *second.outcomes], [*first.notices, *second.notices])
        kinds = KindTable()
        for info in found.resources:
            kinds.add(info)
        state, repeats = state.first_of_each(lambda doc: kinds.is_namespaced(doc.api_version, doc.kind))
        notices = list(inputs.notices) + [Notice(n) for n in self.last.notices] + repeats
        from kubectl_kyrec.cluster.access_review import SubjectAccessReviews

        return dataclasses.replace(inputs, state=state, kinds=kinds, notices=notices,
                                   access=SubjectAccessReviews(client) if self.causes and found.find(
                                       "authorization.k8s.io/v1", "SubjectAccessReview") is not None else None)

    @property
    def unreadable(self) -> dict[Any, FailedRead]:
        return dict(self.last.state.unreadable) if self.last is not None else {}


SUMMARY_GROUP = "spdx.softwarecomposition.kubescape.io"
# what the Kubescape producer reads, each by LIST pages only: a GET of a split summary is the read that misleads
KUBESCAPE_KINDS = (("", "Pod"), ("apps", "ReplicaSet"), ("batch", "Job"), ("batch", "CronJob"),
                   (SUMMARY_GROUP, "VulnerabilityManifestSummary"), (SUMMARY_GROUP, "VulnerabilityManifest"))


@dataclass
class KubescapeLiveSource:
    """The cluster as the Kubescape producer needs it: both reads of the summaries (the plain LIST, served
    from storage's metadata rows, and the `resourceVersion=fullSpec` LIST, served from the payloads), the
    manifests, and the workloads that own running Pods. Both summary copies are kept: a differing
    resourceVersion between them is what `split` means."""
    connection: ConnectionOptions
    namespace: str = ""
    progress: Progress | None = None
    cache_dir: Path | None = None
    connect: Callable[..., KubeClient] | None = None
    last: LiveRead | None = field(default=None, init=False)

    def read_state(self) -> ClusterState:
        from kubectl_kyrec.cluster.client import connect
        from kubectl_kyrec.cluster.discovery import default_cache_dir, discover
        from kubectl_kyrec.cluster.lister import ListRequest, list_all
        from kubectl_kyrec.cluster.live import LiveRead, read_state
        from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
        from kubectl_kyrec.model import Document, Source

        client = (self.connect or connect)(self.connection)
        found = discover(client, cache_dir=self.cache_dir or default_cache_dir())
        infos = {(i.group, i.kind): i for i in found.resources}
        requests = [ListRequest(infos[k], self.namespace) for k in KUBESCAPE_KINDS if k in infos]
        absent = [kind for k in KUBESCAPE_KINDS if k not in infos for kind in [k[1]]]
        context = client.config.context
        plain = read_state(client, requests, context=context, progress=self.progress)
        objects = list(plain.state.objects)
        unreadable = dict(plain.state.unreadable)
        outcomes = list(plain.outcomes)
        summary = infos.get((SUMMARY_GROUP, "VulnerabilityManifestSummary"))
        if summary is not None:
            full = list_all(client, ListRequest(summary, self.namespace, resource_version="fullSpec"),
                            progress=self.progress)
            outcomes.append(full)
            if full.ok:
                for obj in full.items:
                    meta = obj.get("metadata") or {}
                    objects.append(Document(obj, Source(f"{context}:fullSpec:VulnerabilityManifestSummary/"
                                                        f"{meta.get('namespace')}/{meta.get('name')}")))
            else:
                unreadable[ListedKind(summary.api_version, summary.kind, self.namespace)] = full.failed_read()
        _end_progress(self.progress)
        state = ClusterState.from_objects(objects, listed=plain.state.listed, unreadable=unreadable,
                                          source="live", has_managed_fields=True)
        notices = [*plain.notices, *(f"{kind}: not served by the cluster" for kind in absent)]
        self.last = LiveRead(state, outcomes, notices)
        return state

    @property
    def unreadable(self) -> dict[Any, FailedRead]:
        return dict(self.last.state.unreadable) if self.last is not None else {}


@dataclass
class KindsLiveSource:
    """`capture --kind`: one LIST per named kind, nothing else. Each name is resolved as `kubectl get NAME`
    resolves it (plural, singular, short name or kind, any case, `.group` or `.version.group` qualified),
    against discovery (asked again once when the cached discovery does not know a name, as kubectl does).
    A LIST that answers is recorded as listed even when it is empty, which is what a later `--state` needs to
    know that the kind has no objects; kubectl's own empty List records no kind at all."""

    connection: ConnectionOptions
    kinds: tuple[str, ...]
    namespace: str = ""
    progress: Progress | None = None
    cache_dir: Path | None = None
    connect: Callable[..., KubeClient] | None = None
    client: KubeClient | None = field(default=None, init=False)
    last: LiveRead | None = field(default=None, init=False)

    @staticmethod
    def _resolve(found: Discovered, name: str) -> ResourceInfo | None:
        hits = found.kind_table().resolve(name)
        if not hits:
            return None
        # the first group discovery lists (kubectl's priority: the core group first), at the version the name
        # gives (`deployments.v1.apps`), else at the group's preferred one
        first = hits[0]
        if name.count(".") >= 2 and len({h.version for h in hits}) == 1:
            return first
        return found.preferred_for(first.group, first.kind) or first

    def read_state(self) -> ClusterState:
        from kubectl_kyrec.cluster.client import connect
        from kubectl_kyrec.cluster.discovery import default_cache_dir, discover
        from kubectl_kyrec.cluster.lister import ListRequest
        from kubectl_kyrec.cluster.live import read_state
        from kubectl_kyrec.errors import InputError
        from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState

        client = self.client = (self.connect or connect)(self.connection)
        cache_dir = self.cache_dir or default_cache_dir()
        found = discover(client, cache_dir=cache_dir)
        names = [n.strip() for given in self.kinds for n in given.split(",") if n.strip()]
        if not names:
            raise InputError("--kind: no resource type named")
        # by version too: a kind named at a version (`horizontalpodautoscalers.v1.autoscaling`) is listed at it,
        # beside its preferred version when that is named as well (a policy matches the version it names)
        requests: dict[tuple[str, str, str], ListRequest] = {}
        for name in names:
            info = self._resolve(found, name)
            if info is None and found.from_cache:
                found = discover(client, cache_dir=cache_dir, refresh=True)
                info = self._resolve(found, name)
            if info is None:
                raise InputError(f'--kind {name}: the server doesn\'t have a resource type "{name}"')
            if not found.listable(info):
                raise InputError(f"--kind {name}: the server does not list {info.resource}"
                                 f"{'.' + info.group if info.group else ''} (no list verb)")
            requests.setdefault((info.group, info.version, info.kind), ListRequest(
                info, namespace=self.namespace if info.namespaced else ""))
        read = read_state(client, list(requests.values()), context=client.config.context, progress=self.progress)
        _end_progress(self.progress)
        state = ClusterState.from_objects(read.state.objects, listed=read.state.listed,
                                          unreadable=read.state.unreadable, source="live", has_managed_fields=True,
                                          served=[(i.api_version, i.kind) for i in found.resources])
        self.last = dataclasses.replace(read, state=state)
        return state


def connection_options(kube: Mapping[str, Any], *, offline: bool = True) -> ConnectionOptions:
    """kubectl's flags as the CLI parsed them (cli.common.kubectl_flags) -> ConnectionOptions. `offline`:
    the command can run on a --state instead (its connection errors say so)."""
    from kubectl_kyrec.cluster.connection import parse_request_timeout

    return ConnectionOptions(kubeconfig=kube.get("kubeconfig") or None, context=kube.get("kube_context") or None,
                             as_user=kube.get("as_user") or None, as_groups=tuple(kube.get("as_group") or ()),
                             request_timeout=parse_request_timeout(str(kube.get("request_timeout") or "0")),
                             offline=offline)


def live_source(files: FileSource, kube: Mapping[str, Any], *, reports: bool = True,
                downstreams: bool = True, causes: bool = False, rbac_objects: bool = False,
                kinds: tuple[str, ...] = (), offline: bool = True, update_requests: bool = True) -> LiveSource:
    namespace = str(kube.get("namespace") or "")
    return LiveSource(files, connection_options(kube, offline=offline), namespace=namespace, reports=reports,
                      downstreams=downstreams, progress=terminal_progress(), causes=causes,
                      rbac_objects=rbac_objects, kinds=kinds, update_requests=update_requests)
