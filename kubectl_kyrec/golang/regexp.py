"""Go's ``regexp`` (RE2 syntax, leftmost-first matching) as Kubernetes' CEL regex library and Kyverno's
JMESPath regex functions compile patterns: ``compile_re2`` with Go's ``regexp.Compile`` error texts, and
``find_all``, Go's ``FindAllString``.

Python's ``re`` matches the same way for the RE2 subset, so each pattern is translated first:

- RE2-only syntax is rewritten: ``\\z``, ``\\Q..\\E``, ``\\x{...}``, octal escapes, ``[[:alpha:]]``
  classes, ``(?<name>..)``, flags set in the middle of a group (``a(?i)b``);
- RE2's ASCII classes are kept ASCII: ``\\d \\w \\s`` outside brackets, and ``$`` means end of text
  unless the pattern turns on ``(?m)`` (Python's ``$`` would also match before a final newline);
- what RE2 rejects is rejected with Go's error text: look-arounds, backreferences, possessive and other
  nested repetitions, ``(?#..)``, unknown escapes, repeat counts above 1000, unbalanced brackets.

Differences that remain, each reported as ``error parsing regexp: kyrec: ...`` rather than matched
differently: Unicode classes ``\\pL``/``\\p{Greek}``, ``[[:^alpha:]]``, ``\\C`` and the ``U`` flag.
``\\b``, ``\\D``/``\\W``/``\\S`` inside brackets and ``(?i)`` still use Python's Unicode rules, which
differ from RE2 only for non-ASCII text. Errors that Python reports for other reasons carry Python's
description after ``error parsing regexp: kyrec:``.

Matching runs on RE2 itself (the ``google-re2`` binding, a required dependency): the translation above
still decides which patterns are errors and with which Go text, and RE2 then matches with its exact
semantics (Unicode classes, ``\\b``, ``(?U)``...) in linear time, so a policy's pattern cannot make an
evaluation backtrack for ever (``(a+)+$`` on 24 characters: 0.03 ms with RE2, 6.6 s with ``re``). The
patterns only the translation cannot handle (``\\pL``, ``[[:^alpha:]]``, ``\\C``, ``(?U)``) are then
accepted too.
Measurements: docs/compatibility.md ("Regular expressions").
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import Any

import re2

from kubectl_kyrec.errors import EngineError


class RegexSyntaxError(EngineError):
    """A pattern Go's regexp would not compile; the message is Go's ``regexp.Compile`` error."""


def _go_error(code: str, arg: str) -> RegexSyntaxError:
    return RegexSyntaxError(f"error parsing regexp: {code}: `{arg}`")


def _kyrec_error(what: str, arg: str) -> RegexSyntaxError:
    return RegexSyntaxError(f"error parsing regexp: kyrec: {what}: `{arg}`")


_ASCII_CLASSES = {"d": "[0-9]", "D": "[^0-9]", "w": "[0-9A-Za-z_]", "W": "[^0-9A-Za-z_]",
                  "s": "[\\t\\n\\f\\r ]", "S": "[^\\t\\n\\f\\r ]"}
_ASCII_IN_CLASS = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
    "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")
_FLAGS = re.compile(r"\(\?([A-Za-z-]*)([:)])")
_MAX_REPEAT = 1000


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.i = 0
        self.out: list[str] = []
        # Python needs the scoped form (?i:...) for flags that RE2 lets a pattern set mid-group;
        # each open group remembers how many such scopes must close with it.
        self.pending_closers: list[int] = [0]
        self.group_starts: list[int] = []
        self.multiline = bool(re.search(r"\(\?[a-zA-Z]*m[a-zA-Z]*(?:-[a-zA-Z]*)?[:)]", pattern))
        self.can_repeat = False  # is there an atom the next quantifier can apply to?
        self.after_repeat = ""  # the quantifier just emitted, for RE2's nested-repetition check

    def run(self) -> str:
        src = self.src
        while self.i < len(src):
            ch = src[self.i]
            if ch == "\\":
                self._escape()
            elif ch == "[":
                self._char_class()
            elif ch == "(":
                self._open_group()
            elif ch == ")":
                self._close_group()
            elif ch in "*+?":
                self._quantifier(ch)
            elif ch == "{" and _REPEAT.match(src, self.i):
                match = _REPEAT.match(src, self.i)
                assert match is not None
                self._repeat(match)
            elif ch == "|":
                self._emit("|", atom=False)
                self.i += 1
            elif ch == "$":
                self._emit("$" if self.multiline else "\\Z", atom=True)
                self.i += 1
            elif ch == "^":
                self._emit("^", atom=True)
                self.i += 1
            else:
                self._emit(ch, atom=True)
                self.i += 1
        if self.group_starts:
            raise _go_error("missing closing )", src)
        self.out.append(")" * self.pending_closers[0])
        return "".join(self.out)

    def _emit(self, text: str, atom: bool) -> None:
        self.out.append(text)
        self.can_repeat = atom
        self.after_repeat = ""

    def _quantifier(self, op: str) -> None:
        if self.after_repeat:
            if op == "?" and not self.after_repeat.endswith("?"):
                self.out.append("?")  # lazy form of the quantifier before it
                self.after_repeat += "?"
                self.i += 1
                return
            raise _go_error("invalid nested repetition operator", self.after_repeat + op)
        if not self.can_repeat:
            raise _go_error("missing argument to repetition operator", op)
        self.out.append(op)
        self.after_repeat = op
        self.can_repeat = False
        self.i += 1

    def _repeat(self, match: re.Match[str]) -> None:
        text = match.group(0)
        low = int(match.group(1))
        high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
        if self.after_repeat:
            raise _go_error("invalid nested repetition operator", self.after_repeat + text)
        if low > _MAX_REPEAT or (high is not None and (high > _MAX_REPEAT or high < low)):
            raise _go_error("invalid repeat count", text)
        if not self.can_repeat:
            raise _go_error("missing argument to repetition operator", text)
        self.out.append(text)
        self.after_repeat = text
        self.can_repeat = False
        self.i = match.end()

    def _open_group(self) -> None:
        src, i = self.src, self.i
        if not src.startswith("(?", i):
            self.group_starts.append(i)
            self.pending_closers.append(0)
            self._emit("(", atom=False)
            self.i += 1
            return
        rest = src[i:]
        if rest.startswith("(?:"):
            self._push_group("(?:", 3)
        elif rest.startswith("(?P<") or (rest.startswith("(?<") and not rest.startswith(("(?<=", "(?<!"))):
            begin = 4 if rest.startswith("(?P<") else 3
            end = rest.find(">")
            if end < 0:
                raise _go_error("invalid named capture", rest)
            name = rest[begin:end]
            if not name or not re.fullmatch(r"[A-Za-z0-9_]+", name) or name[0].isdigit():
                raise _go_error("invalid named capture", rest[:end + 1])
            self._push_group(f"(?P<{name}>", end + 1)
        elif rest.startswith(("(?P", "(?<")):
            end = rest.find(">")
            raise _go_error("invalid named capture", rest if end < 0 else rest[:end + 1])
        else:
            flags = _FLAGS.match(src, i)
            if flags is None or not flags.group(1) or not re.fullmatch(r"[imsU]*(-[imsU]*)?", flags.group(1)):
                bad = rest[:3] if flags is None or not flags.group(1) else "(?" + flags.group(1)
                raise _go_error("invalid or unsupported Perl syntax", bad)
            letters = flags.group(1)
            if "U" in letters:
                raise _kyrec_error("the U (ungreedy) flag is not supported", flags.group(0))
            if letters.endswith("-") or letters.startswith("-"):
                raise _go_error("invalid or unsupported Perl syntax", flags.group(0))
            if flags.group(2) == ":":
                self._push_group(f"(?{letters}:", flags.end() - i)
            else:
                # RE2 applies a bare (?flags) to the rest of the enclosing group.
                self.out.append(f"(?{letters}:")
                self.pending_closers[-1] += 1
                self.can_repeat = False
                self.after_repeat = ""
                self.i = flags.end()

    def _push_group(self, text: str, width: int) -> None:
        self.group_starts.append(self.i)
        self.pending_closers.append(0)
        self._emit(text, atom=False)
        self.i += width

    def _close_group(self) -> None:
        if not self.group_starts:
            raise _go_error("unexpected )", self.src)
        self.group_starts.pop()
        self.out.append(")" * self.pending_closers.pop() + ")")
        self.can_repeat = True
        self.after_repeat = ""
        self.i += 1

    def _escape(self) -> None:
        src, i = self.src, self.i
        if i + 1 >= len(src):
            raise _go_error("trailing backslash at end of expression", "")
        c = src[i + 1]
        if c in _ASCII_CLASSES:
            self._emit(_ASCII_CLASSES[c], atom=True)
        elif c in "bBA":
            self._emit("\\" + c, atom=False)
        elif c == "z":
            self._emit("\\Z", atom=False)
        elif c == "Q":
            end = src.find("\\E", i + 2)
            literal = src[i + 2:] if end < 0 else src[i + 2:end]
            self.i = len(src) if end < 0 else end + 2
            if literal:
                self._emit(re.escape(literal), atom=True)
            return
        elif c in "pP":
            arg = src[i:src.find("}", i) + 1] if src.startswith("{", i + 2) else src[i:i + 3]
            raise _kyrec_error("Unicode character classes are not supported", arg)
        elif c == "C":
            raise _kyrec_error("\\C is not supported", "\\C")
        else:
            text, width = self._literal_escape(i)
            self._emit(text, atom=True)
            self.i += width
            return
        self.i += 2

    def _literal_escape(self, i: int) -> tuple[str, int]:
        """An escape that stands for one character (shared by both sides of a bracket)."""
        src = self.src
        c = src[i + 1]
        if c in "aftnrv":
            return "\\" + c, 2
        if c == "x":
            if src.startswith("{", i + 2):
                end = src.find("}", i + 3)
                digits = src[i + 3:end] if end > 0 else ""
                if end < 0 or not re.fullmatch(r"[0-9A-Fa-f]{1,8}", digits) or int(digits, 16) > 0x10FFFF:
                    raise _go_error("invalid escape sequence", src[i:end + 1] if end > 0 else src[i:])
                return f"\\U{int(digits, 16):08x}", end + 1 - i
            if re.fullmatch(r"[0-9A-Fa-f]{2}", src[i + 2:i + 4]):
                return src[i:i + 4], 4
            raise _go_error("invalid escape sequence", src[i:i + 4])
        if c in "01234567":
            octal = re.match(r"[0-7]{1,3}", src[i + 1:])
            assert octal is not None
            if c != "0" and len(octal.group(0)) == 1:
                raise _go_error("invalid escape sequence", src[i:i + 2])  # RE2 has no backreferences
            return f"\\U{int(octal.group(0), 8):08x}", 1 + len(octal.group(0))
        if c.isalnum() or c == "_" or ord(c) > 0x7F:
            raise _go_error("invalid escape sequence", src[i:i + 2])
        return re.escape(c), 2

    def _char_class(self) -> None:
        src, start = self.src, self.i
        i = start + 1
        parts = ["["]
        if src.startswith("^", i):
            parts.append("^")
            i += 1
        first = True
        while True:
            if i >= len(src):
                raise _go_error("missing closing ]", src[start:])
            ch = src[i]
            if ch == "]" and not first:
                break
            first = False
            if ch == "[" and src.startswith("[:", i):
                end = src.find(":]", i + 2)
                name = src[i + 2:end] if end > 0 else ""
                if name.startswith("^") and name[1:] in _POSIX_CLASSES:
                    raise _kyrec_error("negated POSIX classes are not supported", src[i:end + 2])
                if name in _POSIX_CLASSES:
                    parts.append(_POSIX_CLASSES[name])
                    i = end + 2
                    continue
                if end > 0 and re.fullmatch(r"\^?[a-z]+", name):
                    raise _go_error("invalid character class range", src[i:end + 2])
            if ch == "\\":
                if i + 1 >= len(src):
                    raise _go_error("missing closing ]", src[start:])
                c = src[i + 1]
                if c in _ASCII_IN_CLASS:
                    parts.append(_ASCII_IN_CLASS[c])
                    i += 2
                    continue
                if c in "DWS":
                    parts.append("\\" + c)
                    i += 2
                    continue
                if c in "pP":
                    raise _kyrec_error("Unicode character classes are not supported", src[i:i + 3])
                text, width = self._literal_escape(i)
                parts.append(text)
                i += width
                continue
            # Python warns about (and may one day reinterpret) these inside a set; RE2 reads literals.
            parts.append("\\" + ch if ch in "[&~|" else ch)
            i += 1
        parts.append("]")
        self._emit("".join(parts), atom=True)
        self.i = i + 1


def to_python_pattern(pattern: str) -> str:
    """Rewrite an RE2 pattern for Python's ``re``, or raise :class:`RegexSyntaxError` with Go's text."""
    return _Translator(pattern).run()


@functools.lru_cache(maxsize=512)
def compile_re2(pattern: str) -> Any:
    """A compiled pattern with `search(text, pos)`: RE2's, or `re`'s where only Python's compile accepts it."""
    try:
        translated = to_python_pattern(pattern)
    except RegexSyntaxError as exc:
        # what only the translation cannot express, RE2 itself may accept
        if not str(exc).startswith("error parsing regexp: kyrec:"):
            raise
        return _re2_compile(pattern, exc)
    try:
        return _re2_compile(pattern, None)
    except RegexSyntaxError:
        return _python_compile(translated)      # Python's compile words the error as Go does


def _re2_compile(pattern: str, error: RegexSyntaxError | None) -> Any:
    options = re2.Options()
    options.log_errors = False      # RE2 would log every refused pattern on standard error
    try:
        return re2.compile(pattern, options)
    except re2.error:
        if error is not None:
            raise error from None
        raise RegexSyntaxError(f"error parsing regexp: kyrec: RE2 refused the pattern: `{pattern}`") from None


def _python_compile(translated: str) -> re.Pattern[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(translated)
    except re.error as exc:
        raise RegexSyntaxError(_python_error(exc, translated)) from None


def _python_error(exc: re.error, translated: str) -> str:
    message = exc.msg
    pos = exc.pos or 0
    if message.startswith("bad character range"):
        return f"error parsing regexp: invalid character class range: `{message.split()[-1]}`"
    if message == "nothing to repeat":
        return f"error parsing regexp: missing argument to repetition operator: `{translated[pos:pos + 1]}`"
    if message == "multiple repeat":
        operators = translated[max(pos - 1, 0):pos + 1]
        return f"error parsing regexp: invalid nested repetition operator: `{operators}`"
    return f"error parsing regexp: kyrec: {message}"


def find_all(text: str, pattern: Any, limit: int = -1) -> list[str]:
    """Go's ``FindAllString``: an empty match right after the previous match is skipped."""
    matches: list[str] = []
    if limit < 0:
        limit = len(text) + 1
    pos, prev_end = 0, -1
    while len(matches) < limit and pos <= len(text):
        match = pattern.search(text, pos)
        if match is None:
            break
        start, end = match.span()
        accept = True
        if end == start:
            if start == prev_end:
                accept = False
            pos = start + 1 if start < len(text) else len(text) + 1
        else:
            pos = end
        prev_end = end
        if accept:
            matches.append(match.group(0))
    return matches
