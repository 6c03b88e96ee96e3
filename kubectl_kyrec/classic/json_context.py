"""Kyverno's engine context (pkg/engine/context): the JSON document variables and JMESPath queries read.

Holds `request` (object, oldObject, operation, namespace, userInfo), `serviceAccountName`/`Namespace`,
`images`, `element`/`elementIndex`, and context entries; checkpoint/restore as Kyverno's stack; deferred
(lazy) loaders that run when a query names them, matched as Kyverno's deferred.go does.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.classic.jmespath_eval import Engine, default_engine
from kubectl_kyrec.classic.jmespath_types import JMESPathCompileError, JMESPathError
from kubectl_kyrec.errors import EngineError


class ContextError(EngineError):
    """A failed query; str() is Kyverno's text: `JMESPath query failed: <err>`, `invalid query (nil)`,
    `incorrect query <q>: <err>`. `cause` is the underlying JMESPathError (NotFoundError for a missing key)."""

    def __init__(self, message: str, cause: Exception | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class InvalidVariableError(ContextError):
    """kk: context.InvalidVariableError: a variable Kyverno's policy validation does not allow (its mock
    context's query, pkg/engine/context/mock_context.go). Substitution passes it on unwrapped."""


def _merged(src: Mapping[str, Any], dest: Mapping[str, Any], overwrite_maps: bool) -> dict[str, Any]:
    """Kyverno's mergeMaps (nested maps merge unless overwriteMaps; everything else replaces), without
    touching `dest`: the maps along the merged paths are copied, the rest is shared. The context's data is
    therefore never changed in place, so a checkpoint is a reference to it, not a deep copy."""
    out = dict(dest)
    for key, value in src.items():
        if isinstance(value, dict) and not overwrite_maps:
            existing = out.get(key)
            out[key] = _merged(value, existing, False) if isinstance(existing, dict) else value
        else:
            out[key] = value
    return out


def _push(value: Any, tags: list[str]) -> dict[str, Any]:
    for tag in reversed(tags):
        value = {tag: value}
    assert isinstance(value, dict)
    return value


@functools.lru_cache(maxsize=65536)
def _names(name: str, query: str) -> bool:
    """Whether `query` names the context entry `name`: Kyverno's deferred matcher, on ASCII word
    boundaries and not after a `.` (`x` matches `x.y` but not `y.x`). Cached: rules repeat their queries."""
    return re.search(r"(?:\A|\Z|\s|[^.0-9A-Za-z])" + name + r"\b", query) is not None


class _Deferred:
    __slots__ = ("name", "load", "level", "loaded", "matched")

    def __init__(self, name: str, load: Callable[[EvalContext], None], level: int) -> None:
        self.name = name
        self.load = load
        self.level = level
        self.loaded = False
        self.matched = False


class EvalContext:
    """Kyverno's context.Interface over a plain dict (`data`)."""

    def __init__(self, data: Mapping[str, Any] | None = None, *, engine: Engine | None = None) -> None:
        self._data: dict[str, Any] = dict(data) if data is not None else {}
        self._checkpoints: list[dict[str, Any]] = []
        self._deferred: list[_Deferred] = []
        self._loading_bound: tuple[int, int] | None = None
        self._operation = ""
        self.engine = engine or default_engine()

    @property
    def data(self) -> dict[str, Any]:
        """The raw JSON document (the live one, shared with checkpoints: read it, never change it in place)."""
        return self._data

    # -- adding data (all merge as Kyverno's addToContext/mergeMaps) --
    def _add(self, value: Any, *tags: str, overwrite_maps: bool = False) -> None:
        self._data = _merged(_push(value, list(tags)), self._data, overwrite_maps)

    def _clear_leaf(self, *tags: str) -> None:
        def cleared(node: dict[str, Any], rest: tuple[str, ...]) -> dict[str, Any] | None:
            if len(rest) == 1:
                if rest[0] not in node:
                    return None
                return {k: v for k, v in node.items() if k != rest[0]}
            child = node.get(rest[0])
            if not isinstance(child, dict):
                return None
            new_child = cleared(child, rest[1:])
            return None if new_child is None else {**node, rest[0]: new_child}

        new = cleared(self._data, tags)
        if new is not None:
            self._data = new

    def add_json(self, data: Mapping[str, Any]) -> None:
        """Merge a map at the root (AddJSONObject)."""
        self._data = _merged(data, self._data, False)

    def add_resource(self, obj: Mapping[str, Any] | None) -> None:
        """request.object (replaced, not merged)."""
        self._clear_leaf("request", "object")
        self._add(obj, "request", "object")

    def add_old_resource(self, obj: Mapping[str, Any] | None) -> None:
        """request.oldObject (replaced)."""
        self._clear_leaf("request", "oldObject")
        self._add(obj, "request", "oldObject")

    def add_operation(self, operation: str) -> None:
        """request.operation; DELETE makes `request.object.*` variables read request.oldObject."""
        self._add(operation, "request", "operation")
        self._operation = operation

    def add_namespace(self, namespace: str) -> None:
        """request.namespace."""
        self._add(namespace, "request", "namespace")

    def add_user_info(self, request_info: Mapping[str, Any]) -> None:
        """Merge a RequestInfo ({roles, clusterRoles, userInfo: {username, groups, ...}}) under request."""
        self._add(dict(request_info), "request")

    def add_service_account(self, username: str) -> None:
        """serviceAccountName/serviceAccountNamespace from `system:serviceaccount:<ns>:<name>` ('' otherwise)."""
        prefix = "system:serviceaccount:"
        sa = "" if len(username) <= len(prefix) else username[len(prefix):]
        groups = sa.split(":")
        name, namespace = (groups[1], groups[0]) if len(groups) >= 2 else ("", "")
        self.add_json({"serviceAccountName": name, "serviceAccountNamespace": namespace})

    def add_variable(self, key: str, value: Any) -> None:
        """A dotted key (csv-split on '.', quotes honoured) merged as nested maps (AddVariable)."""
        reader = csv.reader(io.StringIO(key), delimiter=".")
        fields = next(reader, [""])
        self._add(value, *fields)

    def add_context_entry(self, name: str, value: Any) -> None:
        """A context entry's JSON value under `name` (merged with an existing map, as Kyverno)."""
        self._add(value, name)

    def replace_context_entry(self, name: str, value: Any) -> None:
        """Clear `name` then set it (ReplaceContextEntry)."""
        self._add(None, name)
        self._add(value, name)

    def add_element(self, element: Any, index: int, nesting: int) -> None:
        """element, element<nesting>, elementIndex, elementIndex<nesting> (maps overwritten, not merged)."""
        self._add({"element": element, f"element{nesting}": element, "elementIndex": index,
                   f"elementIndex{nesting}": index}, overwrite_maps=True)

    def add_deferred_loader(self, name: str, load: Callable[[EvalContext], None]) -> None:
        """Register a lazy context entry: `load(self)` runs once, the first time a query names `name`
        (Kyverno's `(?:\\A|\\z|\\s|[^.0-9A-Za-z])name\\b` matcher), honouring checkpoint levels."""
        self._deferred.append(_Deferred(name, load, len(self._checkpoints)))

    # -- checkpoints --
    def checkpoint(self) -> None:
        # the data is never mutated in place (see _merged), so the current root is the snapshot
        self._checkpoints.append(self._data)

    def restore(self) -> None:
        """Back to the last checkpoint and drop it."""
        self._reset(True)

    def reset(self) -> None:
        """Back to the last checkpoint and keep it."""
        self._reset(False)

    def _reset(self, restore: bool) -> None:
        if not self._checkpoints:
            return
        if restore:
            self._data = self._checkpoints.pop()
        else:
            self._data = self._checkpoints[-1]
        # Kyverno passes the number of checkpoints left: one less after a restore, unchanged after a reset
        level = len(self._checkpoints)
        # Kyverno's deferredLoaders.Reset: loaders above the level go; loaded ones at or below reload
        for d in self._deferred:
            d.matched = False
        kept: list[_Deferred] = []
        for d in self._deferred:
            if d.level > level:
                continue
            if d.loaded:
                if restore or d.level < level:
                    self._run_loader(d)
                if d.level == level:
                    continue
            elif not restore and d.level == level:
                continue
            kept.append(d)
        self._deferred = kept

    def _run_loader(self, d: _Deferred) -> None:
        # while a loader runs, only loaders declared before it (at its level or below) may load, as
        # Kyverno's deferredLoaders bound the search by the running loader's index and level
        outer = self._loading_bound
        self._loading_bound = (self._deferred.index(d), d.level)
        try:
            d.load(self)
            d.loaded = True
        finally:
            self._loading_bound = outer

    def _load_deferred(self, query: str) -> None:
        if not self._deferred:
            return
        if self._loading_bound is not None:
            index, level = self._loading_bound
        else:
            index, level = len(self._deferred), len(self._checkpoints)
        while True:
            pending = next((d for d in self._deferred[:index]
                            if not d.matched and not d.loaded and d.level <= level and _names(d.name, query)),
                           None)
            if pending is None:
                return
            pending.matched = True
            self._run_loader(pending)

    # -- reading --
    def query(self, expression: str) -> Any:
        """Kyverno's Context.Query: load matching deferred entries, then JMESPath. Raises ContextError."""
        self._load_deferred(expression)
        expression = expression.strip()
        if expression == "":
            raise ContextError("invalid query (nil)")
        try:
            compiled = self.engine.compile(expression)
        except JMESPathCompileError as exc:
            raise ContextError(f"incorrect query {expression}: {exc}", exc) from None
        try:
            return compiled.search(self._data)
        except JMESPathError as exc:
            raise ContextError(f"JMESPath query failed: {exc}", exc) from None

    def query_operation(self) -> str:
        if self._operation:
            return self._operation
        request = self._data.get("request")
        if isinstance(request, dict) and isinstance(request.get("operation"), str):
            return str(request["operation"])
        return ""
