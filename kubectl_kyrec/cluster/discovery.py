"""API discovery: which kinds the cluster serves, where, and in which scope; cached per context.

Aggregated discovery (`apidiscovery.k8s.io/v2`, GA in Kubernetes 1.30; `v2beta1` before) answers in two
requests (/api and /apis); older servers get the legacy walk (/api, /apis, then one request per group
version). The result is cached in the user's cache directory per server and context, for six hours as
kubectl caches it, so repeated runs make no discovery requests; `Discovered.requests` says how many this
run made, counted apart from LISTs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_kyrec.cluster.client import KubeClient
from kubectl_kyrec.load.run_inputs.kinds import KindTable, ResourceInfo

ACCEPT_AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                     "application/json")
CACHE_TTL_SECONDS = 6 * 3600
_CACHE_FORMAT = 3            # 3: singular and short names (a cache of format 2 is read again)


@dataclass(frozen=True)
class Discovered:
    resources: tuple[ResourceInfo, ...]
    preferred: Mapping[str, str]          # group ("" = core) -> preferred version
    requests: int = 0                     # discovery requests this run made (0 when the cache answered)
    from_cache: bool = False
    # (group, resource) served without the `list` verb (tokenreviews, bindings, ...): never LISTed
    unlistable: frozenset[tuple[str, str]] = frozenset()

    def listable(self, info: ResourceInfo) -> bool:
        return (info.group, info.resource) not in self.unlistable

    def kind_table(self) -> KindTable:
        table = KindTable(builtins=False)
        for info in self.resources:
            table.add(info)
        return table

    def find(self, api_version: str, kind: str) -> ResourceInfo | None:
        group, _, version = api_version.rpartition("/")
        return next((r for r in self.resources if (r.group, r.version, r.kind) == (group, version, kind)), None)

    def preferred_for(self, group: str, kind: str) -> ResourceInfo | None:
        """The kind at its group's preferred version, else at any served version."""
        candidates = [r for r in self.resources if r.group == group and r.kind == kind]
        version = self.preferred.get(group)
        return next((r for r in candidates if r.version == version), candidates[0] if candidates else None)


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kyrec"


def discover(client: KubeClient, *, cache_dir: Path | None = None, ttl: float = CACHE_TTL_SECONDS,
             now: Callable[[], float] = time.time, refresh: bool = False) -> Discovered:
    """What the cluster serves, from the cache when it is younger than `ttl`; `refresh` asks the server
    whatever the cache holds (and rewrites it)."""
    cache_file = _cache_file(client, cache_dir) if cache_dir is not None else None
    if cache_file is not None and not refresh:
        cached = _read_cache(cache_file, ttl, now())
        if cached is not None:
            return cached
    before = client.counts["discovery"]
    found = _aggregated(client)
    if not isinstance(found, tuple):
        found = _legacy(client, found)
    resources, preferred, unlistable = found
    result = Discovered(tuple(resources), preferred, client.counts["discovery"] - before,
                        unlistable=frozenset(unlistable))
    if cache_file is not None:
        _write_cache(cache_file, result, now())
    return result


# ---- aggregated -----------------------------------------------------------------------------------------

def _aggregated(client: KubeClient) -> tuple[list[ResourceInfo], dict[str, str], set[tuple[str, str]]] | Any:
    """Resources, preferred versions, unlistable resources; or, from an older server, its legacy /api
    document."""
    resources: list[ResourceInfo] = []
    preferred: dict[str, str] = {}
    unlistable: set[tuple[str, str]] = set()
    for path in ("/api", "/apis"):
        response = client.request("GET", path, accept=ACCEPT_AGGREGATED, category="discovery")
        if not response.ok:
            raise client.fail(response, "get", "", "", path)
        if "as=APIGroupDiscoveryList" not in (response.header("Content-Type") or ""):
            if path == "/api":
                return response.json(path)      # an older server: walk the legacy documents instead
            raise client.fail(response, "get", "", "", path)
        doc = response.json(path)
        for item in doc.get("items") or []:
            group = str((item.get("metadata") or {}).get("name") or "")
            versions = item.get("versions") or []
            if versions:
                preferred.setdefault(group, str(versions[0].get("version")))   # listed in preference order
            for entry in versions:
                version = str(entry.get("version"))
                for res in entry.get("resources") or []:
                    kind = str((res.get("responseKind") or {}).get("kind") or "")
                    subs = tuple(str(s.get("subresource")) for s in res.get("subresources") or [])
                    resources.append(ResourceInfo(group, version, kind, str(res.get("resource")),
                                                  res.get("scope") == "Namespaced", subs,
                                                  str(res.get("singularResource") or ""),
                                                  _short_names(res)))
                    if "list" not in (res.get("verbs") or []):
                        unlistable.add((group, str(res.get("resource"))))
    return resources, preferred, unlistable


# ---- legacy -------------------------------------------------------------------------------------------------

def _legacy(client: KubeClient, core: Any) -> tuple[list[ResourceInfo], dict[str, str], set[tuple[str, str]]]:
    resources: list[ResourceInfo] = []
    preferred: dict[str, str] = {}
    unlistable: set[tuple[str, str]] = set()
    versions = [str(v) for v in core.get("versions") or []]
    if versions:
        preferred[""] = versions[0]
    for version in versions:
        resources.extend(_resource_list(client, "", version, f"/api/{version}", unlistable))
    groups = client.get_json("/apis", category="discovery")
    for group in groups.get("groups") or []:
        name = str(group.get("name"))
        pref = (group.get("preferredVersion") or {}).get("version")
        if pref:
            preferred[name] = str(pref)
        for v in group.get("versions") or []:
            version = str(v.get("version"))
            resources.extend(_resource_list(client, name, version, f"/apis/{name}/{version}", unlistable))
    return resources, preferred, unlistable


def _resource_list(client: KubeClient, group: str, version: str, path: str,
                   unlistable: set[tuple[str, str]]) -> Iterable[ResourceInfo]:
    doc = client.get_json(path, category="discovery")
    entries = doc.get("resources") or []
    subs: dict[str, list[str]] = {}
    for res in entries:
        name = str(res.get("name"))
        if "/" in name:
            parent, _, sub = name.partition("/")
            subs.setdefault(parent, []).append(sub)
    for res in entries:
        name = str(res.get("name"))
        if "/" in name:
            continue
        if "list" not in (res.get("verbs") or []):
            unlistable.add((group, name))
        yield ResourceInfo(group, version, str(res.get("kind")), name, bool(res.get("namespaced")),
                           tuple(subs.get(name, ())), str(res.get("singularName") or ""), _short_names(res))


def _short_names(res: Mapping[str, Any]) -> tuple[str, ...]:
    """A resource's shortNames from discovery (`ns`, `cpol`): kubectl accepts them, and so does --kind."""
    short = res.get("shortNames")
    return tuple(str(n).lower() for n in short) if isinstance(short, list) else ()


# ---- the cache ------------------------------------------------------------------------------------------------

def _cache_file(client: KubeClient, cache_dir: Path) -> Path:
    key = f"{client.transport.base_url}|{client.config.context}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return cache_dir / "discovery" / f"{digest}.json"


def _read_cache(path: Path, ttl: float, now: float) -> Discovered | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
        return None
    if now - float(data.get("fetchedAt") or 0) > ttl:
        return None
    try:
        resources = tuple(ResourceInfo(g, v, k, r, bool(n), tuple(s), str(one), tuple(short))
                          for g, v, k, r, n, s, one, short in data["resources"])
        unlistable = frozenset((str(g), str(r)) for g, r in data["unlistable"])
        return Discovered(resources, dict(data["preferred"]), 0, True, unlistable)
    except (KeyError, TypeError, ValueError):
        return None


def _write_cache(path: Path, found: Discovered, now: float) -> None:
    data: dict[str, Any] = {
        "format": _CACHE_FORMAT, "fetchedAt": now, "preferred": dict(found.preferred),
        "resources": [[r.group, r.version, r.kind, r.resource, r.namespaced, list(r.subresources), r.singular,
                       list(r.short_names)] for r in found.resources],
        "unlistable": sorted([g, r] for g, r in found.unlistable),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass        # a cache that cannot be written only costs the next run two requests
