"""`images` of the JSON context: the resource's containers by kind and name (kk: pkg/utils/api/image.go with
the default extractors; each entry is GetImageInfo's JSON plus the container image's `jsonPointer`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def pod_spec(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str]:
    """The pod spec of a Pod or pod controller and its JSON pointer (Kyverno's default image extractors)."""
    kind = str(obj.get("kind", ""))
    path = _POD_SPEC_PATHS.get(kind, ("spec", "template", "spec") if kind in (
        "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "ReplicationController") else None)
    if path is None:
        return None, ""
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return (node if isinstance(node, Mapping) else None), "/" + "/".join(path)


def images(obj: Mapping[str, Any] | None) -> dict[str, dict[str, dict[str, Any]]] | None:
    """images.{containers,initContainers,ephemeralContainers}.<name>; None when the kind has none."""
    if not obj:
        return None
    from kubectl_kyrec.classic.image_info import ImageError, get_image_info

    spec, pointer = pod_spec(obj)
    if spec is None:
        return None
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key, index, c in containers(spec):
        if not isinstance(c.get("image"), str):
            continue
        try:
            info = get_image_info(c["image"]).to_json()
        except ImageError:
            continue
        info["jsonPointer"] = f"{pointer}/{key}/{index}/image"
        out.setdefault(key, {})[str(c.get("name", ""))] = info
    return out or None


def containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """(list, index, container) of a pod spec's containers, init containers and ephemeral containers, in
    Kyverno's default extractors' order. A list is what a stored object has; anything else (a number, a
    string, a map in a manifest) Go's extractor refuses ("invalid type"), and a container that is not a map
    is no container: both are left out, never read as a list (a TypeError, exit 70)."""
    for key in ("containers", "initContainers", "ephemeralContainers"):
        listed = spec.get(key)
        if not isinstance(listed, list):
            continue
        for index, c in enumerate(listed):
            if isinstance(c, Mapping):
                yield key, index, c
