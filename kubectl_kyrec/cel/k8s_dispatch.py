"""Tagged-map values for the Kubernetes CEL types, and one overload per shared member name.

cel-expr-python cannot carry Python objects as CEL values, so a Quantity, Semver, URL, IP or CIDR is a
map ``{"@type": <Kubernetes type name>, ...}`` whose other keys are a *canonical* form of the value:
CEL's structural ``==`` on two such maps then answers what the Kubernetes type's ``Equal`` answers.

Several types share member names (``isLessThan`` on Quantity and Semver, ``string()`` on IP and CIDR).
All of them are maps to the type checker, and the engine rejects two overloads with one signature, so
each module lists its :class:`SharedMember` handlers and :func:`shared_library` joins them into a single
overload per (name, parameters) that picks the handler by the receiver's tag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

TYPE_KEY = "@type"

QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
URL = "kubernetes.URL"
IP = "net.IP"
CIDR = "net.CIDR"
FORMAT = "kubernetes.NamedFormat"

# cel-go's text for a call whose runtime argument types match no overload.
NO_SUCH_OVERLOAD = "no such overload"


def tag_of(value: Any) -> str | None:
    """The Kubernetes type a value stands for, or None for ordinary CEL values."""
    if isinstance(value, Mapping):
        tag = value.get(TYPE_KEY)
        if isinstance(tag, str):
            return tag
    return None


def tagged(type_name: str, **fields: Any) -> dict[str, Any]:
    return {TYPE_KEY: type_name, **fields}


def expect(value: Any, type_name: str) -> Mapping[str, Any]:
    """The value as a map of the given type; anything else is cel-go's "no such overload"."""
    if tag_of(value) != type_name:
        raise CelFunctionError(NO_SUCH_OVERLOAD)
    result: Mapping[str, Any] = value
    return result


def field(value: Any, type_name: str, key: str) -> str:
    """The text field `key` of a value of the given type, as this library's constructors write it. A map
    written by hand with the tag but not the field is no value of the type: cel-go's "no such overload"
    (a CEL expression cannot make a Kubernetes type's value other than through its constructor)."""
    text = expect(value, type_name).get(key)
    if not isinstance(text, str):
        raise CelFunctionError(NO_SUCH_OVERLOAD)
    return text


@dataclass(frozen=True)
class SharedMember:
    """One type's implementation of a member name that other tagged types also use."""

    name: str
    type_name: str
    params: tuple[str, ...]
    result: str
    impl: Callable[..., Any]
    member: bool = True  # False for global calls such as string(x)


def shared_library(members: Sequence[SharedMember]) -> Library:
    """One overload per (name, params); each call is routed by the receiver's tag."""
    groups: dict[tuple[str, tuple[str, ...], bool], dict[str, SharedMember]] = {}
    for member in members:
        handlers = groups.setdefault((member.name, member.params, member.member), {})
        if member.type_name in handlers:
            raise ValueError(f"two handlers for {member.type_name}.{member.name}{member.params}")
        handlers[member.type_name] = member
    by_name: dict[str, list[Overload]] = {}
    for (name, params, is_member), handlers in groups.items():
        results = {m.result for m in handlers.values()}
        result = results.pop() if len(results) == 1 else "dyn"
        overload_id = "kubernetes_" + name + "_" + "_".join(p.replace("<", "_").replace(">", "")
                                                           for p in params)
        by_name.setdefault(name, []).append(
            Overload(overload_id, params, result, _router(handlers), member=is_member))
    return Library("kubernetes.shared", [fn(name, *overloads) for name, overloads in by_name.items()])


def _router(handlers: Mapping[str, SharedMember]) -> Callable[..., Any]:
    def route(receiver: Any, *args: Any) -> Any:
        member = handlers.get(tag_of(receiver) or "")
        if member is None:
            raise CelFunctionError(NO_SUCH_OVERLOAD)
        return member.impl(receiver, *args)
    return route
