"""x509.decode accepts what Go's crypto/x509 accepts, though strict DER parsers refuse it.

Each certificate below was run through Go 1.26's x509.ParseCertificate (accepted, except the RSA key
without NULL parameters, which Go refuses too). The `cryptography` package (50.0) refuses the first
five, or warns that it soon will (serial 0, which Kyverno's own test certificate has): so kyrec keeps
its own DER reader rather than parsing certificates with it.
"""

from __future__ import annotations

import pytest

from kubectl_kyrec.golang.x509 import X509Error, parse_certificate


def _tlv(tag: int, content: bytes) -> bytes:
    size = len(content)
    if size < 0x80:
        return bytes([tag, size]) + content
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + content


def _seq(*parts: bytes) -> bytes:
    return _tlv(0x30, b"".join(parts))


def _set(*parts: bytes) -> bytes:
    return _tlv(0x31, b"".join(parts))


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    out = bytes([arcs[0] * 40 + arcs[1]])
    for arc in arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.insert(0, 0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(chunk)
    return _tlv(0x06, out)


def _integer(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))


RSA = "1.2.840.113549.1.1.1"
# an RSA public key (a made-up 1024-bit modulus: nothing is verified), as a SubjectPublicKeyInfo's BIT STRING
KEY_BITS = _tlv(0x03, b"\x00" + _seq(_integer((1 << 1023) + 12345), _integer(65537)))
SPKI = _seq(_seq(_oid(RSA), _tlv(0x05, b"")), KEY_BITS)


SHA256_RSA = _seq(_oid("1.2.840.113549.1.1.11"), _tlv(0x05, b""))
CN_X = _seq(_set(_seq(_oid("2.5.4.3"), _tlv(0x0C, b"x"))))


def _certificate(*, serial: bytes = b"\x05", name: bytes = CN_X, spki: bytes | None = None,
                 extensions: tuple[bytes, ...] = ()) -> bytes:
    validity = _seq(_tlv(0x17, b"200101000000Z"), _tlv(0x17, b"300101000000Z"))
    fields = [_tlv(0xA0, _tlv(0x02, b"\x02")), _tlv(0x02, serial), SHA256_RSA, name, validity, name,
              spki or SPKI]
    if extensions:
        fields.append(_tlv(0xA3, _seq(*extensions)))
    return _seq(_seq(*fields), SHA256_RSA, _tlv(0x03, b"\x00" + b"\x01" * 16))


BASIC_CONSTRAINTS = "2.5.29.19"


@pytest.mark.parametrize(("case", "data"), [
    # DER forbids encoding a DEFAULT value; Go reads it anyway
    ("extension critical FALSE written out", _certificate(extensions=(
        _seq(_oid(BASIC_CONSTRAINTS), _tlv(0x01, b"\x00"), _tlv(0x04, _seq(_tlv(0x01, b"\xff")))),))),
    ("basic constraints cA FALSE written out", _certificate(extensions=(
        _seq(_oid(BASIC_CONSTRAINTS), _tlv(0x04, _seq(_tlv(0x01, b"\x00")))),))),
    # Go allows `*` in a PrintableString: wildcard names are common in the wild
    ("PrintableString with *", _certificate(name=_seq(_set(_seq(_oid("2.5.4.3"), _tlv(0x13, b"*.x")))))),
    ("multi-valued RDN not in DER order", _certificate(name=_seq(_set(
        _seq(_oid("2.5.4.3"), _tlv(0x0C, b"zz")), _seq(_oid("2.5.4.10"), _tlv(0x0C, b"a")))))),
    ("serial number 0", _certificate(serial=b"\x00")),
])
def test_accepted_as_go_accepts_it(case: str, data: bytes) -> None:
    algorithm, out = parse_certificate(data)
    assert algorithm == 1, case


def test_printable_string_keeps_its_asterisk() -> None:
    name = _seq(_set(_seq(_oid("2.5.4.3"), _tlv(0x13, b"*.x"))))
    assert parse_certificate(_certificate(name=name))[1]["Issuer"]["CommonName"] == "*.x"


def test_rsa_key_without_null_parameters_is_refused_as_go_refuses_it() -> None:
    without_null = _seq(_seq(_oid(RSA)), KEY_BITS)
    with pytest.raises(X509Error, match="x509: RSA key missing NULL parameters"):
        parse_certificate(_certificate(spki=without_null))
