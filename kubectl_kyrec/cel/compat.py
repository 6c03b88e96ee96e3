"""Kyverno's `orValue` compatibility macro (docs/semantics/cel-libraries.md#kubernetes-and-cel-gos-libraries):
`x.orValue(y)` is `x` when x is not optional.

cel-go expands it at parse time once the checker knows x's type. Our engine cannot add an overload for
non-optional receivers (its built-in `orValue` wins at run time), so the expression text is rewritten
before compiling: a receiver whose own text can produce no optional (no `?` selection or index, no
`optional.` call, no variable that might hold one) is kept and the `.orValue(...)` call dropped.
Receivers that may be optional are left for the engine's real `orValue`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kubectl_kyrec.golang.fmt import sprint as go_value_text  # cel-go missingKey: `no such key: %v`

_IDENT_CHARS = re.compile(r"[A-Za-z0-9_]")
_CALL = ".orValue("


def skip_string(text: str, i: int) -> int:
    """Index just past the CEL string literal starting at text[i] (after any r/b prefixes)."""
    quote = text[i]
    raw = i > 0 and text[i - 1] in "rR"
    if text.startswith(quote * 3, i):
        end = text.find(quote * 3, i + 3)
        return len(text) if end < 0 else end + 3
    j = i + 1
    while j < len(text):
        if text[j] == "\\" and not raw:
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        j += 1
    return j


def _string_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    i = 0
    while i < len(text):
        if text[i] in "'\"":
            end = skip_string(text, i)
            spans.append((i, end))
            i = end
        else:
            i += 1
    return spans


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a <= pos < b for a, b in spans)


def _receiver_start(text: str, dot: int, spans: list[tuple[int, int]]) -> int:
    """Start index of the member-access chain that ends just before `dot`."""
    i = dot
    while True:
        j = i - 1
        while j >= 0 and text[j] in " \t\r\n":
            j -= 1
        if j < 0:
            return i
        if text[j] in ")]":
            depth = 0
            k = j
            while k >= 0:
                if _inside(spans, k):
                    k -= 1
                    continue
                if text[k] in ")]":
                    depth += 1
                elif text[k] in "([":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            if k < 0:
                return i
            i = k
            # a call or index: keep walking over the name before it
            continue
        if _IDENT_CHARS.match(text[j]):
            k = j
            while k >= 0 and _IDENT_CHARS.match(text[k]):
                k -= 1
            i = k + 1
            prev = k
            while prev >= 0 and text[prev] in " \t\r\n":
                prev -= 1
            if prev >= 0 and text[prev] == "?" and prev > 0 and text[prev - 1] == ".":
                i = prev - 1
                continue
            if prev >= 0 and text[prev] == ".":
                i = prev
                continue
            return i
        return i


def _call_end(text: str, open_paren: int, spans: list[tuple[int, int]]) -> int:
    depth = 0
    k = open_paren
    while k < len(text):
        if _inside(spans, k):
            k += 1
            continue
        if text[k] in "([{":
            depth += 1
        elif text[k] in ")]}":
            depth -= 1
            if depth == 0:
                return k
        k += 1
    return -1


_VARIABLE = re.compile(r"\bvariables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


def may_be_optional(text: str, plain_variables: frozenset[str] = frozenset()) -> bool:
    """Could this expression text evaluate to an optional? (conservative: yes when unsure)"""
    if "?" in text or "optional." in text:
        return True
    return any(name not in plain_variables for name in _VARIABLE.findall(text)) or \
        ("variables" in text and not _VARIABLE.search(text))


def rewrite_or_value(text: str, plain_variables: frozenset[str] = frozenset()) -> str:
    """Drop `.orValue(y)` after receivers that cannot be optional; everything else stays as written.

    `plain_variables` names the policy variables whose expressions cannot produce an optional.
    """
    if _CALL not in text:
        return text
    pos = len(text)
    while True:
        spans = _string_spans(text)
        dot = text.rfind(_CALL, 0, pos)
        if dot < 0:
            return text
        pos = dot
        if _inside(spans, dot):
            continue
        start = _receiver_start(text, dot, spans)
        receiver = text[start:dot]
        if not receiver.strip() or may_be_optional(receiver, plain_variables):
            continue
        end = _call_end(text, dot + len(_CALL) - 1, spans)
        if end < 0:
            continue
        text = text[:dot] + text[end + 1:]


# ---------------------------------------------------------------------------------------------------------
# cel-go semantics the engine does not share, closed by rewriting or by reading the expression again


_HAS = re.compile(r"(?<![A-Za-z0-9_.])has\s*\(")


def _last_selection(arg: str) -> int:
    """Index of the `.` of the outermost field selection in `arg` (`a.b[0].c` -> the dot before `c`)."""
    spans = _string_spans(arg)
    depth = 0
    last = -1
    for i, ch in enumerate(arg):
        if _inside(spans, i):
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "." and depth == 0:
            last = i
    return last


def rewrite_has(text: str) -> str:
    """`has(R.f)` -> `(type(R) == map && has(R.f))`.

    In cel-go a presence test on a receiver that is not a map (null, a scalar, a list) is `false` (the
    attribute's qualifier finds no container: interpreter/attributes.go refQualify with presenceTest);
    cel-cpp fails with `Applying SELECT to non-message type`. `false && <error>` is false in CEL, and an
    error in R itself stays an error, as in cel-go.
    """
    if "has" not in text:
        return text
    out = []
    pos = 0
    while True:
        spans = _string_spans(text)
        m = _HAS.search(text, pos)
        while m is not None and _inside(spans, m.start()):
            m = _HAS.search(text, m.end())
        if m is None:
            break
        open_paren = m.end() - 1
        close = _call_end(text, open_paren, spans)
        arg = text[open_paren + 1:close] if close > 0 else ""
        dot = _last_selection(arg)
        if close < 0 or dot <= 0 or not arg[:dot].strip():
            out.append(text[pos:m.end()])
            pos = m.end()
            continue
        receiver = arg[:dot].strip()
        out.append(text[pos:m.start()])
        out.append(f"(type({receiver}) == map && {text[m.start():close + 1]})")
        pos = close + 1
    out.append(text[pos:])
    return "".join(out)


def missing_index(text: str, evaluate: Callable[[str], tuple[bool, object]]) -> str | None:
    """The key cel-go would name in `no such key: <key>` for an index into null or a scalar.

    cel-cpp only says `Invalid container type: '<type>'`; the failing index is found by evaluating the
    receivers of the expression's indexes, in text order, until one is neither a map nor a list, and then
    its index. `evaluate(text)` returns (ok, plain value).
    """
    spans = _string_spans(text)
    for i, ch in enumerate(text):
        if ch != "[" or _inside(spans, i):
            continue
        start = _receiver_start(text, i, spans)
        receiver = text[start:i].strip()
        if not receiver or receiver[0].isdigit() or not (receiver[-1].isalnum() or receiver[-1] in "_)]"):
            continue
        end = _call_end(text, i, spans)
        index = text[i + 1:end].strip() if end > 0 else ""
        if not index or index.startswith("?"):
            continue
        ok, value = evaluate(receiver)
        if not ok or isinstance(value, (dict, list)):
            continue
        ok, key = evaluate(index)
        if ok:
            return go_value_text(key)
    return None
