"""Check requests of the authorization modes: `httpPayloads` and `envoyPayloads` of a Kyverno test.

Kyverno's CLI reads each file as one JSON document (kk: cmd/cli/kubectl-kyverno/processor/
authz_processor.go LoadHTTPRequests, LoadEnvoyRequests):

- HTTP: Go's `encoding/json` into kyverno-authz's `http.CheckRequest` (pkg/cel/libs/authz/http/types.go):
  keys match field names case-insensitively, unknown keys are ignored, `body` is base64, and every
  field is present in CEL with its zero value when the file leaves it out (Go native types); a lone surrogate
  escape is U+FFFD (golang.json.as_go_decodes).
- Envoy: `protojson` into `envoy.service.auth.v3.CheckRequest`: a field may be spelled as its proto
  name or its JSON (lowerCamel) name, an unknown field is an error, int64 may be a string, bytes are
  base64, a Timestamp is RFC 3339. In CEL a field is read by its proto name and an unset message reads
  as its default, so the request is built with every field of the schema below filled in. A lone surrogate
  escape is an error.

Either way the request becomes `object` of the policy's CEL expressions.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.golang.json import as_go_decodes
from kubectl_kyrec.k8s.times import format_rfc3339, parse_rfc3339
from kubectl_kyrec.model import Obj, Source

HTTP = "HTTP"
ENVOY = "Envoy"


@dataclass(frozen=True)
class AuthzPayload:
    name: str           # as the test names it
    mode: str           # HTTP or Envoy: the evaluation mode whose policies read it
    obj: Obj            # the request as CEL sees it
    source: Source


class _Fail(Exception):
    pass


def load_authz_payload(path: str, name: str, mode: str) -> AuthzPayload:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8: {exc.reason}", Source(path, 0)) from None
    except OSError as exc:
        raise InputError(f"cannot read {mode} payload {name}: {exc.strerror or exc}", Source(path, 0)) from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs)
    except ValueError as exc:
        line = getattr(exc, "lineno", 1)
        raise InputError(f"{mode} payload {name} is not JSON: {exc}", Source(path, line)) from None
    go_value = as_go_decodes(value, text)
    try:
        if mode == ENVOY and go_value != value:
            # protojson, unlike encoding/json, refuses a surrogate escape that is not half of a valid pair
            # (internal/encoding/json/decode_string.go: "invalid escape code")
            raise _Fail("invalid escape code in string: a lone UTF-16 surrogate")
        obj = http_request(go_value) if mode == HTTP else envoy_request(value)
    except _Fail as exc:
        raise InputError(f"failed to load {mode} payload {name}: {exc}", Source(path, 1)) from None
    return AuthzPayload(name, mode, obj, Source(path, 1))


class _Pairs(list[tuple[str, Any]]):
    """A JSON object with its keys in order and duplicates kept (protojson refuses duplicates)."""


def _pairs(items: list[tuple[str, Any]]) -> _Pairs:
    return _Pairs(items)


def _json_kind(value: Any) -> str:
    if isinstance(value, _Pairs):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "null"


# ---------------------------------------------------------------------------------------------------------
# HTTP: encoding/json into http.CheckRequest

# cel name -> Go field name, Go type
_HTTP_FIELDS = {
    "method": ("Method", "string"), "header": ("Header", "map[string][]string"), "host": ("Host", "string"),
    "protocol": ("Protocol", "string"), "contentLength": ("ContentLength", "int64"), "body": ("Body", "[]uint8"),
    "scheme": ("Scheme", "string"), "path": ("Path", "string"), "query": ("Query", "map[string][]string"),
    "fragment": ("Fragment", "string"),
}


def _go_field(pairs: _Pairs, name: str) -> tuple[bool, Any]:
    """encoding/json's key lookup: case-insensitive, and of several keys naming one field the last wins."""
    found, value = False, None
    for key, v in pairs:
        if key == name or key.lower() == name.lower():
            found, value = True, v
    return found, value


def _go_mismatch(value: Any, path: str, go_type: str, struct: str) -> _Fail:
    shown = f"number {value}" if _json_kind(value) == "number" else _json_kind(value)
    return _Fail(f"json: cannot unmarshal {shown} into Go struct field {struct}.{path} of type {go_type}")


def http_request(value: Any) -> Obj:
    attributes: dict[str, Any] = {"method": "", "header": {}, "host": "", "protocol": "", "contentLength": 0,
                                  "body": b"", "scheme": "", "path": "", "query": {}, "fragment": ""}
    if value is None:
        return {"attributes": attributes}
    if not isinstance(value, _Pairs):
        raise _Fail(f"json: cannot unmarshal {_json_kind(value)} into Go value of type http.CheckRequest")
    found, raw = _go_field(value, "attributes")
    if not found or raw is None:
        return {"attributes": attributes}
    if not isinstance(raw, _Pairs):
        raise _go_mismatch(raw, "attributes", "http.CheckRequestAttributes", "CheckRequest")
    for name, (_go, go_type) in _HTTP_FIELDS.items():
        found, v = _go_field(raw, name)
        if not found or v is None:
            continue
        path = f"attributes.{name}"
        if go_type == "string":
            if not isinstance(v, str):
                raise _go_mismatch(v, path, go_type, "CheckRequestAttributes")
            attributes[name] = v
        elif go_type == "int64":
            if isinstance(v, bool) or not isinstance(v, int) or not -2**63 <= v < 2**63:
                raise _go_mismatch(v, path, go_type, "CheckRequestAttributes")
            attributes[name] = v
        elif go_type == "[]uint8":
            if not isinstance(v, str):
                raise _go_mismatch(v, path, go_type, "CheckRequestAttributes")
            try:
                attributes[name] = base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                raise _Fail(f"illegal base64 data in {path}") from None
        else:
            attributes[name] = _string_lists(v, path, go_type)
    return {"attributes": attributes}


def _string_lists(value: Any, path: str, go_type: str) -> dict[str, list[str]]:
    if not isinstance(value, _Pairs):
        raise _go_mismatch(value, path, go_type, "CheckRequestAttributes")
    out: dict[str, list[str]] = {}
    for key, items in value:
        if items is None:
            out[key] = []
            continue
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise _go_mismatch(items if not isinstance(items, list) else next(
                i for i in items if not isinstance(i, str)), f"{path}", go_type, "CheckRequestAttributes")
        out[key] = list(items)
    return out


# ---------------------------------------------------------------------------------------------------------
# Envoy: protojson into envoy.service.auth.v3.CheckRequest (envoy api: service/auth/v3/
# attribute_context.proto, config/core/v3/address.proto, base.proto)

# a field: (proto name, kind); kind is a scalar ("string", "int64", "uint32", "int32", "bool", "bytes",
# "timestamp", "enum:<A,B>"), "map<string>" / "map<struct>", "list:<message>", "struct", "any", or a message
_SCHEMA: dict[str, list[tuple[str, str]]] = {
    "CheckRequest": [("attributes", "AttributeContext")],
    "AttributeContext": [("source", "Peer"), ("destination", "Peer"), ("request", "Request"),
                         ("context_extensions", "map<string>"), ("metadata_context", "Metadata"),
                         ("route_metadata_context", "Metadata"), ("tls_session", "TLSSession")],
    "Peer": [("address", "Address"), ("service", "string"), ("labels", "map<string>"),
             ("principal", "string"), ("certificate", "string")],
    "Request": [("time", "timestamp"), ("http", "HttpRequest")],
    "HttpRequest": [("id", "string"), ("method", "string"), ("headers", "map<string>"),
                    ("header_map", "HeaderMap"), ("path", "string"), ("host", "string"), ("scheme", "string"),
                    ("query", "string"), ("fragment", "string"), ("size", "int64"), ("protocol", "string"),
                    ("body", "string"), ("raw_body", "bytes")],
    "TLSSession": [("sni", "string")],
    "Metadata": [("filter_metadata", "map<struct>"), ("typed_filter_metadata", "map<any>")],
    "HeaderMap": [("headers", "list:HeaderValue")],
    "HeaderValue": [("key", "string"), ("value", "string"), ("raw_value", "bytes")],
    "Address": [("socket_address", "SocketAddress"), ("pipe", "Pipe"),
                ("envoy_internal_address", "EnvoyInternalAddress")],
    "SocketAddress": [("protocol", "enum:TCP,UDP"), ("address", "string"), ("port_value", "uint32"),
                      ("named_port", "string"), ("resolver_name", "string"), ("ipv4_compat", "bool")],
    "Pipe": [("path", "string"), ("mode", "uint32")],
    "EnvoyInternalAddress": [("server_listener_name", "string"), ("endpoint_id", "string")],
}
# The engine cannot bind a timestamp into an activation: a Timestamp field reads as its RFC 3339 text
# (docs/compatibility.md); unset, the epoch, as protobuf's default Timestamp.
_EPOCH = "1970-01-01T00:00:00Z"


def _json_name(proto_name: str) -> str:
    head, *rest = proto_name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _default(kind: str) -> Any:
    if kind in _SCHEMA:
        return {name: _default(k) for name, k in _SCHEMA[kind]}
    if kind.startswith(("map<", "struct")):
        return {}
    if kind.startswith("list:"):
        return []
    return {"string": "", "bytes": b"", "bool": False, "timestamp": _EPOCH}.get(kind, 0)


def envoy_request(value: Any) -> Obj:
    if not isinstance(value, _Pairs):
        raise _Fail(f"unexpected token {_json_kind(value)}, want an object for envoy.service.auth.v3.CheckRequest")
    return dict(_message(value, "CheckRequest", ""))


def _message(pairs: _Pairs, kind: str, path: str) -> dict[str, Any]:
    fields = {name: k for name, k in _SCHEMA[kind]}
    spelled = {**{name: name for name in fields}, **{_json_name(name): name for name in fields}}
    out = _default(kind)
    seen: set[str] = set()
    for key, v in pairs:
        name = spelled.get(key)
        if name is None:
            raise _Fail(f"unknown field {key!r} in {path or 'the request'}")
        if name in seen:
            raise _Fail(f"duplicate field {key!r} in {path or 'the request'}")
        seen.add(name)
        if v is None:
            continue                        # null leaves a field unset
        out[name] = _field(v, fields[name], f"{path}.{name}" if path else name)
    return out


def _field(v: Any, kind: str, path: str) -> Any:
    if kind in _SCHEMA:
        if not isinstance(v, _Pairs):
            raise _Fail(f"{path}: want an object, found {_json_kind(v)}")
        return _message(v, kind, path)
    if kind.startswith("list:"):
        if not isinstance(v, list):
            raise _Fail(f"{path}: want an array, found {_json_kind(v)}")
        return [_field(item, kind[5:], f"{path}[{i}]") for i, item in enumerate(v)]
    if kind.startswith("map<"):
        if not isinstance(v, _Pairs):
            raise _Fail(f"{path}: want an object, found {_json_kind(v)}")
        inner = kind[4:-1]
        out: dict[str, Any] = {}
        for key, item in v:
            if key in out:
                raise _Fail(f"{path}: duplicate map key {key!r}")
            if inner == "string":
                out[key] = _scalar(item, "string", f"{path}[{key!r}]")
            elif inner == "struct":
                if not isinstance(item, _Pairs):
                    raise _Fail(f"{path}[{key!r}]: want an object, found {_json_kind(item)}")
                out[key] = _struct(item)
            else:
                raise _Fail(f"{path}: google.protobuf.Any values are not supported by kyrec")
        return out
    return _scalar(v, kind, path)


def _scalar(v: Any, kind: str, path: str) -> Any:
    if kind == "string":
        if not isinstance(v, str):
            raise _Fail(f"{path}: invalid value for string field: {_json_kind(v)}")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise _Fail(f"{path}: invalid value for bool field: {_json_kind(v)}")
        return v
    if kind == "bytes":
        if not isinstance(v, str):
            raise _Fail(f"{path}: invalid value for bytes field: {_json_kind(v)}")
        try:
            # protojson takes standard or URL-safe base64, padded or not
            text = v.replace("-", "+").replace("_", "/")
            return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise _Fail(f"{path}: invalid value for bytes field: {v!r}") from None
    if kind == "timestamp":
        moment = parse_rfc3339(v) if isinstance(v, str) else None
        if moment is None:
            raise _Fail(f"{path}: invalid google.protobuf.Timestamp value {v!r}")
        return format_rfc3339(moment)
    if kind.startswith("enum:"):
        names = kind[5:].split(",")
        if isinstance(v, str) and v in names:
            return names.index(v)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        raise _Fail(f"{path}: invalid value for enum field: {v!r}")
    # integers: JSON numbers with no fraction, or (protojson) decimal strings
    bits, signed = {"int64": (64, True), "int32": (32, True), "uint32": (32, False)}[kind]
    number: Any = v
    if isinstance(v, str):
        try:
            number = float(v) if any(c in v for c in ".eE") else int(v)
        except ValueError:
            raise _Fail(f"{path}: invalid value for {kind} field: {v!r}") from None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    low, high = (-2 ** (bits - 1), 2 ** (bits - 1)) if signed else (0, 2 ** bits)
    if isinstance(number, bool) or not isinstance(number, int) or not low <= number < high:
        raise _Fail(f"{path}: invalid value for {kind} field: {v!r}")
    return number


def _struct(pairs: _Pairs) -> dict[str, Any]:
    return {k: _struct_value(v) for k, v in pairs}


def _struct_value(v: Any) -> Any:
    # google.protobuf.Value: numbers are doubles
    if isinstance(v, _Pairs):
        return _struct(v)
    if isinstance(v, list):
        return [_struct_value(i) for i in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def plain(value: Any) -> Any:
    """A loaded value without the ordered-pairs wrapper (for payloads shown back to the user)."""
    if isinstance(value, _Pairs):
        return {k: plain(v) for k, v in value}
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
