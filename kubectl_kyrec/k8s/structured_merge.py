"""Merging an apply configuration into an object, as Kubernetes' mutating admission does.

k8s.io/apiserver pkg/admission/plugin/policy/mutating/patch/smd.go ApplyStructuredMergeDiff: the patch is
checked for atomic fields (validatePatch: "may not mutate atomic arrays, maps or structs"), then merged
into the live object with structured-merge-diff's TypedValue.Merge (sigs.k8s.io/structured-merge-diff/v6
typed/merge.go, rule ruleKeepRHS): maps and structs are merged field by field, the patch winning on
scalars; an atomic list or map is replaced whole; a set or a map-list (containers by name) is merged item
by item in the order visitListItems gives.

What a list is comes from the object's schema. kyrec has no OpenAPI schemas; it knows the keyed and set
lists of list_keys.py and the atomic maps below. A patch that sets a list that table does not name
raises NeedsSchema: without the schema the outcome (merged, replaced or refused) cannot be known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.k8s.list_keys import POD_SPEC_PATHS, ListSpec, element_key, known_list_spec


class MergeError(EngineError):
    """Kubernetes refuses the patch; the message is the patcher's."""


class NeedsSchema(Exception):
    """The outcome depends on what kyrec cannot know (a schema it does not hold); `path` is the field, dotted,
    `reason` what is unknown there."""

    def __init__(self, path: str, reason: str = "a list whose merge needs the kind's schema") -> None:
        super().__init__(path)
        self.path = path
        self.reason = reason


# maps and structs of the built-in kinds marked atomic (k8s.io/api core/v1 types.go `+mapType=atomic`
# on PodSpec.NodeSelector, ServiceSpec.Selector, ReplicationControllerSpec.Selector; apimachinery meta/v1
# LabelSelector `+structType=atomic`, the workloads' spec.selector)
_ATOMIC_POD_SPEC_MAPS = ("nodeSelector",)
_ATOMIC_MAPS: frozenset[tuple[str, tuple[str, ...]]] = frozenset({
    ("Service", ("spec", "selector")),
    ("ReplicationController", ("spec", "selector")),
    *((kind, ("spec", "selector")) for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")),
})


def _atomic_map(kind: str, path: tuple[str, ...]) -> bool:
    if (kind, path) in _ATOMIC_MAPS:
        return True
    pod = POD_SPEC_PATHS.get(kind)
    return (pod is not None and len(path) == len(pod) + 1 and path[:len(pod)] == pod
            and path[-1] in _ATOMIC_POD_SPEC_MAPS)


def apply_configuration(live: Mapping[str, Any], patch: Mapping[str, Any], kind: str, *,
                        deduced: bool = False) -> dict[str, Any]:
    """`live` with the apply configuration `patch` merged in (a new object; neither input is changed).

    `deduced`: merge with managedfields' deduced type converter (typed/parser.go DeducedParseableType:
    every map granular, every list atomic, so replaced whole), as Kyverno's CLI does for
    MutatingAdmissionPolicies (pkg/admissionpolicy/mutate.go mutateResource), rather than with the kind's
    schema. findAtomics descends only through a schema's declared fields, and the deduced type declares
    none: nothing is refused then (measured with Kyverno v1.17.2's CLI: a list in the patch replaces).
    Raises MergeError where Kubernetes refuses the patch, NeedsSchema where kyrec cannot tell."""
    atomics = [] if deduced else _find_atomics(patch, kind, ())
    if atomics:
        raise MergeError("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: "
                         + ", ".join(atomics))
    merged = _merge(live, patch, kind, (), deduced)
    return dict(merged) if isinstance(merged, Mapping) else {}


def atomic_fields(patch: Mapping[str, Any], kind: str) -> list[str]:
    """The atomic maps and lists of `kind` an apply configuration `patch` sets (Kubernetes refuses it)."""
    return _find_atomics(patch, kind, ())


def _find_atomics(value: Any, kind: str, path: tuple[str, ...]) -> list[str]:
    """patch/smd.go findAtomics over what kyrec knows: the paths of atomic maps and lists in the patch."""
    found: list[str] = []
    if isinstance(value, Mapping):
        if path and _atomic_map(kind, path):
            found.append("".join(f".{p}" for p in path))
        for key, item in value.items():
            found.extend(_find_atomics(item, kind, (*path, str(key))))
    elif isinstance(value, list):
        spec = known_list_spec(kind, path)
        if spec is not None and spec.type == "atomic":
            found.append("".join(f".{p}" for p in path))
        for item in value:
            found.extend(_find_atomics(item, kind, path))
    return found


_ABSENT = object()


def _merge(lhs: Any, rhs: Any, kind: str, path: tuple[str, ...], deduced: bool = False) -> Any:
    if rhs is _ABSENT:
        return lhs
    if lhs is _ABSENT:
        if not deduced and isinstance(rhs, list) and rhs and known_list_spec(kind, path) is None:
            raise NeedsSchema(".".join(path))
        return rhs
    if isinstance(lhs, Mapping) and isinstance(rhs, Mapping):
        if not lhs and not rhs or (not deduced and _atomic_map(kind, path)):
            return rhs
        out = dict(lhs)
        for key, value in rhs.items():
            out[key] = _merge(lhs.get(key, _ABSENT), value, kind, (*path, str(key)), deduced)
        return out
    if isinstance(lhs, list) and isinstance(rhs, list):
        if not lhs and not rhs or deduced:
            return rhs
        spec = known_list_spec(kind, path)
        if spec is None:
            raise NeedsSchema(".".join(path))
        if spec.type == "atomic":
            return rhs
        return _merge_list(spec, lhs, rhs, kind, path)
    return rhs


def _path_element(spec: ListSpec, item: Any) -> Any:
    if spec.type == "map":
        key = element_key(spec, item)
        if key is None:
            raise MergeError(f"element {item!r}: associative list with keys has an element that is not a map")
        return key
    return _hashable(item)


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _merge_list(spec: ListSpec, lhs: list[Any], rhs: list[Any], kind: str, path: tuple[str, ...]) -> list[Any]:
    """typed/merge.go visitListItems: the live order, with the patch's new items placed where the patch
    puts them relative to the items both share."""
    rpes = [_path_element(spec, item) for item in rhs]
    observed_r: dict[Any, Any] = {}
    for pe, item in zip(rpes, rhs, strict=True):
        if pe in observed_r:
            raise MergeError(f"failed to merge patch: .{'.'.join(path)}: duplicate entries for key {pe!r}")
        observed_r[pe] = item
    lpes = [_path_element(spec, item) for item in lhs]
    observed_l: dict[Any, Any] = {}
    for pe, item in zip(lpes, lhs, strict=True):
        # a key the live list holds twice merges as a null (indexListPathElements with AllowDuplicates)
        observed_l[pe] = None if pe in observed_l else item
    shared = [pe for pe in rpes if pe in observed_l]
    next_shared = shared.pop(0) if shared else None
    merged_r: set[Any] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                merged_r.add(pe)
                out.append(_merge(observed_l[pe], observed_r[pe], kind, path))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in observed_r and next_shared is not None and next_shared != lpes[li]:
                li += 1
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in observed_r:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged_r:
                li += 1
        if ri < len(rpes):
            pe = rpes[ri]
            merged_r.add(pe)
            out.append(_merge(observed_l.get(pe, _ABSENT), observed_r[pe], kind, path))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out
