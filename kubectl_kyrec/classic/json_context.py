"""Kyverno's engine context (pkg/engine/context): the JSON document variables and JMESPath queries read.

Holds `request` (object, oldObject, operation, namespace, userInfo), `serviceAccountName`/`Namespace`,
`images`, `element`/`elementIndex`, and context entries; checkpoint/restore as Kyverno's stack; deferred
(lazy) loaders that run when a query names them, matched as Kyverno's deferred.go does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.classic.jmespath_eval import Engine


class ContextError(Exception):
    """A failed query; str() is Kyverno's text: `JMESPath query failed: <err>`, `invalid query (nil)`,
    `incorrect query <q>: <err>`. `cause` is the underlying JMESPathError (NotFoundError for a missing key)."""

    def __init__(self, message: str, cause: Exception | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class EvalContext:
    """Kyverno's context.Interface over a plain dict (`data`)."""

    def __init__(self, data: Mapping[str, Any] | None = None, *, engine: Engine | None = None) -> None:
        raise NotImplementedError

    @property
    def data(self) -> dict[str, Any]:
        """The raw JSON document (live, not a copy)."""
        raise NotImplementedError

    # -- adding data (all merge as Kyverno's addToContext/mergeMaps) --
    def add_json(self, data: Mapping[str, Any]) -> None:
        """Merge a map at the root (AddJSONObject)."""
        raise NotImplementedError

    def add_resource(self, obj: Mapping[str, Any] | None) -> None:
        """request.object (replaced, not merged)."""
        raise NotImplementedError

    def add_old_resource(self, obj: Mapping[str, Any] | None) -> None:
        """request.oldObject (replaced)."""
        raise NotImplementedError

    def add_operation(self, operation: str) -> None:
        """request.operation; DELETE makes `request.object.*` variables read request.oldObject."""
        raise NotImplementedError

    def add_namespace(self, namespace: str) -> None:
        """request.namespace."""
        raise NotImplementedError

    def add_user_info(self, request_info: Mapping[str, Any]) -> None:
        """Merge a RequestInfo ({roles, clusterRoles, userInfo: {username, groups, ...}}) under request."""
        raise NotImplementedError

    def add_service_account(self, username: str) -> None:
        """serviceAccountName/serviceAccountNamespace from `system:serviceaccount:<ns>:<name>` ('' otherwise)."""
        raise NotImplementedError

    def add_variable(self, key: str, value: Any) -> None:
        """A dotted key (csv-split on '.', quotes honoured) merged as nested maps (AddVariable)."""
        raise NotImplementedError

    def add_context_entry(self, name: str, value: Any) -> None:
        """A context entry's JSON value under `name` (merged with an existing map, as Kyverno)."""
        raise NotImplementedError

    def replace_context_entry(self, name: str, value: Any) -> None:
        """Clear `name` then set it (ReplaceContextEntry)."""
        raise NotImplementedError

    def add_element(self, element: Any, index: int, nesting: int) -> None:
        """element, element<nesting>, elementIndex, elementIndex<nesting> (maps overwritten, not merged)."""
        raise NotImplementedError

    def add_deferred_loader(self, name: str, load: Callable[[EvalContext], None]) -> None:
        """Register a lazy context entry: `load(self)` runs once, the first time a query names `name`
        (Kyverno's `(?:\\A|\\z|\\s|[^.0-9A-Za-z])name\\b` matcher), honouring checkpoint levels."""
        raise NotImplementedError

    # -- checkpoints --
    def checkpoint(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        """Back to the last checkpoint and drop it."""
        raise NotImplementedError

    def reset(self) -> None:
        """Back to the last checkpoint and keep it."""
        raise NotImplementedError

    # -- reading --
    def query(self, expression: str) -> Any:
        """Kyverno's Context.Query: load matching deferred entries, then JMESPath. Raises ContextError."""
        raise NotImplementedError

    def query_operation(self) -> str:
        raise NotImplementedError

    def has_changed(self, path: str) -> bool:
        """Kyverno's HasChanged(jmespath): request.object.<path> vs request.oldObject.<path>."""
        raise NotImplementedError
