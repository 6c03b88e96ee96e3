"""Where a CEL text's operators sit at its top level (outside string literals and brackets): the operands of a
chain of `||` or `&&`, and whether a conditional `?:` binds the whole text. explain names a validation's operands
with it and convert joins the expressions it writes with it, so both read CEL's precedence the same way.

A scan of the text, not a parse: the texts are expressions that compiled (explain) or that convert wrote itself.
A raw or triple-quoted string is read as a plain one, which matters only for a quote character inside it."""

from __future__ import annotations

from collections.abc import Iterator

_OPEN, _CLOSE = "([{", ")]}"


def _top_level(text: str) -> Iterator[int]:
    """The indices of the characters of `text` outside string literals and brackets."""
    depth, i, quote = 0, 0, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1  # the escaped character cannot end the literal
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0:
            yield i
        i += 1


def has_conditional(text: str) -> bool:
    """A `?:` at the top level, which binds looser than `||` and `&&` (`.?`, optional field selection, is not one)."""
    return any(text[i] == "?" and text[i - 1:i] != "." for i in _top_level(text))


def operands(text: str, operator: str) -> list[str]:
    """The operands of `text` as a chain of `operator` (`||` or `&&`) at the top level; [text] when it has none.
    The caller knows no looser operator is at the top (has_conditional, or `||` around an `&&` chain)."""
    out, start = [], 0
    for i in _top_level(text):
        if i >= start and text.startswith(operator, i):
            out.append(text[start:i].strip())
            start = i + len(operator)
    out.append(text[start:].strip())
    return out
