"""Kubernetes' CEL regex library (``library.Regex()``): ``<string>.find(re)``, ``.findAll(re[, limit])``.

Patterns compile as Go's ``regexp`` compiles them (golang/regexp.py: RE2, Go's error texts); a pattern Go
refuses is the CEL error ``Illegal regex: <Go's error>``.
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.golang.regexp import RegexSyntaxError, compile_re2, find_all


def _compiled(pattern: str) -> Any:
    try:
        return compile_re2(pattern)
    except RegexSyntaxError as exc:
        raise CelFunctionError(f"Illegal regex: {exc}") from None


def find(text: str, pattern: str) -> str:
    match = _compiled(pattern).search(text)
    return "" if match is None else match.group(0)


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    return find_all(text, _compiled(pattern), limit)


LIBRARY = Library("kubernetes.regex", [
    fn("find", Overload("string_find_string", ["string", "string"], "string", find, member=True)),
    fn("findAll",
       Overload("string_find_all_string", ["string", "string"], "list<string>", _find_all, member=True),
       Overload("string_find_all_string_int", ["string", "string", "int"], "list<string>", _find_all,
                member=True)),
])
