"""One reading of a CEL text's top level for explain's operands and convert's joins (cel/top_level.py)."""

from __future__ import annotations

import pytest

from kubectl_kyrec.cel.top_level import has_conditional, operands
from kubectl_kyrec.convert.cel_text import conj, disj
from kubectl_kyrec.evaluate.explain import top_level_operands


@pytest.mark.parametrize(("text", "expected"), [
    ("a || b", ("||", ["a", "b"])),
    ("a&&b && c", ("&&", ["a", "b", "c"])),
    # `||` binds looser than `&&`: the outermost chain is the `||` one
    ("a && b || c", ("||", ["a && b", "c"])),
    ("f(a || b) && 'x || y' == s", ("&&", ["f(a || b)", "'x || y' == s"])),
    ('"it\\"s || no" == s || t', ("||", ['"it\\"s || no" == s', "t"])),
    # a conditional binds the whole text
    ("a ? b || c : d", ("", ["a ? b || c : d"])),
    # optional field selection is not a conditional (explain read `.?` as one before the shared scan)
    ("object.?spec.replicas.orValue(1) > 0 || x", ("||", ["object.?spec.replicas.orValue(1) > 0", "x"])),
    ("m[?'k'].orValue(0) == 1 && y", ("&&", ["m[?'k'].orValue(0) == 1", "y"])),
])
def test_explain_names_the_operands_of_the_outermost_chain(text: str, expected: tuple[str, list[str]]) -> None:
    assert top_level_operands(text) == expected


def test_the_scan_ignores_quotes_and_brackets() -> None:
    assert not has_conditional("'a ? b' == s && f(x ? 1 : 2) == 1")
    assert has_conditional("s == 'a' ? 1 : 2")
    assert operands("[a || b, c] == l", "||") == ["[a || b, c] == l"]


def test_convert_joins_with_the_same_reading() -> None:
    # an `||` chain under `&&` is parenthesised, an `&&` chain under `&&` is joined flat, a conditional kept whole
    assert conj(["a || b", "c && d", "x ? y : z"]) == "(a || b) && c && d && (x ? y : z)"
    assert disj(["a && b", "c||d", "object.?x.orValue(true)"]) == "a && b || c||d || object.?x.orValue(true)"
    assert conj(["object.?a.orValue(1) == 1 && b", "b"]) == "object.?a.orValue(1) == 1 && b"
