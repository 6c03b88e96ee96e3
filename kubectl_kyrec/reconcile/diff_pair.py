"""What a unified diff shows, as data: two masked versions of one thing and the name kubectl diff gives it.

Reconcile decides what changed and masks it (reconcile.masking); the text (`--- live/<name>`,
`+++ merged/<name>`, or the YAML files `KUBECTL_EXTERNAL_DIFF` compares) is written at the rendering edge
(render/unified_diff.py), and only by the outputs that print it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Layout(enum.StrEnum):
    # a Kubernetes object: keys sorted, as kubectl prints objects (through JSON)
    OBJECT = "object"
    # a report's results: in Kyverno's report order, each result's keys in the order a report lists them
    RESULTS = "results"


@dataclass(frozen=True, eq=False)
class DiffPair:
    """`before` and `after` are masked (no Secret value, no last-applied annotation) and may share unchanged
    parts with the objects they were built from: read them, never change them."""

    name: str               # kubectl diff's file name: <group>.<version>.<Kind>.<namespace>.<name>
    before: Any
    after: Any
    layout: Layout = Layout.OBJECT
    before_dir: str = "live"
    after_dir: str = "merged"


DiffText = Callable[[DiffPair | None], str | None]
"""The renderer's function from a pair to its unified diff (None: nothing to show)."""
