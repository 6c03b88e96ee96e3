"""`explain`'s text: each policy x subject as a tree of its decisions (the JSON document holds the same tree).

    ValidatingPolicy check-labels  x  Pod default/nginx
    ├─ rule check-labels
    │  ├─ matchConstraints: matched  (request CREATE v1 pods 'nginx' in namespace default)
    ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.explain import Explanation
    from kubectl_kyrec.recording import Step


def _line(node: Step) -> str:
    text = node.name
    if node.outcome:
        text += f": {node.outcome}"
    if node.detail:
        text += f"  ({node.detail})"
    return text


def _write_children(node: Step, prefix: str, stream: TextIO) -> None:
    for i, child in enumerate(node.children):
        last = i == len(node.children) - 1
        stream.write(f"{prefix}{'└─ ' if last else '├─ '}{_line(child)}\n")
        _write_children(child, prefix + ("   " if last else "│  "), stream)


def write_text(explanations: Sequence[Explanation], stream: TextIO) -> None:
    if not explanations:
        stream.write("Nothing to explain: no policy and subject were picked.\n")
        return
    for i, explanation in enumerate(explanations):
        if i:
            stream.write("\n")
        stream.write(f"{_line(explanation.tree)}  x  {explanation.subject.display()}\n")
        _write_children(explanation.tree, "", stream)
