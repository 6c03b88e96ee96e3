"""Kyverno's anchors (pkg/engine/anchor): `(k)` condition, `<(k)` global, `=(k)` equality, `X(k)` negation,
`^(k)` existence, `+(k)` add-if-not-present; plus the anchor errors and the AnchorMap bookkeeping that
validate.MatchPattern uses to tell a missing anchored key from a mismatch."""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import re
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import EngineError

if TYPE_CHECKING:
    from kubectl_kyrec.recording import Trace

CONDITION = "Condition"
GLOBAL = "Global"
NEGATION = "Negation"
ADD_IF_NOT_PRESENT = "AddIfNotPresent"
EQUALITY = "Equality"
EXISTENCE = "Existence"

_MODIFIERS = {"": CONDITION, "<": GLOBAL, "X": NEGATION, "+": ADD_IF_NOT_PRESENT, "=": EQUALITY, "^": EXISTENCE}
_SYMBOLS = {v: k for k, v in _MODIFIERS.items()}
_REGEX = re.compile(r"^([+<=X^])?\((.+)\)$", re.DOTALL)


@dataclasses.dataclass(frozen=True)
class Anchor:
    type: str
    key: str

    def __str__(self) -> str:
        return f"{_SYMBOLS[self.type]}({self.key})"


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Anchor | None:
    """anchor.Parse: None when `text` is not an anchor (surrounding spaces are trimmed first)."""
    m = _REGEX.match(text.strip(" \t\n\r\v\f"))
    if m is None:
        return None
    return Anchor(_MODIFIERS[m.group(1) or ""], m.group(2))


def anchor_string(type_: str, key: str) -> str:
    """anchor.String: '' for an empty key."""
    return "" if key == "" else f"{_SYMBOLS[type_]}({key})"


def is_condition(a: Anchor | None) -> bool:
    return a is not None and a.type == CONDITION


def is_global(a: Anchor | None) -> bool:
    return a is not None and a.type == GLOBAL


def is_negation(a: Anchor | None) -> bool:
    return a is not None and a.type == NEGATION


def is_equality(a: Anchor | None) -> bool:
    return a is not None and a.type == EQUALITY


def is_existence(a: Anchor | None) -> bool:
    return a is not None and a.type == EXISTENCE


def is_add_if_not_present(a: Anchor | None) -> bool:
    return a is not None and a.type == ADD_IF_NOT_PRESENT


def contains_condition(a: Anchor | None) -> bool:
    return a is not None and a.type in (CONDITION, GLOBAL)


def _go_path_join(parts: list[str]) -> str:
    joined = "/".join(p for p in parts if p)
    if not joined:
        return ""
    cleaned = posixpath.normpath(joined)
    if cleaned.startswith("//"):
        cleaned = cleaned[1:]
    return "" if cleaned == "." else cleaned


def remove_anchors_from_path(path: str) -> str:
    """RemoveAnchorsFromPath: `/spec/(x)/=(y)` -> `/spec/x/y` (path.Join cleans the rest)."""
    parts = path.split("/")
    if parts and parts[0] == "":
        parts = parts[1:]
    keys = []
    for part in parts:
        a = parse(part)
        keys.append(a.key if a is not None else part)
    new_path = _go_path_join(keys)
    if path.startswith("/"):
        new_path = "/" + new_path
    return new_path


def split_anchors(pattern: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """GetAnchorsResourcesFromMap: (condition/existence/equality/negation keys, the rest)."""
    anchors: dict[str, Any] = {}
    resources: dict[str, Any] = {}
    for key, value in pattern.items():
        a = parse(key)
        if a is not None and a.type in (CONDITION, EXISTENCE, EQUALITY, NEGATION):
            anchors[key] = value
        else:
            resources[key] = value
    return anchors, resources


# ---------------------------------------------------------------------------------------------- errors

NEGATION_ERR = "negation anchor matched in resource"
CONDITIONAL_ERR = "conditional anchor mismatch"
GLOBAL_ERR = "global anchor mismatch"


class PatternFailure(EngineError):
    """An error from validating a resource element; str() is Kyverno's message."""


class AnchorError(PatternFailure):
    """validateAnchorError: `kind` is NEGATION_ERR, CONDITIONAL_ERR or GLOBAL_ERR."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def _is_error(err: Exception | None, kind: str) -> bool:
    if err is None:
        return False
    if isinstance(err, AnchorError):
        return err.kind == kind
    return kind in str(err)


def is_negation_error(err: Exception | None) -> bool:
    return _is_error(err, NEGATION_ERR)


def is_conditional_error(err: Exception | None) -> bool:
    return _is_error(err, CONDITIONAL_ERR)


def is_global_error(err: Exception | None) -> bool:
    return _is_error(err, GLOBAL_ERR)


def resource_has_value_for_key(resource: Any, key: str) -> bool:
    if isinstance(resource, dict):
        return key in resource
    if isinstance(resource, list):
        return any(resource_has_value_for_key(v, key) for v in resource)
    return False


class AnchorMap:
    """Which condition/existence/negation anchored keys were found in the resource anywhere."""

    def __init__(self, trace: Trace | None = None) -> None:
        self.anchor_map: dict[str, bool] = {}
        # the recorder of the walk (explain); it travels with the map because every step of the walk has it
        self.trace = trace

    def keys_are_missing(self) -> bool:
        for key, found in self.anchor_map.items():
            if not found:
                if is_negation(parse(key)):
                    continue
                return True
        return False

    def check_anchor_in_resource(self, pattern: dict[str, Any], resource: Any) -> None:
        for key in pattern:
            a = parse(key)
            if a is not None and a.type in (CONDITION, EXISTENCE, NEGATION):
                if self.anchor_map.get(key):
                    continue
                self.anchor_map.setdefault(key, False)
                if resource_has_value_for_key(resource, a.key):
                    self.anchor_map[key] = True
