"""JSON fields read as Go decodes them into typed structs, for the defaulting port (k8s.defaulting): a
pointer field is unset when absent or null, a value field also when it holds its type's zero ("", 0); a struct
field exists even when the JSON lacks it. And the quantities of resource lists, written as the server writes
them."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from kubectl_kyrec.k8s.json_values import copy_json
from kubectl_kyrec.k8s.quantity import QuantityError, quantity_json

Obj = dict[str, Any]


def map_at(parent: Any, key: str) -> Obj | None:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def maps_at(parent: Any, key: str) -> list[Obj]:
    value = parent.get(key) if isinstance(parent, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def struct_at(parent: Obj, key: str) -> Obj | None:
    """A struct field Go has even when the JSON lacks it (a value field, or a pointer the defaulter allocates)."""
    if parent.get(key) is None:
        parent[key] = {}
    return map_at(parent, key)


def unset(d: Obj, key: str, zero: Any = None) -> bool:
    value = d.get(key)
    return value is None or (zero is not None and type(value) is type(zero) and value == zero)


def set_default(d: Obj | None, key: str, value: Any, zero: Any = None) -> None:
    if d is not None and unset(d, key, zero):
        d[key] = copy_json(value)


# ---- quantities ----------------------------------------------------------------------------------------------

def quantity_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)            # UnmarshalJSON parses a JSON number's own text
    return None


def quantity_field(parent: Obj | None, key: str, *, round_to_milli: bool = False) -> None:
    if parent is None or key not in parent:
        return
    text = quantity_text(parent[key])
    if text is not None:
        with contextlib.suppress(QuantityError):    # the server refuses the object: nothing to default
            parent[key] = quantity_json(text, round_to_milli=round_to_milli)


def resource_list(parent: Obj | None, key: str) -> None:
    """core/v1 defaults.go SetDefaults_ResourceList: each quantity rounded up to milli scale."""
    resources = map_at(parent, key)
    for name in list(resources or ()):
        quantity_field(resources, name, round_to_milli=True)


def requirements(parent: Obj | None, key: str = "resources") -> None:
    resources = map_at(parent, key)
    resource_list(resources, "limits")
    resource_list(resources, "requests")
