"""The pure stages stay pure (docs/architecture.md#the-pipeline): no click, no kubernetes client, no file reading, no
printing; and only the engine adapter talks to cel-expr-python."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"
PURE = ("evaluate", "expect", "reconcile", "cel", "render")
FORBIDDEN_IMPORTS = ("click", "kubernetes", "kubectl_kyrec.cli", "kubectl_kyrec.load.documents",
                     "kubectl_kyrec.load.state", "kubectl_kyrec.load.files")
FORBIDDEN_CALLS = ("open", "print", "input")
# The I/O edge beside the renderers: it writes what they return to stdout or `-o FORMAT=FILE`, and is the
# only module under the pure packages allowed to (renderers themselves stay `write(result) -> str`).
IO_EDGES = ("render/sink.py",)


def _modules(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (PACKAGE / pkg).glob("*.py")
                  if p.relative_to(PACKAGE).as_posix() not in IO_EDGES)


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", _modules(*PURE), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_stage_module(path: Path) -> None:
    tree = ast.parse(path.read_text())
    bad = [n for n in _imports(tree) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN_IMPORTS)]
    assert bad == []
    calls = [n.func.id for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FORBIDDEN_CALLS]
    assert calls == []


def test_only_the_adapter_imports_the_engine() -> None:
    users = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
             if any(n.startswith("cel_expr_python") for n in _imports(ast.parse(p.read_text())))]
    assert users == ["cel/engine.py"]


CLI_SHARED = ("kubectl_kyrec.cli.common", "kubectl_kyrec.cli.flags", "kubectl_kyrec.cli.main",
              "kubectl_kyrec.cli.ci_outputs",
              "kubectl_kyrec.cli.terminal", "kubectl_kyrec.cli.external_diff", "kubectl_kyrec.cli.output_targets",
              "kubectl_kyrec.cli.quick_exit", "kubectl_kyrec.cli.console")


@pytest.mark.parametrize("path", _modules("cli"), ids=lambda p: f"cli/{p.name}")
def test_cli_modules_import_no_other_command(path: Path) -> None:
    # the pipeline lives in run/: a command module that needs another one's code has grown a pipeline
    own = f"kubectl_kyrec.cli.{path.stem}"
    bad = [n for n in _imports(ast.parse(path.read_text()))
           if n.startswith("kubectl_kyrec.cli") and n not in (own, *CLI_SHARED)]
    # the entry points (main, and console, which main's `main` now lives in) answer completion requests
    if path.stem in ("main", "console", "completion_cmd"):
        bad = [n for n in bad if n != "kubectl_kyrec.cli.completion_cmd"]
    assert bad == []


@pytest.mark.parametrize("path", _modules("run"), ids=lambda p: f"run/{p.name}")
def test_run_layer_knows_no_cli(path: Path) -> None:
    tree = ast.parse(path.read_text())
    bad = [n for n in _imports(tree) if n == "click" or n.startswith(("kubectl_kyrec.cli", "click."))]
    assert bad == []
    assert [n.func.id for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("print", "exit")] == []


# declared dependencies whose module name is not the distribution name (lower case, `-` as `_`)
IMPORT_NAMES = {"PyYAML": "yaml", "google-re2": "re2"}
# declared and not imported, with why
NOT_YET_IMPORTED: dict[str, str] = {}


def test_every_declared_dependency_is_used() -> None:
    import re
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    declared = [re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0] for d in project["dependencies"]]
    imported = {n.split(".")[0] for p in PACKAGE.rglob("*.py") for n in _imports(ast.parse(p.read_text()))}

    def module(dist: str) -> str:
        return IMPORT_NAMES.get(dist, dist.lower().replace("-", "_"))

    unused = [d for d in declared if module(d) not in imported and d not in NOT_YET_IMPORTED]
    assert unused == [], "declared but imported nowhere (or imported under another name: see IMPORT_NAMES)"
