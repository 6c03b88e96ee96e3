"""Rule `context` entries (kk: pkg/engine/context/loaders, pkg/engine/apicall, and the CLI's store/contextloader.go).

- `variable`: value and/or jmesPath, default; nil is an error.
- `configMap` and `apiCall.urlPath` (GET): answered by a `ContextProvider` standing for the cluster — the
  state in `eval`/`diff`, the test's clusterResources in `test` (as Kyverno's CLI answers them from its fake
  client); no provider means Kyverno's CLI without a cluster, where these loaders are disabled and the
  entry is simply absent.
- `globalReference`: the test's globalContextEntries mocks, else GlobalContextEntry objects of the state.
- `apiCallResponses` mocks answer apiCall entries (urlPath or service.url) first, as in the CLI.
- what nothing can answer (`apiCall.service`, POST calls, `imageRegistry`): `Unanswerable`, so the engine
  can say the rule is undetermined instead of guessing.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.classic.core_adapter import Core, JsonContext
from kubectl_kyrec.classic.validate import ContextLoadError
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.fmt import sprint as _go_print  # fmt's %v, for error texts


class Unanswerable(EngineError):
    """A context entry kyrec cannot answer offline (the rule's result is undetermined); `registry`: one
    only a registry answers (`--registry`), not `--values`."""

    def __init__(self, message: str, *, registry: bool = False) -> None:
        super().__init__(message)
        self.registry = registry


@dataclass
class ContextSources:
    cluster: Any | None = None                         # a cel.context.ContextProvider, or None (disabled)
    configmaps: bool = True                            # the ConfigMap loader is enabled
    # False: the image registry loader is disabled, as in Kyverno's CLI without --registry (the entry is
    # absent, values may stand in); True: a registry would be asked, which kyrec cannot do (undetermined)
    registry: bool = True
    # `--registry` (a load.registry.Registry): imageRegistry entries are fetched (registry is then True)
    image_registry: Any = None
    # a Namespace absent from the state reads as the Active one a cluster would have (kyrec's rule for the
    # state everywhere); Kyverno's CLI fake client has only what the test gives
    implicit_namespaces: bool = False
    api_mocks: Mapping[str, tuple[int, Any]] = field(default_factory=dict)   # "GET:url" / url -> (code, body)
    global_entries: Mapping[str, Any] = field(default_factory=dict)          # name -> resolved data
    state_global_entries: Callable[[str], Any] | None = None                  # name -> data, None if absent
    # the CLI's values: rule name -> variables added before the rule's entries (kk: WithInitializer)
    rule_values: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    foreach_values: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)


_NS_PATH = re.compile(r"^/(api|apis/[^/]+)/v[^/]+/namespaces/([^/]+)")


class ContextLoader:
    """Loads the entries of one rule (and of its foreach levels) into a JsonContext."""

    def __init__(self, core: Core, sources: ContextSources, policy_name: str, policy_namespace: str,
                 rule_name: str) -> None:
        self.core = core
        self.sources = sources
        self.policy_name = policy_name
        self.policy_namespace = policy_namespace
        self.rule_name = rule_name
        self.unanswerable = ""
        self.unanswerable_needs_registry = False

    def initialize(self, ctx: JsonContext) -> None:
        """The CLI's initializer: per-rule `values`, then `foreachValues` (always element 0, as the CLI's
        store never advances its foreach counter)."""
        key = (self.policy_name, self.rule_name)
        for name, value in (self.sources.rule_values.get(key) or {}).items():
            ctx.add_variable(name, value)
        for name, values in (self.sources.foreach_values.get(key) or {}).items():
            if isinstance(values, list) and values:
                ctx.add_variable(name, values[0])

    def __call__(self, entries: Sequence[Any], ctx: JsonContext) -> None:
        """The rule's initializer, then one deferred loader per entry (Kyverno loads an entry the first
        time a query names it, so an entry nothing reads never fails)."""
        self.initialize(ctx)
        for entry in entries or []:
            if isinstance(entry, Mapping):
                name = str(entry.get("name") or "")
                if not self._disabled(entry):
                    ctx.add_deferred_loader(name, functools.partial(self._load, name, entry))

    def _disabled(self, entry: Mapping[str, Any]) -> bool:
        """Loaders the CLI switches off without a cluster: the entry stays absent."""
        if entry.get("configMap") is not None:
            return not self.sources.configmaps or self.sources.cluster is None
        if entry.get("globalReference") is not None:
            return not self.sources.global_entries and self.sources.state_global_entries is None
        if entry.get("imageRegistry") is not None:
            return not self.sources.registry
        return False

    def _load(self, name: str, entry: Mapping[str, Any], ctx: JsonContext) -> None:  # noqa: C901
        try:
            if entry.get("variable") is not None:
                ctx.replace_context_entry(name, self._variable(name, entry["variable"], ctx))
            elif entry.get("configMap") is not None:
                ctx.add_context_entry(name, self._config_map(name, entry["configMap"], ctx))
            elif entry.get("apiCall") is not None:
                value = self._api_call(name, entry["apiCall"], ctx)
                if value is not _ABSENT:
                    ctx.add_context_entry(name, value)
            elif entry.get("globalReference") is not None:
                value = self._global(name, entry["globalReference"], ctx)
                if value is not _ABSENT:
                    ctx.add_context_entry(name, value)
            elif entry.get("imageRegistry") is not None:
                if self.sources.image_registry is None:
                    raise Unanswerable(f"context entry {name!r} reads an image registry (imageRegistry)",
                                       registry=True)
                ctx.add_context_entry(name, self._image_registry(name, entry["imageRegistry"], ctx))
        except Unanswerable as exc:
            # remembered, so the engine can call the rule undetermined whatever the query made of it
            self.unanswerable = str(exc)
            self.unanswerable_needs_registry = exc.registry
            raise ContextLoadError(str(exc)) from None

    # -- variable --------------------------------------------------------------------------------------

    def _variable(self, name: str, spec: Mapping[str, Any], ctx: JsonContext) -> Any:
        path = ""
        if spec.get("jmesPath"):
            try:
                path = self.core.substitute(ctx, spec["jmesPath"])
            except EngineError as exc:
                raise ContextLoadError(f"failed to substitute variables in context entry {name} "
                                       f"{spec['jmesPath']}: {exc}") from None
            if not isinstance(path, str):
                raise ContextLoadError(f"jmespath value must be a string {name} {spec['jmesPath']}: <nil>")
        default = None
        if spec.get("default") is not None:
            try:
                default = self.core.substitute(ctx, spec["default"])
            except EngineError as exc:
                raise ContextLoadError(f"failed to substitute variables in context entry {name} "
                                       f"{_go_print(spec['default'])}: {exc}") from None
        output = default
        if spec.get("value") is not None:
            try:
                value = self.core.substitute(ctx, spec["value"])
            except EngineError as exc:
                raise ContextLoadError(f"failed to substitute variables in context entry {name} "
                                       f"{_go_print(spec['value'])}: {exc}") from None
            if path:
                try:
                    output = self.core.search(path, value)
                except EngineError as exc:
                    if default is None:
                        raise ContextLoadError(f"failed to apply jmespath {path} to variable "
                                               f"{_go_print(value)}: {exc}") from None
            else:
                output = value
        elif path:
            try:
                found = self.core.query(ctx, path)
                if found is not None:
                    output = found
            except EngineError as exc:
                if default is None:
                    raise ContextLoadError(f"failed to apply jmespath {path} to variable <nil>: {exc}") from None
        if output is None:
            raise ContextLoadError(f"failed to add context entry for variable {name} since it evaluated to nil")
        return _json_roundtrip(output)

    # -- imageRegistry (with --registry) -----------------------------------------------------------------

    def _image_registry(self, name: str, spec: Mapping[str, Any], ctx: JsonContext) -> Any:
        """kk: loaders/imagedata.go fetchImageData, its messages (the first one's typo included)."""
        reference = spec.get("reference")
        try:
            ref = self.core.substitute(ctx, reference)
        except EngineError as exc:
            raise ContextLoadError(f"ailed to substitute variables in context entry {name} {reference}: "
                                   f"{exc}") from None
        if not isinstance(ref, str):
            raise ContextLoadError(f"invalid image reference {_go_print(ref)}, image reference must be a string")
        jmes = spec.get("jmesPath") or ""
        try:
            path = self.core.substitute(ctx, jmes)
        except EngineError as exc:
            raise ContextLoadError(f"failed to substitute variables in context entry {name} {jmes}: {exc}") from None
        # RegistryError, or ValueError for a bad reference or an answer that is not JSON: the loader's error,
        # as Kyverno's
        try:
            data = self.sources.image_registry.image_data(ref)
        except (EngineError, ValueError) as exc:
            raise ContextLoadError(f"failed to fetch image descriptor: {ref}, error: {exc}") from None
        if path:
            try:
                data = self.core.search(str(path), data)
            except EngineError as exc:
                raise ContextLoadError(f"failed to apply JMESPath ({jmes}) results to context entry {name}, "
                                       f"error: {exc}") from None
        return _json_roundtrip(data)

    # -- configMap -------------------------------------------------------------------------------------

    def _config_map(self, name: str, spec: Mapping[str, Any], ctx: JsonContext) -> Any:
        prefix = f"failed to retrieve config map for context entry {name}: "
        try:
            cm_name = self.core.substitute(ctx, spec.get("name") or "")
        except EngineError as exc:
            raise ContextLoadError(f"{prefix}failed to substitute variables in context {name} configMap.name "
                                   f"{spec.get('name')}: {exc}") from None
        try:
            namespace = self.core.substitute(ctx, spec.get("namespace") or "")
        except EngineError as exc:
            raise ContextLoadError(f"{prefix}failed to substitute variables in context {name} configMap.namespace "
                                   f"{spec.get('namespace')}: {exc}") from None
        namespace = str(namespace) or (self.policy_namespace or "default")
        if self.policy_namespace and namespace != self.policy_namespace:
            raise ContextLoadError(f"{prefix}context entry {name}: configMap namespace {namespace!r} is different "
                                   f"from policy namespace {self.policy_namespace!r}".replace("'", '"'))
        obj = self.sources.cluster.get_resource("v1", "configmaps", namespace, str(cm_name)) \
            if self.sources.cluster is not None else None
        if obj is None:
            raise ContextLoadError(f"{prefix}failed to get configmap {namespace}/{cm_name} : "
                                   f"configmaps \"{cm_name}\" not found")
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("creationTimestamp", None)      # a Go ObjectMeta always marshals it
        return _json_roundtrip({"data": obj.get("data"), "metadata": meta})

    # -- apiCall ---------------------------------------------------------------------------------------

    def _api_call(self, name: str, spec: Mapping[str, Any], ctx: JsonContext) -> Any:
        try:
            call = self.core.substitute(ctx, dict(spec))
        except EngineError as exc:
            if self.sources.api_mocks:
                raise ContextLoadError(f"failed to substitute variables in apiCall context entry {name!r}: "
                                       f"{exc}".replace("'", '"')) from None
            raise ContextLoadError(f"failed to fetch data for APICall: failed to substitute variables in "
                                   f"context entry {name} {spec.get('urlPath', '')}: {exc}") from None
        url_path = str(call.get("urlPath") or "")
        service = call.get("service") if isinstance(call.get("service"), Mapping) else None
        url = str(service.get("url") or "") if service else url_path
        method = str(call.get("method") or "GET").upper()
        mock = self.sources.api_mocks.get(f"{method}:{url}") or self.sources.api_mocks.get(url)
        if url and mock is not None:
            status, body = mock
            if status < 200 or status >= 300:
                raise ContextLoadError(f"HTTP {status} from apiCall mock for context entry {name!r} (v1 apiCall "
                                       "treats non-2xx as failure)".replace("'", '"'))
            if call.get("jmesPath"):
                try:
                    body = self.core.search(str(call["jmesPath"]), _json_roundtrip(body))
                except EngineError as exc:
                    raise ContextLoadError(f"failed to apply JMESPath {call['jmesPath']!r} for context entry "
                                           f"{name!r}: {exc}".replace("'", '"')) from None
            return _json_roundtrip(body)
        if service is not None or method != "GET":
            if self.sources.cluster is None and service is None:
                return _ABSENT
            raise Unanswerable(f"context entry {name!r} calls {'a service' if service else method + ' ' + url}")
        if self.sources.cluster is None:
            return _ABSENT                 # the CLI without a cluster: loader disabled
        data: Any
        try:
            data = self._get_path(url_path)
        except ContextLoadError as exc:
            if spec.get("default") is None:
                raise ContextLoadError(f"failed to fetch data for APICall: {exc}") from None
            data = spec["default"]
            return _json_roundtrip(data)
        if not call.get("jmesPath"):
            return data
        try:
            return _json_roundtrip(self.core.search(str(call["jmesPath"]), data))
        except EngineError as exc:
            raise ContextLoadError(f"failed to store data for APICall: failed to apply JMESPath "
                                   f"{call['jmesPath']} for context entry {name}: {exc}") from None

    def _get_path(self, raw: str) -> Any:
        """A GET of an API path against the provider (the apiserver's path layout, with list queries)."""
        parsed = urllib.parse.urlsplit(raw)
        path = posixpath.normpath(parsed.path) if parsed.path else ""
        if self.policy_namespace:
            m = _NS_PATH.match(path)
            if m is None:
                raise ContextLoadError(f"path {path} does not contain a namespace segment, which is required "
                                       "for namespaced policies")
            if m.group(2) != self.policy_namespace:
                raise ContextLoadError(f"path {path} refers to namespace {m.group(2)}, which is different from "
                                       f"the policy namespace {self.policy_namespace}")
        parts = path.strip("/").split("/")
        group = version = resource = name = namespace = ""
        if len(parts) >= 2 and parts[0] == "api":
            version = parts[1]
            rest = parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version = parts[1], parts[2]
            rest = parts[3:]
        else:
            raise ContextLoadError(f"failed to GET resource with raw url: {raw}: the server could not find "
                                   "the requested resource")
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
            namespace, rest = rest[1], rest[2:]
        resource = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else ""
        if not resource:
            raise ContextLoadError(f"failed to GET resource with raw url: {raw}: the server could not find "
                                   "the requested resource")
        api_version = f"{group}/{version}" if group else version
        cluster = self.sources.cluster
        assert cluster is not None
        try:
            if name:
                obj = cluster.get_resource(api_version, resource, namespace, name)
                if obj is None and self.sources.implicit_namespaces and (api_version, resource) == ("v1",
                                                                                                    "namespaces"):
                    from kubectl_kyrec.k8s.namespaces import default_namespace

                    obj = default_namespace(name)
                if obj is None:
                    raise ContextLoadError(f"failed to GET resource with raw url: {raw}: {resource} "
                                           f"\"{name}\" not found")
                return _json_roundtrip(obj)
            query = urllib.parse.parse_qs(parsed.query)
            selector = _equality_selector(query.get("labelSelector", [""])[0])
            listed = cluster.list_resources(api_version, resource, namespace, selector)
        except ContextLoadError:
            raise
        except EngineError as exc:
            raise ContextLoadError(f"failed to GET resource with raw url: {raw}: {exc}") from None
        fields = _equality_selector(query.get("fieldSelector", [""])[0]) or {}
        if fields:
            listed = dict(listed)
            listed["items"] = [i for i in listed.get("items") or [] if _fields_match(i, fields)]
        return _json_roundtrip(listed)

    # -- globalReference -------------------------------------------------------------------------------

    def _global(self, name: str, spec: Mapping[str, Any], ctx: JsonContext) -> Any:
        try:
            ref = self.core.substitute(ctx, dict(spec))
        except EngineError as exc:
            raise ContextLoadError(str(exc)) from None
        entry, _, projection = str(ref.get("name") or "").partition(".")
        data: Any = _ABSENT
        if entry in self.sources.global_entries:
            data = self.sources.global_entries[entry]
            if projection:
                if not isinstance(data, Mapping):
                    raise ContextLoadError(f"global context mock: projection {projection!r} requested but value "
                                           "is not an object".replace("'", '"'))
                if projection not in data:
                    raise ContextLoadError(f"global context mock: projection {projection!r} not "
                                           "found".replace("'", '"'))
                data = data[projection]
        elif self.sources.state_global_entries is not None:
            found = self.sources.state_global_entries(entry)
            if found is None:
                raise ContextLoadError(f"failed to fetch entry key={entry}")
            data = found
        else:
            return _ABSENT
        if not ref.get("jmesPath"):
            return _json_roundtrip(data)
        try:
            return _json_roundtrip(self.core.search(str(ref["jmesPath"]), data))
        except EngineError as exc:
            raise ContextLoadError(f"failed to apply JMESPath {ref['jmesPath']} for context entry {name}: "
                                   f"{exc}") from None


_ABSENT = object()


def _equality_selector(text: str) -> dict[str, str] | None:
    if not text:
        return None
    out = {}
    for part in text.split(","):
        k, sep, v = part.replace("==", "=").partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def _fields_match(obj: Mapping[str, Any], fields: Mapping[str, str]) -> bool:
    for path, want in fields.items():
        node: Any = obj
        for key in path.split("."):
            node = node.get(key) if isinstance(node, Mapping) else None
        if str(node if node is not None else "") != want:
            return False
    return True


def _json_roundtrip(value: Any) -> Any:
    """What Kyverno stores: the JSON encoding decoded again (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None

