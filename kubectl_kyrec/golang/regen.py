"""goregen (github.com/zach-klippenstein/goregen): a random string matching a regular expression, as
Kyverno's `random` functions (CEL sdk: random/, and the classic JMESPath `random`) draw them.

Strings are drawn from the caller's random source, so a seeded source gives reproducible output. "Any
character" classes draw from printable ASCII only (goregen draws from all of Unicode), and an unbounded
repeat adds at most 10 extra occurrences, as goregen's default does.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

from kubectl_kyrec.errors import EngineError

_parser: Any = __import__("re._parser", fromlist=["parse"])
_constants: Any = __import__("re._constants", fromlist=["MAXREPEAT"])

DEFAULT_PATTERN = "[0-9a-z]{8}"


class PatternError(ValueError, EngineError):
    """A pattern the regexp parser refuses: `error parsing regexp: ...`."""

_MAX_UNBOUNDED_EXTRA = 10
_PRINTABLE = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]
_CATEGORIES = {
    "CATEGORY_DIGIT": string.digits,
    "CATEGORY_WORD": string.ascii_letters + string.digits + "_",
    "CATEGORY_SPACE": " \t\n\r\f",
    "CATEGORY_NOT_DIGIT": "".join(c for c in _PRINTABLE if c not in string.digits),
    "CATEGORY_NOT_WORD": "".join(c for c in _PRINTABLE if not (c.isalnum() or c == "_")),
    "CATEGORY_NOT_SPACE": "".join(c for c in _PRINTABLE if c != " "),
}


def _class_members(items: list[tuple[Any, Any]]) -> list[str]:
    negate = False
    members: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            members.add(chr(arg))
        elif name == "RANGE":
            members.update(chr(c) for c in range(arg[0], arg[1] + 1))
        elif name == "CATEGORY":
            members.update(_CATEGORIES.get(str(arg), ""))
    if negate:
        return [c for c in _PRINTABLE if c not in members]
    return sorted(members)


class _Generator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.groups: dict[int, str] = {}

    def run(self, items: Any) -> str:
        return "".join(self.one(op, arg) for op, arg in items)

    def one(self, op: Any, arg: Any) -> str:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "NOT_LITERAL":
            return self.rng.choice([c for c in _PRINTABLE if c != chr(arg)])
        if name == "ANY":
            return self.rng.choice(_PRINTABLE)
        if name == "IN":
            members = _class_members(arg)
            return self.rng.choice(members) if members else ""
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            if high == _constants.MAXREPEAT:
                high = low + _MAX_UNBOUNDED_EXTRA
            return "".join(self.run(sub) for _ in range(self.rng.randint(low, high)))
        if name == "SUBPATTERN":
            group, _, _, sub = arg
            text = self.run(sub)
            if group is not None:
                self.groups[group] = text
            return text
        if name == "BRANCH":
            return self.run(self.rng.choice(arg[1]))
        if name == "GROUPREF":
            return self.groups.get(arg, "")
        # anchors, assertions and other zero-width items produce nothing
        return ""


def generate(pattern: str, rng: random.Random) -> str:
    try:
        parsed = _parser.parse(pattern)
    except re.error as exc:
        raise PatternError(f"error parsing regexp: {exc}") from None
    return _Generator(rng).run(parsed)
