"""`resource.Get/List/Post/ToGVR` and their camelCase spellings (sdk: resource/lib.go, impl.go,
namespaced_impl.go; docs/semantics/cel-libraries.md#resource-functions).

Cluster policies pass the namespace; namespaced policies (`namespace` given here) drop that argument
and use their own. A GVR (from `ToGVR`) is a tagged dict and can replace (apiVersion, resource).
`Get` answers null when the object does not exist, which is why it is declared `dyn`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubectl_kyrec.cel.context import ContextProvider
from kubectl_kyrec.cel.decl import CelForbidden, CelFunctionError, Function, Library, Overload, fn

GVR_TYPE = "schema.GroupVersionResource"


def gvr_value(gvr: dict[str, str]) -> dict[str, str]:
    return {"@type": GVR_TYPE, "group": gvr["group"], "version": gvr["version"], "resource": gvr["resource"]}


def _gvr_parts(value: Any) -> tuple[str, str]:
    """(apiVersion, resource) of a GVR value."""
    if not isinstance(value, dict) or value.get("@type") != GVR_TYPE:
        raise CelFunctionError("no such overload")
    group, version, resource = value.get("group"), value.get("version"), value.get("resource")
    if not (isinstance(group, str) and isinstance(version, str) and isinstance(resource, str)):
        raise CelFunctionError("no such overload")      # a map written by hand with the tag: no GVR
    return (f"{group}/{version}" if group else version), resource


def _call(prefix: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except CelForbidden as exc:
        raise CelFunctionError(f"{prefix}: permission denied: {exc}") from None
    except CelFunctionError as exc:
        raise CelFunctionError(f"{prefix}: {exc}") from None


class _Resource:
    def __init__(self, provider: ContextProvider) -> None:
        self.provider = provider

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> Any:
        return _call("failed to get resource",
                     lambda: self.provider.get_resource(api_version, resource, namespace, name))

    def list(self, api_version: str, resource: str, namespace: str, labels: dict[str, str] | None) -> Any:
        return _call("failed to list resource",
                     lambda: self.provider.list_resources(api_version, resource, namespace, labels))

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> Any:
        return _call("failed to create resource",
                     lambda: self.provider.post_resource(api_version, resource, namespace, data))

    def to_gvr(self, api_version: str, kind: str) -> dict[str, str]:
        return gvr_value(_call("failed to map kind to resource",
                               lambda: self.provider.to_gvr(api_version, kind)))


def _cluster_overloads(r: _Resource, suffix: str) -> list[tuple[str, list[Overload]]]:
    def gvr_get(gvr: Any, namespace: str, name: str) -> Any:
        return r.get(*_gvr_parts(gvr), namespace, name)

    def gvr_list(gvr: Any, namespace: str) -> Any:
        return r.list(*_gvr_parts(gvr), namespace, None)

    def gvr_list_labels(gvr: Any, namespace: str, labels: dict[str, str]) -> Any:
        return r.list(*_gvr_parts(gvr), namespace, labels)

    return [
        ("List", [
            Overload(f"resource_list_string_string_string_{suffix}", ["string", "string", "string"],
                     "map<string,dyn>", lambda av, res, ns: r.list(av, res, ns, None)),
            Overload(f"resource_list_string_string_string_map_{suffix}",
                     ["string", "string", "string", "map<string,string>"], "map<string,dyn>", r.list),
            Overload(f"list_resources_gvr_string_{suffix}", ["map", "string"], "map<string,dyn>", gvr_list),
            Overload(f"list_resources_gvr_string_map_{suffix}", ["map", "string", "map<string,string>"],
                     "map<string,dyn>", gvr_list_labels),
        ]),
        ("Get", [
            Overload(f"resource_get_string_string_string_string_{suffix}",
                     ["string", "string", "string", "string"], "dyn", r.get),
            Overload(f"resource_get_gvr_string_string_{suffix}", ["map", "string", "string"], "dyn", gvr_get),
        ]),
        ("Post", [
            Overload(f"resource_post_string_string_string_map_{suffix}",
                     ["string", "string", "string", "map<string,dyn>"], "map<string,dyn>", r.post),
            Overload(f"resource_post_string_string_map_{suffix}", ["string", "string", "map<string,dyn>"],
                     "map<string,dyn>", lambda av, res, data: r.post(av, res, "", data)),
        ]),
        ("ToGVR", [Overload(f"convert_to_gvr_string_string_{suffix}", ["string", "string"], "map",
                            r.to_gvr)]),
    ]


def _namespaced_overloads(r: _Resource, namespace: str, suffix: str) -> list[tuple[str, list[Overload]]]:
    def gvr_get(gvr: Any, name: str) -> Any:
        return r.get(*_gvr_parts(gvr), namespace, name)

    def gvr_list(gvr: Any) -> Any:
        return r.list(*_gvr_parts(gvr), namespace, None)

    def gvr_list_labels(gvr: Any, labels: dict[str, str]) -> Any:
        return r.list(*_gvr_parts(gvr), namespace, labels)

    return [
        ("List", [
            Overload(f"resource_list_string_string_{suffix}", ["string", "string"], "map<string,dyn>",
                     lambda av, res: r.list(av, res, namespace, None)),
            Overload(f"resource_list_string_string_map_{suffix}", ["string", "string", "map<string,string>"],
                     "map<string,dyn>", lambda av, res, labels: r.list(av, res, namespace, labels)),
            Overload(f"list_resources_gvr_{suffix}", ["map"], "map<string,dyn>", gvr_list),
            Overload(f"list_resources_gvr_map_{suffix}", ["map", "map<string,string>"], "map<string,dyn>",
                     gvr_list_labels),
        ]),
        ("Get", [
            Overload(f"resource_get_string_string_string_{suffix}", ["string", "string", "string"], "dyn",
                     lambda av, res, name: r.get(av, res, namespace, name)),
            Overload(f"resource_get_gvr_string_{suffix}", ["map", "string"], "dyn", gvr_get),
        ]),
        ("Post", [
            Overload(f"resource_post_string_string_map_{suffix}", ["string", "string", "map<string,dyn>"],
                     "map<string,dyn>", lambda av, res, data: r.post(av, res, namespace, data)),
        ]),
        ("ToGVR", [Overload(f"convert_to_gvr_string_string_{suffix}", ["string", "string"], "map",
                            r.to_gvr)]),
    ]


def resource_library(provider: ContextProvider, namespace: str = "") -> Library:
    """The cluster overloads, or the namespaced ones when `namespace` is a namespaced policy's."""
    r = _Resource(provider)
    functions: list[Function] = []
    for suffix in ("pascal", "camel"):
        groups = _namespaced_overloads(r, namespace, suffix) if namespace else _cluster_overloads(r, suffix)
        for name, overloads in groups:
            # the camelCase spellings (get, list, post, toGVR) exist from library version 1.18
            spelled = name if suffix == "pascal" else name[0].lower() + name[1:]
            functions.append(fn(f"resource.{spelled}", *overloads))
    return Library("kyverno.resource", functions)
