"""The admission request a subject stands for, as Kyverno's background scan builds it.

A scan uses operation CREATE, an empty userInfo and no oldObject
(docs/semantics/reports.md#ephemeral-reports-and-scans); `--values` may set the operation (UPDATE: oldObject = object;
DELETE: object is null) and userInfo, as the Kyverno CLI allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.model import Obj, group_version


@dataclass(frozen=True)
class RequestInfo:
    """Everything matching and CEL need to know about one (subject, operation)."""

    obj: Obj | None
    old_obj: Obj | None
    group: str
    version: str
    kind: str
    resource: str
    subresource: str
    namespace: str          # the request's namespace ("" for cluster-scoped; a Namespace's own name)
    name: str
    operation: str
    namespaced: bool
    user_info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> Mapping[str, str]:
        meta = (self.obj or self.old_obj or {}).get("metadata") or {}
        return meta.get("labels") or {}

    def as_cel_request(self) -> dict[str, Any]:
        """The `request` variable: an admission/v1 AdmissionRequest as a map."""
        return {
            "uid": "",
            "kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "resource": {"group": self.group, "version": self.version, "resource": self.resource},
            "subResource": self.subresource,
            "requestKind": {"group": self.group, "version": self.version, "kind": self.kind},
            "requestResource": {"group": self.group, "version": self.version, "resource": self.resource},
            "requestSubResource": self.subresource,
            "name": self.name,
            "namespace": self.namespace,
            "operation": self.operation,
            # a typed authenticationv1.UserInfo: absent fields read as their zero values
            "userInfo": {"username": "", "uid": "", "groups": [], "extra": {}, **self.user_info},
            "object": self.obj,
            "oldObject": self.old_obj,
            "dryRun": False,
            "options": None,
        }


def _namespace(group: str, kind: str, name: str, meta: Mapping[str, Any], namespaced: bool) -> str:
    if kind == "Namespace" and group == "":
        # the API server puts a Namespace's own name in the request namespace
        return name
    return str(meta.get("namespace") or "") if namespaced else ""


def request_namespace(obj: Obj, namespaced: bool) -> str:
    """The namespace of the request `build_request` makes for `obj` (without making it)."""
    meta = obj.get("metadata") or {}
    return _namespace(group_version(str(obj.get("apiVersion", "")))[0], str(obj.get("kind", "")),
                      str(meta.get("name") or ""), meta, namespaced)


def build_request(obj: Obj, *, resource: str, namespaced: bool, operation: str = "CREATE",
                  user_info: Mapping[str, Any] | None = None, subresource: str = "",
                  old_obj: Obj | None = None) -> RequestInfo:
    """`old_obj`: UPDATE's stored object when the run knows it (`eval --old`); without it an UPDATE's
    oldObject is the object itself, as Kyverno's CLI makes it (kk: cmd/cli/kubectl-kyverno/processor
    policy_processor.go makePolicyContext)."""
    group, version = group_version(str(obj.get("apiVersion", "")))
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind", ""))
    name = str(meta.get("name") or "")
    namespace = _namespace(group, kind, name, meta, namespaced)
    new: Obj | None = obj
    old: Obj | None = None
    if operation == "UPDATE":
        old = old_obj if old_obj is not None else obj
    elif operation == "DELETE":
        new, old = None, obj
    return RequestInfo(obj=new, old_obj=old, group=group, version=version, kind=kind, resource=resource,
                       subresource=subresource, namespace=namespace, name=name, operation=operation,
                       namespaced=namespaced, user_info=dict(user_info or {}))
