"""Which lists are keyed, and by what: the Kubernetes OpenAPI `x-kubernetes-list-type` /
`x-kubernetes-list-map-keys` of the built-in kinds kyrec compares (k8s.io/api `+listType`, `+listMapKey`).

A *map* list is compared element by element, matched by its keys (containers by name, container ports by
containerPort+protocol); a *set* list as a set of scalars; anything else is *atomic* and compared whole.
Paths are field names from the object's root with list positions left out, e.g.
`("spec", "template", "spec", "containers", "env")`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ListSpec:
    type: str                                   # "map" | "set" | "atomic"
    keys: tuple[str, ...] = ()
    # server-side defaults of key fields: an absent protocol is TCP, so {port: 80} and {port: 80,
    # protocol: TCP} are one element (the API server defaults it before anything compares)
    key_defaults: Mapping[str, Any] = field(default_factory=dict)


ATOMIC = ListSpec("atomic")
SET = ListSpec("set")
_TCP = {"protocol": "TCP"}

# where a PodSpec sits in each workload kind
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}

_CONTAINER_LISTS: dict[str, ListSpec] = {
    "ports": ListSpec("map", ("containerPort", "protocol"), _TCP),
    "env": ListSpec("map", ("name",)),
    "volumeMounts": ListSpec("map", ("mountPath",)),
    "volumeDevices": ListSpec("map", ("devicePath",)),
}

_POD_SPEC_LISTS: dict[str, ListSpec] = {
    "containers": ListSpec("map", ("name",)),
    "initContainers": ListSpec("map", ("name",)),
    "ephemeralContainers": ListSpec("map", ("name",)),
    "volumes": ListSpec("map", ("name",)),
    "imagePullSecrets": ListSpec("map", ("name",)),
    "hostAliases": ListSpec("map", ("ip",)),
    "topologySpreadConstraints": ListSpec("map", ("topologyKey", "whenUnsatisfiable")),
    "resourceClaims": ListSpec("map", ("name",)),
    "schedulingGates": ListSpec("map", ("name",)),
}

_CONTAINER_KINDS = ("containers", "initContainers", "ephemeralContainers")

# kind-specific lists outside pod specs
_KIND_LISTS: dict[tuple[str, tuple[str, ...]], ListSpec] = {
    ("Service", ("spec", "ports")): ListSpec("map", ("port", "protocol"), _TCP),
    ("ServiceAccount", ("secrets",)): ListSpec("map", ("name",)),
    ("ServiceAccount", ("imagePullSecrets",)): ListSpec("map", ("name",)),
    ("ValidatingWebhookConfiguration", ("webhooks",)): ListSpec("map", ("name",)),
    ("MutatingWebhookConfiguration", ("webhooks",)): ListSpec("map", ("name",)),
    ("Node", ("spec", "podCIDRs")): SET,
    ("EndpointSlice", ("ports",)): ATOMIC,
}

# any kind
_COMMON_LISTS: dict[tuple[str, ...], ListSpec] = {
    ("metadata", "ownerReferences"): ListSpec("map", ("uid",)),
    ("metadata", "finalizers"): SET,
}


def list_spec(kind: str, path: tuple[str, ...]) -> ListSpec:
    """How the list at `path` (field names, no indices) of a `kind` object compares: a list the table
    does not name is atomic, as structured-merge-diff treats a list without `x-kubernetes-list-type`."""
    known = known_list_spec(kind, path)
    return ATOMIC if known is None else known


def known_list_spec(kind: str, path: tuple[str, ...]) -> ListSpec | None:
    """The table's entry for the list at `path` of a `kind` object; None when the table does not name it
    (most such lists of the built-in kinds are atomic, but kyrec holds no schema to say which)."""
    common = _COMMON_LISTS.get(path)
    if common is not None:
        return common
    specific = _KIND_LISTS.get((kind, path))
    if specific is not None:
        return specific
    pod = POD_SPEC_PATHS.get(kind)
    if pod is not None and path[:len(pod)] == pod:
        rest = path[len(pod):]
        if len(rest) == 1 and rest[0] in _POD_SPEC_LISTS:
            return _POD_SPEC_LISTS[rest[0]]
        if len(rest) == 2 and rest[0] in _CONTAINER_KINDS and rest[1] in _CONTAINER_LISTS:
            return _CONTAINER_LISTS[rest[1]]
    return None


def element_key(spec: ListSpec, element: Any) -> tuple[Any, ...] | None:
    """The key of a map-list element, with key defaults applied; None when it is not a map."""
    if not isinstance(element, Mapping):
        return None
    return tuple(element.get(k, spec.key_defaults.get(k)) for k in spec.keys)



# Keys of keyed lists that the API server's validation requires on create (k8s.io/kubernetes
# pkg/apis/core/validation: a container without `name` is `spec.containers[0].name: Required value`, a Service
# port without `port` is `spec.ports[0].port: Required value`, ...): an object holding such an item without it
# is refused before any admission webhook sees it, and stored objects never lack it. tests/consistency/
# test_convert_refused_variants.py creates each such object with a server-side dry-run on the real server.
# By (the list's field name, the key), read together with the table above (so `ports`/`port` is a Service's).
_REQUIRED_KEYS: frozenset[tuple[str, str]] = frozenset({
    ("containers", "name"), ("initContainers", "name"), ("volumes", "name"), ("env", "name"),
    ("ports", "containerPort"), ("ports", "port"), ("volumeMounts", "mountPath"), ("hostAliases", "ip"),
    ("topologySpreadConstraints", "topologyKey"), ("topologySpreadConstraints", "whenUnsatisfiable"),
})


def required_item_key(kind: str, path: tuple[str, ...]) -> bool:
    """Whether `path` (field names and list positions from the object's root, e.g. `spec.containers.0.name`)
    is the key of a keyed list's item that the API server requires: without it the object is refused."""
    if len(path) < 3 or not path[-2].isdigit():
        return False
    list_path = tuple(step for step in path[:-2] if not step.isdigit())
    spec = known_list_spec(kind, list_path)
    return (spec is not None and spec.type == "map" and path[-1] in spec.keys
            and path[-1] not in spec.key_defaults and (list_path[-1], path[-1]) in _REQUIRED_KEYS)
