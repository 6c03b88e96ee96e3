"""`--values FILE`: request fields and namespace labels, in the Kyverno CLI's `Values` format.

Read (kk: cmd/cli/kubectl-kyverno/apis/v1alpha1/values.go): `namespaceSelector: [{name, labels}]` gives
namespace labels; `globalValues` may set `request.operation`. kyrec also reads a top-level
`request: {operation, userInfo}`, which the Kyverno format has no place for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Document

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


@dataclass(frozen=True)
class Values:
    operation: str = "CREATE"
    user_info: Mapping[str, Any] = field(default_factory=dict)
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    given_user_info: bool = False


def parse_values(docs: list[Document]) -> Values:
    operation = "CREATE"
    user_info: dict[str, Any] = {}
    given_user_info = False
    labels: dict[str, dict[str, str]] = {}
    for doc in docs:
        obj = doc.obj
        if doc.kind not in ("Value", "Values", ""):
            raise InputError(f"--values: expected kind Value, got {doc.kind!r}", doc.source)
        for i, entry in enumerate(obj.get("namespaceSelector") or []):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise InputError(f"--values: namespaceSelector[{i}] needs a name", doc.source)
            labels[entry["name"]] = {str(k): str(v) for k, v in (entry.get("labels") or {}).items()}
        global_values = obj.get("globalValues") or {}
        if not isinstance(global_values, Mapping):
            raise InputError("--values: globalValues must be a mapping", doc.source)
        op = global_values.get("request.operation")
        request = obj.get("request") or {}
        if not isinstance(request, Mapping):
            raise InputError("--values: request must be a mapping", doc.source)
        op = request.get("operation", op)
        if op is not None:
            if str(op).upper() not in OPERATIONS:
                raise InputError(f"--values: unknown operation {op!r} ({', '.join(OPERATIONS)})", doc.source)
            operation = str(op).upper()
        if "userInfo" in request:
            if not isinstance(request["userInfo"], Mapping):
                raise InputError("--values: request.userInfo must be a mapping", doc.source)
            user_info = dict(request["userInfo"])
            given_user_info = True
    return Values(operation, user_info, labels, given_user_info)
