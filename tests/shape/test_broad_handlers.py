"""Handlers that catch everything (`except Exception`, `except BaseException`, a bare `except:`) only at a
boundary that reports: the CLI's top level, a worker process or thread handing its failure to the parent, a
user's own external command, or a cleanup that re-raises. Inside the engines, an error Kyverno itself reports
is an `EngineError` (kubectl_kyrec/errors.py) turned into an `error` result; anything else is a bug in kyrec
and ends the run with exit 70 (tests/consistency/test_handler_boundaries.py injects one into each engine).

A new broad handler fails here: catch the engine's own error type instead, or list it with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"
BROAD = frozenset({"Exception", "BaseException"})

# (file, enclosing function) -> why it catches everything
ALLOWED = {
    ("cli/common.py", "wrapper"):
        "the CLI's top level: a KyrecError is its one line and exit code, anything else exit 70",
    ("cli/completion_cmd.py", "_command"):
        "shell completion: a command module that fails to import must not break completion of the others",
    ("cluster/namespaces.py", "run"):
        "shell completion reading the cluster: no kubeconfig, unreachable, forbidden: completion stays quiet",
    ("cluster/client.py", "connect"):
        "the user's kubeconfig and its exec plugin (an external command): any failure is a cluster error",
    ("cluster/writer.py", "_work"): "a worker thread: whatever it raised is handed to the main thread, raised there",
    ("cluster/lister.py", "work"): "a reader thread: whatever it raised is handed to the main thread, raised there",
    ("evaluate/fan_out.py", "_child_file"): "a worker process: whatever it raised is written to the parent",
    ("render/sink.py", "write_stream"): "cleanup of a temporary file, then re-raised",
    ("evaluate/policy_validation.py", "kept"):
        "re-raised unless the check already recorded an input error (a bad expression left null may trip what "
        "follows it)",
    ("evaluate/policy_validation.py", "_classic_refused"): "the same, for a classic rule's CEL",
    ("cel/engine.py", "call"):
        "a CEL library function: the engine makes any exception an error value, so a bug is kept and raised again "
        "once the engine call returns (an EngineError alone becomes the CEL error)",
}
LIMIT = 12


def _is_broad(node: ast.ExceptHandler) -> bool:
    if node.type is None:
        return True
    types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
    return any(isinstance(t, ast.Name) and t.id in BROAD for t in types)


def _broad_handlers() -> list[tuple[str, str, int]]:
    """(file, innermost enclosing function or <module>, line) of every broad handler."""
    found = []

    def visit(node: ast.AST, file: str, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ExceptHandler) and _is_broad(child):
                found.append((file, func, child.lineno))
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            visit(child, file, inner)

    for path in sorted(PACKAGE.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(PACKAGE)), "<module>")
    return found


def test_broad_handlers_only_at_boundaries() -> None:
    handlers = _broad_handlers()
    unlisted = [f"{file}:{line} in {func}" for file, func, line in handlers if (file, func) not in ALLOWED]
    assert unlisted == [], "a handler that catches everything outside a boundary (catch the engine's error type)"


def test_every_listed_boundary_still_has_its_handler() -> None:
    present = {(file, func) for file, func, _ in _broad_handlers()}
    assert set(ALLOWED) - present == set()


def test_at_most_twelve() -> None:
    handlers = _broad_handlers()
    assert len(handlers) <= LIMIT
    # the count the note gives (issue 35: 70 before, counting BaseException and bare ones; 11 since the live
    # reads' worker threads, issue 36, and the CEL library calls' bug carrier, cel/engine.py)
    assert len(handlers) == 11
