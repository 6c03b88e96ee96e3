"""`sha1/sha256/md5(string) -> hex` and their `hash.` spellings (sdk: hash/lib.go, impl.go)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from kubectl_kyrec.cel.decl import Function, Library, Overload, fn


def _hex(algorithm: str) -> Callable[[str], str]:
    def digest(value: str) -> str:
        # Go hashes the string's UTF-8 bytes and hex-encodes in lower case
        return hashlib.new(algorithm, value.encode("utf-8", "surrogatepass")).hexdigest()
    return digest


def hash_library() -> Library:
    functions: list[Function] = []
    for algorithm in ("sha1", "sha256", "md5"):
        impl = _hex(algorithm)
        # the `hash.` spellings exist from library version 1.18
        for name, suffix in ((algorithm, "non_prefixed"), (f"hash.{algorithm}", "prefixed")):
            functions.append(fn(name, Overload(f"{algorithm}_string_{suffix}", ["string"], "string", impl)))
    return Library("kyverno.hash", functions)
