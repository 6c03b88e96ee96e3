"""Kyverno's ConfigMap (`kyverno` in the `kyverno` namespace): the `resourceFilters` it carries.

Semantics follow Kyverno's `pkg/config` (`parseKinds`, `newFilter`, `configuration.ToFilter`) and
`kubeutils.ParseKindSelector`, quirks included:

- `data.resourceFilters` is scanned for `[...]` groups (regex `\\[([^\\[\\]]*)\\]`); text between groups is
  ignored, nothing is trimmed (`[Pod, default, *]` has the namespace pattern `" default"`).
- A group splits on `,` into kind, namespace, name; a missing namespace or name is `""`, which only matches
  the empty string. A group of four or more parts re-appends the previous filter (Go reuses the variable),
  or an empty filter, which matches nothing, when it is the first.
- The kind part is a kind selector: `Kind`, `Kind/subresource`, `version/Kind`, `group/version/Kind`, `*/*`
  (every kind and subresource). A bare kind (`*` included) only matches the main resource, not a
  subresource: `[*,kube-system,*]` filters Pods but not `pods/exec`; `[*/*,kube-system,*]` filters both.
- Patterns are Kyverno's wildcards: `*` any run of characters (empty included), `?` exactly one.
- A Namespace object is also filtered when a matching-kind filter's namespace pattern matches its name
  (`[*/*,kube-system,*]` filters the `kube-system` Namespace itself).

Defaults. Kyverno without its ConfigMap has no filters at all; what installs ship is the Helm chart's
`config.resourceFilters` (chart 3.x, `excludeKyvernoNamespace: true` prepends `[*/*,<namespace>,*]`),
rendered here for a release named `kyverno` in namespace `kyverno`: `DEFAULT_RESOURCE_FILTERS`. Under it a
kube-system Pod and every ReplicaSet are filtered.

But the reports controller runs with `--skipResourceFilters=true` by default (flag default and chart
value), and then `ToFilter` answers false for everything: background-scan reports are produced for
kube-system Pods and ReplicaSets that a policy matches. `KyvernoConfig.background_scan_filters()` applies
that switch; callers deciding which subjects owe a report should use it rather than the raw filters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.golang.wildcard import match as wildcard_match
from kubectl_kyrec.model import Source, group_version

KYVERNO_NAMESPACE = "kyverno"
KYVERNO_CONFIGMAP = "kyverno"
UPDATE_REQUEST_THRESHOLD = 1000

# The chart's default list (kyverno chart 3.x values.yaml `config.resourceFilters`, rendered for release
# `kyverno` in namespace `kyverno`, excludeKyvernoNamespace: true).
DEFAULT_RESOURCE_FILTERS = """\
[*/*,kyverno,*]
[Event,*,*]
[*/*,kube-system,*]
[*/*,kube-public,*]
[*/*,kube-node-lease,*]
[Node,*,*]
[Node/*,*,*]
[APIService,*,*]
[APIService/*,*,*]
[TokenReview,*,*]
[SubjectAccessReview,*,*]
[SelfSubjectAccessReview,*,*]
[Binding,*,*]
[Pod/binding,*,*]
[ReplicaSet,*,*]
[ReplicaSet/*,*,*]
[EphemeralReport,*,*]
[ClusterEphemeralReport,*,*]
[ClusterRole,*,kyverno:admission-controller]
[ClusterRole,*,kyverno:admission-controller:core]
[ClusterRole,*,kyverno:admission-controller:additional]
[ClusterRole,*,kyverno:background-controller]
[ClusterRole,*,kyverno:background-controller:core]
[ClusterRole,*,kyverno:background-controller:additional]
[ClusterRole,*,kyverno:cleanup-controller]
[ClusterRole,*,kyverno:cleanup-controller:core]
[ClusterRole,*,kyverno:cleanup-controller:additional]
[ClusterRole,*,kyverno:reports-controller]
[ClusterRole,*,kyverno:reports-controller:core]
[ClusterRole,*,kyverno:reports-controller:additional]
[ClusterRoleBinding,*,kyverno:admission-controller]
[ClusterRoleBinding,*,kyverno:background-controller]
[ClusterRoleBinding,*,kyverno:cleanup-controller]
[ClusterRoleBinding,*,kyverno:reports-controller]
[ServiceAccount,kyverno,kyverno-admission-controller]
[ServiceAccount/*,kyverno,kyverno-admission-controller]
[ServiceAccount,kyverno,kyverno-background-controller]
[ServiceAccount/*,kyverno,kyverno-background-controller]
[ServiceAccount,kyverno,kyverno-cleanup-controller]
[ServiceAccount/*,kyverno,kyverno-cleanup-controller]
[ServiceAccount,kyverno,kyverno-reports-controller]
[ServiceAccount/*,kyverno,kyverno-reports-controller]
[Role,kyverno,kyverno:admission-controller]
[Role,kyverno,kyverno:background-controller]
[Role,kyverno,kyverno:cleanup-controller]
[Role,kyverno,kyverno:reports-controller]
[RoleBinding,kyverno,kyverno:admission-controller]
[RoleBinding,kyverno,kyverno:background-controller]
[RoleBinding,kyverno,kyverno:cleanup-controller]
[RoleBinding,kyverno,kyverno:reports-controller]
[ConfigMap,kyverno,kyverno]
[ConfigMap,kyverno,kyverno-metrics]
[Deployment,kyverno,kyverno-admission-controller]
[Deployment/*,kyverno,kyverno-admission-controller]
[Deployment,kyverno,kyverno-background-controller]
[Deployment/*,kyverno,kyverno-background-controller]
[Deployment,kyverno,kyverno-cleanup-controller]
[Deployment/*,kyverno,kyverno-cleanup-controller]
[Deployment,kyverno,kyverno-reports-controller]
[Deployment/*,kyverno,kyverno-reports-controller]
[Pod,kyverno,kyverno-admission-controller-*]
[Pod/*,kyverno,kyverno-admission-controller-*]
[Pod,kyverno,kyverno-background-controller-*]
[Pod/*,kyverno,kyverno-background-controller-*]
[Pod,kyverno,kyverno-cleanup-controller-*]
[Pod/*,kyverno,kyverno-cleanup-controller-*]
[Pod,kyverno,kyverno-reports-controller-*]
[Pod/*,kyverno,kyverno-reports-controller-*]
[Job,kyverno,kyverno-hook-pre-delete]
[Job/*,kyverno,kyverno-hook-pre-delete]
[NetworkPolicy,kyverno,kyverno-admission-controller]
[NetworkPolicy/*,kyverno,kyverno-admission-controller]
[NetworkPolicy,kyverno,kyverno-background-controller]
[NetworkPolicy/*,kyverno,kyverno-background-controller]
[NetworkPolicy,kyverno,kyverno-cleanup-controller]
[NetworkPolicy/*,kyverno,kyverno-cleanup-controller]
[NetworkPolicy,kyverno,kyverno-reports-controller]
[NetworkPolicy/*,kyverno,kyverno-reports-controller]
[PodDisruptionBudget,kyverno,kyverno-admission-controller]
[PodDisruptionBudget/*,kyverno,kyverno-admission-controller]
[PodDisruptionBudget,kyverno,kyverno-background-controller]
[PodDisruptionBudget/*,kyverno,kyverno-background-controller]
[PodDisruptionBudget,kyverno,kyverno-cleanup-controller]
[PodDisruptionBudget/*,kyverno,kyverno-cleanup-controller]
[PodDisruptionBudget,kyverno,kyverno-reports-controller]
[PodDisruptionBudget/*,kyverno,kyverno-reports-controller]
[Service,kyverno,kyverno-svc]
[Service/*,kyverno,kyverno-svc]
[Service,kyverno,kyverno-svc-metrics]
[Service/*,kyverno,kyverno-svc-metrics]
[Service,kyverno,kyverno-background-controller-metrics]
[Service/*,kyverno,kyverno-background-controller-metrics]
[Service,kyverno,kyverno-cleanup-controller]
[Service/*,kyverno,kyverno-cleanup-controller]
[Service,kyverno,kyverno-cleanup-controller-metrics]
[Service/*,kyverno,kyverno-cleanup-controller-metrics]
[Service,kyverno,kyverno-reports-controller-metrics]
[Service/*,kyverno,kyverno-reports-controller-metrics]
[ServiceMonitor,kyverno,kyverno-admission-controller]
[ServiceMonitor,kyverno,kyverno-background-controller]
[ServiceMonitor,kyverno,kyverno-cleanup-controller]
[ServiceMonitor,kyverno,kyverno-reports-controller]
[Secret,kyverno,kyverno-svc.kyverno.svc.*]
[Secret,kyverno,kyverno-cleanup-controller.kyverno.svc.*]
"""

_GROUP_RE = re.compile(r"\[([^\[\]]*)\]")
SELECTOR_VERSION = re.compile(r"^(v\d+((alpha|beta)\d+)?|\*)$")


@dataclass(frozen=True)
class ResourceFilter:
    """One `[kind,namespace,name]` entry, its kind selector already split as Kyverno splits it."""

    group: str
    version: str
    kind: str
    subresource: str
    namespace: str
    name: str
    text: str = ""   # the entry as written, for messages


def parse_kind_selector(selector: str) -> tuple[str, str, str, str]:
    """Kyverno's `ParseKindSelector`: (group, version, kind, subresource)."""
    parts = selector.split("/")
    parts = parts[:-1] + parts[-1].split(".")
    if len(parts) == 1:
        return "*", "*", parts[0], ""
    if len(parts) == 2:
        if parts[0] == "*" and parts[1] == "*":
            return "*", "*", "*", "*"
        if parts[0] == "*" and parts[1].lower() == parts[1]:
            return "*", "*", parts[0], parts[1]
        if SELECTOR_VERSION.match(parts[0]):
            return "*", parts[0], parts[1], ""
        return "*", "*", parts[0], parts[1]
    if len(parts) == 3:
        if SELECTOR_VERSION.match(parts[0]):
            return "*", parts[0], parts[1], parts[2]
        return parts[0], parts[1], parts[2], ""
    if len(parts) == 4:
        return parts[0], parts[1], parts[2], parts[3]
    return "", "", "", ""


def _new_filter(kind: str, namespace: str, name: str, text: str) -> ResourceFilter:
    if kind == "":
        return ResourceFilter("", "", "", "", "", "", text)
    g, v, k, s = parse_kind_selector(kind)
    return ResourceFilter(g, v, k, s, namespace, name, text)


def parse_resource_filters(text: str) -> tuple[ResourceFilter, ...]:
    """`parseKinds` over the ConfigMap's `resourceFilters` value."""
    out: list[ResourceFilter] = []
    previous = ResourceFilter("", "", "", "", "", "", "")
    for match in _GROUP_RE.finditer(text):
        element = match.group(1)
        parts = element.split(",")
        if len(parts) == 3:
            previous = _new_filter(parts[0], parts[1], parts[2], match.group(0))
        elif len(parts) == 2:
            previous = _new_filter(parts[0], parts[1], "", match.group(0))
        elif len(parts) == 1:
            previous = _new_filter(parts[0], "", "", match.group(0))
        # four or more parts: Go appends the previous value of its loop variable again
        out.append(previous)
    return tuple(out)


def filtered(kind: str, namespace: str, name: str, filters: Sequence[ResourceFilter], *,
             api_version: str | None = None, subresource: str = "") -> bool:
    """`configuration.ToFilter`: is this resource skipped by these filters?

    `api_version` None means unknown: then only filters whose group and version are `*` can match, and
    a `Namespace` kind is taken to be core/v1 (the only Namespace there is).
    """
    return matching_filter(kind, namespace, name, filters, api_version=api_version,
                           subresource=subresource) is not None


def matching_filter(kind: str, namespace: str, name: str, filters: Sequence[ResourceFilter], *,
                    api_version: str | None = None, subresource: str = "") -> ResourceFilter | None:
    """The first filter entry that skips this resource (`filtered`'s rule; a cause names the entry)."""
    if api_version is None:
        group, version = ("", "v1") if kind == "Namespace" else (None, None)
    else:
        group, version = group_version(api_version)
    is_namespace = kind == "Namespace" and group == "" and version == "v1"
    for f in _of_kind(filters, group, version, kind, subresource):
        if wildcard_match(f.namespace, namespace) and wildcard_match(f.name, name):
            return f
        # [Namespace,kube-system,*] and [*,kube-system,*] also filter the kube-system Namespace itself
        if is_namespace and wildcard_match(f.namespace, name):
            return f
    return None


# the entries whose group, version, kind and subresource match, in their order, per filter list and kind: the
# default configuration has about a hundred entries and a run asks about every downstream and subject (3,000
# creates: 970,000 pattern matches, 2.5 s of apply's planning under a profiler), mostly of a few kinds. The
# list itself is kept beside its entries, so that an id reused by another list never answers for it
_KIND_CACHE: dict[tuple[int, str | None, str | None, str, str],
                  tuple[Sequence[ResourceFilter], tuple[ResourceFilter, ...]]] = {}


def _of_kind(filters: Sequence[ResourceFilter], group: str | None, version: str | None, kind: str,
             subresource: str) -> tuple[ResourceFilter, ...]:
    key = (id(filters), group, version, kind, subresource)
    cached = _KIND_CACHE.get(key)
    if cached is not None and cached[0] is filters:
        return cached[1]
    found = tuple(f for f in filters if _gv_match(f.group, group) and _gv_match(f.version, version)
                  and wildcard_match(f.kind, kind) and wildcard_match(f.subresource, subresource))
    if isinstance(filters, tuple):      # a list could change after this answer: only a tuple's is kept
        if len(_KIND_CACHE) >= 4096:
            _KIND_CACHE.clear()
        _KIND_CACHE[key] = (filters, found)
    return found


def _gv_match(pattern: str, value: str | None) -> bool:
    if value is None:
        return pattern == "*"
    return wildcard_match(pattern, value)


@dataclass(frozen=True)
class KyvernoConfig:
    """What kyrec uses from Kyverno's ConfigMap."""

    resource_filters: tuple[ResourceFilter, ...]
    source: Source | None = None
    from_defaults: bool = False
    # `updateRequestThreshold`: Kyverno creates no UpdateRequest while this many exist (kk:
    # pkg/utils/generator/updaterequests.go Generate; pkg/config/config.go, default 1000, a value
    # strconv.ParseInt refuses keeps the default)
    update_request_threshold: int = UPDATE_REQUEST_THRESHOLD

    def background_scan_filters(self, *, skip_resource_filters: bool = True) -> tuple[ResourceFilter, ...]:
        """Filters the reports controller applies; none under its default `--skipResourceFilters=true`."""
        return () if skip_resource_filters else self.resource_filters

    def filtered(self, kind: str, namespace: str, name: str, *, api_version: str | None = None) -> bool:
        return filtered(kind, namespace, name, self.resource_filters, api_version=api_version)


def default_kyverno_config() -> KyvernoConfig:
    return KyvernoConfig(parse_resource_filters(DEFAULT_RESOURCE_FILTERS), None, from_defaults=True)


def kyverno_config_from_configmap(obj: Mapping[str, Any], source: Source | None = None) -> KyvernoConfig:
    """Read a ConfigMap object; a ConfigMap without `resourceFilters` has none (as in Kyverno)."""
    if obj.get("kind") != "ConfigMap":
        raise InputError(f"expected a ConfigMap, got {obj.get('kind')!r}", source)
    data = obj.get("data") or {}
    if not isinstance(data, Mapping):
        raise InputError("ConfigMap data is not a map", source)
    text = data.get("resourceFilters", "")
    if not isinstance(text, str):
        raise InputError("data.resourceFilters is not a string", source)
    threshold = str(data.get("updateRequestThreshold", ""))
    return KyvernoConfig(parse_resource_filters(text), source, update_request_threshold=int(threshold)
                         if re.fullmatch(r"[+-]?[0-9]+", threshold) else UPDATE_REQUEST_THRESHOLD)


def find_kyverno_configmap(objects: Iterable[Mapping[str, Any]], *, namespace: str = KYVERNO_NAMESPACE,
                           name: str = KYVERNO_CONFIGMAP) -> Mapping[str, Any] | None:
    """Kyverno's ConfigMap among state objects, if present."""
    for obj in objects:
        if obj.get("kind") != "ConfigMap" or obj.get("apiVersion") != "v1":
            continue
        meta = obj.get("metadata") or {}
        if meta.get("name") == name and (meta.get("namespace") or "") == namespace:
            return obj
    return None


def kyverno_config_for(objects: Iterable[Mapping[str, Any]] | None = None,
                       configmap: Mapping[str, Any] | None = None) -> KyvernoConfig:
    """`--kyverno-config` first, else the ConfigMap in the state, else the chart defaults
    (docs/semantics/reports.md#ephemeral-reports-and-scans)."""
    if configmap is not None:
        return kyverno_config_from_configmap(configmap)
    if objects is not None:
        found = find_kyverno_configmap(objects)
        if found is not None:
            return kyverno_config_from_configmap(found)
    return default_kyverno_config()


def load_kyverno_config(path: str) -> KyvernoConfig:
    """`--kyverno-config FILE`: a ConfigMap (YAML or JSON), or a List holding one."""
    source = Source(path)
    try:
        with open(path, encoding="utf-8") as fh:
            docs = [d for d in yaml.load_all(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8: {exc.reason}", source) from None
    except RecursionError:
        raise InputError("bad YAML: nested too deeply", source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Source(path, mark.line + 1) if mark is not None else source
        raise InputError(f"bad YAML: {getattr(exc, 'problem', exc)}", where) from exc
    objects: list[Mapping[str, Any]] = []
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("kind") == "List":
            objects.extend(i for i in doc.get("items") or [] if isinstance(i, Mapping))
        elif isinstance(doc, Mapping):
            objects.append(doc)
    maps = [o for o in objects if o.get("kind") == "ConfigMap"]
    if len(maps) != 1:
        raise InputError(f"expected one ConfigMap, found {len(maps)}", source)
    return kyverno_config_from_configmap(maps[0], source)
