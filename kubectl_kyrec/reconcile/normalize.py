"""Comparing what a policy sets with what lives in the cluster (docs/semantics/downstreams.md#drift).

`changed_fields`: what the policy sets is compared as a subset of the live object. Keyed lists match by
key (list_keys), sets as sets, other lists whole (same length, each element a subset of its live
counterpart, since the server defaults fields inside them). An expected empty value equals an absent one
(`omitempty`). `status` and server metadata never count. Numbers compare by value; quantities in resource
maps (`limits`, `hard`, ...) by amount, so `1000m` equals the server's canonical `1`. A Secret's `data`
and `stringData` are folded into bytes per key, so `data.x: YmFy` equals `stringData.x: bar`.

`managed_leaves` reads `metadata.managedFields` (FieldsV1): the leaf paths each manager owns. A leaf the
policy does not set, present in the live object, owned by a manager that is not Kyverno's is a *foreign*
field: Kyverno's full replace removes it. One owned only by Kyverno's managers is a *stale* field: the
policy set it once and sets it no more.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubectl_kyrec.k8s.list_keys import ListSpec, element_key, list_spec
from kubectl_kyrec.k8s.quantity import QuantityError, parse_quantity
from kubectl_kyrec.k8s.secrets import is_secret, secret_bytes

SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
                   "deletionTimestamp", "deletionGracePeriodSeconds")
IDENTITY_METADATA = ("name", "namespace", "generateName")
# maps whose values are resource quantities (ResourceList and friends)
QUANTITY_MAPS = frozenset(("limits", "requests", "hard", "used", "default", "defaultRequest", "max", "min",
                           "maxLimitRequestRatio", "capacity", "allocatable", "overhead"))
QUANTITY_FIELDS = frozenset(("sizeLimit",))
DEFAULT_KYVERNO_MANAGERS = ("kyverno-generate", "kyverno", "background-controller")

Path = tuple[tuple[str, Any], ...]     # FieldsV1 path: ("f", name) | ("k", {key}) | ("v", value) | ("i", index)


def is_kyverno_manager(name: str, managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS) -> bool:
    return name in managers or name.startswith("kyverno")


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without status and server metadata; a Secret's data folded into bytes under `data`.

    Only the top level and `metadata` are new: the rest is shared with `obj` (every reader of this form,
    changed_fields, resolve, unset_managed_fields, only reads it), which spares a deep copy of both sides
    of every owned downstream."""
    out = dict(obj)
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
    if is_secret(obj):
        out.pop("stringData", None)
        content = secret_bytes(obj)
        if content or "data" in obj or "stringData" in obj:
            out["data"] = content
    return out


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def _quantity(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, str):
        try:
            return parse_quantity(value)
        except (QuantityError, ValueError, ArithmeticError):
            return None
    return None


def scalar_equal(expected: Any, live: Any, names: tuple[str, ...]) -> bool:
    if isinstance(expected, bool) or isinstance(live, bool):
        return expected is live if isinstance(expected, bool) and isinstance(live, bool) else False
    if isinstance(expected, int | float) and isinstance(live, int | float):
        return float(expected) == float(live)
    if expected == live:
        return True
    if names and (names[-1] in QUANTITY_FIELDS or (len(names) > 1 and names[-2] in QUANTITY_MAPS)):
        a, b = _quantity(expected), _quantity(live)
        return a is not None and a == b
    return False


def pointer_token(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class Difference:
    pointer: str                # JSON pointer into the live object; `/-` ends one for an element it lacks
    names: tuple[str, ...]      # field names along the way (list positions left out)


def changed_fields(expected: Mapping[str, Any], live: Mapping[str, Any]) -> list[Difference]:
    """Where the live object differs from what the policy sets (both given as `comparable` forms)."""
    kind = str(expected.get("kind") or live.get("kind") or "")
    out: list[Difference] = []
    for key, value in expected.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        if key == "metadata" and isinstance(value, Mapping):
            raw_meta = live.get("metadata")
            live_meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
            for mkey, mvalue in value.items():
                if mkey in IDENTITY_METADATA or mkey in SERVER_METADATA:
                    continue
                _walk(mvalue, live_meta.get(mkey), mkey in live_meta, ("metadata", mkey),
                      f"/metadata/{pointer_token(mkey)}", kind, out)
            continue
        _walk(value, live.get(key), key in live, (key,), f"/{pointer_token(key)}", kind, out)
    return out


def _walk(expected: Any, live: Any, present: bool, names: tuple[str, ...], pointer: str, kind: str,
          out: list[Difference]) -> None:
    if not present or live is None:
        if not _empty(expected):
            out.append(Difference(pointer, names))
        return
    if isinstance(expected, Mapping):
        if not isinstance(live, Mapping):
            out.append(Difference(pointer, names))
            return
        for key, value in expected.items():
            _walk(value, live.get(key), key in live, (*names, str(key)), f"{pointer}/{pointer_token(key)}", kind,
                  out)
        return
    if isinstance(expected, list):
        if not isinstance(live, list):
            if expected:
                out.append(Difference(pointer, names))
            return
        _walk_list(expected, live, names, pointer, kind, out)
        return
    if isinstance(expected, bytes):
        if expected != live:
            out.append(Difference(pointer, names))
        return
    if not scalar_equal(expected, live, names):
        out.append(Difference(pointer, names))


def _walk_list(expected: list[Any], live: list[Any], names: tuple[str, ...], pointer: str, kind: str,
               out: list[Difference]) -> None:
    spec = list_spec(kind, names)
    if spec.type == "map":
        index = {element_key(spec, e): i for i, e in enumerate(live) if element_key(spec, e) is not None}
        for element in expected:
            key = element_key(spec, element)
            if key is None or key not in index:
                out.append(Difference(f"{pointer}/-", names))
                continue
            i = index[key]
            _walk(element, live[i], True, names, f"{pointer}/{i}", kind, out)
        return
    if spec.type == "set":
        if any(e not in live for e in expected):
            out.append(Difference(pointer, names))
        return
    if len(expected) != len(live):
        out.append(Difference(pointer, names))
        return
    for i, (e, lv) in enumerate(zip(expected, live)):
        _walk(e, lv, True, names, f"{pointer}/{i}", kind, out)


# ---- managedFields ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ManagedLeaf:
    manager: str
    operation: str
    path: Path


def _parse_step(token: str) -> tuple[str, Any] | None:
    prefix, _, rest = token.partition(":")
    if prefix == "f":
        return "f", rest
    if prefix in ("k", "v"):
        try:
            return prefix, json.loads(rest)
        except json.JSONDecodeError:
            return None
    if prefix == "i":
        try:
            return "i", int(rest)
        except ValueError:
            return None
    return None


def _leaves(tree: Mapping[str, Any], prefix: Path) -> Iterator[Path]:
    """Owned leaf paths. A `.` marks ownership of the node itself; it counts for list elements (their
    existence), not for maps, whose own fields say what is owned."""
    children = [(k, v) for k, v in tree.items() if k != "."]
    if prefix and ("." in tree or not children) and (not children or prefix[-1][0] != "f"):
        yield prefix
    for token, sub in children:
        step = _parse_step(str(token))
        if step is None:
            continue
        yield from _leaves(sub if isinstance(sub, Mapping) else {}, (*prefix, step))


def managed_leaves(obj: Mapping[str, Any]) -> list[ManagedLeaf]:
    """Leaf paths per managedFields entry; entries for subresources (status, scale) are left out."""
    meta = obj.get("metadata") or {}
    out: list[ManagedLeaf] = []
    for entry in meta.get("managedFields") or []:
        if not isinstance(entry, Mapping) or entry.get("subresource"):
            continue
        fields = entry.get("fieldsV1")
        if not isinstance(fields, Mapping):
            continue
        manager = str(entry.get("manager") or "")
        operation = str(entry.get("operation") or "")
        out.extend(ManagedLeaf(manager, operation, p) for p in _leaves(fields, ()))
    return out


def resolve(obj: Any, path: Path, kind: str) -> tuple[bool, bool, str]:
    """Walk a FieldsV1 path in a `comparable` object.

    Returns (sets, exists, pointer): `sets` is True when the object sets the path or an atomic value
    above it; `exists` when the whole path is there; `pointer` is the JSON pointer reached.
    """
    node = obj
    names: tuple[str, ...] = ()
    pointer = ""
    for step, value in path:
        if step == "f":
            if not isinstance(node, Mapping):
                return node is not None, False, pointer
            if value not in node:
                return False, False, pointer
            names = (*names, str(value))
            pointer += f"/{pointer_token(value)}"
            node = node[value]
            continue
        if not isinstance(node, list):
            return node is not None, False, pointer
        found = _find(node, step, value, list_spec(kind, names))
        if found is None:
            return False, False, pointer
        pointer += f"/{found}"
        node = node[found]
    return True, True, pointer


def _find(items: list[Any], step: str, value: Any, spec: ListSpec) -> int | None:
    if step == "i":
        return value if isinstance(value, int) and 0 <= value < len(items) else None
    if step == "v":
        for i, item in enumerate(items):
            if item == value:
                return i
        return None
    if not isinstance(value, Mapping):
        return None
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        defaults = spec.key_defaults
        if all(item.get(k, defaults.get(k)) == v for k, v in value.items()):
            return i
    return None


@dataclass(frozen=True)
class ManagedFinding:
    pointer: str
    managers: tuple[str, ...]
    foreign: bool           # owned by some manager that is not Kyverno's (else: stale Kyverno field)


_IGNORED_META = frozenset(SERVER_METADATA) | frozenset(IDENTITY_METADATA)


def unset_managed_fields(expected: Mapping[str, Any], live_raw: Mapping[str, Any], live: Mapping[str, Any],
                         *, kyverno_managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS) -> list[ManagedFinding]:
    """Fields of the live object that some manager owns and the policy does not set."""
    kind = str(expected.get("kind") or live.get("kind") or "")
    owners: dict[str, list[str]] = {}
    for leaf in managed_leaves(live_raw):
        if not leaf.path or leaf.path[0] in (("f", "status"), ("f", "apiVersion"), ("f", "kind")):
            continue
        if leaf.path[0] == ("f", "metadata") and (len(leaf.path) == 1 or leaf.path[1][1] in _IGNORED_META):
            continue
        sets, _, _ = resolve(expected, _fold_secret(leaf.path, expected), kind)
        if sets:
            continue
        _, exists, pointer = resolve(live, _fold_secret(leaf.path, live), kind)
        if not exists:
            continue
        owners.setdefault(pointer, []).append(leaf.manager)
    findings = []
    for pointer in sorted(owners):
        managers = tuple(sorted(set(owners[pointer])))
        foreign = any(not is_kyverno_manager(m, kyverno_managers) for m in managers)
        findings.append(ManagedFinding(pointer, managers, foreign))
    return _outermost(findings)


def _fold_secret(path: Path, obj: Mapping[str, Any]) -> Path:
    # comparable() folds a Secret's stringData into data
    if is_secret(obj) and path and path[0] == ("f", "stringData"):
        return (("f", "data"), *path[1:])
    return path


def _outermost(findings: list[ManagedFinding]) -> list[ManagedFinding]:
    """Drop findings inside another one (an element and its fields are one finding)."""
    out: list[ManagedFinding] = []
    for finding in sorted(findings, key=lambda f: f.pointer):
        if out and (finding.pointer + "/").startswith(out[-1].pointer + "/"):
            continue
        out.append(finding)
    return out


# ---- the object after Kyverno writes it -------------------------------------------------------------------

def merge_expected(live: Any, expected: Any, names: tuple[str, ...], kind: str) -> Any:
    """The live object with every field the policy sets written over it (keyed lists merged by key)."""
    if isinstance(expected, Mapping) and isinstance(live, Mapping):
        out = dict(live)
        for key, value in expected.items():
            sub = (*names, str(key))
            if key in live:
                out[key] = merge_expected(live[key], value, sub, kind)
            elif not _empty(value):
                out[key] = copy.deepcopy(value)
        return out
    if isinstance(expected, list) and isinstance(live, list):
        spec = list_spec(kind, names)
        if spec.type == "map":
            merged = list(live)
            index = {element_key(spec, e): i for i, e in enumerate(live) if element_key(spec, e) is not None}
            for element in expected:
                key = element_key(spec, element)
                if key is not None and key in index:
                    merged[index[key]] = merge_expected(live[index[key]], element, names, kind)
                else:
                    merged.append(copy.deepcopy(element))
            return merged
        if spec.type == "set":
            return [*live, *[e for e in expected if e not in live]]
        if len(live) == len(expected):
            return [merge_expected(lv, e, names, kind) for lv, e in zip(live, expected)]
        return copy.deepcopy(expected)
    return copy.deepcopy(expected)


def remove_pointers(obj: Any, pointers: Sequence[str]) -> None:
    """Delete several; later list positions first, so earlier ones keep their meaning."""
    def order(pointer: str) -> list[Any]:
        return [int(t) if t.isdigit() else t for t in pointer.split("/")]
    for pointer in sorted(pointers, key=lambda p: [(0, x) if isinstance(x, int) else (1, x) for x in order(p)],
                          reverse=True):
        remove_pointer(obj, pointer)


def remove_pointer(obj: Any, pointer: str) -> None:
    """Delete what a JSON pointer names, if it is there; a map left empty goes too (as `omitempty`)."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    if not tokens:
        return
    chain = [obj]
    node = obj
    for token in tokens[:-1]:
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return
        chain.append(node)
    last = tokens[-1]
    if isinstance(node, dict):
        node.pop(last, None)
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        del node[int(last)]
    # drop maps the removal emptied, from the inside out (never the object itself)
    for depth in range(len(chain) - 1, 0, -1):
        parent, child, key = chain[depth - 1], chain[depth], tokens[depth - 1]
        if isinstance(child, dict) and not child and isinstance(parent, dict):
            parent.pop(key, None)
        else:
            break
