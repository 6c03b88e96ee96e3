"""github.com/blang/semver/v4: Parse and Compare (with its error texts), as Kubernetes' CEL semver library
and Kyverno's classic operators use them, and ParseRange, as Kyverno's semver_compare uses it
(`>=1.0.0 <2.0.0 || 3.x`).

Wildcards are expanded as blang's expandWildcardVersion does, bugs included: `!4.x.x` becomes
`<4.0.0 >=5.0.0`, which no version satisfies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.strconv import quote as go_quote

NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_UINT64_MAX = 2**64 - 1


class SemverError(ValueError, EngineError):
    """blang/semver's parse error text."""


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    def core_text(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        return text + ("-" + ".".join(str(p) for p in self.pre) if self.pre else "")


def _contains_only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)


def _parse_uint(text: str) -> int:
    # strconv.ParseUint(text, 10, 64); containsOnly has already vouched for the characters
    if not text:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(text)
    if value > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return value


def _number(part: str, which: str) -> int:
    if not _contains_only(part, NUMBERS):
        raise SemverError(f"Invalid character(s) found in {which} number {go_quote(part)}")
    if len(part) > 1 and part[0] == "0":
        raise SemverError(f"{which.capitalize()} number must not contain leading zeroes {go_quote(part)}")
    return _parse_uint(part)


def parse(text: str) -> Version:
    """blang/semver ``Parse``."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    patch_text, build, prerelease = parts[2], None, None
    if "+" in patch_text:
        patch_text, build_text = patch_text.split("+", 1)
        build = build_text.split(".")
    if "-" in patch_text:
        patch_text, pre_text = patch_text.split("-", 1)
        prerelease = pre_text.split(".")
    patch = _number(patch_text, "patch")
    pre: list[int | str] = []
    for item in prerelease or ():
        if not item:
            raise SemverError("Prerelease is empty")
        if _contains_only(item, NUMBERS):
            if len(item) > 1 and item[0] == "0":
                raise SemverError(
                    f"Numeric PreRelease version must not contain leading zeroes {go_quote(item)}")
            pre.append(_parse_uint(item))
        elif _contains_only(item, _ALPHANUM):
            pre.append(item)
        else:
            raise SemverError(f"Invalid character(s) found in prerelease {go_quote(item)}")
    for item in build or ():
        if not item:
            raise SemverError("Build meta data is empty")
        if not _contains_only(item, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(item)}")
    return Version(major, minor, patch, tuple(pre))


def compare(left: Version, right: Version) -> int:
    """blang/semver ``Version.Compare``."""
    for a, b in ((left.major, right.major), (left.minor, right.minor), (left.patch, right.patch)):
        if a != b:
            return 1 if a > b else -1
    if not left.pre or not right.pre:
        return (not left.pre) - (not right.pre)
    for a_item, b_item in zip(left.pre, right.pre):
        if a_item == b_item:
            continue
        if isinstance(a_item, int) != isinstance(b_item, int):
            return -1 if isinstance(a_item, int) else 1  # numeric identifiers sort first
        return 1 if a_item > b_item else -1  # type: ignore[operator]  # same kind, checked above
    return (len(left.pre) > len(right.pre)) - (len(left.pre) < len(right.pre))



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
