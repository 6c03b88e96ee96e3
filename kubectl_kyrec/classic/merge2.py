"""The strategic merge Kyverno's patchStrategicMerge applies: kustomize's kyaml merge2 (sigs.k8s.io/kustomize
kyaml v0.21.0 yaml/merge2, yaml/walk), as api/filters/patchstrategicmerge calls it (ListIncreaseDirection
Prepend), over plain JSON values.

kk: pkg/engine/mutate/patch/strategicMergePatch.go strategicMergePatch -> patchstrategicmerge.Filter ->
merge2.Merge(patch, resource).

What decides a list's merge: kyaml's built-in Kubernetes OpenAPI (v1.21.2, data/kyaml-openapi-v1.21.2.json,
dumped by packaging/kyaml-openapi/main.go). A list whose schema says `x-kubernetes-patch-strategy: merge`
merges by its merge key (`x-kubernetes-list-map-keys`, else `x-kubernetes-patch-merge-key`; a list without a
key merges its scalars by value); every other list, and every list of a kind the schema does not know (CRDs:
merge2.Merge infers nothing), is replaced by the patch's. A nested object with both `apiVersion` and `kind`
and no schema of its own takes its kind's schema (walk.go GetSchema).

The port keeps kyaml's node semantics where they change the result: maps are merged in place and their keys
walked sorted; a `null` in the patch clears the field, a `null` already in the resource is kept unless the
patch names it; `$patch: delete|replace|merge` directives on maps and lists; associative lists put the
patch's elements first, then the resource's others (Prepend), drop empty and null elements, and an element
without the merge key restarts the list (appendListNode with no values: kyaml's own behaviour). A kind
mismatch between resource and patch (a map over a string) is an error, as kyaml's is.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.k8s.json_values import copy_json


class MergeError(EngineError):
    """kyaml refuses the merge (a node of the wrong kind, an unknown `$patch` directive)."""


class _Missing:
    """An absent node (Go's nil *RNode), distinct from an explicit null."""

    def __repr__(self) -> str:
        return "MISSING"


class _KeptNull:
    """yaml.MakePersistentNullNode: a null of the resource that the merge keeps."""

    def __repr__(self) -> str:
        return "KEPT_NULL"


MISSING: Any = _Missing()
KEPT_NULL: Any = _KeptNull()
_MAP, _SEQ, _SCALAR = "MappingNode", "SequenceNode", "ScalarNode"


def _is_null(n: Any) -> bool:
    return n is None or n is KEPT_NULL


def missing_or_null(n: Any) -> bool:
    """yaml.IsMissingOrNull."""
    return n is MISSING or _is_null(n)


def _kind(n: Any) -> str:
    if isinstance(n, dict):
        return _MAP
    if isinstance(n, list):
        return _SEQ
    return _SCALAR


def scalar_value(n: Any) -> str:
    """A scalar node's Value as yaml.v3 holds it once Go's JSON is parsed as YAML ("" for maps and lists)."""
    if isinstance(n, (dict, list)) or n is MISSING:
        return ""
    if _is_null(n):
        return "null"
    if isinstance(n, bool):
        return "true" if n else "false"
    if isinstance(n, float):
        if n.is_integer() and abs(n) < 1e21:
            return str(int(n))
        return json.dumps(n)
    return str(n)


def _get_value(n: Any) -> str:
    """yaml.GetValue: "" for a missing or null node."""
    return "" if missing_or_null(n) else scalar_value(n)


def _nil_or_empty(n: Any) -> bool:
    """RNode.IsNilOrEmpty on a field's value."""
    return n is MISSING or _is_null(n) or (isinstance(n, (dict, list)) and not n)


# ---------------------------------------------------------------------------------------------------------
# kyaml's built-in schema (openapi.ResourceSchema)


@functools.lru_cache(maxsize=1)
def _openapi() -> dict[str, Any]:
    text = resources.files("kubectl_kyrec.classic").joinpath("data/kyaml-openapi-v1.21.2.json").read_text()
    data: dict[str, Any] = json.loads(text)
    by_type: dict[tuple[str, str], Any] = {}
    for definition in data["definitions"].values():
        for gvk in definition.get("x-kubernetes-group-version-kind") or []:
            group, version = gvk.get("group") or "", gvk.get("version") or ""
            by_type[(f"{group}/{version}" if group else version, gvk.get("kind") or "")] = definition
    data["by_type"] = by_type
    return data


def _resolve(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    seen = 0
    while schema is not None and schema.get("$ref"):
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        schema = _openapi()["definitions"].get(name)
        seen += 1
        if seen > 64:
            return None
    return schema


def schema_for(api_version: str, kind: str) -> dict[str, Any] | None:
    """openapi.SchemaForResourceType."""
    return _openapi()["by_type"].get((api_version, kind))


def _field_schema(schema: dict[str, Any], name: str) -> dict[str, Any] | None:
    """ResourceSchema.Field: a property, else the additionalProperties' schema."""
    props = schema.get("properties") or {}
    if name in props:
        return _resolve(props[name])
    if isinstance(schema.get("additionalProperties"), dict):
        return _resolve(schema["additionalProperties"])
    return None


def _elements_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """ResourceSchema.Elements: only for `type: [array]`."""
    if schema.get("type") != ["array"] or not isinstance(schema.get("items"), dict):
        return None
    return _resolve(schema["items"])


def _strategy_and_keys(schema: dict[str, Any]) -> tuple[str, list[str]]:
    """ResourceSchema.PatchStrategyAndKeyList."""
    strategy = schema.get("x-kubernetes-patch-strategy")
    if strategy is None:
        return "", []
    if schema.get("x-kubernetes-list-map-keys") is not None:
        return str(strategy), [str(k) for k in schema["x-kubernetes-list-map-keys"]]
    if schema.get("x-kubernetes-patch-merge-key") is None:
        return str(strategy), []
    return str(strategy), [str(schema["x-kubernetes-patch-merge-key"])]


def _is_associative(schema: dict[str, Any] | None) -> bool:
    """schema.IsAssociative with inference off: a schema whose strategy includes `merge`."""
    if schema is None:
        return False
    strategy = schema.get("x-kubernetes-patch-strategy")
    return strategy is not None and "merge" in str(strategy).split(",")


# ---------------------------------------------------------------------------------------------------------
# kyaml node operations


def _field_matcher(node: Any, name: str, string_value: str) -> Any:
    """yaml.FieldMatcher{Name, StringValue}: the field's value node or MISSING. An empty StringValue matches
    any value; a named match on a scalar is an error."""
    if missing_or_null(node):
        return MISSING
    if name == "":
        if not isinstance(node, (str, int, float, bool)):
            raise MergeError(f"wrong node kind: expected {_SCALAR} but got {_kind(node)}")
        return node if _get_value(node) == string_value else MISSING
    if not isinstance(node, dict):
        raise MergeError(f"wrong node kind: expected {_MAP} but got {_kind(node)}")
    if name not in node:
        return MISSING
    if string_value and scalar_value(node[name]) != string_value:
        return MISSING
    return node[name]


def _match_field(node: dict[str, Any], name: str, value: str) -> bool:
    """yaml.MatchField(name, value): the field exists with that scalar Value (an empty value included)."""
    return name in node and scalar_value(node[name]) == value


def element_setter(items: list[Any], element: Any, keys: list[str], values: list[str]) -> None:
    """yaml.ElementSetter.Filter on `items` in place: replace the element matching keys=values with
    `element`, delete it when `element` is MISSING, append when none matches; empty and null elements go."""
    keys = keys or [""]
    mapping_setter = bool(keys[0]) and bool(values) and bool(values[0])
    new: list[Any] = []
    found_any = False
    for elem in items:
        if missing_or_null(elem) or (isinstance(elem, dict) and not elem):
            continue
        if not isinstance(elem, dict) and mapping_setter:
            new.append(elem)
            continue
        val: Any = MISSING
        found = True
        for j, key in enumerate(keys):
            if j < len(values):
                val = _field_matcher(elem, key, values[j])
            if val is MISSING:
                found = False
                break
        if not found:
            if values:
                new.append(elem)
            continue
        found_any = True
        if element is MISSING:
            continue
        new.append(element)
    items[:] = new
    if missing_or_null(element):
        return
    if not found_any:
        items.append(element)


def _element_list(items: Any, keys: list[str], values: list[str]) -> Any:
    """RNode.ElementList: the first element whose keys match values (MISSING when none)."""
    if not isinstance(items, list):
        return MISSING
    if not keys or not keys[0]:
        want = values[0] if values else ""
        for elem in items:
            if not isinstance(elem, (dict, list)) and scalar_value(elem) == want:
                return elem
        return MISSING
    if len(keys) != len(values):
        return MISSING
    for elem in items:
        if not isinstance(elem, dict):
            continue
        if all(_match_field(elem, k, v) for k, v in zip(keys, values)):
            return elem
    return MISSING


def _element_values_list(items: Any, keys: list[str]) -> list[list[str]]:
    """RNode.ElementValuesList: per element, each key's scalar value ("" when absent or empty)."""
    if not isinstance(items, list):
        return []
    out = []
    for elem in items:
        row = []
        for key in keys:
            value = elem.get(key, MISSING) if isinstance(elem, dict) else MISSING
            row.append("" if _nil_or_empty(value) else scalar_value(value))
        out.append(row)
    return out


def _validate_keys(values_list: list[list[str]], values: list[str], keys: list[str]) -> tuple[list[str], list[str]]:
    valid = {keys[i] for row in values_list for i, v in enumerate(row) if v != "" and i < len(keys)}
    if not valid:
        return keys, values
    return ([k for k in keys if k in valid],
            [v for i, v in enumerate(values) if v != "" or (i < len(keys) and keys[i] in valid)])


def _match_values(a: list[str], b: list[str]) -> tuple[bool, list[str]]:
    if len(a) != len(b):
        return False, []
    common = False
    res = []
    for x, y in zip(a, b):
        if x == y:
            common = True
            res.append(x)
            continue
        if x != "" and y != "":
            return False, []
        res.append(x if x != "" else y)
    return common, res


def _merge_values(values_list: list[list[str]]) -> list[list[str]]:
    for i in range(len(values_list)):
        first = values_list[i]
        for j in range(len(values_list)):
            matched, merged = _match_values(first, values_list[j])
            if matched:
                values_list[i] = merged
                values_list[j] = merged
    return values_list


def _append_list_node(dst: list[Any], src: list[Any], keys: list[str]) -> list[Any]:
    """walk.appendListNode: each element of `src` set into `dst` by its keys."""
    for elem in list(src):
        if not keys or keys[0] == "":
            element_setter(dst, elem, [""], [scalar_value(elem)])
            continue
        values: list[str] = []
        for key in keys:
            value = elem.get(key, MISSING) if isinstance(elem, dict) else MISSING
            if value is MISSING or _is_null(value):
                dst.append(elem)
                continue
            values.append(scalar_value(value))
        if len(keys) > 1:
            element_setter(dst, MISSING, keys, values)
        element_setter(dst, elem, keys, values)
    return dst


# ---------------------------------------------------------------------------------------------------------
# the walker and merge2's Merger visitor


class _Walker:
    def __init__(self, sources: list[Any], schema: dict[str, Any] | None) -> None:
        self.sources = sources          # [dest, origin]
        self.schema = schema

    def _get_schema(self) -> dict[str, Any] | None:
        if self.schema is not None:
            return self.schema
        for source in self.sources:
            if isinstance(source, dict):
                api_version, kind = source.get("apiVersion"), source.get("kind")
                if api_version and kind and not _nil_or_empty(api_version) and not _nil_or_empty(kind):
                    found = schema_for(scalar_value(api_version), scalar_value(kind))
                    if found is not None:
                        return found
        return None

    def walk(self) -> Any:
        self.schema = self._get_schema()
        kinds = [_kind(s) for s in self.sources if not missing_or_null(s)]
        if not kinds:
            return self._walk_map()
        kind = kinds[0]
        if any(k != kind for k in kinds):
            other = next(k for k in kinds if k != kind)
            raise MergeError(f"wrong node kind: expected {kind} but got {other}")
        if kind == _MAP:
            return self._walk_map()
        if kind == _SEQ:
            if _is_associative(self.schema):
                return self._walk_associative()
            return _visit_list(self.sources, associative=False)
        return _visit_scalar(self.sources)

    def _walk_map(self) -> Any:
        dest = _visit_map(self.sources)
        self.sources[0] = dest
        if dest is MISSING:
            return MISSING
        names: set[str] = set()
        for source in self.sources:
            if isinstance(source, dict):
                names.update(source)
        for key in sorted(names):
            child = _field_schema(self.schema, key) if self.schema is not None else None
            values = [s.get(key, MISSING) if isinstance(s, dict) else MISSING for s in self.sources]
            value = _Walker(values, child).walk()
            if not isinstance(dest, dict):
                raise MergeError(f"wrong node kind: expected {_MAP} but got {_kind(dest)}")
            _set_field(dest, key, value)
        return dest

    def _walk_associative(self) -> Any:
        dest = _visit_list(self.sources, associative=True)
        self.sources[0] = dest
        if dest is MISSING:
            return MISSING
        keys: list[str] = []
        if self.schema is not None:
            _, keys = _strategy_and_keys(self.schema)
        values = self._element_values(keys)
        if values or keys:
            return self._set_elements(values, keys, dest)
        return self._set_elements(self._primitive_values(), [""], dest)

    def _ordered_sources(self) -> list[Any]:
        # MergeOptionsListPrepend: the patch's (origin's) elements first
        return [self.sources[1], self.sources[0]]

    def _element_values(self, keys: list[str]) -> list[list[str]]:
        out: list[list[str]] = []
        for source in self._ordered_sources():
            if source is MISSING:
                continue
            for row in _element_values_list(source, keys):
                if not row or row in out:
                    continue
                out.append(row)
        return out

    def _primitive_values(self) -> list[list[str]]:
        out: list[list[str]] = []
        seen: set[str] = set()
        for source in self._ordered_sources():
            if not isinstance(source, list):
                continue
            for item in source:
                value = scalar_value(item) if not _is_null(item) else "null"
                if value in seen:
                    continue
                out.append([value])
                seen.add(value)
        return out

    def _set_elements(self, values_list: list[list[str]], keys: list[str], dest: Any) -> Any:
        items: list[Any] = []
        element_schema = _elements_schema(self.schema) if self.schema is not None else None
        if len(keys) > 1:
            values_list = _merge_values(values_list)
        valid_keys: list[str] = []
        for values in values_list:
            if not values:
                continue
            valid_keys, valid_values = _validate_keys(values_list, values, keys)
            k2, v2 = _validate_keys([values], values, valid_keys)
            sources = [MISSING if s is MISSING else _element_list(s, k2, v2) for s in self.sources]
            val = _Walker(sources, element_schema).walk()
            leave = False
            for i, key in enumerate(valid_keys):
                if missing_or_null(val) or (isinstance(val, dict) and not val):
                    if isinstance(dest, list):
                        element_setter(dest, MISSING, valid_keys, valid_values)
                    leave = True
                elif isinstance(val, dict) and key not in val and i < len(valid_values) and valid_values[i] != "":
                    val[key] = valid_values[i]
            if leave:
                continue
            element_setter(items, val, valid_keys, valid_values)
        if values_list and isinstance(dest, list):
            dest = _append_list_node(items, dest, valid_keys)
        if missing_or_null(dest):
            return MISSING
        return dest


def _directive(patch: Any) -> str:
    """determineSmpDirective: merge, replace, delete (the directive is elided from the patch)."""
    if patch is MISSING:
        return "merge"
    if isinstance(patch, list):
        holder = next((e for e in patch if isinstance(e, dict) and "$patch" in e), None)
        if holder is None or len(holder) > 1:
            return "merge"
        value = holder["$patch"]
        if value is MISSING or value is None:
            return "merge"
        text = scalar_value(value)
        if text in ("delete", "replace", "merge"):
            element_setter(patch, MISSING, ["$patch"], [text])
            return text
        raise MergeError(f"unknown patch strategy '{text}'")
    if isinstance(patch, dict):
        if "$patch" not in patch:
            return "merge"
        text = scalar_value(patch["$patch"])
        if text in ("delete", "replace", "merge"):
            del patch["$patch"]
            return text
        raise MergeError(f"unknown patch strategy '{text}'")
    raise MergeError(f"no implemented strategic merge patch strategy for {_kind(patch)}")


def _by_directive(dest: Any, origin: Any) -> Any:
    """A map's or associative list's merge once the destination exists: a null patch clears the field,
    `$patch: delete` removes it, `$patch: replace` takes the patch whole, anything else merges into `dest`
    (walked further by the caller)."""
    if origin is not MISSING and _is_null(origin):
        return MISSING
    directive = _directive(origin)
    if directive == "delete":
        return MISSING
    if directive == "replace":
        return origin
    return dest


def _visit_map(sources: list[Any]) -> Any:
    dest, origin = sources
    if missing_or_null(dest):
        try:
            directive = _directive(origin)
        except MergeError:
            directive = "unknown"
        if directive == "delete":
            return MISSING
        if origin is MISSING and dest is not MISSING:
            return KEPT_NULL
        return origin
    return _by_directive(dest, origin)


def _visit_scalar(sources: list[Any]) -> Any:
    dest, origin = sources
    return origin if origin is not MISSING else dest


def _visit_list(sources: list[Any], *, associative: bool) -> Any:
    dest, origin = sources
    if not associative:
        return origin if origin is not MISSING else dest
    if missing_or_null(dest):
        return origin
    return _by_directive(dest, origin)


def _set_field(dest: dict[str, Any], key: str, value: Any) -> None:
    """yaml.FieldSetter: a missing or (non-kept) null value clears the field."""
    if value is MISSING or value is None:
        dest.pop(key, None)
        return
    dest[key] = value


def _finish(value: Any) -> Any:
    """The merged tree as JSON values (kept nulls become null)."""
    if value is KEPT_NULL:
        return None
    if isinstance(value, dict):
        return {k: _finish(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finish(v) for v in value]
    return value


def merge(patch: Any, resource: Any) -> Any:
    """merge2.Merge(patch, resource, Prepend) over copies of both; raises MergeError."""
    result = _Walker([copy_json(resource), copy_json(patch)], None).walk()
    if result is MISSING:
        return None
    return _finish(result)

