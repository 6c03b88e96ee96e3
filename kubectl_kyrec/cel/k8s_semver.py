"""Kubernetes' CEL semver library, version 1 (``library.SemverLib(library.SemverVersion(1))``).

``semver(s[, normalize])``, ``isSemver(s[, normalize])`` and the members ``major minor patch
isGreaterThan isLessThan compareTo``; parsing and ordering are github.com/blang/semver/v4's, with its
error texts (golang/semver.py).
A Semver is ``{"@type": "kubernetes.Semver", "version": "<major>.<minor>.<patch>[-pre]"}``:
build metadata is left out because blang's ``EQ`` (what ``==`` means for Semver) ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import NO_SUCH_OVERLOAD, SEMVER, SharedMember, field, tagged
from kubectl_kyrec.golang.semver import NUMBERS, SemverError, Version, compare, parse


def normalize_and_parse(text: str) -> Version:
    """Kubernetes' normalizeAndParse: drop one leading "v", pad to three parts, strip leading zeros."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def _version(value: Mapping[str, Any]) -> Version:
    try:
        return parse(field(value, SEMVER, "version"))
    except SemverError:     # a hand-written map (see k8s_dispatch.field)
        raise CelFunctionError(NO_SUCH_OVERLOAD) from None


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
    return compare(_version(left), _version(right))


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
