"""A small DER reader: just enough ASN.1 to take X.509 certificates and CSRs apart.

No cryptography: nothing is verified, values are only decoded. Every structural problem raises
:class:`DERError`; callers turn it into Go's wording.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from kubectl_kyrec.errors import EngineError

# universal tags
BOOLEAN = 0x01
INTEGER = 0x02
BIT_STRING = 0x03
OCTET_STRING = 0x04
NULL = 0x05
OID = 0x06
UTF8_STRING = 0x0C
SEQUENCE = 0x30
SET = 0x31
NUMERIC_STRING = 0x12
PRINTABLE_STRING = 0x13
T61_STRING = 0x14
IA5_STRING = 0x16
UTC_TIME = 0x17
GENERALIZED_TIME = 0x18
BMP_STRING = 0x1E

STRING_TAGS = (UTF8_STRING, NUMERIC_STRING, PRINTABLE_STRING, T61_STRING, IA5_STRING, BMP_STRING)


class DERError(ValueError, EngineError):
    pass


@dataclass(frozen=True)
class Element:
    """One TLV: `tag` is the identifier octet, `full` the whole encoding, `content` the value bytes."""

    tag: int
    full: bytes
    content: bytes

    @property
    def constructed(self) -> bool:
        return bool(self.tag & 0x20)

    def context(self, number: int) -> bool:
        """Whether this is the context-specific tag [number] (primitive or constructed)."""
        return self.tag & 0xC0 == 0x80 and self.tag & 0x1F == number

    def children(self) -> list[Element]:
        if not self.constructed:
            raise DERError("primitive element has no children")
        return read_all(self.content)


def read(data: bytes, offset: int = 0) -> tuple[Element, int]:
    """The element starting at `offset`, and the offset just past it."""
    if offset + 2 > len(data):
        raise DERError("truncated element")
    tag = data[offset]
    if tag & 0x1F == 0x1F:
        raise DERError("high tag numbers are not supported")
    length = data[offset + 1]
    pos = offset + 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or pos + count > len(data):
            raise DERError("bad length")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    end = pos + length
    if end > len(data):
        raise DERError("truncated element")
    return Element(tag, bytes(data[offset:end]), bytes(data[pos:end])), end


def read_all(data: bytes) -> list[Element]:
    out = []
    pos = 0
    while pos < len(data):
        element, pos = read(data, pos)
        out.append(element)
    return out


def read_one(data: bytes) -> tuple[Element, bytes]:
    element, end = read(data)
    return element, bytes(data[end:])


def expect(element: Element, tag: int) -> Element:
    if element.tag != tag:
        raise DERError(f"expected tag {tag:#x}, got {element.tag:#x}")
    return element


def integer(element: Element) -> int:
    expect(element, INTEGER)
    if not element.content:
        raise DERError("empty integer")
    return int.from_bytes(element.content, "big", signed=True)


def boolean(element: Element) -> bool:
    expect(element, BOOLEAN)
    if len(element.content) != 1:
        raise DERError("bad boolean")
    return element.content != b"\x00"


def oid(element: Element) -> list[int]:
    expect(element, OID)
    content = element.content
    if not content:
        raise DERError("empty object identifier")
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if content[-1] & 0x80:
        raise DERError("truncated object identifier")
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return head + arcs[1:]


def bit_string(element: Element) -> tuple[bytes, int]:
    """(bytes, number of bits)."""
    expect(element, BIT_STRING)
    if not element.content or element.content[0] > 7:
        raise DERError("bad bit string")
    unused = element.content[0]
    data = element.content[1:]
    if not data and unused:
        raise DERError("bad bit string")
    return data, len(data) * 8 - unused


def text(element: Element) -> str:
    """The string types X.509 names and general names use."""
    if element.tag == BMP_STRING:
        return element.content.decode("utf-16-be", errors="replace")
    if element.tag == T61_STRING:
        return element.content.decode("latin-1")
    if element.tag in STRING_TAGS or element.context(1) or element.context(2) or element.context(6):
        return element.content.decode("utf-8", errors="replace")
    raise DERError(f"unsupported string type: {element.tag}")


def time(element: Element) -> datetime.datetime:
    raw = element.content.decode("ascii", errors="replace")
    if element.tag == UTC_TIME:
        if len(raw) != 13 or not raw.endswith("Z"):
            raise DERError("malformed UTCTime")
        year = int(raw[:2])
        year += 2000 if year < 50 else 1900
        rest = raw[2:12]
    elif element.tag == GENERALIZED_TIME:
        if len(raw) != 15 or not raw.endswith("Z"):
            raise DERError("malformed GeneralizedTime")
        year = int(raw[:4])
        rest = raw[4:14]
    else:
        raise DERError("unsupported time type")
    try:
        return datetime.datetime(year, int(rest[0:2]), int(rest[2:4]), int(rest[4:6]), int(rest[6:8]),
                                 int(rest[8:10]), tzinfo=datetime.UTC)
    except ValueError as exc:
        raise DERError("malformed time") from exc
