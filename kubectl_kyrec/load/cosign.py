"""cosign signatures and attestations verified with public keys, against a registry (load/registry.py).

The formats, as cosign writes them and Kyverno reads them through cosign (kk: pkg/image/verifiers/ivpol/cosign,
cosign pkg/cosign/verify.go VerifyImageSignatures / VerifyImageAttestations):
- signatures of image `repo@sha256:H` are the layers of the manifest tagged `sha256-H.sig` in the same
  repository: each a simple-signing payload (`critical.image.docker-manifest-digest`, `critical.type`
  "cosign container image signature") with its base64 signature in the layer annotation
  `dev.cosignproject.cosign/signature`; a signature verifies when the key verifies it over the payload
  (ECDSA: ASN.1 over SHA-256; RSA: PKCS#1 v1.5 over SHA-256; Ed25519: pure) and the payload names H
  (cosign's SimpleClaimVerifier);
- attestations are the layers tagged `sha256-H.att`: DSSE envelopes (payload type application/vnd.in-toto+json),
  the signature over DSSE's PAE encoding, the payload an in-toto statement whose subject digest is H.

Written here rather than taken from the `sigstore` Python package: that package verifies Sigstore bundles
(Fulcio certificates and Rekor entries) and has no reader of cosign's OCI tag layout; the checks above are
a few lines over `cryptography`. Nothing here contacts Rekor or Fulcio: a key attestor that does not skip
the transparency log is not decided here (the caller says so).
"""

from __future__ import annotations

import base64
import datetime
import json
import re
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from kubectl_kyrec.golang import der
from kubectl_kyrec.load.registry import ImageRef, Registry, RegistryError, parse_image

SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
CERTIFICATE_ANNOTATION = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION = "dev.sigstore.cosign/chain"
# Fulcio's OIDC issuer (cosign CertExtensions.GetIssuer: the DER UTF8String of the second, else the raw bytes
# of the first)
_ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
_ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
SIMPLE_SIGNING_TYPE = "cosign container image signature"
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "sha224": hashes.SHA224, "sha256": hashes.SHA256, "sha384": hashes.SHA384, "sha512": hashes.SHA512}


class KeyError_(ValueError):
    """A public key that cannot be read (the policy's error, not the image's)."""


def load_public_key(pem: str) -> Any:
    try:
        return serialization.load_pem_public_key(pem.strip().encode())
    except (ValueError, TypeError) as err:
        raise KeyError_(f"invalid public key: {err}") from None


def verify_blob(key: Any, signature: bytes, message: bytes, hash_name: str = "sha256") -> bool:
    algorithm = _HASHES.get(hash_name.lower(), hashes.SHA256)()  # type: ignore[abstract]
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, message, ec.ECDSA(algorithm))
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, message, padding.PKCS1v15(), algorithm)
        elif isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, message)
        else:
            return False
    except InvalidSignature:
        return False
    return True


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding (DSSE v1 protocol)."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


@dataclass
class Verification:
    """What the registry said about one image: how many signatures/attestations verified, why others not."""

    digest: str
    verified: int = 0
    reasons: list[str] = field(default_factory=list)
    statements: list[dict[str, Any]] = field(default_factory=list)    # verified in-toto statements
    certificates: list[x509.Certificate] = field(default_factory=list)  # keyless: of the verified signatures
    found: int = 0                  # signature layers read (0: cosign's `no signatures found`)

    @property
    def ok(self) -> bool:
        return self.verified > 0


def _layers(registry: Registry, ref: ImageRef, digest: str, suffix: str) -> list[tuple[bytes, dict[str, str]]]:
    """The (payload, annotations) layers of the `sha256-<hex>.<suffix>` image; [] when there is none.
    RegistryError when the registry cannot be read."""
    algorithm, _, hexpart = digest.partition(":")
    manifest = registry.tag_manifest(ref, f"{algorithm}-{hexpart}.{suffix}")
    if manifest is None:
        return []
    out = []
    for layer in manifest.get("layers") or []:
        if not isinstance(layer, dict) or not isinstance(layer.get("digest"), str):
            continue
        out.append((registry.blob(ref, layer["digest"]), dict(layer.get("annotations") or {})))
    return out


def verify_signatures(registry: Registry, image: str, key_pem: str, hash_name: str = "sha256", *,
                      roots_pem: str = "", any_root: bool = False) -> Verification:
    """cosign signatures of `image` checked with one public key, or keyless-style (`roots_pem` given, no key):
    with the certificate each signature carries, which must chain up to one of the roots (verify_certificate)
    and be valid at the run's time (`registry.now`, which keyless needs). `any_root`: keyless with the chain
    left unchecked, for a caller whose trust root kyrec does not have: every other check is made, and the
    certificates of the signatures that pass them are returned for the caller to decide.
    RegistryError when the registry could not be read (the image's manifest or its signatures); KeyError_
    for an unreadable key or roots."""
    keyless = bool(roots_pem) or any_root
    key = load_public_key(key_pem) if not keyless else None
    roots = load_certificates(roots_pem) if roots_pem else []
    now = registry.now
    if keyless and now is None:
        raise KeyError_("keyless verification needs the run's time (Registry.now)")
    if roots_pem and not roots:
        raise KeyError_("failed to load Root certificates: no certificate in roots")
    ref = parse_ref(image)
    digest = registry.resolve(ref)
    result = Verification(digest)
    layers = _layers(registry, ref, digest, "sig")
    result.found = len(layers)
    if not layers:
        result.reasons.append(f"no signatures found for {ref.name}@{digest}")
    for body, layer_annotations in layers:
        try:
            signature = base64.b64decode(layer_annotations.get(SIGNATURE_ANNOTATION, ""), validate=True)
        except ValueError:
            result.reasons.append("a signature annotation is not base64")
            continue
        cert = None
        if roots:
            cert, problem = verify_certificate(layer_annotations, roots)
            if cert is None:
                result.reasons.append(problem)
                continue
        elif any_root:
            cert, problem = signing_certificate(layer_annotations)
            if cert is None:
                result.reasons.append(problem)
                continue
        if not verify_blob(key if cert is None else cert.public_key(), signature, body, hash_name):
            result.reasons.append("invalid signature when validating ASN.1 encoded signature")
            continue
        try:
            payload = json.loads(body)
            critical = payload["critical"]
            claimed = critical["image"]["docker-manifest-digest"]
            kind = critical["type"]
        except (ValueError, KeyError, TypeError):
            result.reasons.append("a signed payload is not a simple-signing payload")
            continue
        if kind != SIMPLE_SIGNING_TYPE:
            result.reasons.append(f"Cosign signature payload was of an unknown type: {kind!r}")
        elif claimed != digest:
            result.reasons.append(f"invalid or missing digest in claim: {claimed}")
        elif cert is not None and now is not None and not _valid_at(cert, now):
            # cosign verifyInternal: with the log skipped and no signed timestamp, the certificate must be
            # valid now (CheckExpiry), else this
            result.reasons.append("expected a signed timestamp to verify an expired certificate")
        else:
            result.verified += 1
            if cert is not None:
                result.certificates.append(cert)
    return result


def load_certificates(pem: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem.strip().encode()) if pem.strip() else []
    except ValueError as err:
        raise KeyError_(f"failed to load certificates: {err}") from None


def _valid_at(cert: x509.Certificate, when: datetime.datetime) -> bool:
    return cert.not_valid_before_utc <= when <= cert.not_valid_after_utc


def signing_certificate(annotations: dict[str, str]) -> tuple[x509.Certificate | None, str]:
    """The leaf certificate a signature layer carries (cosign's `no certificate found on signature` else)."""
    text = annotations.get(CERTIFICATE_ANNOTATION, "")
    if not text:
        return None, "no certificate found on signature"
    try:
        [leaf, *_] = load_certificates(text)
    except (KeyError_, ValueError) as err:
        return None, str(err)
    return leaf, ""


def verify_certificate(annotations: dict[str, str], roots: list[x509.Certificate]
                       ) -> tuple[x509.Certificate | None, str]:
    """The signature's certificate when it chains up to one of `roots`, else (None, why). kk: cosign
    verifyInternal and TrustedCert: the certificate from the layer's annotation, the chain annotation's
    certificates but the last as intermediates (the last, its root, is not trusted: `roots` are), the chain
    checked at the certificate's own NotBefore (times are not checked otherwise: expiry is checked against
    now once the signature verified), every issuer a CA, the leaf's extended key usage (if any) code signing.
    The chain walk is written here (Go's x509.Verify has no equivalent in `cryptography` that accepts a
    code-signing leaf); each signature check is cryptography's verify_directly_issued_by."""
    leaf, problem = signing_certificate(annotations)
    if leaf is None:
        return None, problem
    try:
        chain = load_certificates(annotations.get(CHAIN_ANNOTATION, ""))
    except (KeyError_, ValueError) as err:
        return None, str(err)
    intermediates = chain[:-1] if len(chain) > 1 else []
    failure = ("cert verification failed: x509: certificate signed by unknown authority. Check your TUF root "
               "(see cosign initialize) or set a custom root with env var SIGSTORE_ROOT_FILE")
    at = leaf.not_valid_before_utc
    try:
        usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usages = None
    if usages is not None and x509.oid.ExtendedKeyUsageOID.CODE_SIGNING not in usages:
        return None, ("cert verification failed: x509: certificate specifies an incompatible key usage. Check "
                      "your TUF root (see cosign initialize) or set a custom root with env var SIGSTORE_ROOT_FILE")
    current = leaf
    for _ in range(10):                 # a bound on the chain's length
        for issuer, trusted in [*((r, True) for r in roots), *((i, False) for i in intermediates)]:
            if issuer.subject != current.issuer or not _is_ca(issuer) or not _valid_at(issuer, at):
                continue
            try:
                current.verify_directly_issued_by(issuer)
            except (ValueError, TypeError, InvalidSignature):
                continue
            if trusted:
                return leaf, ""
            current = issuer
            break
        else:
            return None, failure
    return None, failure


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def certificate_identity(cert: x509.Certificate) -> tuple[list[str], str]:
    """(subject alternative names, OIDC issuer) of a signing certificate (cosign's GetSubjectAlternateNames:
    emails, URIs, DNS names, IP addresses; CertExtensions.GetIssuer)."""
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        sans = [*names.get_values_for_type(x509.RFC822Name), *names.get_values_for_type(x509.UniformResourceIdentifier),
                *names.get_values_for_type(x509.DNSName), *(str(a) for a in names.get_values_for_type(x509.IPAddress))]
    except x509.ExtensionNotFound:
        sans = []
    issuer = ""
    for oid in (_ISSUER_V2, _ISSUER_V1):
        try:
            raw = cert.extensions.get_extension_for_oid(oid).value
        except x509.ExtensionNotFound:
            continue
        value = raw.value if isinstance(raw, x509.UnrecognizedExtension) else b""
        if oid == _ISSUER_V2 and len(value) >= 2 and value[0] == 0x0C:     # a DER UTF8String
            size, start = value[1], 2
            if size & 0x80:                     # long form: the next (size & 0x7f) bytes hold the length
                start = 2 + (size & 0x7F)
                size = int.from_bytes(value[2:start], "big")
            value = value[start:start + size]
        issuer = value.decode(errors="replace")
        break
    return sans, issuer


def identity_mismatch(cert: x509.Certificate, identities: list[Any]) -> str:
    """cosign CheckCertificatePolicy over `identities` ({issuer, subject, issuerRegExp, subjectRegExp}, as an
    ImageValidatingPolicy's keyless attestor lists them): "" when one identity matches the certificate
    (issuer and subject compared exactly, regular expressions searched as Go's MatchString; a constraint
    left out matches), else cosign's error. ValueError for an expression Python's `re` does not compile
    (Go's RE2 might: not decided here)."""
    sans, issuer = certificate_identity(cert)
    for identity in identities or [{}]:
        identity = identity if isinstance(identity, dict) else {}
        issuer_re, subject_re = str(identity.get("issuerRegExp") or ""), str(identity.get("subjectRegExp") or "")
        try:
            issuer_ok = re.search(issuer_re, issuer) is not None if issuer_re else \
                (not identity.get("issuer") or identity.get("issuer") == issuer)
            subject_ok = any(re.search(subject_re, san) for san in sans) if subject_re else \
                (not identity.get("subject") or identity.get("subject") in sans)
        except re.error as err:
            raise ValueError(f"an identity's regular expression: {err}") from None
        if issuer_ok and subject_ok:
            return ""
    return (f"none of the expected identities matched what was in the certificate, got subjects "
            f"[{', '.join(sans)}] with issuer {issuer}")


def verify_attestations(registry: Registry, image: str, key_pem: str, predicate_type: str,
                        hash_name: str = "sha256") -> Verification:
    """cosign attestations of `image` of `predicate_type` checked with one public key; the statements that
    verified are kept (extractPayload answers their predicate). Errors as verify_signatures'."""
    key = load_public_key(key_pem)
    ref = parse_ref(image)
    digest = registry.resolve(ref)
    result = Verification(digest)
    layers = _layers(registry, ref, digest, "att")
    if not layers:
        result.reasons.append(f"no attestations found for {ref.name}@{digest}")
    algorithm, _, hexpart = digest.partition(":")
    for body, _annotations in layers:
        try:
            envelope = json.loads(body)
            payload = base64.b64decode(envelope["payload"])
            signatures = [base64.b64decode(s["sig"]) for s in envelope["signatures"]]
            payload_type = str(envelope["payloadType"])
        except (ValueError, KeyError, TypeError):
            result.reasons.append("an attestation layer is not a DSSE envelope")
            continue
        if not any(verify_blob(key, s, pae(payload_type, payload), hash_name) for s in signatures):
            result.reasons.append("invalid signature on a DSSE envelope")
            continue
        try:
            statement = json.loads(payload)
            subjects = statement.get("subject") or []
        except (ValueError, AttributeError):
            result.reasons.append("a signed attestation payload is not an in-toto statement")
            continue
        if statement.get("predicateType") != predicate_type:
            continue
        if not any(isinstance(s, dict) and (s.get("digest") or {}).get(algorithm) == hexpart for s in subjects):
            result.reasons.append(f"no subject of the statement matches {digest}")
            continue
        result.verified += 1
        result.statements.append(statement)
    if not result.verified and layers and not result.reasons:
        result.reasons.append(f"no attestation of predicate type {predicate_type}")
    return result


def parse_ref(image: str) -> ImageRef:
    try:
        return parse_image(image)
    except ValueError as err:
        raise RegistryError(f"{image}: {err}") from None


def sigstore_verify_error(key: Any, signature: bytes, message: bytes) -> str:
    """sigstore's `VerifySignature` of `message` over SHA-256 as cosign's verify-blob runs it with a public
    key: "" when it verifies, else sigstore's error text (kk: sigstore/sigstore pkg/signature ecdsa.go,
    rsapkcs1v15.go, ed25519.go). ECDSA reads an ASN.1 SEQUENCE of two INTEGERs first and else the IEEE
    P1363 r||s form, each failing in its own words."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        if _asn1_pair(signature):
            return "" if verify_blob(key, signature, message) else \
                "invalid signature when validating ASN.1 encoded signature"
        if not signature or len(signature) > 132 or len(signature) % 2:
            return "ecdsa: Invalid IEEE_P1363 encoded bytes"
        half = len(signature) // 2
        r, s = int.from_bytes(signature[:half], "big"), int.from_bytes(signature[half:], "big")
        ok = r > 0 and s > 0 and verify_blob(key, encode_dss_signature(r, s), message)
        return "" if ok else "invalid signature when validating IEEE_P1363 encoded signature"
    if isinstance(key, rsa.RSAPublicKey):
        return "" if verify_blob(key, signature, message) else "crypto/rsa: verification error"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "" if verify_blob(key, signature, message) else "failed to verify signature"
    raise KeyError_("unsupported public key type")


def _asn1_pair(data: bytes) -> bool:
    """Go's `asn1.Unmarshal(data, &struct{R, S *big.Int})` succeeds (trailing bytes allowed)."""
    try:
        seq, _rest = der.read_one(data)
        items = der.read_all(der.expect(seq, der.SEQUENCE).content)
        for item in items:
            der.integer(item)
    except der.DERError:
        return False
    return len(items) == 2
