"""Kyverno JMESPath `x509_decode` of a CERTIFICATE: json.Marshal of Go's whole x509.Certificate.

kyrec's DER decoder (kubectl_kyrec/golang/x509.py) builds what Kyverno's CEL library returns, a
CertificateOutput without some of x509.Certificate's fields; the JMESPath function encodes the full struct,
so this module adds the rest (and the whole SerialNumber): Version, Subject, SignatureAlgorithm, SubjectKeyId,
UnknownExtKeyUsage, URIs, UnhandledCriticalExtensions, Policies, PolicyMappings and the Inhibit*/RequireExplicit*
policy constraints.
"""

from __future__ import annotations

import base64
from typing import Any

from kubectl_kyrec.golang import der, x509

# the extensions Go's parser handles (x509/parser.go processExtensions); other critical ones are "unhandled"
_HANDLED = {(2, 5, 29, 15), (2, 5, 29, 19), (2, 5, 29, 17), (2, 5, 29, 30), (2, 5, 29, 31), (2, 5, 29, 35),
            (2, 5, 29, 37), (2, 5, 29, 14), (2, 5, 29, 32), (1, 3, 6, 1, 5, 5, 7, 1, 1)}


def certificate_extras(der_bytes: bytes) -> dict[str, Any]:
    """The x509.Certificate fields CertificateOutput leaves out, decoded from the certificate's DER."""
    try:
        cert = der.expect(der.read_one(der_bytes)[0], der.SEQUENCE)
        tbs, outer_algorithm, _ = cert.children()
        fields = der.expect(tbs, der.SEQUENCE).children()
        version = 1
        if fields and fields[0].context(0):
            version = der.integer(fields.pop(0).children()[0]) + 1
        serial = der.integer(fields[0])
        subject, _ = x509._name(fields[4])
        signature_algorithm = x509._signature_algorithm(outer_algorithm)
        extensions: list[dict[str, Any]] = []
        for extra in fields[6:]:
            if extra.context(3):
                extensions = [x509._extension(e) for e in der.expect(extra.children()[0], der.SEQUENCE).children()]
    except (der.DERError, IndexError, ValueError):
        raise x509.X509Error("x509: malformed certificate") from None
    out: dict[str, Any] = {
        # *big.Int marshals as the whole number (CertificateOutput keeps only its int64 part)
        "SerialNumber": serial, "Version": version, "Subject": subject, "SignatureAlgorithm": signature_algorithm,
        "SubjectKeyId": None,
        "UnhandledCriticalExtensions": None, "UnknownExtKeyUsage": None, "URIs": None, "Policies": None,
        "PolicyMappings": None, "InhibitAnyPolicy": 0, "InhibitAnyPolicyZero": False, "InhibitPolicyMapping": 0,
        "InhibitPolicyMappingZero": False, "RequireExplicitPolicy": 0, "RequireExplicitPolicyZero": False,
    }
    try:
        for ext in extensions:
            arcs, value = tuple(ext["Id"]), ext["Value"]
            if ext["Critical"] and arcs not in _HANDLED:
                out["UnhandledCriticalExtensions"] = (out["UnhandledCriticalExtensions"] or []) + [list(arcs)]
            if arcs == (2, 5, 29, 14):
                key_id = der.expect(der.read_one(value)[0], der.OCTET_STRING).content
                out["SubjectKeyId"] = base64.b64encode(key_id).decode("ascii")
            elif arcs == (2, 5, 29, 17):
                uris = x509._general_names(value)["uri"]
                out["URIs"] = [x509._go_url(u) for u in uris] or None
            elif arcs == (2, 5, 29, 37):
                for usage in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                    usage_arcs = der.oid(usage)
                    if tuple(usage_arcs) not in x509._EXT_KEY_USAGES:
                        out["UnknownExtKeyUsage"] = (out["UnknownExtKeyUsage"] or []) + [usage_arcs]
            elif arcs == (2, 5, 29, 32):
                for policy in der.expect(der.read_one(value)[0], der.SEQUENCE).children():
                    dotted = ".".join(str(a) for a in der.oid(policy.children()[0]))
                    out["Policies"] = (out["Policies"] or []) + [dotted]  # x509.OID marshals as text
    except (der.DERError, IndexError, ValueError):
        raise x509.X509Error("x509: malformed extension") from None
    return out


def x509_decode(text: str) -> Any:
    """Kyverno's jpX509Decode: the certificate (or CSR) as Go's json.Marshal gives it, numbers float64."""
    from kubectl_kyrec.golang.json import roundtrip

    decoded = x509.x509_decode(text)
    block = x509.pem_decode(text)
    if block is not None and block[0] == "CERTIFICATE" and isinstance(decoded, dict):
        decoded.update(roundtrip(certificate_extras(block[1])))
    return decoded
