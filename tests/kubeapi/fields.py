"""Field ownership as server-side apply keeps it (structured-merge-diff, reduced to what kyrec meets).

A *path* is a tuple of elements: ("f", field name), ("k", key JSON) for an element of a keyed list, ("v",
value JSON) for an element of a set list. Which lists are keyed, and by what, comes from kyrec's own key
table (kubectl_kyrec/k8s/list_keys.py), so the double and the diff agree by construction on that one
point; everything else here is written from structured-merge-diff's behaviour.

- An *applied* set holds every leaf of the applied configuration (scalars, atomic lists, empty maps) and
  every keyed/set list element; it never holds plain map nodes (FieldsV1 then has no `.` on them).
- An *update* (POST, PUT, seeding) owns what it added or modified, map nodes included (`f:data: {.: {}}`).
- Conflict: another manager owns a path whose value the write adds or modifies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_kyrec.k8s.list_keys import ListSpec, element_key, list_spec

PE = tuple[str, str]
Path = tuple[PE, ...]

# structured-merge-diff's stripMeta: fields no manager ever owns
_STRIPPED_META = ("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
                  "managedFields", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")
_ELEMENT = object()      # the value recorded for a list element's own path
_METADATA: tuple[PE, ...] = (("f", "metadata"),)     # stripped itself; only its children are owned


def owned_view(obj: Mapping[str, Any], status_subresource: bool) -> dict[str, Any]:
    """The object as field ownership sees it: no apiVersion/kind, no server metadata, no status when a
    status subresource owns it."""
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if status_subresource:
        out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if k not in _STRIPPED_META}
        if meta:
            out["metadata"] = meta
        else:
            out.pop("metadata")
    return out


def _key_json(spec: ListSpec, key: tuple[Any, ...]) -> str:
    pairs = sorted(zip(spec.keys, key, strict=True))
    return json.dumps({k: v for k, v in pairs if v is not None}, separators=(",", ":"), sort_keys=True)


def walk(obj: Mapping[str, Any], kind: str, *, maps: bool) -> dict[Path, Any]:
    """Every owned path of `obj` (an owned_view) with its value; map nodes only when `maps`."""
    out: dict[Path, Any] = {}

    def visit(value: Any, path: Path, names: tuple[str, ...]) -> None:
        if isinstance(value, Mapping):
            if not value or not path:
                if path:
                    out[path] = value
            elif maps and path != _METADATA:
                out[path] = _ELEMENT
            for k, v in value.items():
                visit(v, path + (("f", str(k)),), names + (str(k),))
            return
        if isinstance(value, list):
            spec = list_spec(kind, names)
            keyed = spec.type == "map" and all(element_key(spec, e) is not None for e in value)
            if keyed:
                if maps:
                    out[path] = _ELEMENT
                for element in value:
                    key = element_key(spec, element)
                    assert key is not None
                    pe = ("k", _key_json(spec, key))
                    out[path + (pe,)] = _ELEMENT
                    for k, v in element.items():
                        visit(v, path + (pe, ("f", str(k))), names + (str(k),))
                return
            if spec.type == "set":
                if maps:
                    out[path] = _ELEMENT
                for element in value:
                    out[path + (("v", json.dumps(element, separators=(",", ":"))),)] = _ELEMENT
                return
        out[path] = value

    visit(obj, (), ())
    return out


def applied_set(config: Mapping[str, Any], kind: str, status_subresource: bool) -> frozenset[Path]:
    return frozenset(walk(owned_view(config, status_subresource), kind, maps=False))


def compare(old: Mapping[str, Any] | None, new: Mapping[str, Any], kind: str,
            status_subresource: bool) -> tuple[set[Path], set[Path], set[Path]]:
    """(modified, added, removed) paths between two objects, map nodes included in added/removed."""
    a = walk(owned_view(old, status_subresource), kind, maps=True) if old is not None else {}
    b = walk(owned_view(new, status_subresource), kind, maps=True)
    modified = {p for p, v in b.items() if p in a and v is not _ELEMENT and a[p] != v}
    added = set(b) - set(a)
    removed = set(a) - set(b)
    return modified, added, removed


# ---- merge and prune ---------------------------------------------------------------------------------------

def merge(live: Any, config: Any, kind: str, names: tuple[str, ...] = ()) -> Any:
    """The applied configuration merged into the live object: maps by key, keyed lists by element key,
    set lists as a union, everything else replaced."""
    if isinstance(live, Mapping) and isinstance(config, Mapping):
        out = dict(live)
        for k, v in config.items():
            out[k] = merge(live[k], v, kind, names + (str(k),)) if k in live else copy.deepcopy(v)
        return out
    if isinstance(live, list) and isinstance(config, list):
        spec = list_spec(kind, names)
        if spec.type == "map" and all(element_key(spec, e) is not None for e in live + config):
            result = list(live)
            index = {element_key(spec, e): i for i, e in enumerate(result)}
            for element in config:
                key = element_key(spec, element)
                if key in index:
                    result[index[key]] = merge(result[index[key]], element, kind, names)
                else:
                    index[key] = len(result)
                    result.append(copy.deepcopy(element))
            return result
        if spec.type == "set":
            return list(live) + [copy.deepcopy(e) for e in config if e not in live]
    return copy.deepcopy(config)


def remove_paths(obj: dict[str, Any], paths: Iterable[Path]) -> None:
    """Remove each path (a field, a keyed element, a set element) from `obj` in place; a map left empty by a
    removal goes too, as its last owned field went."""
    for path in sorted(paths, key=len, reverse=True):
        _remove(obj, path)


def _remove(node: Any, path: Path) -> bool:
    if not path:
        return False
    (tag, name), rest = path[0], path[1:]
    if isinstance(node, dict) and tag == "f":
        if name not in node:
            return False
        if not rest:
            del node[name]
            return True
        removed = _remove(node[name], rest)
        if removed and isinstance(node[name], dict) and not node[name]:
            del node[name]
        return removed
    if isinstance(node, list) and tag in ("k", "v"):
        for i, element in enumerate(node):
            if _element_matches(element, tag, name):
                if not rest:
                    del node[i]
                    return True
                return _remove(element, rest)
    return False


def _element_matches(element: Any, tag: str, text: str) -> bool:
    if tag == "v":
        return json.dumps(element, separators=(",", ":")) == text
    if not isinstance(element, Mapping):
        return False
    wanted = json.loads(text)
    return all(element.get(k) == v for k, v in wanted.items())


# ---- FieldsV1 -------------------------------------------------------------------------------------------

def _pe_text(pe: PE) -> str:
    return f"{pe[0]}:{pe[1]}"


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    members: list[Path] = []
    for path in paths:
        node = root
        for pe in path:
            node = node.setdefault(_pe_text(pe), {})
        members.append(path)
    for path in members:
        node = root
        for pe in path:
            node = node[_pe_text(pe)]
        if node and "." not in node:
            node["."] = {}
    return _sorted(root)


def _sorted(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted(node[k]) for k in sorted(node)}


def from_fields_v1(fields: Mapping[str, Any]) -> frozenset[Path]:
    out: set[Path] = set()

    def visit(node: Mapping[str, Any], path: Path) -> None:
        if not node and path:
            out.add(path)
            return
        for key, child in node.items():
            if key == ".":
                out.add(path)
                continue
            tag, _, name = key.partition(":")
            visit(child if isinstance(child, Mapping) else {}, path + ((tag, name),))

    visit(fields, ())
    return frozenset(out)


def path_string(path: Path) -> str:
    """fieldpath.Path.String(): `.spec.containers[name="c"].image`, `.metadata.finalizers[="x"]`."""
    out = []
    for tag, text in path:
        if tag == "f":
            out.append("." + text)
        elif tag == "k":
            pairs = json.loads(text)
            out.append("[" + ",".join(f"{k}={_value_string(v)}" for k, v in sorted(pairs.items())) + "]")
        elif tag == "v":
            out.append(f"[={_value_string(json.loads(text))}]")
        else:
            out.append(f"[{text}]")
    return "".join(out)


def _value_string(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def path_sort_key(path: Path) -> tuple[tuple[int, str], ...]:
    # fieldpath orders field names before keys before values before indices, then by text
    order = {"f": 0, "k": 1, "v": 2, "i": 3}
    return tuple((order.get(tag, 9), text) for tag, text in path)


def apply_key_defaults(obj: Any, kind: str, names: tuple[str, ...] = ()) -> None:
    """Server defaulting of keyed-list key fields (a port's protocol is TCP), in place."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            apply_key_defaults(v, kind, names + (str(k),))
    elif isinstance(obj, list):
        spec = list_spec(kind, names)
        for element in obj:
            if spec.type == "map" and isinstance(element, dict):
                for key, default in spec.key_defaults.items():
                    element.setdefault(key, default)
            apply_key_defaults(element, kind, names)
