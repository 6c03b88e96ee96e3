"""Context lookups that leave the cluster's object store: `globalContext.Get`, `image.GetMetadata`
and `http.Get/Post/Put/Client` with their camelCase spellings (sdk: globalcontext/, imagedata/,
http/ lib.go and impl.go).

In Kyverno `http.Client(caBundle)` returns another http context whose `Get/Post/Put` are methods; here
that context is a tagged dict (`@type: kyverno.http`) and the methods are member overloads on it.
Namespaced policies (docs/semantics/cel-libraries.md#kyvernos-libraries) cannot use HTTP unless the operator allowed it,
and their globalContext lookups are denied: both fail when called, as Kyverno's confined contexts do.
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel.context import ContextProvider
from kubectl_kyrec.cel.decl import CelFunctionError, Function, Library, Overload, fn
from kubectl_kyrec.golang.json import GoJSONError
from kubectl_kyrec.golang.x509 import has_certificate

HTTP_TYPE = "kyverno.http"
HTTP_DENIED = ("http calls are not allowed in namespaced policies: set --allowHTTPInNamespacedPolicies "
               "to enable")
GLOBAL_CONTEXT_DENIED = "globalContext lookups are not allowed in namespaced policies"


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def global_context_library(provider: ContextProvider, *, denied: bool = False) -> Library:
    def lookup(name: str, projection: str = "") -> Any:
        try:
            if denied:
                raise CelFunctionError(GLOBAL_CONTEXT_DENIED)
            return provider.global_context(name, projection)
        # GoJSONError: a mocked value Go's JSON round trip refuses (NaN) fails as the lookup
        except (CelFunctionError, GoJSONError) as exc:
            raise CelFunctionError(f"failed to get global reference: {exc}") from None

    functions = []
    for suffix, name in (("pascal", "Get"), ("camel", "get")):
        functions.append(fn(f"globalContext.{name}",
                            Overload(f"globalcontext_get_string_{suffix}", ["string"], "dyn", lookup),
                            Overload(f"globalcontext_get_string_string_{suffix}", ["string", "string"], "dyn",
                                     lookup)))
    return Library("kyverno.globalcontext", functions)


def image_data_library(provider: ContextProvider) -> Library:
    def get_metadata(ref: str) -> Any:
        try:
            return provider.image_metadata(ref)
        except CelFunctionError as exc:
            raise CelFunctionError(f"failed to get image data: {exc}") from None

    return Library("kyverno.imagedata", [
        fn(f"image.{name}", Overload(f"imagedata_get_string_{suffix}", ["string"], "dyn", get_metadata))
        for suffix, name in (("pascal", "GetMetadata"), ("camel", "getMetadata"))
    ])


class _Http:
    def __init__(self, provider: ContextProvider, denied: bool) -> None:
        self.provider = provider
        self.denied = denied

    def request(self, method: str, url: str, body: Any, headers: dict[str, str] | None) -> Any:
        try:
            if self.denied:
                raise CelFunctionError(HTTP_DENIED)
            return self.provider.http_request(method, url, body, dict(headers or {}))
        except (CelFunctionError, GoJSONError) as exc:
            raise CelFunctionError(f"request failed: {exc}") from None

    def client(self, ca_bundle: str) -> dict[str, Any]:
        # x509.CertPool.AppendCertsFromPEM must take at least one certificate from a non-empty bundle
        if ca_bundle and not has_certificate(ca_bundle):
            raise CelFunctionError("request failed: failed to parse PEM CA bundle for APICall")
        return {"@type": HTTP_TYPE, "caBundle": ca_bundle}


def _receiver(value: Any) -> None:
    if not isinstance(value, dict) or value.get("@type") != HTTP_TYPE:
        raise CelFunctionError("no such overload")


def http_library(provider: ContextProvider, *, denied: bool = False) -> Library:
    h = _Http(provider, denied)
    functions: list[Function] = []
    for suffix in ("pascal", "camel"):
        def spelled(name: str, suffix: str = suffix) -> str:
            return name if suffix == "pascal" else _camel(name)

        get = [Overload(f"http_get_string_{suffix}", ["string"], "dyn",
                        lambda url: h.request("GET", url, None, None)),
               Overload(f"http_get_string_headers_{suffix}", ["string", "map<string,string>"], "dyn",
                        lambda url, headers: h.request("GET", url, None, headers))]
        functions.append(fn(f"http.{spelled('Get')}", *get))
        for verb in ("Post", "Put"):
            method = verb.upper()
            functions.append(fn(f"http.{spelled(verb)}",
                                Overload(f"http_{verb.lower()}_string_any_{suffix}", ["string", "dyn"], "dyn",
                                         lambda url, body, m=method: h.request(m, url, body, None)),
                                Overload(f"http_{verb.lower()}_string_any_headers_{suffix}",
                                         ["string", "dyn", "map<string,string>"], "dyn",
                                         lambda url, body, headers, m=method: h.request(m, url, body,
                                                                                          headers))))
        functions.append(fn(f"http.{spelled('Client')}",
                            Overload(f"http_client_string_{suffix}", ["string"], "map", h.client)))

        # the same verbs as methods of the context http.Client returns
        def member_request(method: str) -> Any:
            def call(receiver: Any, url: str, *rest: Any) -> Any:
                _receiver(receiver)
                body = rest[0] if method != "GET" and rest else None
                headers = rest[-1] if (method == "GET" and rest) or len(rest) == 2 else None
                return h.request(method, url, body, headers)
            return call

        def member_client(receiver: Any, ca_bundle: str) -> Any:
            _receiver(receiver)
            return h.client(ca_bundle)

        functions.append(fn(spelled("Get"),
                            Overload(f"http_context_get_string_{suffix}", ["map", "string"], "dyn",
                                     member_request("GET"), member=True),
                            Overload(f"http_context_get_string_headers_{suffix}", ["map", "string",
                                     "map<string,string>"], "dyn", member_request("GET"), member=True)))
        for verb in ("Post", "Put"):
            impl = member_request(verb.upper())
            functions.append(fn(spelled(verb),
                                Overload(f"http_context_{verb.lower()}_string_any_{suffix}",
                                         ["map", "string", "dyn"], "dyn", impl, member=True),
                                Overload(f"http_context_{verb.lower()}_string_any_headers_{suffix}",
                                         ["map", "string", "dyn", "map<string,string>"], "dyn", impl,
                                         member=True)))
        client = Overload(f"http_context_client_string_{suffix}", ["map", "string"], "map", member_client,
                          member=True)
        functions.append(fn(spelled("Client"), client))
    return Library("kyverno.http", functions)
