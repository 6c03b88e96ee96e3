"""Kubernetes' CEL semver library, version 1 (``library.SemverLib(library.SemverVersion(1))``).

``semver(s[, normalize])``, ``isSemver(s[, normalize])`` and the members ``major minor patch
isGreaterThan isLessThan compareTo``; parsing and ordering are github.com/blang/semver/v4's, with its
error texts. A Semver is ``{"@type": "kubernetes.Semver", "version": "<major>.<minor>.<patch>[-pre]"}``:
build metadata is left out because blang's ``EQ`` (what ``==`` means for Semver) ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import SEMVER, SharedMember, expect, tagged
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.strconv import quote as go_quote

_NUMBERS = frozenset("0123456789")
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
    if not _contains_only(part, _NUMBERS):
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
        if _contains_only(item, _NUMBERS):
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


def normalize_and_parse(text: str) -> Version:
    """Kubernetes' normalizeAndParse: drop one leading "v", pad to three parts, strip leading zeros."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


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


def _version(value: Mapping[str, Any]) -> Version:
    return parse(expect(value, SEMVER)["version"])


def _to_semver(text: str, normalize: bool = False) -> dict[str, Any]:
    try:
        version = normalize_and_parse(text) if normalize else parse(text)
    except SemverError as exc:
        raise CelFunctionError(str(exc)) from None
    return tagged(SEMVER, version=version.core_text())


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _ = normalize_and_parse(text) if normalize else parse(text)
    except SemverError:
        return False
    return True


def _int64(value: int) -> int:
    # Go's types.Int(uint64) keeps the bits, so versions past 2^63-1 come out negative.
    return value - 2**64 if value > 2**63 - 1 else value


def _compare(left: Mapping[str, Any], right: Mapping[str, Any]) -> int:
    return compare(_version(left), _version(expect(right, SEMVER)))


LIBRARY = Library("kubernetes.semver", [
    fn("semver", Overload("string_to_semver", ["string"], "map", _to_semver),
       Overload("string_bool_to_semver", ["string", "bool"], "map", _to_semver)),
    fn("isSemver", Overload("is_semver_string", ["string"], "bool", _is_semver),
       Overload("is_semver_string_bool", ["string", "bool"], "bool", _is_semver)),
    fn("major", Overload("semver_major", ["map"], "int", lambda v: _int64(_version(v).major), member=True)),
    fn("minor", Overload("semver_minor", ["map"], "int", lambda v: _int64(_version(v).minor), member=True)),
    fn("patch", Overload("semver_patch", ["map"], "int", lambda v: _int64(_version(v).patch), member=True)),
])

SHARED = (
    SharedMember("isGreaterThan", SEMVER, ("map", "map"), "bool", lambda a, b: _compare(a, b) == 1),
    SharedMember("isLessThan", SEMVER, ("map", "map"), "bool", lambda a, b: _compare(a, b) == -1),
    SharedMember("compareTo", SEMVER, ("map", "map"), "int", _compare),
)
