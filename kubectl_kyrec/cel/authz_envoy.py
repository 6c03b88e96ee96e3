"""The Envoy authorization library of ValidatingPolicies with `evaluation.mode: Envoy` (kyverno-authz:
pkg/cel/libs/authz/envoy lib.go, impl.go).

`envoy.Allowed()` / `envoy.Denied(code)` build an OkHttpResponse / DeniedHttpResponse, the `With...`
methods add headers, query parameters or a body, and `.Response()` wraps it in the
`envoy.service.auth.v3.CheckResponse` a validation returns (gRPC status OK, or PERMISSION_DENIED = 7).
kyverno-authz uses the envoy protobuf messages; here each message is a dict of its proto field names,
tagged with its full name under `@type` (see authz_http). Message literals such as
`envoy.service.auth.v3.CheckResponse{...}` need the protobuf descriptors and are not available
(docs/compatibility.md).
"""

from __future__ import annotations

import copy
from typing import Any

from kubectl_kyrec.cel.authz_http import TYPE
from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

CHECK_RESPONSE = "envoy.service.auth.v3.CheckResponse"
OK_RESPONSE = "envoy.service.auth.v3.OkHttpResponse"
DENIED_RESPONSE = "envoy.service.auth.v3.DeniedHttpResponse"
HEADER_VALUE_OPTION = "envoy.config.core.v3.HeaderValueOption"
QUERY_PARAMETER = "envoy.config.core.v3.QueryParameter"
STATUS_OK = 0                   # google.golang.org/grpc/codes OK
STATUS_PERMISSION_DENIED = 7    # codes.PermissionDenied


def _expect(value: Any, type_name: str) -> dict[str, Any]:
    if isinstance(value, dict) and value.get(TYPE) == type_name:
        # the Go functions append to the message they were given; a CEL value is immutable, so copy
        return copy.deepcopy(value)
    raise CelFunctionError("no such overload")


def _header_option(key: str, value: str, keep_empty: bool = False) -> dict[str, Any]:
    return {TYPE: HEADER_VALUE_OPTION, "header": {"key": key, "value": value}, "keep_empty_value": keep_empty}


def allowed() -> dict[str, Any]:
    return {TYPE: OK_RESPONSE, "headers": [], "headers_to_remove": [], "response_headers_to_add": [],
            "query_parameters_to_set": [], "query_parameters_to_remove": []}


def denied(code: int) -> dict[str, Any]:
    if not -2**31 <= code < 2**31:
        # cel-go converts the int to the int32 StatusCode enum
        raise CelFunctionError("integer overflow")
    return {TYPE: DENIED_RESPONSE, "status": {"code": code}, "headers": [], "body": ""}


def header(key: str, value: str) -> dict[str, Any]:
    return _header_option(key, value)


def query_param(key: str, value: str) -> dict[str, Any]:
    return {TYPE: QUERY_PARAMETER, "key": key, "value": value}


def keep_empty_value(option: Any, flag: bool = True) -> dict[str, Any]:
    out = _expect(option, HEADER_VALUE_OPTION)
    out["keep_empty_value"] = flag
    return out


def with_body(response: Any, body: str) -> dict[str, Any]:
    out = _expect(response, DENIED_RESPONSE)
    out["body"] = body
    return out


def _append(response: Any, type_name: str, field: str, item: Any) -> dict[str, Any]:
    out = _expect(response, type_name)
    if not isinstance(out.get(field), list):
        raise CelFunctionError("no such overload")      # a map written by hand with the tag: no such message
    out[field] = [*out[field], item]
    return out


def with_header(response: Any, *args: Any) -> dict[str, Any]:
    option = _expect(args[0], HEADER_VALUE_OPTION) if len(args) == 1 else _header_option(args[0], args[1])
    kind = response.get(TYPE) if isinstance(response, dict) else None
    return _append(response, kind if kind in (OK_RESPONSE, DENIED_RESPONSE) else OK_RESPONSE, "headers", option)


def without_header(response: Any, name: str) -> dict[str, Any]:
    return _append(response, OK_RESPONSE, "headers_to_remove", name)


def with_response_header(response: Any, *args: Any) -> dict[str, Any]:
    option = _expect(args[0], HEADER_VALUE_OPTION) if len(args) == 1 else _header_option(args[0], args[1])
    return _append(response, OK_RESPONSE, "response_headers_to_add", option)


def with_query_param(response: Any, *args: Any) -> dict[str, Any]:
    param = _expect(args[0], QUERY_PARAMETER) if len(args) == 1 else query_param(args[0], args[1])
    return _append(response, OK_RESPONSE, "query_parameters_to_set", param)


def without_query_param(response: Any, name: str) -> dict[str, Any]:
    return _append(response, OK_RESPONSE, "query_parameters_to_remove", name)


def response(inner: Any) -> dict[str, Any]:
    if isinstance(inner, dict) and inner.get(TYPE) == OK_RESPONSE:
        return {TYPE: CHECK_RESPONSE, "status": {"code": STATUS_OK, "message": ""},
                "ok_response": copy.deepcopy(inner), "dynamic_metadata": {}}
    if isinstance(inner, dict) and inner.get(TYPE) == DENIED_RESPONSE:
        return {TYPE: CHECK_RESPONSE, "status": {"code": STATUS_PERMISSION_DENIED, "message": ""},
                "denied_response": copy.deepcopy(inner), "dynamic_metadata": {}}
    raise CelFunctionError("no such overload")


def with_message(checked: Any, message: str) -> dict[str, Any]:
    out = _expect(checked, CHECK_RESPONSE)
    if not isinstance(out.get("status"), dict):
        raise CelFunctionError("no such overload")
    out["status"]["message"] = message
    return out


def with_metadata(checked: Any, metadata: Any) -> dict[str, Any]:
    out = _expect(checked, CHECK_RESPONSE)
    if not isinstance(metadata, dict) or TYPE in metadata:
        raise CelFunctionError("no such overload")
    out["dynamic_metadata"] = copy.deepcopy(metadata)
    return out


def envoy_authz_library() -> Library:
    def member(name: str, impl: Any, *params: str) -> Overload:
        return Overload(name, ["dyn", *params], "dyn", impl, member=True)

    return Library("kyverno.authz.envoy", [
        fn("envoy.Allowed", Overload("allowed", [], "dyn", allowed)),
        fn("envoy.Denied", Overload("denied", ["int"], "dyn", denied)),
        fn("envoy.Header", Overload("header_key_value", ["string", "string"], "dyn", header)),
        fn("envoy.QueryParam", Overload("queryparam_key_value", ["string", "string"], "dyn", query_param)),
        fn("WithBody", member("denied_with_body", with_body, "string")),
        fn("WithHeader", member("with_header_header", with_header, "dyn"),
           member("with_header_string_string", with_header, "string", "string")),
        fn("WithoutHeader", member("ok_without_header", without_header, "string")),
        fn("WithResponseHeader", member("ok_with_response_header_header", with_response_header, "dyn"),
           member("ok_with_response_header_string_string", with_response_header, "string", "string")),
        fn("WithQueryParam", member("ok_with_queryparam_param", with_query_param, "dyn"),
           member("ok_with_queryparam_string_string", with_query_param, "string", "string")),
        fn("WithoutQueryParam", member("ok_without_queryparam_string", without_query_param, "string")),
        fn("KeepEmptyValue", member("header_keep_empty_value", keep_empty_value),
           member("header_keep_empty_value_bool", keep_empty_value, "bool")),
        fn("Response", member("envoy_response", response)),
        fn("WithMessage", member("response_ok_with_message", with_message, "string")),
        fn("WithMetadata", member("response_ok_with_metadata", with_metadata, "dyn")),
    ])
