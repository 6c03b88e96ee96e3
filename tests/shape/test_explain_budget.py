"""Explain-only code has a budget (issue 35: at most 600 lines, the renderer included): every engine records its
explain nodes where it decides (recording.py), so what exists only for `explain` is the shared node vocabulary,
the run that drives the engines with a recorder, the classic kind's tree assembly and the one renderer. The
recording calls inside the engines (`recorder is not None` branches) are not counted: they are the engines'.

Counted: the lines of the modules and functions below that are neither blank nor a comment (docstrings count).
A module or function that is explain-only is added to the list; the limit only goes down (it rose for two fixes
and once when code found explain-only was counted: see FUNCTIONS and LIMIT).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"
# whole modules that exist only for `explain` (cli/explain_cmd.py, the command's flags, is not counted: neither
# was it in the figure of 718 lines, counted with wc -l over the four modules before the classic one)
MODULES = ("evaluate/explain.py", "evaluate/explain_pairs.py", "evaluate/classic/explain.py", "run/explain.py",
           "render/explain_output.py")
# explain-only functions and classes inside modules that are not: (module, qualified name)
FUNCTIONS = (("evaluate/classic/engine.py", "ClassicEvaluator.explain"),
             # explain's trees ending in eval's verdict where the admitted object is unknown (an explain/eval
             # disagreement fixed after the limit was 669: the limit rose by these lines, the only time it did)
             ("evaluate/pipeline.py", "_Admitted.recorded"), ("evaluate/pipeline.py", "_result_nodes"),
             # the protocol run_eval drives explain's recorder through (a class: counted whole since 650)
             ("evaluate/pipeline.py", "RunRecorder"))
# where it stands now (a ratchet), and issue 35's goal
# 650 after explain9; +5 for the objectSelector node that said `not matched` on an UPDATE the engine matched by
# the old object's labels (a fix), +11 for RunRecorder, explain-only and uncounted until then
LIMIT = 666
GOAL = 600


def _code_lines(lines: list[str]) -> int:
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def _function_lines(path: Path, qualname: str) -> list[str]:
    source = path.read_text()
    node: ast.AST = ast.parse(source)
    for part in qualname.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == part)
    assert isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.end_lineno is not None
    return source.splitlines()[node.lineno - 1 - len(node.decorator_list):node.end_lineno]


def explain_only_lines() -> dict[str, int]:
    counts = {m: _code_lines((PACKAGE / m).read_text().splitlines()) for m in MODULES}
    counts.update({f"{m}:{q}": _code_lines(_function_lines(PACKAGE / m, q)) for m, q in FUNCTIONS})
    return counts


def test_the_counted_code_exists() -> None:
    counts = explain_only_lines()
    assert all(n > 0 for n in counts.values()), counts
    # no explain module outside the list (a tree.py, an explain_*.py)
    found = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if p.name == "tree.py" or "explain" in p.stem and p.parent.name != "cli"}
    assert found == set(MODULES)


def test_explain_only_code_stays_within_its_limit() -> None:
    counts = explain_only_lines()
    assert sum(counts.values()) <= LIMIT, counts


@pytest.mark.xfail(strict=True, reason="issue 35's goal is not met yet: LIMIT above is where it stands")
def test_explain_only_code_meets_the_goal() -> None:
    assert sum(explain_only_lines().values()) <= GOAL
