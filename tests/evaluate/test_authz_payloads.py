"""HTTP and Envoy evaluation modes: request loading, the kyverno-authz libraries, and the answers the CLI
prints (kk: processor/authz_processor.go; kyverno-authz pkg/engine/compiler, pkg/cel/libs)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.cel.authz_envoy import envoy_authz_library
from kubectl_kyrec.cel.authz_http import canonical_header_key, http_authz_library
from kubectl_kyrec.cel.authz_jwt import decode
from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.decl import CelFunctionError
from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.validating.authz_payloads import evaluate_authz_payloads
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.authz_requests import ENVOY, HTTP, load_authz_payload

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def token(claims: dict[str, Any], key: bytes = b"k", alg: str = "HS256") -> str:
    head = _b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims).encode())
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    return f"{head}.{body}.{_b64(hmac.new(key, f'{head}.{body}'.encode(), digest).digest())}"


def write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


# --- loading -------------------------------------------------------------------------------------------


def test_http_request_follows_encoding_json(tmp_path: Path) -> None:
    path = write(tmp_path, "r.json", {"ATTRIBUTES": {"Method": "PUT", "header": {"X-A": ["1", "2"]},
                                                     "body": base64.b64encode(b"hi").decode(),
                                                     "contentLength": 2, "unknown": True}})
    attrs = load_authz_payload(path, "r.json", HTTP).obj["attributes"]
    assert attrs["method"] == "PUT" and attrs["header"] == {"X-A": ["1", "2"]}
    assert attrs["body"] == b"hi" and attrs["contentLength"] == 2
    # every field of the Go struct is there with its zero value
    assert attrs["host"] == "" and attrs["query"] == {} and attrs["fragment"] == ""


def test_http_request_type_mismatch_is_a_load_error(tmp_path: Path) -> None:
    path = write(tmp_path, "r.json", {"attributes": {"method": 3}})
    with pytest.raises(InputError) as exc:
        load_authz_payload(path, "r.json", HTTP)
    assert "cannot unmarshal number 3 into Go struct field CheckRequestAttributes.attributes.method of type " \
           "string" in exc.value.message


def test_envoy_request_takes_proto_and_json_names_and_fills_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "e.json", {"attributes": {"contextExtensions": {"a": "b"},
                                                     "request": {"http": {"raw_body": "aGk", "size": "12"}}}})
    attrs = load_authz_payload(path, "e.json", ENVOY).obj["attributes"]
    assert attrs["context_extensions"] == {"a": "b"}
    assert attrs["request"]["http"]["raw_body"] == b"hi" and attrs["request"]["http"]["size"] == 12
    # unset messages read as their defaults, as protobuf fields do in CEL
    assert attrs["source"]["address"]["socket_address"]["port_value"] == 0
    assert attrs["request"]["http"]["headers"] == {} and attrs["tls_session"] == {"sni": ""}


@pytest.mark.parametrize("value, text", [
    ({"attributes": {"nope": 1}}, "unknown field 'nope'"),
    ({"attributes": {"request": {"http": {"headers": {"a": 1}}}}}, "invalid value for string field"),
    ({"attributes": {"request": {"http": {"size": 1.5}}}}, "invalid value for int64 field"),
    ([], "want an object"),
])
def test_envoy_request_is_strict(tmp_path: Path, value: Any, text: str) -> None:
    with pytest.raises(InputError) as exc:
        load_authz_payload(write(tmp_path, "e.json", value), "e.json", ENVOY)
    assert text in exc.value.message and exc.value.source is not None


def test_payload_that_is_not_json_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not JSON"):
        load_authz_payload(write(tmp_path, "e.yaml", "a: b\n"), "e.yaml", ENVOY)


# --- libraries -------------------------------------------------------------------------------------------


def evaluate(library: Any, text: str, obj: Any = None) -> Any:
    env = Environment([library], ("object",))
    outcome = env.compile(text).evaluate(env.activation({"object": obj}))
    return outcome.value if outcome.ok else ("error", outcome.error)


def test_canonical_header_key_is_go_textproto() -> None:
    assert canonical_header_key("x-request-id") == "X-Request-Id"
    assert canonical_header_key("CONTENT-TYPE") == "Content-Type"
    assert canonical_header_key("bad key") == "bad key"


def test_http_library() -> None:
    lib = http_authz_library()
    attrs = {"header": {"X-Role": ["a", "b"]}, "query": {"q": ["1"]}}
    assert evaluate(lib, 'object.Header("x-role")', attrs) == ["a", "b"]
    assert evaluate(lib, 'object.QueryParam("missing")', attrs) == []
    denied = evaluate(lib, 'http.Denied("no").Response()')
    assert denied["denied"] == {"@type": "http.CheckResponseDenied", "reason": "no"} and denied["ok"] is None
    assert evaluate(lib, '"x".Response()') == ("error", "no such overload")


def test_envoy_library_builds_check_responses() -> None:
    lib = envoy_authz_library()
    ok = evaluate(lib, 'envoy.Allowed().WithHeader(envoy.Header("a", "").KeepEmptyValue()).WithoutHeader("b")'
                       '.WithQueryParam("q", "1").Response().WithMessage("hi").WithMetadata({"k": "v"})')
    assert ok["status"] == {"code": 0, "message": "hi"} and ok["dynamic_metadata"] == {"k": "v"}
    assert ok["ok_response"]["headers"] == [{"@type": "envoy.config.core.v3.HeaderValueOption",
                                             "header": {"key": "a", "value": ""}, "keep_empty_value": True}]
    assert ok["ok_response"]["headers_to_remove"] == ["b"]
    denied = evaluate(lib, 'envoy.Denied(429).WithBody("slow down").WithHeader("retry-after", "1").Response()')
    assert denied["status"]["code"] == 7 and denied["denied_response"]["status"] == {"code": 429}
    assert denied["denied_response"]["body"] == "slow down"
    # WithBody belongs to denied responses only
    assert evaluate(lib, 'envoy.Allowed().WithBody("x")') == ("error", "no such overload")


def test_jwt_decode() -> None:
    claims = {"sub": "a", "n": 3, "exp": 2000000000, "nbf": 1000000000}
    decoded = decode(token(claims, b"secret", "HS384"), "secret", NOW)
    assert decoded["Valid"] is True
    # a protobuf Struct: every number a double
    assert decoded["Claims"] == {"sub": "a", "n": 3.0, "exp": 2000000000.0, "nbf": 1000000000.0}
    assert decode(token({"exp": 1000000000}, b"secret"), "secret", NOW)["Valid"] is False
    assert decode(token({"nbf": 2000000000}, b"secret"), "secret", NOW)["Valid"] is False
    with pytest.raises(CelFunctionError, match="could not verify"):
        decode(token(claims, b"other"), "secret", NOW)
    with pytest.raises(CelFunctionError, match=r"proto: invalid type: \[\]string"):
        decode(token({"aud": "x"}, b"secret"), "secret", NOW)


# --- answers -------------------------------------------------------------------------------------------

POLICY = """
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: p}
spec:
  evaluation: {mode: %s}
  failurePolicy: %s
  matchConditions: [{name: m, expression: %s}]
  validations: [%s]
"""


def answer(tmp_path: Path, mode: str, validations: str, request: Any, *, condition: str = "true",
           failure: str = "Fail") -> tuple[str, str]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY % (mode, failure, json.dumps(condition), validations))
    policies = classify(load_documents([str(policy)])).raise_errors()
    payload = load_authz_payload(write(tmp_path, "r.json", request), "r.json", mode)
    out = evaluate_authz_payloads(policies, [payload], now=NOW,
                                  libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    assert not out.errors
    (result,) = out.results
    return result.result, result.message


def test_answers_as_the_cli_prints_them(tmp_path: Path) -> None:
    envoy = {"attributes": {"request": {"http": {"method": "GET"}}}}
    http = {"attributes": {"method": "GET"}}
    assert answer(tmp_path, ENVOY, '{expression: "envoy.Denied(418).Response()"}', envoy) == \
        ("fail", "request denied with status code 418")
    assert answer(tmp_path, HTTP, '{expression: "http.Denied(\\"nope\\").Response()"}', http) == \
        ("fail", "request denied, reason: nope")
    assert answer(tmp_path, HTTP, '{expression: "null"}, {expression: "http.Allowed().Response()"}', http) == \
        ("pass", "request allowed")
    assert answer(tmp_path, ENVOY, '{expression: "null"}', envoy) == ("skip", "request does not match")
    assert answer(tmp_path, ENVOY, '{expression: "envoy.Allowed().Response()"}', envoy,
                  condition="object.attributes.request.http.method == 'POST'") == ("skip", "request does not match")
    # a wrong value where the response should be
    assert answer(tmp_path, ENVOY, '{expression: "dyn(1)"}', envoy) == \
        ("error", "rule result is expected to be *v3.CheckResponse")
    failing = '{expression: "object.attributes.request.http.headers[\\"x\\"] == \\"\\" ? null : null"}'
    assert answer(tmp_path, ENVOY, failing, envoy) == ("error", "no such key: x")
    assert answer(tmp_path, ENVOY, failing, envoy, failure="Ignore") == ("skip", "request does not match")


def test_a_validation_of_another_type_does_not_compile(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY % ("HTTP", "Fail", '"true"', "{expression: 'true'}"))
    policies = classify(load_documents([str(policy)])).raise_errors()
    payload = load_authz_payload(write(tmp_path, "r.json", {}), "r.json", HTTP)
    out = evaluate_authz_payloads(policies, [payload], now=NOW,
                                  libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    assert not out.results
    (error,) = out.errors
    assert "rule response output is expected to be of type http.CheckResponse" in error.message
    assert "spec.validations[0].expression" in error.message
