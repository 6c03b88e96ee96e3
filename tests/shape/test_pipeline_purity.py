"""The pure stages stay pure (docs/architecture.md#the-pipeline): no click, no kubernetes client, no file reading, no
printing; and only the engine adapter talks to cel-expr-python."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"
PURE = ("evaluate", "expect", "reconcile", "cel", "render")
FORBIDDEN_IMPORTS = ("click", "kubernetes", "kubectl_kyrec.cli", "kubectl_kyrec.load.documents",
                     "kubectl_kyrec.load.run_inputs.state", "kubectl_kyrec.load.files")
FORBIDDEN_CALLS = ("open", "print", "input")
# The I/O edge beside the renderers: it writes what they return to stdout or `-o FORMAT=FILE`, and is the
# only module under the pure packages allowed to (renderers themselves stay `write(result) -> str`).
IO_EDGES = ("render/sink.py",)


def _modules(*packages: str) -> list[Path]:
    # recursive: a module moved into a subpackage (evaluate/<kind>/...) stays checked
    return sorted(p for pkg in packages for p in (PACKAGE / pkg).rglob("*.py")
                  if p.relative_to(PACKAGE).as_posix() not in IO_EDGES)


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", _modules(*PURE), ids=_name)
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


@pytest.mark.parametrize("path", _modules("cli"), ids=_name)
def test_cli_modules_import_no_other_command(path: Path) -> None:
    # the pipeline lives in run/: a command module that needs another one's code has grown a pipeline
    own = "kubectl_kyrec." + _name(path).removesuffix(".py").replace("/", ".")
    bad = [n for n in _imports(ast.parse(path.read_text()))
           if n.startswith("kubectl_kyrec.cli") and n not in (own, *CLI_SHARED)]
    # the entry points (main, and console, which main's `main` now lives in) answer completion requests
    if path.stem in ("main", "console", "completion_cmd"):
        bad = [n for n in bad if n != "kubectl_kyrec.cli.completion_cmd"]
    assert bad == []


@pytest.mark.parametrize("path", _modules("run"), ids=_name)
def test_run_layer_knows_no_cli(path: Path) -> None:
    tree = ast.parse(path.read_text())
    bad = [n for n in _imports(tree) if n == "click" or n.startswith(("kubectl_kyrec.cli", "click."))]
    assert bad == []
    assert [n.func.id for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("print", "exit")] == []


# The stages below run/ take the evaluation time as data (`now`: the run's --now, else its start) and never
# read a clock: the same inputs give the same output whenever they run. Timing for progress (monotonic
# clocks) lives in run/ or render/.
CLOCK_FREE = ("load", "cel", "classic", "evaluate", "expect", "reconcile", "golang", "k8s")
WALL_CLOCK = frozenset({
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today",
    "time.time", "time.time_ns", "time.localtime", "time.gmtime", "time.ctime", "time.asctime", "time.strftime",
    "time.monotonic", "time.monotonic_ns", "time.perf_counter", "time.perf_counter_ns",
})


def _clock_reads(tree: ast.AST) -> list[str]:
    """Each use of a clock (called or passed on as a callable), as `line: qualified name`, the module's
    import aliases resolved (`from datetime import datetime as dt; dt.now` is datetime.datetime.now,
    `from kubectl_kyrec.golang import time as go_time` is not `time`)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})

    def qualified(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute) and (name := qualified(node)) in WALL_CLOCK:
            found.append(f"{node.lineno}: {name}")
    return sorted(set(found))


@pytest.mark.parametrize("path", _modules(*CLOCK_FREE), ids=_name)
def test_pure_stage_reads_no_clock(path: Path) -> None:
    assert _clock_reads(ast.parse(path.read_text())) == [], "take `now` from the caller"


@pytest.mark.parametrize(("source", "found"), [
    ("import datetime\nx = datetime.datetime.now(datetime.UTC)", ["2: datetime.datetime.now"]),
    ("from datetime import datetime as dt\nclock = dt.utcnow", ["2: datetime.datetime.utcnow"]),
    ("from datetime import date\ndate.today()", ["2: datetime.date.today"]),
    ("import time\ntime.time()\ntime.monotonic()", ["2: time.time", "3: time.monotonic"]),
    ("from time import time\nt = time()", ["2: time.time"]),
    ("from kubectl_kyrec.golang import time as go_time\ngo_time.parse_time('', '')", []),
    ("import datetime\ndef f(now: datetime.datetime) -> None:\n    now.astimezone(datetime.UTC)", []),
])
def test_the_clock_check_sees_through_aliases(source: str, found: list[str]) -> None:
    assert _clock_reads(ast.parse(source)) == found


def test_the_checks_cover_every_module_of_the_packages() -> None:
    # counted apart from _modules (os.walk, not Path.glob): a module in a subpackage is checked as well
    import os

    for packages in (PURE, CLOCK_FREE, ("cli",), ("run",)):
        on_disk = {os.path.join(root, f) for pkg in packages for root, _, files in os.walk(PACKAGE / pkg)
                   for f in files if f.endswith(".py")}
        on_disk -= {str(PACKAGE / e) for e in IO_EDGES}
        checked = _modules(*packages)
        assert len(checked) == len(on_disk) and {str(p) for p in checked} == on_disk, packages
        assert all(any(p.relative_to(PACKAGE).parts[0] == pkg for p in checked) for pkg in packages)


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
