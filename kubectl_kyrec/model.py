"""Frozen dataclasses handed from one pipeline stage to the next.

Kubernetes objects themselves stay plain dicts (as the API serves them: key order kept, timestamps as
strings, integers as ints); these types carry them together with where they came from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple, overload

Obj = dict[str, Any]

# a Result's properties when none are given: shared, so read-only
_NO_PROPERTIES: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, order=True, slots=True)
class Source:
    """Where a document came from. `line` is 1-based; 0 means unknown (stdin JSON, cluster). `via`: the
    stream the document was read from when that is not `file` (`<kustomize DIR>`: an object a kustomization
    renders is located at its source file, and read from the overlay's render; load/kustomize.py)."""

    file: str
    line: int = 0
    via: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_location(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line}


@dataclass(frozen=True, slots=True)
class Document:
    """One loaded Kubernetes-shaped document."""

    obj: Obj
    source: Source

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace", "") or "")


def group_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> ("apps", "v1"); `v1` -> ("", "v1")."""
    if "/" in api_version:
        g, v = api_version.split("/", 1)
        return g, v
    return "", api_version


@dataclass(frozen=True, slots=True)
class Ref:
    """The *ref* of the JSON documents (docs/output.md): identity of an object. `synthetic` marks a stand-in uid for a
    manifest."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    synthetic: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind,
                               "namespace": self.namespace, "name": self.name, "uid": self.uid}
        if self.synthetic:
            out["uidSynthetic"] = True
        return out

    def display(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def object_identity(obj: Mapping[str, Any] | None) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace, name) of a manifest as written ("" for what it lacks; all "" for none)."""
    if obj is None:
        return ("", "", "", "")
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), str(meta.get("namespace") or ""),
            str(meta.get("name") or ""))


def synthetic_uid(api_version: str, kind: str, namespace: str, name: str) -> str:
    """A deterministic stand-in uid for a manifest that has none (same identity, same uid)."""
    digest = hashlib.sha256(f"{api_version}|{kind}|{namespace}|{name}".encode()).hexdigest()
    return f"{digest[0:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def ref_of(obj: Mapping[str, Any], namespace_default: str = "") -> Ref:
    meta = obj.get("metadata") or {}
    api_version = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    ns = str(meta.get("namespace") or namespace_default or "")
    name = str(meta.get("name") or meta.get("generateName") or "")
    uid = meta.get("uid")
    if uid:
        return Ref(api_version, kind, ns, name, str(uid))
    return Ref(api_version, kind, ns, name, synthetic_uid(api_version, kind, ns, name), synthetic=True)


@dataclass(frozen=True, slots=True)
class Subject:
    """A resource under evaluation: the object, its identity and where it was read from."""

    obj: Obj
    ref: Ref
    source: Source | None
    resource: str = ""          # plural, e.g. "deployments"
    namespaced: bool = True
    # the admission request the subject stands for, when the run says (`eval --old`): "" takes the run's
    # operation (CREATE unless --values says); old_obj is UPDATE's oldObject, the stored object (for DELETE
    # `obj` is the stored object and the request's object is null)
    operation: str = ""
    old_obj: Obj | None = None


# A result kyrec cannot decide offline (it depends on request data the inputs do not give). Kyverno has no
# such result: it is shown in every output format, and never written into an expected PolicyReport.
UNDETERMINED = "undetermined"

# the two report APIs Kyverno writes (its reports controller flag --openreportsEnabled picks)
WGPOLICY = "wgpolicyk8s.io/v1alpha2"
OPENREPORTS = "openreports.io/v1alpha1"


class Result(NamedTuple):
    """One policy result, with Kyverno's report fields (docs/semantics/reports.md#report-objects).

    A named tuple rather than a frozen dataclass: immutable all the same, and made at C speed. A run
    makes one per (subject, policy) pair, and a frozen dataclass sets each of its 14 fields through
    object.__setattr__ (about 4 us a Result; the tuple takes a tenth of that).
    """

    policy: str                  # `name`, or `ns/name` for namespaced policies
    source: str                  # KyvernoValidatingPolicy, ValidatingAdmissionPolicy, ...
    rule: str
    result: str                  # pass | fail | warn | error | skip, or UNDETERMINED
    message: str
    subject: Ref
    scored: bool = True
    category: str = ""
    severity: str = ""
    properties: Mapping[str, str] = _NO_PROPERTIES
    validation_actions: tuple[str, ...] = ()
    location: Source | None = None
    policy_location: Source | None = None
    binding: str = ""            # VAP binding name, when the result came through one


class ResultPairs(Sequence[tuple[Result, bool]]):
    """Results in order, each with whether the background scan would report it: what expected reports are
    built from. A run holds one per (subject, policy) pair, so the flag is a byte beside the result's entry
    rather than a (result, flag) tuple per result (80 bytes with its list slot); `results` is the results'
    own list, shared, never copied."""

    __slots__ = ("reportable", "results")

    def __init__(self, results: list[Result] | None = None, reportable: bytearray | None = None) -> None:
        self.results: list[Result] = results if results is not None else []
        self.reportable = reportable if reportable is not None else bytearray(len(self.results))
        assert len(self.reportable) == len(self.results)

    def append(self, result: Result, reportable: bool) -> None:
        self.results.append(result)
        self.reportable.append(reportable)

    def extend(self, pairs: Iterable[tuple[Result, bool]]) -> None:
        if isinstance(pairs, ResultPairs):
            self.results.extend(pairs.results)
            self.reportable.extend(pairs.reportable)
            return
        if type(pairs) is list:
            # a subject's (result, reportable) list, once per subject: split at C speed, not a call per pair
            self.results.extend([result for result, _ in pairs])
            self.reportable.extend([bool(flag) for _, flag in pairs])
            return
        for result, reportable in pairs:
            self.append(result, reportable)

    def __len__(self) -> int:
        return len(self.results)

    @overload
    def __getitem__(self, index: int) -> tuple[Result, bool]: ...

    @overload
    def __getitem__(self, index: slice) -> ResultPairs: ...

    def __getitem__(self, index: int | slice) -> tuple[Result, bool] | ResultPairs:
        if isinstance(index, slice):
            return ResultPairs(self.results[index], self.reportable[index])
        return self.results[index], bool(self.reportable[index])

    def __iter__(self) -> Iterator[tuple[Result, bool]]:
        return zip(self.results, map(bool, self.reportable))


@dataclass(frozen=True)
class Notice:
    message: str
    source: Source | None = None

    def __str__(self) -> str:
        return f"{self.source}: {self.message}" if self.source else self.message


@dataclass(frozen=True)
class EvalError:
    """A policy that cannot be used (does not compile, wrong shape): reported, and the run goes on."""

    message: str
    source: Source | None


_TUPLE_NEW = tuple.__new__


def new_result(policy: str, source: str, rule: str, result: str, message: str, subject: Ref, scored: bool,
               category: str, severity: str, properties: Mapping[str, str], validation_actions: tuple[str, ...],
               location: Source | None, policy_location: Source | None, binding: str) -> Result:
    """Result(...) without the keyword handling of the named tuple's __new__ (every argument required)."""
    return _TUPLE_NEW(Result, (policy, source, rule, result, message, subject, scored, category, severity,  # type: ignore[type-var]
                               properties, validation_actions, location, policy_location, binding))
