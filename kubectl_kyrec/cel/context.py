"""Where Kyverno's context-backed CEL functions get their answers: clusters, files, fixtures.

`resource.*`, `globalContext.*`, `image.GetMetadata` and `http.*` ask a :class:`ContextProvider`.
Offline, :class:`ObjectsProvider` answers from plain objects (state files, a Kyverno CLI `Context`
file) the way a cluster holding those objects would (docs/semantics/cel-libraries.md#resource-functions): full List
objects, label selectors honoured, `""` meaning every namespace, `null` for a Get that finds nothing.

Providers raise :class:`CelFunctionError` with the bare reason; the libraries add Kyverno's prefixes
(`failed to get resource: ...`, `request failed: ...`).
"""

from __future__ import annotations

import copy
import datetime
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubectl_kyrec.cel.decl import CelFunctionError, LookupRefused, LookupUnread, registry_needed
from kubectl_kyrec.golang.json import roundtrip
from kubectl_kyrec.k8s.labels import matches_label_map
from kubectl_kyrec.k8s.namespaces import default_namespace
from kubectl_kyrec.load.registry import Registry, RegistryError

ResourceOf = Callable[[str, str], "tuple[str, bool] | None"]
"""(apiVersion, kind) -> (resource plural, namespaced), or None when the kind is unknown."""

KindOf = Callable[[str, str], "str | None"]
"""(apiVersion, resource plural) -> kind, or None when the resource is unknown."""

NOT_FOUND_RESOURCE = "the server could not find the requested resource"
# (apiVersion, kind, namespace) -> why the cluster refused the state's read of that kind there, else None
Refused = Callable[[str, str, str], "str | None"]
# (apiVersion, kind, namespace) -> (why, reason) the state read from a cluster cannot answer a lookup of that
# kind there (cel/decl.py LookupUnread), else None
Unread = Callable[[str, str, str], "tuple[str, str] | None"]


class ContextProvider(Protocol):
    """What the context-backed libraries ask. Raise CelFunctionError for a failure."""

    def get_resource(self, api_version: str, resource: str, namespace: str,
                     name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist (Kubernetes NotFound)."""

    def list_resources(self, api_version: str, resource: str, namespace: str,
                       selector: dict[str, str] | None) -> dict[str, Any]:
        """A full List object {apiVersion, kind: <Kind>List, metadata, items}; namespace "" = all."""

    def post_resource(self, api_version: str, resource: str, namespace: str,
                      data: dict[str, Any]) -> dict[str, Any]:
        """Create `data` and return what the server stored."""

    def to_gvr(self, api_version: str, kind: str) -> dict[str, str]:
        """{group, version, resource} for a kind (a RESTMapper lookup)."""

    def global_context(self, name: str, projection: str) -> Any:
        """A GlobalContextEntry's data (or one projection of it); None when there is no such entry."""

    def image_metadata(self, ref: str) -> Any:
        """Image data as Kyverno's image data loader returns it."""

    def http_request(self, method: str, url: str, body: Any, headers: dict[str, str]) -> Any:
        """The response as the http library returns it: the decoded JSON body plus statusCode."""


@dataclass(frozen=True)
class LibraryContext:
    """Everything Kyverno's libraries need besides their arguments.

    `policy_namespace` is the namespace of a namespaced policy (NamespacedValidatingPolicy,
    NamespacedGeneratingPolicy); its `resource.*` overloads use it. `rng` feeds `random()`.
    """

    now: datetime.datetime
    provider: ContextProvider
    policy_namespace: str = ""
    rng: random.Random = field(default_factory=random.Random, compare=False)


def parse_group_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion: "" -> ("", ""), "v1" -> ("", "v1"), "apps/v1" -> ("apps", "v1")."""
    if not api_version:
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    raise CelFunctionError(f"unexpected GroupVersion string: {api_version}")


def builtin_resource_of(api_version: str, kind: str) -> tuple[str, bool] | None:
    """(plural, namespaced) from the project's one kind table (load.run_inputs.kinds), built-in kinds only."""
    from kubectl_kyrec.load.run_inputs.kinds import builtin_kinds

    return builtin_kinds().resource_of(api_version, kind)


def builtin_kind_of(api_version: str, resource: str) -> str | None:
    from kubectl_kyrec.load.run_inputs.kinds import builtin_kinds

    return builtin_kinds().kind_of(api_version, resource)


@dataclass(frozen=True)
class HttpStub:
    """One canned HTTP response from a Context file's `spec.http`."""

    method: str
    url: str
    status: int
    body: Any  # the decoded JSON body (Go: float64 numbers)


@dataclass(frozen=True)
class ContextFile:
    """A parsed `cli.kyverno.io/v1alpha1` Context document, ready to feed a provider."""

    resources: tuple[dict[str, Any], ...] = ()
    images: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    global_context: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    http_stubs: tuple[HttpStub, ...] = ()


def _image_data(entry: Mapping[str, Any]) -> dict[str, Any]:
    # the CLI stores json.Unmarshal(json.Marshal(ImageData)): required fields always, the rest omitempty
    data: dict[str, Any] = {key: entry.get(key) or "" for key in ("image", "resolvedImage", "registry",
                                                                    "repository")}
    for key in ("tag", "digest"):
        if entry.get(key):
            data[key] = entry[key]
    for key in ("imageIndex", "manifest", "config"):
        if entry.get(key) is not None:
            data[key] = entry[key]
    return dict(roundtrip(data))


def load_context_file(obj: Mapping[str, Any], *,
                      read_file: Callable[[str], Any] | None = None) -> ContextFile:
    """Turn a parsed Context document into provider inputs.

    Supports `spec.resources` and `spec.images` (the Context schema in kyverno/kyverno
    cmd/cli/kubectl-kyverno/apis/v1alpha1/context.go) and the fixture lists `spec.globalContext`
    ({name, projection, value | valueFile}) and `spec.http` ({method, url, status, headers,
    body | bodyFile}) that newer CLIs accept. `valueFile`/`bodyFile` are read through `read_file`
    (path -> parsed YAML/JSON value); without it they are an error. Raises ValueError on a document
    that is not a Context.
    """
    if obj.get("apiVersion") != "cli.kyverno.io/v1alpha1" or obj.get("kind") != "Context":
        raise ValueError("expected apiVersion cli.kyverno.io/v1alpha1, kind Context, got "
                         f"{obj.get('apiVersion')!r}, {obj.get('kind')!r}")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise ValueError("Context: spec is required")

    def listed(key: str) -> list[Any]:
        value = spec.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
            raise ValueError(f"Context: spec.{key} must be a list of objects")
        return value

    def from_file(path: str, what: str) -> Any:
        if read_file is None:
            raise ValueError(f"Context: {what} {path!r} needs file access (pass read_file)")
        return read_file(path)

    images: dict[str, dict[str, Any]] = {}
    for entry in listed("images"):
        if not entry.get("image"):
            raise ValueError("Context: spec.images[].image is required")
        images[str(entry["image"])] = _image_data(entry)

    global_context: dict[str, dict[str, Any]] = {}
    for entry in listed("globalContext"):
        if not entry.get("name"):
            raise ValueError("Context: spec.globalContext[].name is required")
        if entry.get("valueFile"):
            value = from_file(str(entry["valueFile"]), "valueFile")
        else:
            value = entry.get("value")
        projections = global_context.setdefault(str(entry["name"]), {})
        projections[str(entry.get("projection") or "")] = roundtrip(value)

    stubs: list[HttpStub] = []
    for entry in listed("http"):
        if not entry.get("method") or not entry.get("url"):
            raise ValueError("Context: spec.http[] needs method and url")
        body = from_file(str(entry["bodyFile"]), "bodyFile") if entry.get("bodyFile") else entry.get("body")
        status = int(entry.get("status") or 200)
        stubs.append(HttpStub(str(entry["method"]).upper(), str(entry["url"]), status, roundtrip(body)))

    return ContextFile(tuple(dict(r) for r in listed("resources")), images, global_context, tuple(stubs))


def _labels_match(obj: Mapping[str, Any], selector: Mapping[str, str] | None) -> bool:
    return matches_label_map(selector, (obj.get("metadata") or {}).get("labels"))


class ObjectsProvider:
    """A provider over plain objects: a cluster that holds exactly these, with no network.

    Objects are keyed by (apiVersion, resource plural, namespace, name); the plural and the scope come
    from `resource_of` (a cluster-scoped object is stored under namespace "" whatever its metadata
    says). Objects whose kind `resource_of` does not know are left out and listed in `skipped`.
    `kind_of` names the List kind for a resource with no objects. `get_resource` hands out a copy;
    `list_resources` hands out the stored objects inside a new List, so callers must not mutate them.
    """

    def __init__(self, objects: Iterable[dict[str, Any]] = (), resource_of: ResourceOf = builtin_resource_of,
                 context_file: Mapping[str, Any] | None = None, *, kind_of: KindOf = builtin_kind_of,
                 read_file: Callable[[str], Any] | None = None,
                 http_mocks: Mapping[str, tuple[int, Any]] | None = None,
                 global_mocks: Mapping[str, Any] | None = None, cli_http_mocks: bool = False,
                 refused: Refused | None = None, implicit_namespaces: bool = False,
                 registry: Registry | None = None, cluster_images: bool = False,
                 unread: Unread | None = None) -> None:
        self._resource_of = resource_of
        # the run's `--registry`: image.GetMetadata of an image the context file does not hold reads it, as
        # Kyverno's cluster context provider does (kk: pkg/cel/libs/context.go GetImageData); None: offline
        self.registry = registry
        # offline, such an image is what a cluster would read from its registry (needs-registry: eval, test
        # --strict), or Kyverno's CLI's answer (its fake provider's error: test's default mode)
        self._cluster_images = cluster_images
        self._fetched: dict[str, dict[str, Any] | CelFunctionError] = {}
        # a Namespace absent from the objects reads as the Active one a cluster would have (kyrec's rule for
        # a state, which the classic context loader follows too); a Kyverno CLI test's fake client does not
        self._implicit_namespaces = implicit_namespaces
        self._refused = refused
        # why the objects cannot say what the cluster holds of this kind there (objects read from a cluster
        # that did not list it), else None: an object found is an answer, its absence is not
        self._unread = unread
        self._kind_of = kind_of
        self._store: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self._ordered: dict[tuple[str, str], list[tuple[tuple[str, str], dict[str, Any]]]] = {}
        self._kinds: dict[tuple[str, str], tuple[str, bool]] = {}
        self._served: dict[tuple[str, str], tuple[str, bool] | None] = {}     # see _kind_info
        self._skipped: list[tuple[str, str, str]] = []
        loaded = ContextFile()
        if context_file is not None:
            loaded = load_context_file(context_file, read_file=read_file)
        self._images = dict(loaded.images)
        self._global = {name: dict(entry) for name, entry in loaded.global_context.items()}
        self._stubs = {f"{s.method} {s.url}": s for s in loaded.http_stubs}
        # a Kyverno CLI test's apiCallResponses / globalContextEntries (testsuite/mocks.py)
        self._http_mocks = dict(http_mocks or {})
        self._global_mocks = dict(global_mocks or {})
        self._cli_http_mocks = cli_http_mocks
        # stored on the first lookup: most runs' policies never call resource.*, and indexing a state of
        # 100,000 objects for nothing took a quarter of a second and 11 MiB
        self._pending: list[dict[str, Any]] | None = [*objects, *loaded.resources]

    def _stored(self) -> None:
        pending, self._pending = self._pending, None
        for obj in pending or ():
            self._store_one(obj)

    @property
    def skipped(self) -> list[tuple[str, str, str]]:
        """(apiVersion, kind, name) of the objects left out: their kind is unknown."""
        self._stored()
        return self._skipped

    def add(self, obj: dict[str, Any]) -> bool:
        """Store one object; False (and an entry in `skipped`) when its kind is unknown."""
        self._stored()
        return self._store_one(obj)

    def _store_one(self, obj: dict[str, Any]) -> bool:
        api_version = str(obj.get("apiVersion", ""))
        kind = str(obj.get("kind", ""))
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name", ""))
        mapping = self._resource_of(api_version, kind)
        if mapping is None:
            self._skipped.append((api_version, kind, name))
            return False
        plural, namespaced = mapping
        # a namespaced manifest without a namespace is where `kubectl apply` puts it
        namespace = str(metadata.get("namespace") or "default") if namespaced else ""
        self._kinds[(api_version, plural)] = (kind, namespaced)
        self._store.setdefault((api_version, plural), {})[(namespace, name)] = obj
        self._ordered.pop((api_version, plural), None)
        return True

    def _kind_info(self, api_version: str, resource: str) -> tuple[str, bool] | None:
        self._stored()
        known = self._kinds.get((api_version, resource))
        if known is not None:
            return known
        # the kind table's answer, asked once per resource: a policy's `resource.Get` of a kind no object
        # of the state holds (an absent ConfigMap) asks it on every subject, twice (refused, unread), and the
        # table does not change once the run evaluates (its CRDs are read before any provider is made)
        if (api_version, resource) in self._served:
            return self._served[(api_version, resource)]
        kind = self._kind_of(api_version, resource)
        mapping = self._resource_of(api_version, kind) if kind is not None else None
        served = self._served[(api_version, resource)] = (kind, mapping[1]) \
            if kind is not None and mapping is not None else None
        return served

    def get_resource(self, api_version: str, resource: str, namespace: str,
                     name: str) -> dict[str, Any] | None:
        parse_group_version(api_version)
        base, _, subresource = resource.partition("/")
        if subresource and subresource != "status":
            raise CelFunctionError(f"subresource {subresource!r} is not available offline")
        self._check_refused(api_version, base, namespace)
        self._stored()
        obj = self._store.get((api_version, base), {}).get((namespace, name))
        if obj is None and self._implicit_namespaces and (api_version, base) == ("v1", "namespaces") and name:
            return default_namespace(name)
        if obj is None:
            self._check_unread(api_version, base, namespace)
        # a GET of the status subresource answers the whole object
        return copy.deepcopy(obj) if obj is not None else None

    def list_resources(self, api_version: str, resource: str, namespace: str,
                       selector: dict[str, str] | None) -> dict[str, Any]:
        parse_group_version(api_version)
        info = self._kind_info(api_version, resource)
        if info is None or "/" in resource:
            raise CelFunctionError(NOT_FOUND_RESOURCE)
        kind, namespaced = info
        if namespace and not namespaced:
            raise CelFunctionError(NOT_FOUND_RESOURCE)
        self._check_refused(api_version, resource, namespace)
        self._check_unread(api_version, resource, namespace)
        key = (api_version, resource)
        ordered = self._ordered.get(key)
        if ordered is None:
            # the API server lists in namespace/name order; sort once per resource, not per call
            ordered = self._ordered[key] = sorted(self._store.get(key, {}).items())
        # items are the stored objects themselves (not copies): a List of thousands of objects is made
        # for every subject a policy evaluates, and CEL converts them anyway. Callers must not mutate them.
        items = [obj for (ns, _), obj in ordered
                 if (not namespace or ns == namespace) and _labels_match(obj, selector)]
        return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {}, "items": items}

    def post_resource(self, api_version: str, resource: str, namespace: str,
                      data: dict[str, Any]) -> dict[str, Any]:
        raise CelFunctionError("resource.Post needs a cluster (not available offline)")

    def _check_refused(self, api_version: str, resource: str, namespace: str) -> None:
        """The cluster refused to let the state's read of this kind there (401/403): what the policy reads is
        unknown, and Kyverno's library answers a refusal as `permission denied`, not as an empty answer."""
        if self._refused is None:
            return
        info = self._kind_info(api_version, resource)
        why = self._refused(api_version, info[0], namespace) if info is not None else None
        if why is not None:
            raise LookupRefused(why)

    def _check_unread(self, api_version: str, resource: str, namespace: str) -> None:
        """The objects came from a cluster that was not read for this kind there: an absence would be a guess."""
        if self._unread is None:
            return
        info = self._kind_info(api_version, resource)
        why = self._unread(api_version, info[0], namespace if info[1] else "") if info is not None else None
        if why is not None:
            raise LookupUnread(*why)

    def to_gvr(self, api_version: str, kind: str) -> dict[str, str]:
        group, version = parse_group_version(api_version)
        mapping = self._resource_of(api_version, kind)
        if mapping is None:
            raise CelFunctionError(f'no matches for kind "{kind}" in version "{api_version}"')
        return {"group": group, "version": version, "resource": mapping[0]}

    def global_context(self, name: str, projection: str) -> Any:
        if name in self._global_mocks:
            # kk: pkg/cel/libs/fake_context.go GetGlobalReference
            data = self._global_mocks[name]
            if not projection:
                return roundtrip(data)
            if not isinstance(data, dict):
                raise CelFunctionError(f'projection "{projection}" not found in global context entry "{name}": '
                                       "stored value is not an object")
            if projection not in data:
                raise CelFunctionError(f'projection "{projection}" not found in global context entry "{name}"')
            return roundtrip(data[projection])
        entry = self._global.get(name)
        if entry is None:
            # Kyverno answers null for an entry that does not exist (or is not synced yet)
            return None
        if projection in entry:
            return copy.deepcopy(entry[projection])
        if projection and "" in entry:
            return copy.deepcopy(entry[""])
        available = " ".join(sorted(p or "(default)" for p in entry))
        raise CelFunctionError(f'global context entry "{name}" projection "{projection}" not found - '
                               f"available projections: [{available}]. Add the missing projection to your "
                               "context file")

    def image_metadata(self, ref: str) -> Any:
        if ref in self._images:
            return copy.deepcopy(self._images[ref])
        if self.registry is None:
            if self._cluster_images:
                # the engines make a result that meets NEEDS_REGISTRY undetermined (needs-registry)
                raise CelFunctionError(f"{registry_needed(ref)} (or give the image data in a context file's images)")
            # Kyverno's CLI offline (kk: pkg/cel/libs/fake_context.go GetImageData)
            raise CelFunctionError(f"image data for {ref} not found in the context")
        fetched = self._fetched.get(ref)
        if fetched is None:
            # once a run per reference: a registry that failed (or timed out) is not asked again for every
            # subject, and the answer stays the same across the run's subjects
            try:
                fetched = self.registry.image_descriptor(ref)
            except (RegistryError, ValueError) as err:
                # the fetch's own error; the library adds Kyverno's `failed to get image data: ` (every failure,
                # a registry that did not answer too, is the expression's error: never a value)
                fetched = CelFunctionError(str(err))
            self._fetched[ref] = fetched
        if isinstance(fetched, CelFunctionError):
            raise CelFunctionError(str(fetched))
        return copy.deepcopy(fetched)

    def http_request(self, method: str, url: str, body: Any, headers: dict[str, str]) -> Any:
        method = method.upper()
        # the CLI's mocks answer GET and POST (kk: pkg/cel/libs/http_mock.go); anything else goes on as
        # without them. The CLI hands out {body, statusCode} (commands/test/test.go wrapHTTPResponse, PR
        # kyverno/kyverno#15948); a server with that response gives the body with statusCode added.
        mock = (self._http_mocks.get(f"{method}:{url}") or self._http_mocks.get(url)
                if method in ("GET", "POST") else None)
        if mock is not None:
            if self._cli_http_mocks:
                return {"body": roundtrip(mock[1]), "statusCode": mock[0]}
            return _response(mock[0], roundtrip(mock[1]))
        if not self._stubs:
            raise CelFunctionError(f"http.{method.capitalize()}: needs network access "
                                   "(not available offline)")
        stub = self._stubs.get(f"{method} {url}")
        if stub is None:
            available = " ".join(sorted(self._stubs))
            raise CelFunctionError(f'request failed: {method.capitalize()} "{url}": no HTTP stub found for '
                                   f"{method} {url} - available stubs: [{available}]. Add a matching stub to "
                                   "your context file")
        return _response(stub.status, copy.deepcopy(stub.body))


def _response(status: int, body: Any) -> Any:
    """What the http library returns for a response (sdk: http impl.go executeRequest): an object body
    with `statusCode` added, anything else as {body, statusCode}."""
    if isinstance(body, dict):
        body["statusCode"] = status
        return body
    return {"body": body, "statusCode": status}


class EmptyProvider(ObjectsProvider):
    """An empty cluster with no network: Get finds nothing, List is empty (for kinds the table
    knows), global context entries do not exist, and registries and HTTP are out of reach."""

    def __init__(self, resource_of: ResourceOf = builtin_resource_of, *,
                 kind_of: KindOf = builtin_kind_of) -> None:
        super().__init__((), resource_of, kind_of=kind_of)

    def image_metadata(self, ref: str) -> Any:
        raise CelFunctionError(f"image.GetMetadata({ref}): needs registry access (not available offline)")
