"""The packages are layers (docs/architecture.md#layers-and-what-each-owns): each imports only the packages below it,
counting every import (inside functions and under TYPE_CHECKING too: a type named upward is a dependency upward all the
same).

No exceptions list: a new upward import fails here, and the fix is to move the thing down (a data type into
`model.py` or `load/`, a Go helper into `golang/`), or to let the layer above compose the two."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"

# bottom first; members of one group import nothing of each other. The bottom is model < errors (errors
# carry a model.Source) < golang (Go emulation) < k8s (Kubernetes' rules, written in Go's formats).
LAYERS: tuple[tuple[str, ...], ...] = (
    # recording.py: the recorder every engine (classic/ and evaluate/) reports its steps to for `explain`
    ("model", "recording"),
    ("errors",),
    ("golang",),
    ("k8s", "interrupts"),
    ("load",),
    ("cel",),
    # classic rules embed CEL (validate.cel, celPreconditions): the classic engine sits on the CEL one
    ("classic",),
    # policy -> policy: the converter reads classic rules (anchors, scalar patterns) and writes CEL text
    ("convert",),
    ("evaluate",),
    ("expect",),
    ("reconcile",),
    ("producers",),
    # render formats a test run's rows; run/test.py composes the suite runner with the rest
    ("testsuite",),
    ("render",),
    ("cluster",),
    ("run",),
    ("cli",),
    ("__main__",),
)
RANK = {name: rank for rank, group in enumerate(LAYERS) for name in group}


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_units(path: Path) -> list[tuple[str, int]]:
    rel = path.relative_to(PACKAGE)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel.parts[:-1])[:len(rel.parts) - node.level]
                names = [".".join(["kubectl_kyrec", *base, *([node.module] if node.module else [])])]
                if not node.module:
                    names = [f"{names[0]}.{a.name}" for a in node.names]
            elif node.module:
                names = [node.module]
                if node.module == "kubectl_kyrec":
                    names = [f"kubectl_kyrec.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "kubectl_kyrec" and len(parts) > 1:
                out.append((parts[1], node.lineno))
    return out


def _edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _unit(path)
        if source == "__init__":
            continue
        for target, line in _imported_units(path):
            if target != source and target != "__init__":
                edges[(source, target)].append(f"{path.relative_to(PACKAGE)}:{line}")
    return edges


def test_every_package_has_a_layer() -> None:
    units = {_unit(p) for p in PACKAGE.rglob("*.py")} - {"__init__"}
    assert sorted(units - RANK.keys()) == []


def test_imports_go_down_only() -> None:
    upward = {f"{s} -> {t}": where for (s, t), where in _edges().items()
              if s in RANK and t in RANK and RANK[t] >= RANK[s]}
    assert upward == {}


def test_no_two_packages_import_each_other() -> None:
    # implied by the ordering, kept as its own statement: a cycle is what the layering exists to prevent
    graph: dict[str, set[str]] = defaultdict(set)
    for s, t in _edges():
        graph[s].add(t)

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(graph.get(node, ()))
        return False

    cycles = sorted(f"{s} <-> {t}" for s in list(graph) for t in graph[s] if s < t and reaches(t, s))
    assert cycles == []
