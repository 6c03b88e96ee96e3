"""The schema data shipped with kyrec (data/*.json, written by packaging/derive_schemas.py), read once.

`kyverno.json` holds the openAPIV3Schema of each served version of Kyverno's policy CRDs, `kubernetes.json`
Kubernetes' own admissionregistration.k8s.io types and ObjectMeta. Each file stores every distinct subschema
once, its children as indexes; `schema_for` hands out the nested form (shared subtrees are shared objects).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

Schema = dict[str, Any]

_CHILD = ("items", "additionalProperties", "not")
_LISTS = ("allOf", "anyOf", "oneOf")
FILES = ("kyverno.json", "kubernetes.json")


def _resolve(nodes: list[dict[str, Any]]) -> list[Schema]:
    out: list[Schema] = [dict(n) for n in nodes]
    for node in out:
        for key in _CHILD:
            if isinstance(node.get(key), int) and not isinstance(node[key], bool):
                node[key] = out[node[key]]
        for key in _LISTS:
            if key in node:
                node[key] = [out[i] for i in node[key]]
        if "properties" in node:
            node["properties"] = {name: out[i] for name, i in node["properties"].items()}
    return out


@functools.cache
def _table(name: str) -> tuple[dict[str, Schema], dict[str, Any], Schema | None]:
    raw = json.loads(resources.files(__package__).joinpath("data").joinpath(name).read_text())
    nodes = _resolve(raw["nodes"])
    meta = nodes[raw["objectMeta"]] if "objectMeta" in raw else None
    return {key: nodes[index] for key, index in raw["kinds"].items()}, raw["source"], meta


def schema_for(api_version: str, kind: str) -> Schema | None:
    """The schema of `apiVersion`/`kind` as the cluster serves it, or None for a version it does not serve."""
    key = f"{api_version}/{kind}"
    for name in FILES:
        found = _table(name)[0].get(key)
        if found is not None:
            return found
    return None


def object_meta() -> Schema:
    """ObjectMeta: the API server decodes every object's metadata as it, a CRD's too."""
    meta = _table("kubernetes.json")[2]
    assert meta is not None
    return meta


def sources() -> dict[str, dict[str, Any]]:
    """Where each data file came from (Kyverno's commit, Kubernetes' version), for `kyrec version`-like output
    and the consistency tests."""
    return {name: _table(name)[1] for name in FILES}
