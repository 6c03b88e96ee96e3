"""Kyverno's anchors (pkg/engine/anchor): `(k)` condition, `<(k)` global, `=(k)` equality, `X(k)` negation,
`^(k)` existence, `+(k)` add-if-not-present."""

from __future__ import annotations

import dataclasses
from typing import Any

CONDITION = "Condition"
GLOBAL = "Global"
NEGATION = "Negation"
ADD_IF_NOT_PRESENT = "AddIfNotPresent"
EQUALITY = "Equality"
EXISTENCE = "Existence"


@dataclasses.dataclass(frozen=True)
class Anchor:
    type: str
    key: str

    def __str__(self) -> str:
        raise NotImplementedError


def parse(text: str) -> Anchor | None:
    """anchor.Parse: None when `text` is not an anchor."""
    raise NotImplementedError


def remove_anchors_from_path(path: str) -> str:
    raise NotImplementedError


def split_anchors(pattern: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """GetAnchorsResourcesFromMap: (anchored keys, plain keys)."""
    raise NotImplementedError
