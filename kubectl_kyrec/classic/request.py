"""The JSON context a classic rule starts from (kk: pkg/engine/policycontext, pkg/engine/context).

`request` holds operation, object, oldObject, namespace and, from the admission info, userInfo, roles and
clusterRoles; `serviceAccountName`/`serviceAccountNamespace` come from the username; `images` from the
resource's containers (kk: pkg/utils/api/image.go with the default extractors, pkg/utils/image/infos.go
GetImageInfo with Kyverno's default `enableDefaultRegistryMutation: true`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_SA_PREFIX = "system:serviceaccount:"


def service_account(username: str) -> dict[str, str]:
    """kk: context.AddServiceAccount."""
    sa = username[len(_SA_PREFIX):] if len(username) > len(_SA_PREFIX) else ""
    parts = sa.split(":")
    if len(parts) >= 2:
        return {"serviceAccountName": parts[1], "serviceAccountNamespace": parts[0]}
    return {"serviceAccountName": "", "serviceAccountNamespace": ""}


# docker/distribution reference grammar, as reference.Parse reads a name (no normalisation: no `library/`)
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]*)"
_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"^((?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)(?::({_TAG}))?(?:@({_DIGEST}))?$")


class ImageError(ValueError):
    pass


def _add_default_registry(image: str) -> str:
    first, sep, _ = image.partition("/")
    if not sep or ("." not in first and ":" not in first and first != "localhost"):
        return "docker.io/" + image
    return image


def image_info(image: str) -> dict[str, str]:
    """kk: GetImageInfo -> the map `images.<kind>.<container>` holds."""
    full = _add_default_registry(image)
    m = _REFERENCE.match(full)
    if m is None or len(m.group(1)) > 255:
        raise ImageError(f"bad image: {full}")
    named, tag, digest = m.group(1), m.group(2) or "", m.group(3) or ""
    domain, _, path = named.partition("/")
    name = path.rsplit("/", 1)[-1]
    if not tag and not digest:
        tag = "latest"
    base = f"{domain}/{path}" if domain else path
    reference = f"{base}@{digest}" if digest else f"{base}:{tag}"
    return {"reference": reference, "referenceWithTag": f"{base}:{tag}", "registry": domain, "path": path,
            "name": name, "tag": tag, "digest": digest}


_POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    kind = str(obj.get("kind", ""))
    path = _POD_SPEC_PATHS.get(kind, ("spec", "template", "spec") if kind in (
        "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "ReplicationController") else None)
    if path is None:
        return None
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def images(obj: Mapping[str, Any] | None) -> dict[str, dict[str, dict[str, str]]] | None:
    """images.{containers,initContainers,ephemeralContainers}.<name>; None when the kind has none."""
    if not obj:
        return None
    spec = _pod_spec(obj)
    if spec is None:
        return None
    out: dict[str, dict[str, dict[str, str]]] = {}
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if not isinstance(c, Mapping) or not isinstance(c.get("image"), str):
                continue
            try:
                out.setdefault(key, {})[str(c.get("name", ""))] = image_info(c["image"])
            except ImageError:
                continue
    return out or None


def context_data(*, obj: Mapping[str, Any] | None, old_obj: Mapping[str, Any] | None, operation: str,
                 namespace: str, user_info: Mapping[str, Any], roles: tuple[str, ...] = (),
                 cluster_roles: tuple[str, ...] = ()) -> dict[str, Any]:
    """The root of the JSON context before any rule runs."""
    request: dict[str, Any] = {"operation": operation, "object": obj, "namespace": namespace}
    if old_obj is not None:
        request["oldObject"] = old_obj
    # kk: AddUserInfo marshals kyvernov2.RequestInfo (roles/clusterRoles omitted when empty)
    if roles:
        request["roles"] = list(roles)
    if cluster_roles:
        request["clusterRoles"] = list(cluster_roles)
    info = {k: v for k, v in user_info.items() if v not in (None, "", [], {})}
    request["userInfo"] = info
    data: dict[str, Any] = {"request": request, **service_account(str(user_info.get("username") or ""))}
    found = images(obj if obj is not None else old_obj)
    if found is not None:
        data["images"] = found
    return data
