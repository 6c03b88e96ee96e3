"""Downstream objects exactly as Kyverno writes them (docs/semantics/generating.md#downstream-objects; kk:
pkg/cel/libs/context.go).

For every item handed to `generator.Apply` (or rendered by a template):
1. an item with a list-shaped `items` field (a `resource.List` result) stands for its items;
2. a cluster-scoped kind gets no namespace; a namespaced policy may not write one ("cross-scope");
3. ownerReferences are dropped only when the item's own namespace is set and differs from the target;
4. the ownership labels are set (an existing managed-by is overwritten); `source-uid` only for an item
   that has a resourceVersion, i.e. one read through `resource.Get/List`;
5. uid, selfLink, creationTimestamp, managedFields and resourceVersion are removed and the namespace set.
Nothing else changes: annotations of a clone source (last-applied included) are copied, no ownerReference
to the trigger is added, no annotation is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubectl_kyrec.cel.engine import sorted_keys
from kubectl_kyrec.cel.generator_lib import GenerateRefused
from kubectl_kyrec.model import group_version

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_KYVERNO = "kyverno"
LABEL_POLICY_NAME = "generate.kyverno.io/policy-name"
# written by Kyverno builds newer than the one kyrec models; read when present (see `owner_of`)
LABEL_POLICY_NAMESPACE = "generate.kyverno.io/policy-namespace"
LABEL_TRIGGER_NAME = "generate.kyverno.io/trigger-name"
LABEL_TRIGGER_NAMESPACE = "generate.kyverno.io/trigger-namespace"
LABEL_TRIGGER_UID = "generate.kyverno.io/trigger-uid"
LABEL_TRIGGER_KIND = "generate.kyverno.io/trigger-kind"
LABEL_TRIGGER_GROUP = "generate.kyverno.io/trigger-group"
LABEL_TRIGGER_VERSION = "generate.kyverno.io/trigger-version"
LABEL_SOURCE_UID = "generate.kyverno.io/source-uid"

STRIPPED_METADATA = ("uid", "selfLink", "creationTimestamp", "managedFields", "resourceVersion")


class ScopeLookup(Protocol):
    def by_kind(self, api_version: str, kind: str) -> Any: ...


@dataclass(frozen=True)
class TriggerInfo:
    """What the labels say about the trigger: request name and kind, the object's namespace and uid."""

    name: str
    namespace: str
    uid: str
    kind: str
    group: str
    version: str


@dataclass(frozen=True)
class Owner:
    policy_name: str
    policy_namespace: str       # "" for GeneratingPolicy
    trigger: TriggerInfo


@dataclass(frozen=True)
class OwnerLabels:
    """The ownership a live object claims through its labels."""

    managed_by_kyverno: bool
    policy_name: str
    policy_namespace: str | None    # None: no policy-namespace label
    trigger_uid: str
    trigger_name: str
    trigger_namespace: str
    trigger_kind: str
    trigger_group: str
    trigger_version: str
    source_uid: str

    @property
    def generated(self) -> bool:
        return self.managed_by_kyverno and bool(self.policy_name)


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def owner_of(obj: Mapping[str, Any]) -> OwnerLabels:
    labels = labels_of(obj)

    def get(key: str) -> str:
        value = labels.get(key)
        return "" if value is None else str(value)

    return OwnerLabels(
        managed_by_kyverno=get(LABEL_MANAGED_BY) == MANAGED_BY_KYVERNO, policy_name=get(LABEL_POLICY_NAME),
        policy_namespace=str(labels[LABEL_POLICY_NAMESPACE]) if LABEL_POLICY_NAMESPACE in labels else None,
        trigger_uid=get(LABEL_TRIGGER_UID), trigger_name=get(LABEL_TRIGGER_NAME),
        trigger_namespace=get(LABEL_TRIGGER_NAMESPACE), trigger_kind=get(LABEL_TRIGGER_KIND),
        trigger_group=get(LABEL_TRIGGER_GROUP), trigger_version=get(LABEL_TRIGGER_VERSION),
        source_uid=get(LABEL_SOURCE_UID))


def claims_generated(obj: Mapping[str, Any]) -> bool:
    """`owner_of(obj).generated` without reading the other eight labels: asked of every object of a state
    (reconcile/downstreams.py StateIndex), nearly all of which claim nothing."""
    labels = labels_of(obj)
    managed_by = labels.get(LABEL_MANAGED_BY)
    if managed_by is None or str(managed_by) != MANAGED_BY_KYVERNO:
        return False
    policy_name = labels.get(LABEL_POLICY_NAME)
    return policy_name is not None and str(policy_name) != ""


def is_owned_by(obj: Mapping[str, Any], policy_name: str, policy_namespace: str, trigger_uid: str) -> bool:
    """Kyverno's isManagedByPolicy: managed-by kyverno, this policy's name, this trigger's uid.

    A policy-namespace label, when a newer Kyverno wrote one, must name the policy's namespace too.
    """
    owner = owner_of(obj)
    return (owner.managed_by_kyverno and owner.policy_name == policy_name and owner.trigger_uid == trigger_uid
            and (owner.policy_namespace is None or owner.policy_namespace == policy_namespace))


def ownership_labels(owner: Owner) -> dict[str, str]:
    t = owner.trigger
    return {
        LABEL_MANAGED_BY: MANAGED_BY_KYVERNO,
        LABEL_POLICY_NAME: owner.policy_name,
        LABEL_TRIGGER_NAME: t.name,
        LABEL_TRIGGER_NAMESPACE: t.namespace,
        LABEL_TRIGGER_UID: t.uid,
        LABEL_TRIGGER_KIND: t.kind,
        LABEL_TRIGGER_GROUP: t.group,
        LABEL_TRIGGER_VERSION: t.version,
    }


def expand_items(items: Sequence[Any]) -> list[dict[str, Any]]:
    """Unstructured.IsList/ToList: a map whose `items` is a list stands for its items.

    Items of a List served by the API may lack apiVersion/kind; the dynamic client fills them in from the
    list's own (kind without its `List` suffix), so they are filled in here the same way.
    """
    out: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise GenerateRefused(f"expected a resource map, got {type(item).__name__}")
        inner = item.get("items")
        if isinstance(inner, list):
            list_kind = str(item.get("kind") or "")
            item_kind = list_kind[:-4] if list_kind.endswith("List") else list_kind
            for element in inner:
                if not isinstance(element, Mapping):
                    raise GenerateRefused("unable to convert list item: not an object")
                element = dict(element)
                element.setdefault("apiVersion", item.get("apiVersion", ""))
                if item_kind:
                    element.setdefault("kind", item_kind)
                out.append(element)
        else:
            out.append(dict(item))
    return out


def _namespaced(kinds: ScopeLookup | None, api_version: str, kind: str) -> bool:
    # Kyverno's isNamespacedResource answers true whenever the REST mapping is unknown
    if kinds is None or not api_version or not kind:
        return True
    if api_version.count("/") > 1:
        # schema.ParseGroupVersion refuses it before any request is made
        raise GenerateRefused(f"unexpected GroupVersion string: {api_version}")
    info = kinds.by_kind(api_version, kind)
    if info is None:
        group = api_version.rpartition("/")[0]
        serves_group = getattr(kinds, "serves_group", None)
        if serves_group is not None and serves_group(group):
            # a group the cluster serves, but not this version or kind: the API server refuses the write.
            # An unknown group is taken for a CRD kyrec was not given (namespaced, as Kyverno assumes).
            raise GenerateRefused(f'no matches for kind "{kind}" in version "{api_version}"')
        return True
    return bool(getattr(info, "namespaced", True))


def normalize_numbers(value: Any) -> Any:
    """Whole floats become ints: Kyverno's objects pass through JSON, where 1.0 is written `1`."""
    if isinstance(value, dict):
        return {k: normalize_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 63:
        return int(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def in_key_order_normalized(value: Any) -> Any:
    """normalize_numbers(in_key_order(value)) in one walk (cel/engine.py in_key_order: every map's keys
    sorted): what generator.Apply hands over is walked once, not twice, before it is written (each
    generated object of 3,000 triggers, bench/apply_prewrite.py). A string, the usual leaf, is kept without a
    call (it stays as it is): 4 calls in 7 for a generated ConfigMap."""
    if isinstance(value, dict):
        return {k: v if type(v) is str else in_key_order_normalized(v) for k in sorted_keys(value) for v in [value[k]]}
    if isinstance(value, list):
        return [v if type(v) is str else in_key_order_normalized(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 63:
        return int(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


_TOP_ORDER = ("apiVersion", "kind", "metadata")
_META_ORDER = ("name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "finalizers")


def canonical_order(obj: Mapping[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata (name, namespace, labels, ...) first; the rest in the order given.

    The CEL engine hands maps back with sorted keys, so this order is the only one that can be stable.
    """
    out: dict[str, Any] = {k: obj[k] for k in _TOP_ORDER if k in obj}
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        ordered = {k: meta[k] for k in _META_ORDER if k in meta}
        ordered.update({k: v for k, v in meta.items() if k not in ordered})
        if isinstance(ordered.get("labels"), Mapping):
            ordered["labels"] = dict(ordered["labels"])
        out["metadata"] = ordered
    out.update({k: v for k, v in obj.items() if k not in out})
    return out


def write_downstream(item: Mapping[str, Any], target_namespace: str, owner: Owner, *, kinds: ScopeLookup | None,
                     namespaced_policy: bool, sort_keys: bool = False) -> dict[str, Any]:
    """One item as Kyverno writes it into the cluster (steps 2-5 of the module docstring); `sort_keys`: every
    map's keys sorted first (in_key_order), as the objects generator.Apply hands over are."""
    # normalize_numbers builds every dict and list anew: what is changed below (the object, its metadata and
    # labels) is never the item's own (a policy's data, the CEL value), without a deep copy first (a third of
    # this function's time at 3,000 triggers, bench/apply_prewrite.py)
    obj = in_key_order_normalized(dict(item)) if sort_keys else normalize_numbers(dict(item))
    api_version = str(obj.get("apiVersion") or "")
    kind = str(obj.get("kind") or "")
    raw_meta = obj.get("metadata")
    if raw_meta is not None and not isinstance(raw_meta, dict):
        raise GenerateRefused(".metadata accessor error: expected a map")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    namespace = target_namespace
    if not _namespaced(kinds, api_version, kind):
        if namespace and namespaced_policy:
            raise GenerateRefused(f"cross-scope generation denied: a policy scoped to namespace {namespace!r} "
                                  f"cannot generate cluster-scoped resource {api_version}/{kind}")
        namespace = ""
    elif not namespace:
        # the API server refuses a namespaced create without a namespace
        raise GenerateRefused(f"the server could not find the requested resource: {kind} {meta.get('name', '')!r} "
                              "needs a namespace")
    if not meta.get("name") and not meta.get("generateName"):
        raise GenerateRefused("resource name may not be empty")
    source_namespace = str(meta.get("namespace") or "")
    if source_namespace and source_namespace != namespace and meta.get("ownerReferences") is not None:
        del meta["ownerReferences"]
    labels = meta.get("labels")
    labels = dict(labels) if isinstance(labels, Mapping) else {}
    labels.update(ownership_labels(owner))
    if meta.get("resourceVersion"):
        labels[LABEL_SOURCE_UID] = str(meta.get("uid") or "")
    meta["labels"] = labels
    for key in STRIPPED_METADATA:
        meta.pop(key, None)
    if namespace:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    obj["metadata"] = meta
    return canonical_order(obj)


def generate_downstreams(namespace: str, items: Sequence[Any], owner: Owner, *, kinds: ScopeLookup | None,
                         namespaced_policy: bool, sort_keys: bool = False) -> list[dict[str, Any]]:
    """GenerateResources for one call: expand lists, then write each item (`sort_keys`: write_downstream's).

    Expanding before the keys are sorted gives the same objects as after: it only reads `items`, `kind` and
    `apiVersion` and adds the last two at the top level, where canonical_order puts them first anyway."""
    return [write_downstream(item, namespace, owner, kinds=kinds, namespaced_policy=namespaced_policy,
                             sort_keys=sort_keys)
            for item in expand_items(items)]


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name): what Kyverno GETs before it writes (versions of a kind are one object)."""
    meta = obj.get("metadata") or {}
    group, _ = group_version(str(obj.get("apiVersion") or ""))
    return group, str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or "")
