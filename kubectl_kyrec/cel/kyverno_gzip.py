"""`gzip.compress(dyn) -> bytes` and `gzip.decompress(bytes) -> string` (sdk: gzip/).

The bytes are Go's: gzip.NewWriter's header (mtime 0, as Kyverno sets ModTime to the Unix epoch; no
extra flags at the default level; OS 255), the body compress/flate writes at the default level
(golang/flate.py) and the CRC-32 and length trailer.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.kyverno_json import cel_type_name
from kubectl_kyrec.golang.flate import go_deflate

# magic, deflate, no flags, mtime 0 (Kyverno sets ModTime to the Unix epoch), XFL 0, OS unknown (255)
_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def gzip_compress(value: Any) -> bytearray:
    if not isinstance(value, str):
        raise CelFunctionError(f"type conversion error from {cel_type_name(value)} to 'string'")
    data = value.encode("utf-8", "surrogatepass")
    body = go_deflate(data)
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    # a bytearray: the engine cuts `bytes` results at the first NUL byte, and gzip output is full of them
    return bytearray(_HEADER + body + trailer)


def gzip_decompress(data: bytes) -> str:
    raw = bytes(data)
    if not raw:
        raise CelFunctionError("EOF")
    out = bytearray()
    rest = raw
    while rest:
        # one member at a time, as Go's multistream reader does
        if len(rest) < 10:
            raise CelFunctionError("unexpected EOF")
        if rest[:2] != b"\x1f\x8b" or rest[2] != 8:
            raise CelFunctionError("gzip: invalid header")
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(rest)
        except zlib.error as exc:
            text = str(exc)
            if "incorrect data check" in text or "incorrect length check" in text:
                raise CelFunctionError("gzip: invalid checksum") from None
            raise CelFunctionError("flate: corrupt input") from None
        if not inflater.eof:
            raise CelFunctionError("unexpected EOF")
        rest = inflater.unused_data
    return out.decode("utf-8", errors="replace")


def gzip_library() -> Library:
    return Library("kyverno.gzip", [
        fn("gzip.decompress", Overload("decompress_bytes_string", ["bytes"], "string", gzip_decompress)),
        fn("gzip.compress", Overload("compress_any_bytes", ["dyn"], "bytes", gzip_compress)),
    ])
