"""`generator.Apply` / `generator.apply` (docs/semantics/generating.md#downstream-objects; sdk: generator/lib.go,
impl.go, namespaced_impl.go).

In Kyverno `generator` is a global of an opaque type whose member function creates the objects at once.
Offline nothing is created: every call is handed to the *sink*, which the evaluation stage points at a
handler for the (policy, trigger) under way. The handler turns the items into downstreams as Kyverno would
write them and may refuse them (cross-scope generation); a refusal becomes the CEL error Kyverno returns,
`failed to generate resources: <reason>`.

Overloads: cluster policies get `Apply(string namespace, list<map<string,dyn>>)`, namespaced policies
`Apply(list<map<string,dyn>>)` (the policy's namespace); the camelCase `apply` alias exists from library
version 1.18 (`versions.KyvernoLatest`), which is the version kyrec models.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

GENERATOR_VARIABLE = "generator"
GENERATOR_TYPE = "map<string,string>"
# the value bound to `generator`; the functions ignore it (there is one generator per evaluation)
GENERATOR_VALUE: Mapping[str, str] = {"@type": "kyverno.generator.Context"}
GENERATING_KINDS = ("GeneratingPolicy", "NamespacedGeneratingPolicy")

Handler = Callable[[str, list[dict[str, Any]]], None]


class GenerateRefused(Exception):
    """Raised by a handler: the items cannot be generated (Kyverno's GenerateResources error)."""


class GeneratorSink:
    """Where `generator.Apply` calls go; one handler at a time (evaluation is single-threaded)."""

    def __init__(self) -> None:
        self._handler: Handler | None = None
        self.calls = 0

    def bind(self, handler: Handler) -> None:
        self._handler = handler

    def release(self) -> None:
        self._handler = None

    def apply(self, namespace: str, items: Sequence[Any]) -> bool:
        if self._handler is None:
            # matchConditions and exceptions run before the generator is bound, as in Kyverno
            raise CelFunctionError("failed to generate resources: no generation context")
        self.calls += 1
        try:
            # as the CEL engine hands them over: the handler puts them in a fixed order (in_key_order), in the
            # one walk it makes of each object anyway
            self._handler(namespace, list(items))
        except GenerateRefused as exc:
            raise CelFunctionError(f"failed to generate resources: {exc}") from None
        return True


def generator_library(sink: GeneratorSink, policy_namespace: str = "") -> Library:
    """The library for one policy scope: "" for GeneratingPolicy, the namespace for the namespaced kind."""
    items = "list<map<string,dyn>>"
    if policy_namespace:
        def apply_namespaced(_self: Any, data: Sequence[Any]) -> bool:
            return sink.apply(policy_namespace, data)

        overloads = {name: Overload(f"generator_apply_list_{suffix}", [GENERATOR_TYPE, items], "bool",
                                    apply_namespaced, member=True)
                     for name, suffix in (("Apply", "pascal"), ("apply", "camel"))}
    else:
        def apply_cluster(_self: Any, namespace: str, data: Sequence[Any]) -> bool:
            return sink.apply(namespace, data)

        overloads = {name: Overload(f"generator_apply_string_list_{suffix}", [GENERATOR_TYPE, "string", items],
                                    "bool", apply_cluster, member=True)
                     for name, suffix in (("Apply", "pascal"), ("apply", "camel"))}
    return Library("kyverno.generator", [fn(name, o) for name, o in overloads.items()],
                   variables={GENERATOR_VARIABLE: GENERATOR_TYPE})


def generator_extra(sink: GeneratorSink) -> Callable[[str, str], Sequence[Library]]:
    """For `library_factory(..., extra=...)`: the generator library for the generating kinds only."""

    def extra(kind: str, namespace: str) -> Sequence[Library]:
        if kind not in GENERATING_KINDS:
            return []
        return [generator_library(sink, namespace if kind == "NamespacedGeneratingPolicy" else "")]

    return extra
