"""github.com/blang/semver/v4 ParseRange, as Kyverno's semver_compare uses it (`>=1.0.0 <2.0.0 || 3.x`).

Versions are parsed and ordered by kubectl_kyrec.cel.k8s_semver (blang's Parse/Compare). Wildcards are
expanded as blang's expandWildcardVersion does, bugs included: `!4.x.x` becomes `<4.0.0 >=5.0.0`, which
no version satisfies.
"""

from __future__ import annotations

from collections.abc import Callable

from kubectl_kyrec.cel.k8s_semver import SemverError, Version, compare, parse
from kubectl_kyrec.golang.strconv import quote as go_quote

__all__ = ["SemverError", "parse_range", "Version", "parse"]

Range = Callable[[Version], bool]


def _split_and_trim(text: str) -> list[str]:
    result: list[str] = []
    last = 0
    last_char = ""
    for i, c in enumerate(text):
        if c == " " and last_char not in (">", "<", "="):
            if last < i - 1:
                result.append(text[last:i])
            last = i + 1
        elif c != " ":
            last_char = c
    if last < len(text) - 1:
        result.append(text[last:])
    return [r.replace(" ", "") for r in result]


def _split_or(parts: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    last = 0
    for i, part in enumerate(parts):
        if part == "||":
            if i == 0:
                raise SemverError("First element in range is '||'")
            out.append(parts[last:i])
            last = i + 1
    if last == len(parts):
        raise SemverError("Last element in range is '||'")
    out.append(parts[last:])
    return out


def _split_comparator(text: str) -> tuple[str, str]:
    for i, c in enumerate(text):
        if c.isdigit():
            return text[:i].strip(), text[i:]
    raise SemverError(f"Could not get version from string: {go_quote(text)}")


def _increment(flat: str, which: int) -> str:
    parts = flat.split(".")
    if len(parts) != 3:
        raise SemverError("invalid version")
    nums = [int(p) for p in parts]
    nums[which] += 1
    for j in range(which + 1, 3):
        nums[j] = 0
    return ".".join(str(n) for n in nums)


def _expand(parts: list[list[str]]) -> list[list[str]]:
    expanded: list[list[str]] = []
    for group in parts:
        new: list[str] = []
        for ap in group:
            if "x" in ap:
                op, vstr = _split_comparator(ap)
                comps = vstr.split(".")
                if len(comps) == 3 and comps[2] == "x" and comps[1] != "x":
                    wildcard = "patch"
                elif len(comps) >= 2 and comps[1] == "x":
                    wildcard = "minor"
                else:
                    wildcard = "none"
                flat = vstr.replace(".x", ".0")
                if flat.count(".") == 1:
                    flat += ".0"
                increment = False
                result_op = ""
                if op == ">":
                    result_op, increment = ">=", True
                elif op == ">=":
                    result_op = ">="
                elif op == "<":
                    result_op = "<"
                elif op == "<=":
                    result_op, increment = "<", True
                elif op in ("", "=", "=="):
                    new.append(">=" + flat)
                    result_op, increment = "<", True
                elif op in ("!=", "!"):
                    new.append("<" + flat)
                    result_op, increment = ">=", True
                version = flat
                if increment:
                    try:
                        version = _increment(flat, 1 if wildcard == "patch" else 0) if wildcard != "none" else ""
                    except (ValueError, SemverError):
                        version = ""
                ap = result_op + version
            new.append(ap)
        expanded.append(new)
    return expanded


_OPS: dict[str, Callable[[int], bool]] = {
    "": lambda c: c == 0, "=": lambda c: c == 0, "==": lambda c: c == 0,
    "!": lambda c: c != 0, "!=": lambda c: c != 0,
    ">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0,
}


def parse_range(text: str) -> Range:
    """blang ParseRange; SemverError with blang's text when the range does not parse."""
    groups = _expand(_split_or(_split_and_trim(text)))
    ors: list[list[tuple[Callable[[int], bool], Version]]] = []
    for group in groups:
        ands = []
        for ap in group:
            op, vstr = _split_comparator(ap)
            if op not in _OPS:
                raise SemverError(f"Could not parse comparator {go_quote(op)} in {go_quote(ap)}")
            try:
                version = parse(vstr)
            except SemverError as exc:
                raise SemverError(f"Could not parse Range {go_quote(ap)}: {exc}") from None
            ands.append((_OPS[op], version))
        ors.append(ands)

    def matches(v: Version) -> bool:
        return any(all(check(compare(v, want)) for check, want in ands) for ands in ors)

    return matches
