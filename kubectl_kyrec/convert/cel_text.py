"""CEL source text for the converter: literals, field selection, null-safe paths, wildcard patterns.

Paths on `object`/`oldObject` are written as plain selections guarded by `has()` (never `object.?spec`):
Kyverno's autogen rewrites the text `object.spec` into the pod template's path (kk: pkg/cel/autogen), and
an optional selection would escape that rewrite."""

from __future__ import annotations

import json
import re
from typing import Any

from kubectl_kyrec.cel.top_level import has_conditional, operands
from kubectl_kyrec.golang.wildcard import contains_wildcard

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# CEL reserved words cannot be selected with `.`
_RESERVED = {"in", "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop",
             "package", "namespace", "return", "var", "void", "while", "true", "false", "null"}


class Unconvertible(Exception):
    """A construct with no exact CEL translation: `field` names it in the policy, the message says why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


def literal(value: Any) -> str:
    """A JSON value as a CEL literal (strings single-quoted, as Kyverno's policies write them)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(str(k))}: {literal(v)}" for k, v in value.items()) + "}"
    raise Unconvertible("value", f"{type(value).__name__} has no CEL literal")


def selectable(key: str) -> bool:
    return bool(_IDENT.match(key)) and key not in _RESERVED


def select(base: str, key: str) -> str:
    return f"{base}.{key}" if selectable(key) else f"{base}[{literal(key)}]"


def has(base: str, key: str) -> str:
    return f"has({base}.{key})" if selectable(key) else f"{literal(key)} in {base}"


def present(base: str, key: str) -> str:
    """The key is there and not null: a pattern's missing key and its null value are one case in Kyverno
    (the resource map's lookup gives nil for both)."""
    return f"({has(base, key)} && {select(base, key)} != null)"


def path_value(base: str, keys: list[str]) -> str:
    """`base.k1.k2` or null when any step is missing: JMESPath's answer for a missing key."""
    if not keys:
        return base
    guards = []
    current = base
    for key in keys:
        guards.append(has(current, key))
        current = select(current, key)
    return f"({' && '.join(guards)} ? {current} : null)"


def wildcard_as_re2(pattern: str) -> str:
    """Kyverno's wildcard (`*` any run, `?` one character; kk: ext/wildcard) as an anchored RE2 pattern."""
    out = []
    for ch in pattern:
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return "^" + "".join(out) + "$"


def has_wildcard(text: str) -> bool:
    return contains_wildcard(text)


def conj(parts: list[str]) -> str:
    """`a && b ...`, parenthesizing only an operand whose top level needs it (CEL parsers limit nesting);
    an operand that is itself a chain of `&&` is joined flat, and an operand met before is left out (CEL's
    `&&` is commutative, errors included)."""
    parts = [q for p in parts for q in (operands(p, "&&") if _flat(p, "&&") else [p]) if q != "true"]
    if "false" in parts:
        return "false"
    return " && ".join(p if _flat(p, "&&") else f"({p})" for p in dict.fromkeys(parts)) or "true"


def disj(parts: list[str]) -> str:
    parts = [p for p in parts if p != "false"]
    if "true" in parts:
        return "true"
    return " || ".join(p if _flat(p, "||") else f"({p})" for p in dict.fromkeys(parts)) or "false"


def _flat(text: str, joiner: str) -> bool:
    """The text needs no parentheses as an operand of `joiner`: no top-level `?:`, nor `||` under `&&`."""
    return not has_conditional(text) and not (joiner == "&&" and len(operands(text, "||")) > 1)


def negate(expr: str) -> str:
    if expr == "true":
        return "false"
    if expr == "false":
        return "true"
    return f"!({expr})"
