"""Engine-neutral declarations of CEL functions.

Libraries (Kubernetes' and Kyverno's) describe their functions with these plain dataclasses so that only
`engine.py` knows which CEL implementation runs them. Types are written as short strings:
``bool int uint double string bytes dyn null timestamp duration list map``, ``list<T>`` and ``map<K,V>``.

Implementations receive and return plain Python values (``None, bool, int, float, str, bytes, list,
dict, datetime, timedelta``). To make the CEL expression evaluate to an error (as cel-go's
``types.NewErr`` does), raise :class:`CelFunctionError`; its message is what Kyverno would print.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import READ_FAILED, EngineError, LookupUnanswered


class CelFunctionError(EngineError):
    """Raised by a library implementation: the CEL call evaluates to an error with this message."""


class CelForbidden(CelFunctionError):
    """A read the cluster refused (401/403): the sdk's resource library says `permission denied: <err>`
    (kyverno/sdk extensions/cel/libs/resource/impl.go, apierrors.IsForbidden / IsUnauthorized)."""


class LookupUnread(CelFunctionError, LookupUnanswered):
    """A lookup (`resource.Get/List`, a classic context entry) of a state read from a cluster that the read
    cannot answer (errors.py LookupUnanswered, with its `reason`), as a CEL function's error."""


class LookupRefused(LookupUnread, CelForbidden):
    """The cluster refused kyrec's LIST of the kind there (401/403): Kyverno's library says `permission denied`
    (CelForbidden), and what rests on it is `read-failed`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, READ_FAILED)


# the text every error of a function that would need a registry carries (image verification, image data
# offline): the engines turn an evaluation error holding it into `undetermined` (needs-registry)
NEEDS_REGISTRY = "needs registry access"


def registry_needed(subject: str, to: str = "") -> str:
    """The one text of such an error: `subject` (a call, an image reference) needs registry access (`to` do
    what), naming the switch that gives it."""
    return f"{subject}: {NEEDS_REGISTRY}{f' to {to}' if to else ''}, which kyrec has only with --registry"


def needs_registry(error: str | None) -> bool:
    """Whether an evaluation error came from a function that needs a registry (or a signature check)."""
    return error is not None and NEEDS_REGISTRY in error


@dataclass(frozen=True)
class Overload:
    """One overload. `id` must be unique within the environment (cel-go style, e.g. ``list_is_sorted``)."""

    id: str
    params: Sequence[str]
    result: str
    impl: Callable[..., Any]
    member: bool = False


@dataclass(frozen=True)
class Function:
    name: str
    overloads: Sequence[Overload]


@dataclass(frozen=True)
class Library:
    """A named group of functions; `variables` are extra top-level names (rarely needed)."""

    name: str
    functions: Sequence[Function]
    variables: dict[str, str] = field(default_factory=dict)


def fn(name: str, *overloads: Overload) -> Function:
    return Function(name, tuple(overloads))
