"""The recorder an engine reports its steps to when it is given one (`explain`): the engine writes down what it
decided, as it decides it, in the very run whose results it returns, and `explain` builds its tree from that
recording; nothing re-walks an engine to tell what it did.

Every engine records its explain nodes whole (`node`: matchConstraints or match/exclude blocks, exceptions,
conditions, validations or mutations, result, with the values they saw), and the recording is the tree. The
classic engine records, per rule (`rule`), its match and exclude blocks (classic/match.py `match_state`), pattern
walk (classic/pattern_match.py), conditions (classic/conditions.py) and validate handler (classic/validate.py),
and in the same run puts each policy's tree together from those steps (evaluate/classic/explain.py).
Only `explain` passes one: every hook is behind an `is not None` check, so evaluation without a recorder does
what it did before and costs one comparison per step.

The recorder only writes down; it never decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Step:
    """One thing the engine did: `name` what was checked, `outcome` how it came out, `detail` the values;
    `data` what the engine decided with (an outcome object, an activation, a result), for the tree to show.
    A Step is also an `explain` node: the tree explain prints is made of these (`to_json` is its document),
    whether recorded as they are or assembled from recorded ones."""

    name: str
    outcome: str = ""
    detail: str = ""
    children: list[Step] = field(default_factory=list)
    data: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.outcome:
            out["outcome"] = self.outcome
        if self.detail:
            out["detail"] = self.detail
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


class Trace:
    """Steps nest: `open` starts a step the following ones go under, `close` ends it with its outcome. A
    step left open by an exception is closed by the next `close` of an enclosing step. A `close` never ends
    the tree or rule being recorded (`tree`, `rule`): the steps after it stay in it."""

    def __init__(self) -> None:
        self.root = Step("trace")
        self._stack: list[Step] = [self.root]
        self._floor = 1         # the steps of the stack no `close` pops: the root, or the open tree or rule
        # the steps of each rule evaluated, by (policy key, rule name); a rule evaluated twice keeps the last
        self.rules: dict[tuple[str, str], Step] = {}

    def rule(self, policy: str, rule: str) -> None:
        """Start recording the steps of a rule (the classic evaluator calls this before each validate rule, a CEL
        engine before each variant it evaluates)."""
        step = Step(rule)
        self.rules[(policy, rule)] = step
        self._stack, self._floor = [step], 1

    @property
    def current(self) -> Step:
        """The step open now (the root when none is)."""
        return self._stack[-1]

    def open(self, name: str, detail: str = "") -> Step:
        step = Step(name, detail=detail)
        self._stack[-1].children.append(step)
        self._stack.append(step)
        return step

    def close(self, step: Step, outcome: str, detail: str = "") -> None:
        # a step not open above the floor (closed already, or the tree itself) pops nothing
        while any(s is step for s in self._stack[self._floor:]):
            top = self._stack.pop()
            if top is step:
                break
            if not top.outcome:
                top.outcome = "error"
        step.outcome = outcome
        if detail:
            step.detail = f"{step.detail}; {detail}" if step.detail else detail

    def add(self, name: str, outcome: str, detail: str = "", data: Any = None) -> Step:
        return self.node(Step(name, outcome, detail, data=data))

    def tree(self, name: str, data: Any = None) -> Step:
        """Start a whole tree under the root, the open step from now on: an engine that records one tree per
        policy it runs (the mutating kinds, GeneratingPolicy), `data` what explain needs beside the tree
        (evaluate/explain.py `recorded`)."""
        step = Step(name, data=data)
        self.root.children.append(step)
        self._stack, self._floor = [self.root, step], 2
        return step

    def node(self, step: Step) -> Step:
        """Record a step made whole (an explain node with its children) under the open one."""
        self._stack[-1].children.append(step)
        return step


def shown(value: Any, width: int = 120, go: bool = True) -> str:
    """A value as a step shows it: JSON (`go`: as Go encodes it, a float64 2 is `2`), cut to `width` to be read
    on one line. The one value formatter of explain: its nodes (evaluate/explain.py `show`) are wider and keep
    Python's floats, as they always have."""
    try:
        text = json.dumps(_integral(value) if go else value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value
