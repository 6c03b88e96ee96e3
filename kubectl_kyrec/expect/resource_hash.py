"""Kyverno's report resource hash (`audit.kyverno.io/resource.hash`), byte for byte
(docs/semantics/reports.md#resource-hash).

Kyverno's `CalculateResourceHash` takes the object as Kubernetes' unstructured decoding left it, reads its
labels and annotations (`nil` unless a map whose values are all strings), drops `metadata`, `status`,
`scale` and `spec.nodeName`, and hashes `md5(json.Marshal([labels, annotations, object]))`.

Reproducing it means reproducing Go's `encoding/json` (golang/json.py's `marshal`):
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
from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.golang.json import GoJSONError, marshal


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
        data = marshal(hash_input(obj))
    except GoJSONError:
        return ""
    return hashlib.md5(data.encode("utf-8")).hexdigest()


def resource_hash_from_json_text(text: str | bytes) -> str:
    """The hash of an object given as JSON text (bytes are decoded as Go would: invalid bytes -> U+FFFD)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="surrogateescape")
    return resource_hash(json.loads(text))
