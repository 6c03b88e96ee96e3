"""`json.unmarshal(string) -> dyn` and `json.marshal(dyn) -> string` (sdk: json/lib.go, impl.go).

In Kyverno both are members of a `json` global; a dotted function name gives the same call syntax.
Decoding goes through Go's `json.Unmarshal` into `any`, so every number is a double.
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel import kyverno_gojson
from kubectl_kyrec.cel.decl import Library, Overload, fn


def json_unmarshal(text: str) -> Any:
    return kyverno_gojson.unmarshal(text)


def json_marshal(value: Any) -> str:
    return kyverno_gojson.marshal(value)


def json_library() -> Library:
    return Library("kyverno.json", [
        fn("json.unmarshal", Overload("unmarshal_string_dyn", ["string"], "dyn", json_unmarshal)),
        fn("json.marshal", Overload("marshal_dyn_string", ["dyn"], "string", json_marshal)),
    ])
