"""The cluster as one run sees it: the objects read, and which kinds and scopes were LISTED to get them.

A state that holds no Deployment either comes from a cluster without Deployments or from a capture that
never asked for them; only a record of what was listed tells the two apart, so the record travels with the
objects instead of being guessed from which objects happen to be present. Readers (load/run_inputs/state.py for files
and captures, cluster/live.py for a live cluster) decide what counts as listed; this module only keeps and
answers it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.model import Document, Notice

StateSource = Literal["files", "live"]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


@dataclass(frozen=True, order=True)
class ListedKind:
    """One kind listed in one scope; namespace "" means all namespaces (or a cluster-scoped kind)."""

    api_version: str
    kind: str
    namespace: str = ""

    def to_json(self) -> dict[str, str]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace}


def failed_list(kind: ListedKind, message: str, *, recorded: bool, status: int | None = None, reason: str = "",
                resource: str = "") -> FailedRead:
    """A LIST of `kind` that failed. Without `resource` (a capture written before its record carried the
    read), the resource is named as the API server most likely names it."""
    from kubectl_kyrec.load.run_inputs.kinds import guess_plural

    if not resource:
        group, plural = _group(kind.api_version), guess_plural(kind.kind)
        resource = f"{plural}.{group}" if group else plural
    return FailedRead("list", kind.api_version, kind.kind, resource, kind.namespace, status, reason, message,
                      recorded=recorded)


@dataclass
class ClusterState:
    """Objects plus the record of what was listed (and what could not be read) to get them."""

    objects: list[Document] = field(default_factory=list)
    listed: set[ListedKind] = field(default_factory=set)
    # the LISTs that failed, each with how (errors.FailedRead: what every output says of it)
    unreadable: dict[ListedKind, FailedRead] = field(default_factory=dict)
    source: StateSource = "files"
    has_managed_fields: bool = False
    # (apiVersion, kind) the server serves, from discovery (live) or a capture's record; None: not known. What
    # a server does not serve cannot be listed, so kyrec never advises capturing it
    served: frozenset[tuple[str, str]] | None = None
    # the salts of the captures whose Secrets hold digests of their values (load/run_inputs/secret_digests.py)
    secret_salts: tuple[bytes, ...] = ()
    # reads made as evidence of findings' causes only (Kyverno's Deployments, UpdateRequests) that failed: not
    # unreadable kinds (no finding depends on them), but a cause they could have given cannot be ruled out, and
    # an offline run of a capture must say so as the live run did
    evidence_unread: dict[ListedKind, str] = field(default_factory=dict)
    # the lookups' indexes, built on the first lookup: a run that makes none (coverage of 100,000 objects)
    # neither builds nor holds them
    _by_kind: dict[tuple[str, str], list[Document]] | None = field(default=None, init=False, repr=False,
                                                                   compare=False)
    _by_name: dict[tuple[str, str, str, str], Document] | None = field(default=None, init=False, repr=False,
                                                                      compare=False)
    # is_listed's answers by (group or apiVersion, kind, namespace), and the sizes of `listed` and `unreadable`
    # they were built from: apply's planning asks about every object several times (27,000 questions for
    # 3,000 creates), and a scan of the record per question was a second of its CPU. The record only grows
    # (readers add to it), so a size that changed means a stale index. Beside it, the answers given so far by
    # the question as asked, dropped with the index: the 18,000 questions of 3,000 creates name 3,000 scopes,
    # each asked six times (the diff's hold, the plan's, apply's own), and one look-up of the question costs a
    # sixth of deriving its answer again (bench/apply_prewrite.py)
    _listed_index: tuple[int, int, dict[tuple[bool, str, str, str], bool],
                         dict[tuple[bool, str, str, str], bool | None]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def _indexes(self) -> tuple[dict[tuple[str, str], list[Document]], dict[tuple[str, str, str, str], Document]]:
        if self._by_kind is None or self._by_name is None:
            by_kind: dict[tuple[str, str], list[Document]] = {}
            by_name: dict[tuple[str, str, str, str], Document] = {}
            # indexed by group, not apiVersion: every served version of a kind shows the same objects
            for doc in self.objects:
                group = _group(doc.api_version)
                by_kind.setdefault((group, doc.kind), []).append(doc)
                by_name.setdefault((group, doc.kind, doc.namespace, doc.name), doc)
            self._by_kind, self._by_name = by_kind, by_name
        return self._by_kind, self._by_name

    @classmethod
    def from_objects(cls, objects: Iterable[Document], *, listed: Iterable[ListedKind] = (),
                     unreadable: Mapping[ListedKind, FailedRead | str] | None = None,
                     source: StateSource = "files",
                     has_managed_fields: bool | None = None,
                     served: Iterable[tuple[str, str]] | None = None,
                     secret_salts: Iterable[bytes] = (),
                     evidence_unread: Mapping[ListedKind, str] | None = None) -> ClusterState:
        """`has_managed_fields` defaults to whether any object carries metadata.managedFields (kubectl
        strips them unless asked with --show-managed-fields). An `unreadable` entry given as a message alone
        is a LIST of that kind that failed in an unknown way."""
        docs = list(objects)
        if has_managed_fields is None:
            has_managed_fields = any((d.obj.get("metadata") or {}).get("managedFields") for d in docs)
        failed = {k: v if isinstance(v, FailedRead) else failed_list(k, v, recorded=source == "files")
                  for k, v in (unreadable or {}).items()}
        return cls(docs, set(listed), failed, source, has_managed_fields,
                   frozenset(served) if served is not None else None, tuple(dict.fromkeys(secret_salts)),
                   dict(evidence_unread or {}))

    def first_of_each(self, namespaced: Callable[[Document], bool | None] | None = None
                      ) -> tuple[ClusterState, list[Notice]]:
        """The state with one copy of each object (the first; load/run_inputs/duplicates.py's rule, the one `-r`
        manifests and test suites follow) and one notice when there were repeats. Files that overlap (two
        captures of one cluster) and live reads that met an object twice go through here alike; the
        Kubescape producer does not, since its two reads of a summary are two copies on purpose."""
        from kubectl_kyrec.load.run_inputs.duplicates import first_of_each

        objects, repeats = first_of_each(self.objects, namespaced)
        if not repeats:
            return self, []
        return dataclasses.replace(self, objects=objects), repeats_notice(repeats)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.objects)

    def __len__(self) -> int:
        return len(self.objects)

    def __bool__(self) -> bool:
        return bool(self.objects) or bool(self.listed) or bool(self.unreadable)

    @property
    def objs(self) -> list[dict[str, Any]]:
        """The plain objects, in reading order."""
        return [d.obj for d in self.objects]

    def is_listed(self, api_version: str, kind: str, namespace: str = "", *,
                  exact_version: bool = False) -> bool | None:
        """True: listed in this scope (or cluster-wide); False: known unreadable there; None: no record.

        By default any version of the group answers: a LIST of apps/v1 Deployments holds every Deployment,
        so whether one exists is known. `exact_version`: listed at this very version, which matching needs
        (a state object is matched at the version it was captured at, in that version's shape)."""
        cached = self._listed_index
        # fresh while the record has not grown: looked at here, not in a call per question (18,000 at 3,000 creates)
        if cached is not None and cached[0] == len(self.listed) and cached[1] == len(self.unreadable):
            index, given = cached[2], cached[3]
        else:
            index, given = self._listed_answers()
        question = (exact_version, api_version, kind, namespace)
        if question in given:
            return given[question]
        where = api_version if exact_version else _group(api_version)
        # listed cluster-wide (namespace "") answers for every namespace, and wins over a failure in one
        answers = (index.get((exact_version, where, kind, "")), index.get((exact_version, where, kind, namespace))
                   if namespace else None)
        answer = True if True in answers else False if False in answers else None
        given[question] = answer
        return answer

    def _listed_answers(self) -> tuple[dict[tuple[bool, str, str, str], bool],
                                       dict[tuple[bool, str, str, str], bool | None]]:
        """((exact version?, apiVersion or group, kind, namespace) -> True listed there, False unreadable there;
        is_listed's answers so far, by its question), built anew: is_listed asks once the record has grown."""
        index: dict[tuple[bool, str, str, str], bool] = {}
        for key in self.unreadable:
            index[(True, key.api_version, key.kind, key.namespace)] = False
            index[(False, _group(key.api_version), key.kind, key.namespace)] = False
        for key in self.listed:       # listed wins over unreadable, as is_listed always answered
            index[(True, key.api_version, key.kind, key.namespace)] = True
            index[(False, _group(key.api_version), key.kind, key.namespace)] = True
        given: dict[tuple[bool, str, str, str], bool | None] = {}
        self._listed_index = (len(self.listed), len(self.unreadable), index, given)
        return index, given

    def serves(self, api_version: str, kind: str, *, exact_version: bool = False) -> bool | None:
        """Whether the server serves this kind (any version of its group, or this very version); None when
        the state does not know what the server serves (files without a record)."""
        if self.served is None:
            return None
        if exact_version:
            return (api_version, kind) in self.served
        group = _group(api_version)
        return any(k == kind and _group(v) == group for v, k in self.served)

    def listed_versions(self, api_version: str, kind: str) -> list[str]:
        """The apiVersions this group's kind was listed at, in any scope (sorted)."""
        group = _group(api_version)
        return sorted({k.api_version for k in self.listed if _group(k.api_version) == group and k.kind == kind})

    def unreadable_message(self, api_version: str, kind: str, namespace: str = "") -> str | None:
        group = _group(api_version)
        for key, message in self.unreadable.items():
            if _group(key.api_version) == group and key.kind == kind and key.namespace in ("", namespace):
                return message.message
        return None

    def read_failure(self, api_version: str, kind: str, namespace: str = "") -> str | None:
        """Why a LIST of the kind there failed, as a subject's read or as evidence; None when none did."""
        found = self.unreadable_message(api_version, kind, namespace)
        if found is not None:
            return found
        group = _group(api_version)
        for key, message in self.evidence_unread.items():
            if _group(key.api_version) == group and key.kind == kind and key.namespace in ("", namespace):
                return message
        return None

    def get_object(self, api_version: str, kind: str, namespace: str, name: str) -> Document | None:
        """The object, or None (cluster-scoped kinds: namespace "")."""
        return self._indexes()[1].get((_group(api_version), kind, namespace, name))

    def list_objects(self, api_version: str, kind: str, namespace: str = "") -> list[Document]:
        """The objects of a kind, in reading order; namespace "" = all namespaces."""
        docs = self._indexes()[0].get((_group(api_version), kind), [])
        return docs if not namespace else [d for d in docs if d.namespace == namespace]


def repeats_notice(repeats: list[Notice]) -> list[Notice]:
    """The one notice of a state's repeats (duplicates.first_of_each's notices), or none."""
    if not repeats:
        return []
    return [Notice(f"{len(repeats)} object(s) appear more than once in the state; the first of each is used "
                   f"(first: {repeats[0]})")]


MORE_STATE = "more-state.json"


def capture_command(resources: str, scope: str = "-A", output: str = MORE_STATE) -> str:
    """The command that captures `resources` (kubectl's comma-separated resource names) in `scope` (`-A`,
    `-n NS`) so that a later --state knows each was listed, even when the cluster has none of it (kubectl's
    List of a kind with no objects names no kind, so `kubectl get` cannot record that)."""
    return f"kubectl kyrec capture --kind {resources} {scope} -o {output}"
