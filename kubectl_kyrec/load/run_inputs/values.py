"""Kyverno CLI `Values` (for `--values` and for test suites): request fields and namespaces.

Read (kk: cmd/cli/kubectl-kyverno/apis/v1alpha1/values.go): `globalValues` may set `request.operation`;
`namespaces` are whole Namespace objects (decoded as core/v1 whatever apiVersion/kind they were written
with); `namespaceSelector: [{name, labels}]` gives labels to namespaces `namespaces` does not list (those
win, as in Kyverno). kyrec also reads a top-level `request: {operation, userInfo, roles, clusterRoles}`,
which the Kyverno format has no place for; a `UserInfo` document (kind UserInfo, Kyverno CLI's
`--userinfo` file: `roles`, `clusterRoles`, `userInfo`) gives the request's user. Per-resource values
feed only ClusterPolicy variables, so they are not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Document, Source

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


@dataclass(frozen=True)
class Values:
    operation: str = ""                     # "" when the values do not say (CREATE, unless a test row does)
    user_info: Mapping[str, Any] = field(default_factory=dict)
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    namespaces: tuple[Document, ...] = ()
    given_user_info: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict)   # the document as written (classic policies' values)
    # a UserInfo's (or `request`'s) roles and clusterRoles: classic match/exclude blocks read them
    roles: tuple[str, ...] = ()
    cluster_roles: tuple[str, ...] = ()

    @property
    def request_operation(self) -> str:
        return self.operation or "CREATE"


def _operation(value: Any, source: Source | None) -> str:
    if str(value).upper() not in OPERATIONS:
        raise InputError(f"values: unknown request.operation {value!r} ({', '.join(OPERATIONS)})", source)
    return str(value).upper()


def parse_values_object(obj: Mapping[str, Any], source: Source | None) -> Values:
    """One Values document (or a test's inline `values:`)."""
    global_values = obj.get("globalValues") or {}
    if not isinstance(global_values, Mapping):
        raise InputError("values: globalValues must be a mapping", source)
    request = obj.get("request") or {}
    if not isinstance(request, Mapping):
        raise InputError("values: request must be a mapping", source)
    op = request.get("operation", global_values.get("request.operation"))
    operation = _operation(op, source) if op else ""
    user_info: dict[str, Any] = {}
    if "userInfo" in request:
        if not isinstance(request["userInfo"], Mapping):
            raise InputError("values: request.userInfo must be a mapping", source)
        user_info = _checked_user_info(request["userInfo"], "request.userInfo", source)
    _check_policy_values(obj.get("policies"), source)
    namespaces = []
    for i, ns in enumerate(obj.get("namespaces") or []):
        meta = ns.get("metadata") if isinstance(ns, Mapping) else None
        if not isinstance(meta, Mapping) or not meta.get("name"):
            raise InputError(f"values: namespaces[{i}] needs metadata.name", source)
        namespaces.append(Document({**ns, "apiVersion": "v1", "kind": "Namespace"}, source or Source("values")))
    listed = {d.name for d in namespaces}
    labels: dict[str, dict[str, str]] = {}
    for i, entry in enumerate(obj.get("namespaceSelector") or []):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise InputError(f"values: namespaceSelector[{i}] needs a name", source)
        if entry["name"] not in listed:
            labels[entry["name"]] = {str(k): str(v) for k, v in (entry.get("labels") or {}).items()}
    roles, cluster_roles = _role_names(request, source)
    return Values(operation, user_info, labels, tuple(namespaces), "userInfo" in request, raw=obj,
                  roles=roles, cluster_roles=cluster_roles)


def _role_names(request_info: Mapping[str, Any], source: Source | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A RequestInfo's `roles` and `clusterRoles` ("namespace:name" and names, kk: RequestInfo)."""
    out = []
    for key in ("roles", "clusterRoles"):
        value = request_info.get(key) or []
        if not isinstance(value, list):
            raise InputError(f"values: {key} must be a list", source)
        out.append(tuple(str(v) for v in value))
    return out[0], out[1]


def parse_user_info(doc: Document) -> dict[str, Any]:
    """A cli.kyverno.io/v1alpha1 UserInfo document's `userInfo` (username, uid, groups, extra)."""
    user = doc.obj.get("userInfo") or {}
    if not isinstance(user, Mapping):
        raise InputError("userinfo: userInfo must be a mapping", doc.source)
    return _checked_user_info(user, "userInfo", doc.source)


def _checked_user_info(user: Mapping[str, Any], where: str, source: Source | None) -> dict[str, Any]:
    """An authenticationv1.UserInfo: the fields matching and CEL's `request.userInfo` read, in the types
    Kyverno's CLI decodes them into (a wrong one fails its decoding)."""
    for key in ("username", "uid"):
        if user.get(key) is not None and not isinstance(user[key], str):
            raise InputError(f"values: {where}.{key} must be a string", source)
    groups = user.get("groups")
    if groups is not None and not (isinstance(groups, list) and all(isinstance(g, str) for g in groups)):
        raise InputError(f"values: {where}.groups must be a list of strings", source)
    extra = user.get("extra")
    if extra is not None and not (isinstance(extra, Mapping) and all(isinstance(v, list) for v in extra.values())):
        raise InputError(f"values: {where}.extra must map names to lists of strings", source)
    return dict(user)


def _check_policy_values(policies: Any, source: Source | None) -> None:
    """`policies: [{name, rules: [{name, values}], resources: [{name, values}]}]`: only ClusterPolicy
    variables read them, but a wrong shape is refused whatever the policies, as Kyverno's CLI does."""
    if policies is None:
        return
    if not isinstance(policies, list):
        raise InputError("values: policies must be a list", source)
    for i, entry in enumerate(policies):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise InputError(f"values: policies[{i}] needs a name", source)
        for part in ("rules", "resources"):
            items = entry.get(part)
            if items is None:
                continue
            if not isinstance(items, list):
                raise InputError(f"values: policies[{i}].{part} must be a list", source)
            for j, item in enumerate(items):
                if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                    raise InputError(f"values: policies[{i}].{part}[{j}] needs a name", source)
                if item.get("values") is not None and not isinstance(item["values"], Mapping):
                    raise InputError(f"values: policies[{i}].{part}[{j}].values must be a mapping", source)


def parse_values(docs: Sequence[Document]) -> Values:
    """`--values FILE`: one or more Values documents, later ones adding to earlier ones."""
    out = Values()
    for doc in docs:
        if doc.kind == "UserInfo":
            # a Kyverno CLI UserInfo file (`kyverno apply --userinfo`, a test's `userinfo:`) gives the
            # request's userInfo; its roles and clusterRoles only matter to ClusterPolicies
            roles, cluster_roles = _role_names(doc.obj, doc.source)
            one = Values(user_info=parse_user_info(doc), given_user_info=True, roles=roles,
                         cluster_roles=cluster_roles)
        elif doc.kind not in ("Value", "Values", ""):
            raise InputError(f"--values: expected kind Values or UserInfo, got {doc.kind!r}", doc.source)
        else:
            one = parse_values_object(doc.obj, doc.source)
        given = one.given_user_info or bool(one.roles or one.cluster_roles)
        out = Values(one.operation or out.operation, one.user_info if one.given_user_info else out.user_info,
                     {**out.namespace_labels, **one.namespace_labels}, (*out.namespaces, *one.namespaces),
                     out.given_user_info or given, roles=one.roles if given else out.roles,
                     cluster_roles=one.cluster_roles if given else out.cluster_roles)
    return out
