"""evaluate/ is laid out by policy kind (docs/architecture.md#layers-and-what-each-owns), as Kyverno lays out
its own engines (pkg/cel/policies/{vpol,mpol,gpol,dpol,ivpol}): one package per kind holding its engine and
its explain tree (a tree.py, or the nodes the engine records), and beside them only what the kinds share, at
most 12 modules.

Names say what a module is: no two modules (or packages) side by side whose names differ only by an
inflection (`subject`/`subjects`, `mutation`/`mutating`, `classic_generate`/`classic_generating` were such
pairs): one of them is renamed for what it does, or the two are one module.
"""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

import pytest

EVALUATE = Path(__file__).resolve().parents[2] / "kubectl_kyrec" / "evaluate"
KINDS = ("validating", "validating_admission", "mutating", "mutating_admission", "generating", "deleting",
         "image_validating", "classic")
SHARED_LIMIT = 12
# an inflection at the end of a name's last word: what makes `subject`/`subjects` or `mutation`/`mutating`
# one name
_INFLECTION = re.compile(r"(?:ions|ion|ings|ing|es|ed|s|e)$")


def _stem(name: str) -> str:
    head, _, last = name.rpartition("_")
    stem = _INFLECTION.sub("", last)
    return f"{head}_{stem if len(stem) >= 3 else last}" if head else (stem if len(stem) >= 3 else last)


def inflected_pairs(names: list[str]) -> list[tuple[str, str]]:
    """The pairs of distinct names that differ only by an inflection of their last word."""
    return [(a, b) for a, b in combinations(sorted(set(names)), 2) if _stem(a) == _stem(b)]


def _shared_modules() -> list[str]:
    return sorted(p.stem for p in EVALUATE.glob("*.py") if p.name != "__init__.py")


def _directories() -> list[Path]:
    return [EVALUATE, *sorted(p.parent for p in EVALUATE.rglob("__init__.py") if p.parent != EVALUATE)]


def _entries(directory: Path) -> list[str]:
    """The modules and packages directly in `directory`, by name."""
    return sorted(p.stem for p in directory.iterdir()
                  if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file())


def test_every_kind_is_a_package_with_its_engine_and_tree() -> None:
    # the tree is a tree.py of the kind, or the engine's own recording: an engine that records its explain nodes
    # as it decides (recording.py's `node`) needs a tree.py only for what the recording does not say
    for kind in KINDS:
        package = EVALUATE / kind
        assert (package / "__init__.py").is_file(), kind
        assert (package / "engine.py").is_file(), kind
        # (classic: the engine's run puts each policy's tree together in evaluate/classic/explain.py)
        records_nodes = any("recorder.node(" in p.read_text() for p in package.glob("*.py"))
        assert (package / "tree.py").is_file() or records_nodes, kind


def test_the_packages_of_evaluate_are_the_kinds() -> None:
    # a new folder beside the kinds is a new kind (add it above) or belongs in one
    packages = sorted(p.name for p in EVALUATE.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(KINDS)
    assert not any(p.is_dir() for kind in KINDS for p in (EVALUATE / kind).iterdir() if p.name != "__pycache__")


def test_at_most_twelve_shared_modules() -> None:
    shared = _shared_modules()
    assert len(shared) <= SHARED_LIMIT, shared
    # no kind's engine or tree directly in evaluate/ (the flat layout's names)
    assert [m for m in shared if m.startswith(("explain_", "classic_")) and m != "explain_pairs"] == []
    assert not set(shared) & set(KINDS)


def test_no_two_names_side_by_side_differ_by_an_inflection() -> None:
    found = {str(d.relative_to(EVALUATE.parent)): pairs
             for d in _directories() if (pairs := inflected_pairs(_entries(d)))}
    assert found == {}
    # the scan saw every directory and every module: each .py file but evaluate/'s own __init__.py is one entry
    # (a module, or a kind package by its __init__.py)
    assert len(_directories()) == len(KINDS) + 1
    assert sum(len(_entries(d)) for d in _directories()) == len(list(EVALUATE.rglob("*.py"))) - 1


@pytest.mark.parametrize(("names", "pairs"), [
    (["subject", "subjects"], [("subject", "subjects")]),
    (["mutation", "mutating", "match"], [("mutating", "mutation")]),
    (["classic_generate", "classic_generating"], [("classic_generate", "classic_generating")]),
    (["explain", "explained", "namespaces", "namespace"], [("explain", "explained"), ("namespace", "namespaces")]),
    (["explain", "explain_pairs", "engine", "tree", "generate_objects", "generate_triggers"], []),
    (["validating", "policy_validation", "is", "as"], []),
])
def test_the_inflection_rule(names: list[str], pairs: list[tuple[str, str]]) -> None:
    assert inflected_pairs(names) == pairs
