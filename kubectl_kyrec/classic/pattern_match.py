"""Kyverno's pattern validation of a resource (pkg/engine/validate/validate.go MatchPattern) with anchors,
wildcard keys under metadata.labels/annotations, and Kyverno's failure paths and messages."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class PatternError:
    """validate.PatternError: `message` is Kyverno's error text, `path` the failure path (`/spec/containers/0/
    image/`, '' when an anchored key is missing, or on skip), `skip` True when a condition/global anchor
    made the rule not apply."""

    message: str
    path: str
    skip: bool


def match_pattern(resource: Any, pattern: Any) -> PatternError | None:
    """validate.MatchPattern(resource, pattern): None when the resource matches."""
    raise NotImplementedError
