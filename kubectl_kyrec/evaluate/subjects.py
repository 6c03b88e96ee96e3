"""Subjects: resource documents turned into Subjects (identity, plural resource, scope, namespace
defaulting), and the context each is evaluated in (the request, the namespace object and cached
activations).

The engine converts an activation's variables lazily and caches them, so one activation per
(subject, environment) is built and reused for every policy (docs/architecture.md#the-cel-engine).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubectl_kyrec.cel.engine import Activation, Environment
from kubectl_kyrec.evaluate.request import RequestInfo
from kubectl_kyrec.load.run_inputs.kinds import guess_plural
from kubectl_kyrec.model import Document, Notice, Obj, Ref, Subject, ref_of


class KindLookup(Protocol):
    def by_kind(self, api_version: str, kind: str) -> Any: ...


def as_admitted(value: Any) -> Any:
    """A manifest as the API server would store it, where that changes what a policy sees.

    Typed decoding turns `metadata: null` (ObjectMeta is a struct, not a pointer) into its zero value,
    so policies see `{}` there; other nulls are kept, as fields without omitempty (Role `rules`) are
    served as null.
    """
    changed = _admitted(value)
    return value if changed is None else changed


def _admitted(value: Any, in_metadata: bool = False) -> Any:
    """`as_admitted(value)`, or None when that is `value` itself: an object with no `metadata: null`
    (nearly all of them) is used as loaded, not copied, so a large state is not held twice. Mappings and
    sequences of other types than dict and list are always copied into those, as before.

    `in_metadata`: `value` is an object's metadata, whose `managedFields` are not walked: typed entries
    whose `fieldsV1` the server keeps as raw JSON (a null there stays null), and most of what a live
    object holds (at 3,000 live Namespaces, 3 in 4 of this function's calls, bench/apply_prewrite.py)."""
    if isinstance(value, dict):
        out = None if type(value) is dict else dict(value)
        for key, item in value.items():
            if item is None:
                if key != "metadata":
                    continue
                new: Any = {}
            elif isinstance(item, (dict, list)):
                if in_metadata and key == "managedFields" and type(item) is list:
                    continue
                new = _admitted(item, key == "metadata")
                if new is None:
                    continue
            else:
                continue
            if out is None:
                out = dict(value)
            out[key] = new
        return out
    if isinstance(value, list):
        copied = None if type(value) is list else list(value)
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
                new = _admitted(item)
                if new is not None:
                    if copied is None:
                        copied = list(value)
                    copied[index] = new
        return copied
    return None


@dataclass(frozen=True)
class SubjectSet:
    subjects: list[Subject]
    notices: list[Notice]


def make_subject(obj: Obj, source: Any, kinds: KindLookup, *, uid_from: Mapping[tuple[str, str, str, str], str]
                 | None = None) -> tuple[Subject, Notice | None]:
    """A Subject for `obj`. Namespaced kinds without a namespace land in `default`, as kubectl puts them."""
    api_version = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    info = kinds.by_kind(api_version, kind)
    notice = None
    meta = obj.get("metadata") or {}
    if info is None:
        namespaced = bool(meta.get("namespace"))
        resource = guess_plural(kind)
        notice = Notice(f"unknown kind {api_version}/{kind}: assuming resource {resource!r}, "
                        f"{'namespaced' if namespaced else 'cluster-scoped'} "
                        f"({getattr(kinds, 'crd_hint', 'its CustomResourceDefinition was not given')})", source)
    else:
        namespaced, resource = bool(info.namespaced), str(info.resource)
    namespace_default = "default" if namespaced else ""
    if namespaced and not meta.get("namespace"):
        obj = {**obj, "metadata": {**meta, "namespace": "default"}}
    ref = ref_of(obj, namespace_default)
    if not namespaced and ref.namespace:
        ref = Ref(ref.api_version, ref.kind, "", ref.name, ref.uid, ref.synthetic)
    if ref.synthetic and uid_from:
        uid = uid_from.get((ref.api_version, ref.kind, ref.namespace, ref.name))
        if uid:
            ref = Ref(ref.api_version, ref.kind, ref.namespace, ref.name, uid)
    return Subject(obj=obj, ref=ref, source=source, resource=resource, namespaced=namespaced), notice


def make_subjects(docs: Iterable[Document], kinds: KindLookup,
                  uid_from: Mapping[tuple[str, str, str, str], str] | None = None,
                  unknown_seen: set[tuple[str, str]] | None = None) -> SubjectSet:
    """`unknown_seen`: the unknown kinds already noticed, shared by the calls on the pieces of one stream
    (eval's -r read as it is evaluated), so that each kind is noticed once, as for the whole."""
    subjects: list[Subject] = []
    notices: list[Notice] = []
    unknown_seen = set() if unknown_seen is None else unknown_seen
    for doc in docs:
        subject, notice = make_subject(as_admitted(doc.obj), doc.source, kinds, uid_from=uid_from)
        subjects.append(subject)
        if notice is not None and (doc.api_version, doc.kind) not in unknown_seen:
            unknown_seen.add((doc.api_version, doc.kind))
            notices.append(notice)
    return SubjectSet(subjects, notices)


NO_EXCEPTIONS: Mapping[str, list[str]] = {"allowedImages": [], "allowedValues": []}


class SubjectContext:
    __slots__ = ("subject", "request", "namespace_obj", "_data", "_activations", "_payload", "_cel_request")

    def __init__(self, subject: Subject, request: RequestInfo, namespace_obj: Mapping[str, Any] | None,
                 *, payload: bool = False, cel_request: Mapping[str, Any] | None = None) -> None:
        """`cel_request`: the `request` variable when it is not `request`'s own: a mutateExisting
        MutatingPolicy sees its target as `object` and the trigger's admission request as `request`
        (kk: mpol compiler/eval.go prepareData, called with the target's attributes and the trigger's
        request)."""
        self.subject = subject
        self.request = request
        self.namespace_obj = namespace_obj
        self._payload = payload
        self._cel_request = cel_request
        self._data: dict[str, Any] = {
            "object": request.obj,
            "oldObject": request.old_obj,
            # a JSON payload (JSON-mode policies) is bound as `object` alone (kk: vpol policy.go evaluateJson)
            "request": None if payload else dict(cel_request) if cel_request is not None
            else request.as_cel_request(),
            "namespaceObject": dict(namespace_obj) if namespace_obj is not None else None,
        }
        self._activations: dict[tuple[Environment, str], Activation] = {}

    def with_request(self, request: RequestInfo) -> SubjectContext:
        """This context around another request (a patched object), its other bindings kept."""
        return SubjectContext(self.subject, request, self.namespace_obj, payload=self._payload,
                              cel_request=self._cel_request)

    def activation(self, env: Environment, *, exceptions: Mapping[str, Any] = NO_EXCEPTIONS,
                   extra: Mapping[str, Any] | None = None, shared: str = "") -> Activation:
        """The activation for `env`; cached unless exceptions or extra bindings make it particular.
        `shared`: a name for `extra` when its bindings are the same whenever that name is given (the
        GeneratingPolicies' `generator`), so that activation is cached too, under the name."""
        # asked once per (subject, policy): the cached one first, with the fewest steps
        particular = exceptions is not NO_EXCEPTIONS or (extra and not shared)
        if not particular:
            cached = self._activations.get((env, shared))
            if cached is not None:
                return cached
        # the bindings the environment declares, built as one mapping (not a copy of all, then a filtered one):
        # the subject's, `exceptions`, then `extra`'s
        variables = env.variables
        data = {k: v for k, v in self._data.items() if k in variables}
        if "exceptions" in variables:
            data["exceptions"] = dict(exceptions)
        if extra:
            data.update((k, v) for k, v in extra.items() if k in variables)
        activation = env.activation(data)
        if not particular:
            self._activations[(env, shared)] = activation
        return activation
