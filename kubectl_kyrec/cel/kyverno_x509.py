"""`x509.decode(string) -> dyn` (sdk: x509/impl.go): golang/x509.py decodes, this binds it to CEL."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.golang.x509 import X509Error, x509_decode


def _decode(text: str) -> Any:
    try:
        return x509_decode(text)
    except X509Error as exc:
        raise CelFunctionError(str(exc)) from None


def x509_library() -> Library:
    return Library("kyverno.x509", [
        fn("x509.decode", Overload("x509_decode_string", ["string"], "dyn", _decode)),
    ])
