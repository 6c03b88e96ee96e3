"""`explain`: why a policy did (or did not) apply to a subject, as a tree of the decisions taken (issue 27).

A tree never decides anything itself: each policy kind's tracer (explain_*.py) re-evaluates the programs the
evaluator compiled, read-only, to show the values, and takes the final result from the very evaluation
`eval` runs, so `explain` can never disagree with `eval`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.k8s.labels import SelectorError, matches_selector, selector_is_empty
from kubectl_kyrec.model import Ref, Result

# the outcomes a node states; a value (a CEL result) is shown as its JSON text instead
MATCHED, NOT_MATCHED, ERROR, NONE, NOT_EVALUATED = "matched", "not matched", "error", "none", "not evaluated"


@dataclass
class Node:
    """One decision: what was checked (`name`), how it came out (`outcome`), why (`detail`), and the
    decisions it was made of."""

    name: str
    outcome: str = ""
    detail: str = ""
    children: list[Node] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.outcome:
            out["outcome"] = self.outcome
        if self.detail:
            out["detail"] = self.detail
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass
class Explanation:
    """One policy x one subject: its tree and the results `eval` gives for the pair."""

    policy: str             # key: name or ns/name
    policy_kind: str
    subject: Ref
    tree: Node
    results: list[Result]

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "policyKind": self.policy_kind, "subject": self.subject.to_json(),
                "tree": self.tree.to_json(),
                "results": [{"rule": r.rule, "result": r.result, "message": r.message} for r in self.results]}


def show(value: Any) -> str:
    """A value as a node shows it: JSON-like, short enough to read on one line."""
    import json

    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def matched(ok: bool) -> str:
    return MATCHED if ok else NOT_MATCHED


def result_node(result: Result | None, absent: str = "no result: the policy does not apply") -> Node:
    if result is None:
        return Node("result", NONE, absent)
    rule = f"rule {result.rule!r}: " if result.rule else ""
    return Node("result", result.result, f"{rule}{result.message}")


def selector_node(name: str, selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None,
                  whose: str) -> Node:
    """A label selector against the labels it sees; `whose`: whose labels they are, for the detail."""
    if selector_is_empty(selector):
        return Node(name, MATCHED, "empty: selects everything")
    if labels is None:
        return Node(name, MATCHED, f"does not apply: {whose}")
    try:
        ok = matches_selector(selector, labels)
    except SelectorError as exc:
        return Node(name, ERROR, str(exc))
    return Node(name, matched(ok), f"{show(dict(selector or {}))} on {whose} labels {show(dict(labels))}")


_OPEN, _CLOSE = "([{", ")]}"


def top_level_operands(text: str) -> tuple[str, list[str]]:
    """A CEL expression's operands of its outermost `||` (or else `&&`), outside brackets and strings, and
    that operator; ("", [text]) when it has none (or a ternary at the top, which binds looser)."""
    for op in ("||", "&&"):
        parts: list[str] = []
        depth, start, i, quote = 0, 0, 0, ""
        while i < len(text):
            c = text[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth -= 1
            elif depth == 0 and c == "?":
                return "", [text]
            elif depth == 0 and text.startswith(op, i):
                parts.append(text[start:i].strip())
                start = i + 2
                i += 2
                continue
            i += 1
        if parts:
            parts.append(text[start:].strip())
            return op, parts
    return "", [text]


_SPACE = re.compile(r"\s+")


def one_line(text: str) -> str:
    """An expression as a node names it: on one line."""
    return _SPACE.sub(" ", text).strip()
