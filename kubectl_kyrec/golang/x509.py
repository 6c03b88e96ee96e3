"""Go's encoding/pem and crypto/x509 parsers as Kyverno's x509 decoding uses them (CEL sdk: x509/impl.go,
the JMESPath `x509_decode`), without any crypto package.

Kyverno parses the first PEM block with Go's crypto/x509, accepts only RSA keys, and returns the
certificate (or CSR) as `json.Unmarshal(json.Marshal(struct))`: Go field names, byte slices as
base64, every number a double, absent slices as null. This module decodes the DER itself and builds
the same map. Nothing is verified (Kyverno does not verify either).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import urllib.parse
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang import der
from kubectl_kyrec.golang.json import roundtrip
from kubectl_kyrec.golang.time import format_rfc3339, in_utc


class X509Error(EngineError):
    """crypto/x509's error text (`x509: malformed certificate`), or Kyverno's around it. Not a ValueError:
    the parser's own `except ValueError` clauses must let these texts through unchanged."""


_RSA = [1, 2, 840, 113549, 1, 1, 1]
OIDTable = dict[tuple[int, ...], int]
_PUBLIC_KEY_ALGORITHMS: OIDTable = {(1, 2, 840, 113549, 1, 1, 1): 1, (1, 2, 840, 10040, 4, 1): 2,
                          (1, 2, 840, 10045, 2, 1): 3, (1, 3, 101, 112): 4}
_SIGNATURE_ALGORITHMS: OIDTable = {
    (1, 2, 840, 113549, 1, 1, 2): 1, (1, 2, 840, 113549, 1, 1, 4): 2, (1, 2, 840, 113549, 1, 1, 5): 3,
    (1, 2, 840, 113549, 1, 1, 11): 4, (1, 2, 840, 113549, 1, 1, 12): 5, (1, 2, 840, 113549, 1, 1, 13): 6,
    (1, 2, 840, 10040, 4, 3): 7, (2, 16, 840, 1, 101, 3, 4, 3, 2): 8, (1, 2, 840, 10045, 4, 1): 9,
    (1, 2, 840, 10045, 4, 3, 2): 10, (1, 2, 840, 10045, 4, 3, 3): 11, (1, 2, 840, 10045, 4, 3, 4): 12,
    (1, 3, 101, 112): 16,
}
_RSA_PSS = (1, 2, 840, 113549, 1, 1, 10)
_PSS_HASHES: OIDTable = {(2, 16, 840, 1, 101, 3, 4, 2, 1): 13, (2, 16, 840, 1, 101, 3, 4, 2, 2): 14,
               (2, 16, 840, 1, 101, 3, 4, 2, 3): 15}
_EXT_KEY_USAGES: OIDTable = {
    (2, 5, 29, 37, 0): 0, (1, 3, 6, 1, 5, 5, 7, 3, 1): 1, (1, 3, 6, 1, 5, 5, 7, 3, 2): 2,
    (1, 3, 6, 1, 5, 5, 7, 3, 3): 3, (1, 3, 6, 1, 5, 5, 7, 3, 4): 4, (1, 3, 6, 1, 5, 5, 7, 3, 5): 5,
    (1, 3, 6, 1, 5, 5, 7, 3, 6): 6, (1, 3, 6, 1, 5, 5, 7, 3, 7): 7, (1, 3, 6, 1, 5, 5, 7, 3, 8): 8,
    (1, 3, 6, 1, 5, 5, 7, 3, 9): 9, (1, 3, 6, 1, 4, 1, 311, 10, 3, 3): 10, (2, 16, 840, 1, 113730, 4, 1): 11,
    (1, 3, 6, 1, 4, 1, 311, 2, 1, 22): 12, (1, 3, 6, 1, 4, 1, 311, 61, 1, 1): 13,
}
_OCSP = [1, 3, 6, 1, 5, 5, 7, 48, 1]
_CA_ISSUERS = [1, 3, 6, 1, 5, 5, 7, 48, 2]
_AUTHORITY_INFO_ACCESS = [1, 3, 6, 1, 5, 5, 7, 1, 1]
_EXTENSION_REQUEST = [1, 2, 840, 113549, 1, 9, 14]
# pkix.Name fields filled from 2.5.4.x attributes (FillFromRDNSequence)
_NAME_FIELDS = {6: "Country", 7: "Locality", 8: "Province", 9: "StreetAddress", 10: "Organization",
                11: "OrganizationalUnit", 17: "PostalCode"}

_PEM_BLOCK = re.compile(r"(?:\A|\n)-----BEGIN ([^\n]*?)-----[ \t]*\r?\n(.*?)-----END \1-----", re.S)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def pem_decode(text: str) -> tuple[str, bytes] | None:
    """The first PEM block that decodes, as Go's pem.Decode finds it."""
    for match in _PEM_BLOCK.finditer(text):
        body = match.group(2)
        lines = body.splitlines()
        if lines and ":" in lines[0]:
            # RFC 1421 headers run up to the first blank line
            blank = next((i for i, line in enumerate(lines) if not line.strip()), None)
            if blank is None:
                continue
            lines = lines[blank + 1:]
        try:
            data = base64.b64decode("".join("".join(lines).split()), validate=True)
        except (binascii.Error, ValueError):
            continue
        return match.group(1), data
    return None


def _ip_text(data: bytes) -> str:
    """net.IP.String(): dotted IPv4 (also for IPv4-mapped addresses), RFC 5952 IPv6."""
    if len(data) == 4:
        return str(ipaddress.IPv4Address(data))
    if len(data) == 16:
        if data[:12] == b"\x00" * 10 + b"\xff\xff":
            return str(ipaddress.IPv4Address(data[12:]))
        return str(ipaddress.IPv6Address(data))
    return "?" + data.hex()


def _name(element: der.Element) -> tuple[dict[str, Any], bytes]:
    """pkix.Name filled from an RDNSequence, and its raw bytes."""
    der.expect(element, der.SEQUENCE)
    name: dict[str, Any] = {"Country": None, "Organization": None, "OrganizationalUnit": None,
                            "Locality": None, "Province": None, "StreetAddress": None, "PostalCode": None,
                            "SerialNumber": "", "CommonName": "", "Names": None, "ExtraNames": None}
    for rdn in element.children():
        der.expect(rdn, der.SET)
        for atv in rdn.children():
            type_element, value_element = (atv.children() + [None, None])[:2]
            if type_element is None or value_element is None:
                raise der.DERError("malformed attribute")
            arcs = der.oid(type_element)
            value = der.text(value_element)
            name["Names"] = (name["Names"] or []) + [{"Type": arcs, "Value": value}]
            if len(arcs) == 4 and arcs[:3] == [2, 5, 4]:
                if arcs[3] == 3:
                    name["CommonName"] = value
                elif arcs[3] == 5:
                    name["SerialNumber"] = value
                elif arcs[3] in _NAME_FIELDS:
                    field = _NAME_FIELDS[arcs[3]]
                    name[field] = (name[field] or []) + [value]
    return name, element.full


def _algorithm(element: der.Element) -> tuple[list[int], der.Element | None]:
    parts = der.expect(element, der.SEQUENCE).children()
    if not parts:
        raise der.DERError("empty algorithm identifier")
    return der.oid(parts[0]), (parts[1] if len(parts) > 1 else None)


def _signature_algorithm(element: der.Element) -> int:
    arcs, params = _algorithm(element)
    key = tuple(arcs)
    if key == _RSA_PSS and params is not None:
        # RSASSA-PSS names its hash in the parameters: [0] { AlgorithmIdentifier }
        for child in params.children():
            if child.context(0):
                hash_arcs, _ = _algorithm(child.children()[0])
                return _PSS_HASHES.get(tuple(hash_arcs), 0)
        return 0
    return _SIGNATURE_ALGORITHMS.get(key, 0)


def _spki(element: der.Element) -> tuple[int, dict[str, Any] | None, bytes]:
    """(PublicKeyAlgorithm, RSA public key as {N, E} or None, raw SPKI)."""
    parts = der.expect(element, der.SEQUENCE).children()
    if len(parts) != 2:
        raise der.DERError("malformed spki")
    arcs, params = _algorithm(parts[0])
    algorithm = _PUBLIC_KEY_ALGORITHMS.get(tuple(arcs), 0)
    key_bytes, _ = der.bit_string(parts[1])
    if arcs != _RSA:
        return algorithm, None, element.full
    if params is None or params.tag != der.NULL:
        raise X509Error("x509: RSA key missing NULL parameters")
    try:
        numbers = der.expect(der.read_one(key_bytes)[0], der.SEQUENCE).children()
        modulus, exponent = der.integer(numbers[0]), der.integer(numbers[1])
    except (der.DERError, IndexError):
        raise X509Error("x509: invalid RSA public key") from None
    if modulus <= 0:
        raise X509Error("x509: RSA modulus is not a positive number")
    if exponent <= 0:
        raise X509Error("x509: RSA public exponent is not a positive number")
    return algorithm, {"N": str(modulus), "E": exponent}, element.full


def _general_names(data: bytes) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {"email": [], "dns": [], "uri": [], "ip": []}
    for name in der.expect(der.read_one(data)[0], der.SEQUENCE).children():
        if name.context(1):
            found["email"].append(der.text(name))
        elif name.context(2):
            found["dns"].append(der.text(name))
        elif name.context(6):
            found["uri"].append(der.text(name))
        elif name.context(7):
            if len(name.content) not in (4, 16):
                raise X509Error(f"x509: cannot parse IP address of length {len(name.content)}")
            found["ip"].append(_ip_text(name.content))
    return found


def _name_constraints(data: bytes, out: dict[str, Any]) -> None:
    for subtrees in der.expect(der.read_one(data)[0], der.SEQUENCE).children():
        prefix = "Permitted" if subtrees.context(0) else "Excluded" if subtrees.context(1) else None
        if prefix is None:
            continue
        for subtree in subtrees.children():
            base = subtree.children()[0]
            value: Any
            if base.context(2):
                key, value = "DNSDomains", der.text(base)
            elif base.context(1):
                key, value = "EmailAddresses", der.text(base)
            elif base.context(6):
                key, value = "URIDomains", der.text(base)
            elif base.context(7):
                half = len(base.content) // 2
                if len(base.content) not in (8, 32):
                    raise X509Error("x509: IP constraint contained value of length "
                                           f"{len(base.content)}")
                key = "IPRanges"
                value = {"IP": _ip_text(base.content[:half]), "Mask": _b64(base.content[half:]) or ""}
            else:
                continue
            field = prefix + key
            out[field] = (out[field] or []) + [value]


def _extension(element: der.Element) -> dict[str, Any]:
    parts = der.expect(element, der.SEQUENCE).children()
    critical = False
    if len(parts) == 3:
        critical = der.boolean(parts[1])
    elif len(parts) != 2:
        raise der.DERError("malformed extension")
    value = der.expect(parts[-1], der.OCTET_STRING).content
    return {"Id": der.oid(parts[0]), "Critical": critical, "Value": value}


def _apply_extensions(extensions: list[dict[str, Any]], out: dict[str, Any], certificate: bool) -> None:
    seen: set[tuple[int, ...]] = set()
    for ext in extensions:
        arcs, value = ext["Id"], ext["Value"]
        if tuple(arcs) in seen:
            raise X509Error("x509: certificate contains duplicate extensions")
        seen.add(tuple(arcs))
        if arcs == [2, 5, 29, 17]:
            names = _general_names(value)
            out["DNSNames"] = names["dns"] or None
            out["EmailAddresses"] = names["email"] or None
            out["IPAddresses"] = names["ip"] or None
            out["_uris"] = names["uri"] or None
        if not certificate:
            continue
        if arcs == [2, 5, 29, 15]:
            bits, count = der.bit_string(der.read_one(value)[0])
            usage = 0
            for i in range(9):
                if i < count and bits[i // 8] >> (7 - i % 8) & 1:
                    usage |= 1 << i
            out["KeyUsage"] = usage
        elif arcs == [2, 5, 29, 19]:
            parts = der.expect(der.read_one(value)[0], der.SEQUENCE).children()
            is_ca, max_path = False, -1
            if parts and parts[0].tag == der.BOOLEAN:
                is_ca = der.boolean(parts.pop(0))
            if parts and parts[0].tag == der.INTEGER:
                max_path = der.integer(parts[0])
            out.update(IsCA=is_ca, MaxPathLen=max_path, BasicConstraintsValid=True,
                       MaxPathLenZero=max_path == 0)
        elif arcs == [2, 5, 29, 30]:
            out["PermittedDNSDomainsCritical"] = ext["Critical"]
            _name_constraints(value, out)
        elif arcs == [2, 5, 29, 31]:
            for point in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                for part in point.children():
                    if not part.context(0):
                        continue
                    for full_name in part.children():
                        if full_name.context(0):
                            for general in full_name.children():
                                if general.context(6):
                                    out["CRLDistributionPoints"] = (out["CRLDistributionPoints"] or []) + [
                                        der.text(general)]
        elif arcs == [2, 5, 29, 35]:
            for part in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                if part.context(0) and not part.constructed:
                    out["AuthorityKeyId"] = part.content
        elif arcs == [2, 5, 29, 37]:
            for usage_oid in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                known = _EXT_KEY_USAGES.get(tuple(der.oid(usage_oid)))
                if known is not None:
                    out["ExtKeyUsage"] = (out["ExtKeyUsage"] or []) + [known]
        elif arcs == [2, 5, 29, 32]:
            for policy in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                out["PolicyIdentifiers"] = (out["PolicyIdentifiers"] or []) + [der.oid(policy.children()[0])]
        elif arcs == _AUTHORITY_INFO_ACCESS:
            for access in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                method, location = access.children()[:2]
                if not location.context(6):
                    continue
                field = {tuple(_OCSP): "OCSPServer", tuple(_CA_ISSUERS): "IssuingCertificateURL"}.get(
                    tuple(der.oid(method)))
                if field:
                    out[field] = (out[field] or []) + [der.text(location)]


def _serial_int64(value: int) -> int:
    # big.Int.Int64(): the low 64 bits of |x| as int64, negated when x is negative
    low = abs(value) & ((1 << 64) - 1)
    if low >= 1 << 63:
        low -= 1 << 64
    if value < 0:
        low = -low
        if low >= 1 << 63:
            low -= 1 << 64
    return low


def _jsonable_extensions(extensions: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    return [{"Id": e["Id"], "Critical": e["Critical"], "Value": _b64(e["Value"])} for e in extensions] or None


def parse_certificate(data: bytes) -> tuple[int, dict[str, Any]]:
    """(PublicKeyAlgorithm, Kyverno's CertificateOutput before the JSON round trip)."""
    try:
        cert, rest = der.read_one(data)
        der.expect(cert, der.SEQUENCE)
    except der.DERError:
        raise X509Error("x509: malformed certificate") from None
    if rest:
        raise X509Error("x509: trailing data")
    stage = "certificate"
    try:
        parts = der.expect(cert, der.SEQUENCE).children()
        if len(parts) != 3:
            raise der.DERError("certificate")
        tbs, outer_algorithm, signature = parts
        stage = "tbs certificate"
        fields = der.expect(tbs, der.SEQUENCE).children()
        if fields and fields[0].context(0):
            stage = "version"
            version = der.integer(fields.pop(0).children()[0]) + 1
            if not 1 <= version <= 3:
                raise X509Error("x509: invalid version")
        stage = "serial number"
        serial = der.integer(fields[0])
        stage = "signature algorithm identifier"
        inner = _algorithm(fields[1])[0]
        stage = "issuer"
        issuer, raw_issuer = _name(fields[2])
        stage = "validity"
        validity = der.expect(fields[3], der.SEQUENCE).children()
        not_before, not_after = der.time(validity[0]), der.time(validity[1])
        stage = "subject"
        _, raw_subject = _name(fields[4])
        stage = "spki"
        algorithm, public_key, raw_spki = _spki(fields[5])
        stage = "extensions"
        extensions: list[dict[str, Any]] = []
        for extra in fields[6:]:
            if extra.context(3):
                extensions = [_extension(e) for e in der.expect(extra.children()[0], der.SEQUENCE).children()]
        stage = "signature"
        if _algorithm(outer_algorithm)[0] != inner:
            raise X509Error("x509: inner and outer signature algorithm identifiers don't match")
        signature_bytes, _ = der.bit_string(signature)
    except (der.DERError, IndexError):
        raise X509Error(f"x509: malformed {stage}") from None
    out: dict[str, Any] = {
        "Raw": _b64(data), "RawTBSCertificate": _b64(tbs.full), "RawSubjectPublicKeyInfo": _b64(raw_spki),
        "RawSubject": _b64(raw_subject), "RawIssuer": _b64(raw_issuer), "Signature": _b64(signature_bytes),
        "PublicKeyAlgorithm": algorithm, "PublicKey": public_key, "SerialNumber": _serial_int64(serial),
        "Issuer": issuer, "NotBefore": format_rfc3339(in_utc(not_before)),
        "NotAfter": format_rfc3339(in_utc(not_after)), "KeyUsage": 0,
        "Extensions": _jsonable_extensions(extensions), "ExtraExtensions": None, "ExtKeyUsage": None,
        "BasicConstraintsValid": False, "IsCA": False, "MaxPathLen": 0, "MaxPathLenZero": False,
        "AuthorityKeyId": None, "OCSPServer": None, "IssuingCertificateURL": None, "DNSNames": None,
        "EmailAddresses": None, "IPAddresses": None, "PermittedDNSDomainsCritical": False,
        "PermittedDNSDomains": None, "ExcludedDNSDomains": None, "PermittedIPRanges": None,
        "ExcludedIPRanges": None, "PermittedEmailAddresses": None, "ExcludedEmailAddresses": None,
        "PermittedURIDomains": None, "ExcludedURIDomains": None, "CRLDistributionPoints": None,
        "PolicyIdentifiers": None,
    }
    try:
        _apply_extensions(extensions, out, certificate=True)
    except (der.DERError, IndexError, ValueError):
        raise X509Error("x509: malformed extension") from None
    out.pop("_uris", None)
    out["AuthorityKeyId"] = _b64(out["AuthorityKeyId"])
    return algorithm, out


def _asn1_any(element: der.Element) -> Any:
    """What Go's encoding/asn1 puts in an `any` field, for the types CSR attributes carry."""
    if element.tag == der.OCTET_STRING:
        return _b64(element.content)
    if element.tag == der.BOOLEAN:
        return der.boolean(element)
    if element.tag == der.INTEGER:
        return der.integer(element)
    if element.tag == der.OID:
        return der.oid(element)
    if element.tag in der.STRING_TAGS:
        return der.text(element)
    raise der.DERError("unsupported attribute value")


def _csr_attributes(attributes: list[der.Element]) -> tuple[list[dict[str, Any]] | None,
                                                           list[dict[str, Any]]]:
    """(the legacy Attributes field, the extensions requested through extensionRequest)."""
    legacy: list[dict[str, Any]] = []
    extensions: list[dict[str, Any]] = []
    for attribute in attributes:
        try:
            parts = der.expect(attribute, der.SEQUENCE).children()
            arcs = der.oid(parts[0])
            values = der.expect(parts[1], der.SET).children()
        except (der.DERError, IndexError):
            raise X509Error("x509: malformed certificate request") from None
        if arcs == _EXTENSION_REQUEST and values:
            try:
                extensions = [_extension(e) for e in der.expect(values[0], der.SEQUENCE).children()]
            except der.DERError:
                raise X509Error("x509: malformed extension request") from None
        try:
            # pkix.AttributeTypeAndValueSET: each value a SEQUENCE OF {OID, ANY}; extra elements are ignored
            sets = []
            for value in values:
                entries = []
                for entry in der.expect(value, der.SEQUENCE).children():
                    fields = der.expect(entry, der.SEQUENCE).children()
                    entries.append({"Type": der.oid(fields[0]), "Value": _asn1_any(fields[1])})
                sets.append(entries)
        except (der.DERError, IndexError):
            continue  # Go drops attributes that do not fit this shape (challengePassword, ...)
        legacy.append({"Type": arcs, "Value": sets})
    return legacy or None, extensions


def _go_url(text: str) -> dict[str, Any]:
    """The JSON of a Go *url.URL (an approximation built with urllib)."""
    parts = urllib.parse.urlsplit(text)
    opaque = ""
    path = parts.path
    if parts.scheme and not text[len(parts.scheme) + 1:].startswith("/") and not parts.netloc:
        opaque, path = text[len(parts.scheme) + 1:].split("?", 1)[0].split("#", 1)[0], ""
    return {"Scheme": parts.scheme, "Opaque": opaque, "User": None, "Host": parts.netloc, "Path": path,
            "RawPath": "", "OmitHost": False, "ForceQuery": False, "RawQuery": parts.query,
            "Fragment": parts.fragment, "RawFragment": ""}


def parse_certificate_request(data: bytes) -> tuple[int, dict[str, Any]]:
    try:
        csr, rest = der.read_one(data)
        if rest:
            raise X509Error("x509: trailing data")
        outer = der.expect(csr, der.SEQUENCE).children()
        info, algorithm_element, signature = outer
        fields = der.expect(info, der.SEQUENCE).children()
        version = der.integer(fields[0])
        subject, raw_subject = _name(fields[1])
        algorithm, public_key, raw_spki = _spki(fields[2])
        attributes = fields[3].children() if len(fields) > 3 and fields[3].context(0) else []
        signature_algorithm = _signature_algorithm(algorithm_element)
        signature_bytes, _ = der.bit_string(signature)
    except (der.DERError, IndexError, ValueError):
        raise X509Error("x509: malformed certificate request") from None
    legacy, extensions = _csr_attributes(attributes)
    out: dict[str, Any] = {
        "Raw": _b64(data), "RawTBSCertificateRequest": _b64(info.full),
        "RawSubjectPublicKeyInfo": _b64(raw_spki),
        "RawSubject": _b64(raw_subject), "Version": version, "Signature": _b64(signature_bytes),
        "SignatureAlgorithm": signature_algorithm, "PublicKeyAlgorithm": algorithm, "PublicKey": public_key,
        "Subject": subject, "Attributes": legacy, "Extensions": _jsonable_extensions(extensions),
        "ExtraExtensions": None, "DNSNames": None, "EmailAddresses": None, "IPAddresses": None, "URIs": None,
    }
    try:
        _apply_extensions(extensions, out, certificate=False)
    except (der.DERError, IndexError, ValueError):
        raise X509Error("x509: malformed extension") from None
    uris = out.pop("_uris", None)
    out["URIs"] = [_go_url(u) for u in uris] if uris else None
    return algorithm, out


def x509_decode(text: str) -> Any:
    block = pem_decode(text)
    if block is None:
        raise X509Error("failed to decode PEM block")
    kind, data = block
    if kind == "CERTIFICATE":
        algorithm, out = parse_certificate(data)
    elif kind == "CERTIFICATE REQUEST":
        algorithm, out = parse_certificate_request(data)
    else:
        raise X509Error("PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST")
    if algorithm != 1:
        raise X509Error("certificate should use rsa algorithm")
    return roundtrip(out)


def has_certificate(text: str) -> bool:
    """Whether `text` holds a PEM CERTIFICATE that parses (x509.CertPool.AppendCertsFromPEM's test)."""
    rest = text
    while True:
        block = pem_decode(rest)
        if block is None:
            return False
        kind, data = block
        if kind == "CERTIFICATE":
            try:
                parse_certificate(data)
                return True
            except X509Error:
                pass
        marker = rest.find("-----END " + kind + "-----")
        if marker < 0:
            return False
        rest = rest[marker + 1:]
