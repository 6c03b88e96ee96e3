"""`listObjToMap(list, list, keyField, valueField)` and `transform.listObjToMap` (sdk: transform/).

Entry i of the first list names the key (its `keyField`, which must be a string); entry i of the
second list gives the value (its `valueField`, null when absent).
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

# How cel-go's values print with Go's %+T when an entry is not a map.
_GO_VALUE_TYPES = {str: "types.String", bool: "types.Bool", int: "types.Int", float: "types.Double",
                   type(None): "types.Null", list: "[]interface {}", bytes: "types.Bytes",
                   bytearray: "types.Bytes"}


def _go_type(value: Any) -> str:
    return _GO_VALUE_TYPES.get(type(value), type(value).__name__)


def _as_string_map(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise CelFunctionError(f"object cannot be handled as a map, {_go_type(entry)}")
    for key in entry:
        if not isinstance(key, str):
            raise CelFunctionError(f"failed to convert key to a string, {_go_type(key)}")
    return entry


def list_obj_to_map(keys: list[Any], values: list[Any], key_field: str, value_field: str) -> dict[str, Any]:
    if len(keys) != len(values):
        raise CelFunctionError(f"listObjToMap must take lists of equal length. list1: {len(keys)}, "
                               f"list2: {len(values)}")
    out: dict[str, Any] = {}
    for key_entry, value_entry in zip(keys, values):
        key = _as_string_map(key_entry).get(key_field)
        if not isinstance(key, str):
            raise CelFunctionError("the passed key name cannot be handled as a string in the key object list")
        try:
            value_map = _as_string_map(value_entry)
        except CelFunctionError:
            raise CelFunctionError("object cannot be handled as a map string to any in the value object "
                                   "list") from None
        out[key] = value_map.get(value_field)
    return out


def transform_library() -> Library:
    params = ["list", "list", "string", "string"]
    return Library("kyverno.transform", [
        fn("listObjToMap", Overload("list_of_object_to_map_non_prefixed", params, "map", list_obj_to_map)),
        fn("transform.listObjToMap",
           Overload("list_of_object_to_map_prefixed", params, "map", list_obj_to_map)),
    ])
