"""The HTTP authorization library of ValidatingPolicies with `evaluation.mode: HTTP` (kyverno-authz:
pkg/cel/libs/authz/http lib.go, impl.go, types.go).

`http.Allowed()` / `http.Denied(reason)` build a response and `.Response()` wraps it in the
`http.CheckResponse` a validation returns; `object.attributes.Header(name)` and `.QueryParam(name)` read
the request. kyverno-authz registers these as Go native types; here each is a dict tagged with its CEL
type name under `@type` (as kyverno_external does for `http.Client`), so a wrong receiver fails at run
time with `no such overload` where cel-go's checker refuses the expression.
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

TYPE = "@type"
REQUEST_ATTRIBUTES = "http.CheckRequestAttributes"
RESPONSE = "http.CheckResponse"
RESPONSE_OK = "http.CheckResponseOk"
RESPONSE_DENIED = "http.CheckResponseDenied"


def tagged(value: Any, type_name: str) -> bool:
    return isinstance(value, dict) and value.get(TYPE) == type_name


def _expect(value: Any, *type_names: str) -> str:
    if isinstance(value, dict) and value.get(TYPE) in type_names:
        return str(value[TYPE])
    raise CelFunctionError("no such overload")


def canonical_header_key(key: str) -> str:
    """Go's textproto.CanonicalMIMEHeaderKey: `content-type` -> `Content-Type`; a key holding a byte
    that is not a header token character is returned unchanged."""
    token = set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    if not key or any(ch not in token for ch in key):
        return key
    out = []
    upper = True
    for ch in key:
        out.append(ch.upper() if upper else ch.lower())
        upper = ch == "-"
    return "".join(out)


def allowed() -> dict[str, Any]:
    return {TYPE: RESPONSE_OK}


def denied(reason: str) -> dict[str, Any]:
    return {TYPE: RESPONSE_DENIED, "reason": reason}


def response(inner: Any) -> dict[str, Any]:
    kind = _expect(inner, RESPONSE_OK, RESPONSE_DENIED)
    return {TYPE: RESPONSE, "ok": inner if kind == RESPONSE_OK else None,
            "denied": inner if kind == RESPONSE_DENIED else None}


def _attributes(request: Any) -> dict[str, Any]:
    # `object.attributes` carries no tag of its own: it is recognised by being the request's attributes
    if isinstance(request, dict) and isinstance(request.get("header"), dict) and isinstance(request.get("query"), dict):
        return request
    raise CelFunctionError("no such overload")


def _values(values: Any) -> list[str]:
    # Go's http.Header and url.Values are map[string][]string: anything else is a map written by hand
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise CelFunctionError("no such overload")
    return list(values)


def header(request: Any, key: str) -> list[str]:
    # textproto.MIMEHeader.Values canonicalises the key it looks up, not the keys of the map
    return _values(_attributes(request)["header"].get(canonical_header_key(key)))


def query_param(request: Any, key: str) -> list[str]:
    return _values(_attributes(request)["query"].get(key))


def http_authz_library() -> Library:
    return Library("kyverno.authz.http", [
        fn("http.Allowed", Overload("http_allowed", [], "dyn", allowed)),
        fn("http.Denied", Overload("http_denied_string", ["string"], "dyn", denied)),
        fn("Header", Overload("http_get_header_string", ["dyn", "string"], "list<string>", header,
                              member=True)),
        fn("QueryParam", Overload("http_get_queryparam_string", ["dyn", "string"], "list<string>",
                                  query_param, member=True)),
        fn("Response", Overload("http_response", ["dyn"], "dyn", response, member=True)),
    ])
