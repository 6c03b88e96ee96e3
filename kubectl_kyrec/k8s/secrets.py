"""Secrets as the API server stores them: `data` is base64 of the bytes, `stringData` the text, merged into
`data` at write. Comparing, capturing and digesting a Secret all need the stored bytes."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

__all__ = ["is_secret", "secret_bytes", "secret_value_bytes"]


def _decode_b64(text: Any) -> bytes:
    if isinstance(text, bytes | bytearray):
        return bytes(text)
    try:
        return base64.b64decode(str(text), validate=True)
    except (binascii.Error, ValueError):
        # not base64: the API server would refuse it; compare what was written
        return str(text).encode()


def secret_value_bytes(field: str, value: Any) -> bytes:
    """One value of a Secret's `data` (base64) or `stringData` (text), as the API server stores it."""
    if field == "data":
        return _decode_b64(value) if value is not None else b""
    return ("" if value is None else str(value)).encode()


def secret_bytes(obj: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's content per key, as the API server stores it (stringData wins over data)."""
    out: dict[str, bytes] = {}
    for field in ("data", "stringData"):
        values = obj.get(field)
        if isinstance(values, Mapping):
            for key, value in values.items():
                out[str(key)] = secret_value_bytes(field, value)
    return out


def is_secret(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"
