"""gzip.compress gives Go's bytes exactly (vectors/go_gzip.yaml, produced by Go's compress/gzip).

Kyverno's gzip.compress returns the bytes Go's writer produces; a policy may hash, compare or store them,
so equal decompressed text is not enough. The inputs cover the paths of Go's DEFLATE writer: fixed,
dynamic and stored blocks, lazy matches, long runs, blocks cut at 16384 tokens and the sliding window.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.kyverno_gzip import gzip_compress

VECTORS = yaml.safe_load((Path(__file__).parent / "vectors" / "go_gzip.yaml").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = VECTORS["vectors"] or []

_VOCABULARY = ("apiVersion", "kind", "metadata", "name", "namespace", "labels", "app", "spec", "containers",
               "image", "nginx", "kyverno", "policy", "validate", "the", "a", "of", "and", "true", "false",
               "securityContext", "runAsNonRoot", "resources", "limits", "memory", "cpu", "128Mi", "500m")


def _lcg(seed: int) -> Any:
    x = seed
    while True:
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        yield x >> 33


def build_input(recipe: dict[str, Any]) -> str:
    if "text" in recipe:
        return str(recipe["text"])
    if "repeat" in recipe:
        return str(recipe["repeat"]) * int(recipe["times"])
    if "lcg" in recipe:
        alphabet = str(recipe["alphabet"])
        rand = _lcg(int(recipe["lcg"]))
        return "".join(alphabet[next(rand) % len(alphabet)] for _ in range(int(recipe["length"])))
    rand = _lcg(int(recipe["words"]))
    return " ".join(_VOCABULARY[next(rand) % len(_VOCABULARY)] for _ in range(int(recipe["count"])))


def _id(vector: dict[str, Any]) -> str:
    text = ",".join(f"{k}={v}" for k, v in vector["input"].items())
    return text if len(text) < 60 else text[:57] + "..."


@pytest.mark.parametrize("vector", CASES, ids=[_id(v) for v in CASES])
def test_gzip_compress_gives_gos_bytes(vector: dict[str, Any]) -> None:
    text = build_input(vector["input"])
    out = bytes(gzip_compress(text))
    assert gzip.decompress(out) == text.encode("utf-8")
    if "gzip_base64" in vector:
        assert base64.b64encode(out).decode() == vector["gzip_base64"]
    else:
        assert (len(out), hashlib.sha256(out).hexdigest()) == (vector["size"], vector["sha256"])
