"""gobwas/glob matching as Kyverno compiles an ImageValidatingPolicy's `matchImageReferences[].glob`
(kk: pkg/cel/compiler/compiler.go CompileMatchImageReference: `glob.Compile(pattern)`, no separators).

Without separators `*` and `**` match any sequence, `/` included; `?` one character; `[abc]`, `[a-z]` and
`[!abc]` one character of (not of) a class; `{a,b}` any of its alternatives (which may hold patterns
themselves); `\\` makes the next character literal. A pattern gobwas refuses (an unclosed `[` or `{`) is
a GlobError with gobwas's reason, which Kyverno reports as the field's invalid value.
"""

from __future__ import annotations

import functools
import re


class GlobError(ValueError):
    """A pattern gobwas/glob does not compile."""


def _translate(pattern: str, i: int, in_alternatives: bool) -> tuple[str, int]:
    """The regex of `pattern` from `i` up to the end, or (inside `{...}`) up to the `,` or `}` that ends
    the alternative; returns the regex and the index of that terminator."""
    out: list[str] = []
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if in_alternatives and ch in ",}":
            return "".join(out), i
        if ch == "\\":
            if i + 1 >= n:
                raise GlobError("unexpected end of input after escape")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif ch == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append(".*")
        elif ch == "?":
            out.append(".")
            i += 1
        elif ch == "[":
            close = pattern.find("]", i + 1)
            if close < 0:
                raise GlobError("unexpected end of input: unclosed '['")
            body = pattern[i + 1:close]
            negated = body.startswith("!")
            if negated:
                body = body[1:]
            cls = "".join(re.escape(c) if c != "-" else "-" for c in body)
            out.append(f"[{'^' if negated else ''}{cls}]")
            i = close + 1
        elif ch == "{":
            alternatives = []
            i += 1
            while True:
                part, i = _translate(pattern, i, True)
                alternatives.append(part)
                if i >= n:
                    raise GlobError("unexpected end of input: unclosed '{'")
                if pattern[i] == "}":
                    i += 1
                    break
                i += 1      # the comma
            out.append("(?:" + "|".join(alternatives) + ")")
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out), i


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The pattern as a regex matching what gobwas's compiled glob matches; GlobError when gobwas refuses it."""
    regex, _ = _translate(pattern, 0, False)
    return re.compile(regex, re.DOTALL)


def glob_match(pattern: str, text: str) -> bool:
    """glob.MustCompile(pattern).Match(text)."""
    return compile_glob(pattern).fullmatch(text) is not None
