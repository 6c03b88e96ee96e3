"""Lines of nested fields, for messages such as `policy.yaml:14: spec.validations[0]: ...`.

Looked up on demand from the document's YAML nodes, so loading pays nothing unless a message asks.
"""

from __future__ import annotations

from collections.abc import Sequence

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_kyrec.load.yaml_nodes import PLAIN_TAG, node_line
from kubectl_kyrec.load.yaml_scalars import MERGE_TAG, STR_TAG, key_string, resolve_plain, resolve_tagged


class LineIndex:
    """Lines inside one document. Without YAML nodes (JSON input) every path maps to the document line."""

    def __init__(self, line: int, node: Node | None = None) -> None:
        self.line = line
        self._node = node

    def line_of(self, path: Sequence[str | int]) -> int:
        """Line of the field at `path` (keys and list indexes), else of its deepest ancestor found.

        A mapping field gives the line of its key; a list item the line of the item (its first key).
        """
        node, best = self._node, self.line
        for step in path:
            if node is None:
                break
            found = _child(node, step)
            if found is None:
                break
            best, node = found
        return best


def _child(node: Node, step: str | int) -> tuple[int, Node] | None:
    if isinstance(node, SequenceNode) and isinstance(step, int):
        if -len(node.value) <= step < len(node.value):
            item = node.value[step]
            return node_line(item), item
        return None
    if not isinstance(node, MappingNode) or not isinstance(step, str):
        return None
    merges: list[Node] = []
    found: tuple[int, Node] | None = None
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            continue
        if key_node.value == "<<" and key_node.tag in (PLAIN_TAG, MERGE_TAG):
            merges.append(value_node)
        elif _key(key_node) == step:
            found = (int(key_node.start_mark.line) + 1, value_node)  # the last duplicate would win
    if found is not None:
        return found
    for merge in merges:  # a field that came in through `<<: *anchor` is found where the anchor is
        for source in (merge.value if isinstance(merge, SequenceNode) else [merge]):
            hit = _child(source, step)
            if hit is not None:
                return hit
    return None


def _key(node: ScalarNode) -> str | None:
    try:
        if node.tag == STR_TAG:
            return str(node.value)
        if node.tag == PLAIN_TAG:
            return key_string(resolve_plain(node.value))
        return key_string(resolve_tagged(node.tag, node.value))
    except ValueError:
        return None
