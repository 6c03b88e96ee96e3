"""`json.unmarshal(string) -> dyn` and `json.marshal(dyn) -> string` (sdk: json/lib.go, impl.go).

In Kyverno both are members of a `json` global; a dotted function name gives the same call syntax.
Decoding goes through Go's `json.Unmarshal` into `any` (golang/json.py), so every number is a double;
encoding is golang/json's `json.Marshal` over CEL's values as Kyverno converts them to Go's.
"""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.cel.decl import Library, Overload, fn
from kubectl_kyrec.golang.json import GoJSONError, UnsupportedType, marshal, marshal_string, unmarshal
from kubectl_kyrec.golang.time import format_rfc3339, in_utc


def json_unmarshal(text: str) -> Any:
    return unmarshal(text)


def cel_type_name(value: Any) -> str:
    """The CEL type name cel-go prints in conversion errors."""
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    return type(value).__name__


def json_marshal(value: Any) -> str:
    """`json.Marshal` of a CEL value converted the way Kyverno's json library converts it (golang/json's
    encoder, with CEL's own values: timestamps, durations, Kyverno's native types)."""
    try:
        return marshal(value, _cel_special)
    except UnsupportedType as exc:
        # Go names the CEL type the conversion met, not Python's
        raise GoJSONError(f"json: unsupported type: {cel_type_name(exc.value)}") from None


def _cel_special(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)           # a CEL uint is a Go uint64: written whole, never as a float
    if isinstance(value, datetime.datetime):
        return '"' + format_rfc3339(in_utc(value), nano=True) + '"'
    if isinstance(value, datetime.timedelta):
        # a CEL duration is a Go time.Duration: an integer count of nanoseconds
        return str((value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1000)
    if isinstance(value, dict):
        special = _tagged_json(value)
        if special is not None:
            return special
        for key in value:
            if not isinstance(key, str):
                raise GoJSONError("json: failed to convert CEL map to native map: "
                                  f"type conversion error from {cel_type_name(key)} to 'string'")
    return None


_TAGGED_FIELDS = {"kyverno.image": ("registry", "repository"),
                  "schema.GroupVersionResource": ("group", "version", "resource")}


def _tagged_json(value: dict[Any, Any]) -> str | None:
    # Kyverno's native values marshal through their Go types, not as maps.
    tag = value.get("@type")
    fields = _TAGGED_FIELDS.get(tag) if isinstance(tag, str) else None
    if fields is None or not all(isinstance(value.get(key), str) for key in fields):
        return None     # a plain map, or one written by hand with the tag but not the type's fields: a map
    if tag == "kyverno.image":
        # name.Tag/name.Digest embed name.Repository, whose MarshalJSON is promoted: "registry/repository"
        return marshal_string(f"{value['registry']}/{value['repository']}")
    if tag == "schema.GroupVersionResource":
        return ('{"Group":' + marshal_string(value["group"]) + ',"Version":'
                + marshal_string(value["version"]) + ',"Resource":' + marshal_string(value["resource"]) + "}")
    return None


def json_library() -> Library:
    return Library("kyverno.json", [
        fn("json.unmarshal", Overload("unmarshal_string_dyn", ["string"], "dyn", json_unmarshal)),
        fn("json.marshal", Overload("marshal_dyn_string", ["dyn"], "string", json_marshal)),
    ])
