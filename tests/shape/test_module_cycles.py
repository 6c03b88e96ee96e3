"""No two modules import each other, directly or round a circle: test_layers.py holds the packages in order,
this holds the files inside each package.

Every import counts: at module level, inside functions (an import moved into a function only postpones the
circle to the first call) and under `if TYPE_CHECKING:` (a type named is a dependency all the same, as in
test_layers.py; left out, the circle would hide there instead). The fix for a circle is to move the shared
piece down into a module both import, not to hide the import."""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str, path: Path, source: str | None = None) -> list[tuple[str, int]]:
    """(imported kubectl_kyrec module, line) for every import statement of the file, wherever it stands.
    `from pkg import name` is the module pkg.name when there is one, else pkg itself."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            out.extend((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1], *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            out.extend((f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base, node.lineno)
                       for a in node.names)
    return [(target, line) for target, line in out if target in MODULES and target != module]


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: the line of its first import}"""
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for module, path in MODULES.items():
        for target, line in _imports(module, path):
            graph[module].setdefault(target, line)
    return graph


def _strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative: the graph is a few hundred modules deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, {})))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


def _a_circle(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """One circle through the component's first module, each step as `file:line` of the import:
    `load/policy/policies.py:720 -> load/policy/classic.py:19 -> load/policy/policies.py`."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for succ in sorted(graph.get(node, {})):
            if succ == start:
                steps = [*paths[node], start]
                shown = [f"{MODULES[a].relative_to(PACKAGE)}:{graph[a][b]}" for a, b in zip(steps, steps[1:])]
                return " -> ".join([*shown, str(MODULES[start].relative_to(PACKAGE))])
            if succ in members and succ not in paths:
                paths[succ] = [*paths[node], succ]
                queue.append(succ)
    raise AssertionError(f"no circle through {start}")


def test_every_module_is_in_the_graph() -> None:
    on_disk = [f for _, _, files in os.walk(PACKAGE) for f in files if f.endswith(".py")]
    assert len(MODULES) == len(on_disk) > 250


def test_no_file_level_circles() -> None:
    graph = _graph()
    circles = [_a_circle(graph, c) for c in _strongly_connected(graph)]
    assert circles == [], "move the shared piece into a module both import:\n" + "\n".join(circles)


@pytest.mark.parametrize(("edges", "circles"), [
    ({"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}, [["a", "b", "c"]]),
    ({"a": {"b": 1}, "b": {"c": 2}, "d": {"a": 4}}, []),
    ({"a": {"b": 1}, "b": {"a": 2}, "c": {"d": 3}, "d": {"c": 4}}, [["a", "b"], ["c", "d"]]),
])
def test_the_circle_finder(edges: dict[str, dict[str, int]], circles: list[list[str]],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(globals(), "MODULES", {m: PACKAGE / f"{m}.py" for m in "abcd"})
    assert _strongly_connected(defaultdict(dict, edges)) == circles
    for component in circles:
        assert _a_circle(defaultdict(dict, edges), component).startswith(f"{component[0]}.py:")


@pytest.mark.parametrize(("source", "found"), [
    # the circles this file exists for hid in functions and under TYPE_CHECKING
    ("def f():\n    from kubectl_kyrec.load import documents", [("kubectl_kyrec.load.documents", 2)]),
    ("if TYPE_CHECKING:\n    from kubectl_kyrec.model import Source", [("kubectl_kyrec.model", 2)]),
    ("class C:\n    def m(self):\n        import kubectl_kyrec.errors", [("kubectl_kyrec.errors", 3)]),
    ("from . import documents\nfrom .schema import tables", [("kubectl_kyrec.load.documents", 1),
                                                             ("kubectl_kyrec.load.schema.tables", 2)]),
    ("from ..model import Source", [("kubectl_kyrec.model", 1)]),
    ("import json\nfrom kubectl_kyrec.load.run_inputs.sources import nothing_such",
     [("kubectl_kyrec.load.run_inputs.sources", 2)]),
])
def test_every_import_is_an_edge(source: str, found: list[tuple[str, int]]) -> None:
    path = PACKAGE / "load" / "example.py"
    assert _imports("kubectl_kyrec.load.example", path, source) == found
