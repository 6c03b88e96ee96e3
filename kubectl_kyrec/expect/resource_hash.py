"""Kyverno's report resource hash (`audit.kyverno.io/resource.hash`), byte for byte
(docs/semantics/reports.md#resource-hash).

Kyverno's `CalculateResourceHash` takes the object as Kubernetes' unstructured decoding left it, reads its
labels and annotations (`nil` unless a map whose values are all strings), drops `metadata`, `status`,
`scale` and `spec.nodeName`, and hashes `md5(json.Marshal([labels, annotations, object]))`.

Reproducing it means reproducing Go's `encoding/json`:
- map keys sorted (byte order of UTF-8, which is code point order), no spaces;
- `<`, `>`, `&`, U+2028 and U+2029 escaped as `\\u003c` and so on; `\\b \\f \\n \\r \\t` short forms
  (Go >= 1.22, which Kyverno is built with) and other control characters as `\\u00XX`;
- strings are UTF-8; what Go's JSON decoder would have turned into U+FFFD (a lone UTF-16 surrogate, or an
  invalid byte read with `errors="surrogateescape"`) becomes U+FFFD here too;
- numbers as unstructured decoding keeps them: an integer literal that fits int64 stays an int64, any other
  number is a float64 (so Python ints beyond int64 are written as Go writes that float64); floats in Go's
  shortest form, `'f'` format unless `abs < 1e-6` or `abs >= 1e21`, then `'e'` with a negative one-digit
  exponent unpadded (`1e-7`, `1e+21`). NaN and infinities make `json.Marshal` fail and the hash `""`.

Python's `json.loads` already decodes numbers the way Kubernetes does (an int for an integer literal, a
float for anything with a fraction or exponent, `100.0` included), so `resource_hash(json.loads(text))`
equals the Go result; `resource_hash_from_json_text` is that, with Go's treatment of invalid UTF-8.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.golang.json import MarshalError, UnsupportedValue, marshal, marshal_float

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# characters Go escapes that Python's json module writes raw (ensure_ascii=False)
_GO_EXTRA_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                     "\u2029": "\\u2029"}
_GO_EXTRA_RE = re.compile("[<>&\u2028\u2029]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class GoJSONError(ValueError):
    """A value Go's json.Marshal refuses (NaN, infinity) or that JSON cannot hold."""


def _string_map(value: Any) -> dict[str, str] | None:
    """`unstructured.NestedStringMap`: the map when every value is a string, else nil."""
    if not isinstance(value, Mapping):
        return None
    if not all(isinstance(v, str) for v in value.values()):
        return None
    return dict(value)


def hash_input(obj: Mapping[str, Any]) -> list[Any]:
    """The value Kyverno marshals: [labels, annotations, object without the dropped fields]."""
    meta = obj.get("metadata")
    labels = _string_map(meta.get("labels")) if isinstance(meta, Mapping) else None
    annotations = _string_map(meta.get("annotations")) if isinstance(meta, Mapping) else None
    # a shallow copy is enough: only top-level keys and spec.nodeName are removed
    rest = {k: v for k, v in obj.items() if k not in ("metadata", "status", "scale")}
    spec = rest.get("spec")
    if isinstance(spec, Mapping) and "nodeName" in spec:
        rest["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
    return [labels, annotations, rest]


def resource_hash(obj: Mapping[str, Any]) -> str:
    """Hex md5 as `CalculateResourceHash` computes it; `""` when Go's json.Marshal would fail."""
    try:
        data = go_json(hash_input(obj))
    except GoJSONError:
        return ""
    return hashlib.md5(data.encode("utf-8")).hexdigest()


def resource_hash_from_json_text(text: str | bytes) -> str:
    """The hash of an object given as JSON text (bytes are decoded as Go would: invalid bytes -> U+FFFD)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="surrogateescape")
    return resource_hash(json.loads(text))


def go_json(value: Any) -> str:
    """`json.Marshal(value)` as Go writes it, for values decoded from JSON (dict, list, str, int, float)."""
    if _needs_slow_path(value):
        return _go_encode(value)
    # fast path: the C encoder agrees with Go on everything but the characters Go also escapes
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if _SURROGATE_RE.search(text):
        # a lone surrogate changes both the string and the key order Go sees: take the slow path
        return _go_encode(value)
    return _GO_EXTRA_RE.sub(lambda m: _GO_EXTRA_ESCAPES[m.group()], text)


def _needs_slow_path(value: Any) -> bool:
    """Floats and ints outside int64 are written differently by Python; bytes need base64."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str) or v is None or isinstance(v, bool):
            continue
        elif isinstance(v, int):
            if not _INT64_MIN <= v <= _INT64_MAX:
                return True
        else:
            return True
    return False


def _go_encode(value: Any) -> str:
    try:
        return marshal(value)
    except MarshalError as exc:
        raise GoJSONError(str(exc)) from None


def go_float(f: float) -> str:
    """encoding/json's float64 encoder: ES6-like shortest form."""
    try:
        return marshal_float(f)
    except UnsupportedValue as exc:
        raise GoJSONError(str(exc)) from None
