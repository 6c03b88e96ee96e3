"""`jwt.Decode(token, key)` and `jwks.Fetch(url)` of the authorization modes (kyverno-authz:
pkg/cel/libs/jwt impl.go, token.go; pkg/cel/libs/jwk).

kyverno-authz imports the string key as a symmetric JWK (jwx `jwk.Import([]byte)`), lets jwx infer the
algorithms from it (HS256, HS384, HS512), verifies the signature (a bad one is an error, not an invalid
token) and then validates the registered time claims apart: `Valid` is false for an expired or not yet
valid token. The result is a `jwt.Token` with `Claims` (a protobuf Struct: every number a double, times
as Unix seconds) and `Valid`. Claims holding `aud` fail, as in kyverno-authz: jwx keeps the audience as
a Go `[]string`, which `structpb.NewStruct` refuses.

Not built here: keys of a JWK set (`jwt.Decode(token, jwks.Fetch(url))`, asymmetric algorithms) — the
fetch needs the network, which kyrec never uses; it fails as an unreachable URL would.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
import json
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn

TOKEN_TYPE = "jwt.Token"
_HMAC = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
_TIME_CLAIMS = ("exp", "nbf", "iat")


def _b64url(part: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise CelFunctionError(f"failed to parse token: failed to decode {what}") from None


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise CelFunctionError(f"failed to parse token: failed to parse {what}") from None
    if not isinstance(value, dict):
        raise CelFunctionError(f"failed to parse token: failed to parse {what}")
    return value


def _unix(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CelFunctionError("failed to parse token: invalid numeric date")
    return int(value)


def decode(token: str, key: str, now: datetime.datetime) -> dict[str, Any]:
    parts = token.split(".")
    if len(parts) != 3:
        raise CelFunctionError("failed to parse token: invalid number of segments")
    header = _json_object(_b64url(parts[0], "header"), "header")
    payload = _b64url(parts[1], "payload")
    signature = _b64url(parts[2], "signature")
    digest = _HMAC.get(str(header.get("alg")))
    expected = hmac.new(key.encode(), f"{parts[0]}.{parts[1]}".encode(), digest).digest() if digest else b""
    if digest is None or not hmac.compare_digest(expected, signature):
        raise CelFunctionError("failed to parse token: could not verify message using any of the signatures "
                               "or keys")
    claims = _json_object(payload, "claims")
    if "aud" in claims:
        raise CelFunctionError("proto: invalid type: []string")
    out: dict[str, Any] = {}
    for name, value in claims.items():
        if name in _TIME_CLAIMS:
            out[name] = float(_unix(value))
        else:
            out[name] = _struct_value(value)
    seconds = int(now.timestamp())
    valid = (("exp" not in out or seconds < out["exp"]) and ("nbf" not in out or seconds >= out["nbf"])
             and ("iat" not in out or seconds >= out["iat"]))
    return {"@type": TOKEN_TYPE, "Claims": out, "Valid": valid}


def _struct_value(value: Any) -> Any:
    # google.protobuf.Value holds numbers as doubles
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_struct_value(v) for v in value]
    return {k: _struct_value(v) for k, v in value.items()}


def jwt_library(now: datetime.datetime) -> Library:
    def decode_string_string(token: str, key: str) -> dict[str, Any]:
        return decode(token, key, now)

    def fetch(url: str) -> Any:
        raise CelFunctionError(f"failed to fetch {url!r}: kyrec evaluates offline and fetches no JWK set")

    return Library("kyverno.jwt", [
        fn("jwt.Decode", Overload("decode_string_string", ["string", "string"], "dyn", decode_string_string)),
        fn("jwks.Fetch", Overload("fetch_string", ["string"], "dyn", fetch)),
    ])
