"""Notary (notation) signatures verified against a registry (load/registry.py), as Kyverno verifies them.

Kyverno (kk: pkg/notary/notary.go for classic `type: Notary` rules, pkg/imageverification/imageverifiers/notary
for an ImageValidatingPolicy's `notary` attestor) hands notation-go's `notation.Verify` a trust policy of its
own: every registry, verification level `strict`, one CA trust store holding the policy's certificates,
trusted identities `*`, a TSA store only when `tsaCerts` are given. What that decides, in notation-go's order
(notation.go Verify, verifier/verifier.go, notation-core-go signature and x509):
- the image's signatures are its OCI referrers of artifactType application/vnd.cncf.notary.signature (the
  OCI 1.1 referrers API, else the referrers tag schema `sha256-<hex>`), at most 10 tried; none:
  `no signature is associated with "<ref>", make sure the artifact was signed successfully`;
- a signature manifest's first layer is the envelope: JWS (application/jose+json, JSON serialization) or
  COSE_Sign1 (application/cose);
- integrity: the envelope's signature verifies with its leaf certificate's key (JWS ES256/384/512 and
  PS256/384/512, COSE's same algorithms), the algorithm is the one the leaf's key implies, the certificate
  chain is a code-signing chain ending in a self-signed root (ValidateCodeSigningCertChain), the payload is
  notation's (`targetArtifact`);
- authenticity: a certificate of the chain equals one of the trust store's;
- expiry: an `io.cncf.notary.expiry` in the past fails;
- authentic timestamp (`notary.x509` without a TSA store): every certificate of the chain is valid now;
- revocation: OCSP/CRL of certificates that name a responder (none here: such a chain is not decided, the
  caller says so, as kyrec contacts only registries);
- the payload's targetArtifact (media type, digest, size) is the image's descriptor.

Referrer attestations (an ImageValidatingPolicy's `attestations[].referrer`, kk: imageverifiers/notary
VerifyAttestationSignature and imagedataloader GetPayload): the image's referrers of the attestation's
artifact type, each verified as above as an artifact of its own (its descriptor from the image's referrers
index, its signatures its own Notary referrers); the payload is the referrer's one layer.

By hand over `cryptography` (signatures, certificates) because no kept Python library reads notation's
envelopes: the JWS JSON serialization and the COSE_Sign1 structure are small (a CBOR reader for the subset
go-cose writes is below). RFC 3161 timestamp countersignatures are not verified: a policy with `tsaCerts`
whose signature carries one is not decided (without `tsaCerts` notation does not read them).
"""

from __future__ import annotations

import base64
import datetime
import gzip
import json
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, ExtensionOID

from kubectl_kyrec.golang.json import unmarshal
from kubectl_kyrec.load.cosign import KeyError_, Verification, load_certificates, parse_ref
from kubectl_kyrec.load.registry import ImageRef, Registry, RegistryError

ARTIFACT_TYPE = "application/vnd.cncf.notary.signature"
JWS = "application/jose+json"
COSE = "application/cose"
PAYLOAD_TYPE = "application/vnd.cncf.notary.payload.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
MAX_SIGNATURE_ATTEMPTS = 10         # kk: notation.VerifyOptions{MaxSignatureAttempts: 10}
MAX_REFERRERS = 50                  # kk: pkg/notary maxReferrersCount
MAX_PAYLOAD = 10 * 1000 * 1000      # kk: imagedataloader maxPayloadSize

# algorithm name -> (hash, ECDSA curve size or 0 for RSASSA-PSS); COSE's numbers name the same ones
_ALGORITHMS: dict[str, tuple[type[hashes.HashAlgorithm], int]] = {
    "ES256": (hashes.SHA256, 256), "ES384": (hashes.SHA384, 384), "ES512": (hashes.SHA512, 521),
    "PS256": (hashes.SHA256, 0), "PS384": (hashes.SHA384, 0), "PS512": (hashes.SHA512, 0)}
_COSE_ALGORITHMS = {-7: "ES256", -35: "ES384", -36: "ES512", -37: "PS256", -38: "PS384", -39: "PS512"}
_COSE_X5CHAIN = 33


class NotDecided(ValueError):
    """What kyrec does not verify for a signature (revocation responders, timestamp countersignatures): the
    caller answers `undetermined`, never a count of 0."""


class _Invalid(ValueError):
    """A signature that does not verify, in notation's words."""


@dataclass(frozen=True)
class Envelope:
    algorithm: str                  # JWS name (ES256, PS256, ...)
    signed: bytes                   # the bytes the signature covers
    signature: bytes
    chain: list[x509.Certificate]   # leaf first
    content_type: str
    payload: bytes
    scheme: str
    expiry: datetime.datetime | None
    timestamped: bool               # an RFC 3161 countersignature is attached
    media_type: str = JWS


def referrers(registry: Registry, ref: ImageRef, digest: str, artifact_type: str = ARTIFACT_TYPE
              ) -> list[dict[str, Any]]:
    """The referrers of `digest` of `artifact_type` (default: Notary signatures), in the registry's order: the
    OCI 1.1 referrers API, else (a registry that does not serve it: 404, 400 or 405, as go-containerregistry's
    remote.Referrers falls back) the index tagged `sha256-<hex>`. RegistryError when the registry cannot be
    read."""
    try:
        body, _, _ = registry.get(ref, f"referrers/{digest}", INDEX_TYPE)
        index = json.loads(body)
    except RegistryError as err:
        if err.status not in (400, 404, 405):
            raise
        algorithm, _, hexpart = digest.partition(":")
        index = registry.tag_manifest(ref, f"{algorithm}-{hexpart}") or {}
    except ValueError as err:
        raise RegistryError(f"referrers of {ref.name}@{digest}: not JSON: {err}") from None
    manifests = [m for m in (index.get("manifests") if isinstance(index, dict) else None) or []
                 if isinstance(m, dict)]
    if len(manifests) > MAX_REFERRERS:
        raise RegistryError(f"failed to fetch referrers: to many referrers found, max limit is {MAX_REFERRERS}")
    return [m for m in manifests if m.get("artifactType") == artifact_type]


def verify_signatures(registry: Registry, image: str, certs_pem: str, tsa_pem: str = "") -> Verification:
    """Notary signatures of `image` checked against the trust store `certs_pem` (the policy's certificates,
    chain included); `tsa_pem`: an ImageValidatingPolicy's tsaCerts (a TSA trust store, which makes notation
    demand a timestamp countersignature). RegistryError when the registry could not be read; KeyError_ for unreadable
    certificates (Kyverno's `failed to parse certificates`); NotDecided for what kyrec does not verify."""
    trusted = load_certificates(certs_pem)
    tsa = bool(load_certificates(tsa_pem))
    if not trusted:
        raise KeyError_("failed to parse certificates: no certificates found")
    ref = parse_ref(image)
    try:
        manifest, digest = registry.manifest(ref)
        body, _, _ = registry.get(ref, f"manifests/{digest}", str(manifest.get("mediaType") or INDEX_TYPE))
    except RegistryError as err:
        # kk pkg/notary parseReferenceCrane: the image's own HEAD fails under this wording
        raise RegistryError(f"failed to parse image reference: {image}: {err}", unreachable=err.unreachable,
                            status=err.status) from None
    target = {"mediaType": str(manifest.get("mediaType") or ""), "digest": digest, "size": len(body)}
    return _verify_artifact(registry, ref, target, trusted, tsa)


def _verify_artifact(registry: Registry, ref: ImageRef, target: dict[str, Any], trusted: list[x509.Certificate],
                     tsa: bool) -> Verification:
    """notation.Verify of the artifact `target` (its descriptor: mediaType, digest, size) in ref's repository:
    its Notary signatures (referrers), at most 10 tried, the first that verifies decides."""
    digest = str(target["digest"])
    result = Verification(digest)
    named = f"{ref.name}@{digest}"
    found = referrers(registry, ref, digest)[:MAX_SIGNATURE_ATTEMPTS]
    result.found = len(found)
    if not found:
        result.reasons.append(f"no signature is associated with \"{named}\", make sure the artifact was signed "
                              "successfully")
        return result
    failures = []
    now = registry.now
    if now is None:                 # notation checks validity and expiry at the time of verification
        raise NotDecided("Notary verification needs the run's time (Registry.now)")
    for descriptor in found:
        signature_digest = str(descriptor.get("digest"))
        signature_manifest, _ = registry.manifest(ref, signature_digest)
        layers = [la for la in signature_manifest.get("layers") or [] if isinstance(la, dict)]
        if not layers:
            raise RegistryError(f"signature manifest {signature_digest} of {named} has no layer")
        blob = registry.blob(ref, str(layers[0].get("digest")))
        try:
            _verify_one(blob, str(layers[0].get("mediaType")), target, trusted, now, tsa)
        except _Invalid as err:
            failures.append(f"failed to verify signature with digest {signature_digest}, {err}")
            continue
        result.verified = 1         # notation.Verify stops at the first signature that verifies
        return result
    result.reasons.append("\n".join(["signature verification failed", *failures]))
    return result


@dataclass
class Attestation:
    """An image's referrer attestations of one artifact type checked against a trust store: `verified` the
    first referrer (its descriptor in the referrers index) whose Notary signature verified, else None and
    `reasons` saying why each failed."""
    digest: str
    verified: dict[str, Any] | None = None
    reasons: list[str] = field(default_factory=list)


def verify_referrers(registry: Registry, image: str, artifact_type: str, certs_pem: str,
                     tsa_pem: str = "") -> Attestation:
    """kk: imageverifiers/notary VerifyAttestationSignature: the image's referrers of `artifact_type`, each
    verified as notation verifies an artifact (its descriptor the one the image's referrers index gives,
    imagedataloader FetchReference; its signatures its own Notary referrers); the first that verifies is the
    attestation. RegistryError when the registry could not be read; KeyError_ for unreadable certificates;
    NotDecided for what kyrec does not verify."""
    trusted = load_certificates(certs_pem)
    tsa = bool(load_certificates(tsa_pem))
    if not trusted:
        raise KeyError_("failed to parse certificates: no certificates found")
    ref = parse_ref(image)
    _, digest = registry.manifest(ref)
    result = Attestation(digest)
    candidates = referrers(registry, ref, digest, artifact_type)
    if not candidates:
        result.reasons.append(f"attestation verification failed, no attestations found for type: {artifact_type}")
        return result
    for candidate in candidates:
        target = {"mediaType": candidate.get("mediaType"), "digest": candidate.get("digest"),
                  "size": candidate.get("size")}
        outcome = _verify_artifact(registry, ref, target, trusted, tsa)
        if outcome.verified:
            result.verified = candidate
            return result
        result.reasons.append(f"failed to verify attestation {artifact_type}, digest {target['digest']}: "
                              + "; ".join(outcome.reasons))
    return result


def referrer_payload(registry: Registry, image: str, descriptor: dict[str, Any]) -> bytes:
    """kk: imagedataloader FetchReferrerData: the one layer of the referrer manifest `descriptor` names,
    uncompressed (go-containerregistry peeks for gzip), at most 10 MB. RegistryError when it cannot be read
    or the referrer has not exactly one layer."""
    ref = parse_ref(image)
    manifest, _ = registry.manifest(ref, str(descriptor.get("digest")))
    layers = [la for la in manifest.get("layers") or [] if isinstance(la, dict)]
    if len(layers) != 1:
        raise RegistryError("invalid referrer descriptor, must have only one layer")
    body = registry.blob(ref, str(layers[0].get("digest")))
    if body[:2] == b"\x1f\x8b":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as err:
            raise RegistryError(f"referrer layer of {ref.name}@{descriptor.get('digest')}: {err}") from None
    return body[:MAX_PAYLOAD]


class AttestationError(ValueError):
    """Why a classic Notary entry's attestations could not be fetched, in Kyverno's words (pkg/notary
    FetchAttestations)."""


def fetch_attestations(registry: Registry, image: str, artifact_type: str, certs_pem: str
                       ) -> tuple[str, list[dict[str, Any]]]:
    """kk: pkg/notary FetchAttestations, a classic `type: Notary` entry's attestations of `artifact_type`: the
    image's referrers (at most 50) in the registry's order, the first of that artifact type decides: verified
    with `certs_pem` (the entry's cert and certChain; none given: not verified, as verifyAttestators skips the
    check), then its statement (the referrer manifest's JSON, `type` its artifact type when it has none,
    `predicate` its one layer's JSON object). (image digest, statements). AttestationError for a referrer that
    does not verify or cannot be read as a statement, or none of the type; RegistryError when the registry
    could not be read; NotDecided for what kyrec does not verify."""
    ref = parse_ref(image)
    _, digest = registry.manifest(ref)
    for candidate in referrers(registry, ref, digest, artifact_type):
        if certs_pem.strip():
            trusted = load_certificates(certs_pem)
            if not trusted:
                raise AttestationError("failed to parse certificates: no certificates found")
            target = {"mediaType": candidate.get("mediaType"), "digest": candidate.get("digest"),
                      "size": candidate.get("size")}
            outcome = _verify_artifact(registry, ref, target, trusted, False)
            if not outcome.verified:
                raise AttestationError("\n".join(outcome.reasons))
        return digest, [_statement(registry, ref, candidate)]
    # kk: the loop's `err` is nil there, printed by %s
    raise AttestationError("failed to fetch attestations %!s(<nil>)")


def _statement(registry: Registry, ref: ImageRef, descriptor: dict[str, Any]) -> dict[str, Any]:
    """kk: pkg/notary extractStatement."""
    manifest, _ = registry.manifest(ref, str(descriptor.get("digest")))
    layers = [la for la in manifest.get("layers") or [] if isinstance(la, dict)]
    if not layers:
        raise AttestationError(f"no predicate found: {manifest}")
    if len(layers) > 1:
        raise AttestationError(f"multiple layers in predicate not supported: {manifest}")
    body = registry.blob(ref, str(layers[0].get("digest")))
    try:
        # Go's json.Unmarshal: numbers are float64, errors in its words
        predicate = unmarshal((gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).decode())
    except (ValueError, OSError, EOFError) as err:
        raise AttestationError(str(err)) from None
    if not isinstance(predicate, dict):
        raise AttestationError("json: cannot unmarshal the predicate into Go value of type map[string]interface {}")
    statement = dict(manifest)
    if statement.get("type") is None:
        statement["type"] = descriptor.get("artifactType")
    if statement.get("predicate") is None:
        statement["predicate"] = predicate
    return statement


def _verify_one(blob: bytes, media_type: str, target: dict[str, Any], trusted: list[x509.Certificate],
                now: datetime.datetime, tsa: bool) -> None:
    envelope = _parse(blob, media_type)
    # integrity (notation-core-go envelope Verify, validateSignerInfo)
    leaf = envelope.chain[0]
    _check_signature(envelope, leaf)
    problem = _chain_problem(envelope.chain)
    if problem:
        raise _Invalid(f"certificate-chain is invalid, {problem}")
    expected = _key_algorithm(leaf)
    if expected != envelope.algorithm:
        raise _Invalid(f"mismatch between signature algorithm derived from signing certificate ({expected}) and "
                       f"signing algorithm specified ({envelope.algorithm})")
    if envelope.content_type != PAYLOAD_TYPE:
        raise _Invalid(f"payload content type {_q(envelope.content_type)} not supported")
    # authenticity (signature.VerifyAuthenticity: one certificate of the chain is a trusted one)
    if not any(cert == trust for cert in envelope.chain for trust in trusted):
        raise _Invalid("the signature's certificate chain does not contain any trusted certificate")
    # revocation: notation asks the responders certificates name; kyrec contacts only registries
    for cert in envelope.chain:
        if _revocation_responder(cert):
            raise NotDecided(f"certificate {_q(cert.subject.rfc4514_string())} names a revocation responder "
                             "(OCSP/CRL), which kyrec does not contact")
    if envelope.expiry is not None and now >= envelope.expiry:
        raise _Invalid(f"digital signature has expired on {_q(_go_time(envelope.expiry))}")
    if tsa and not envelope.timestamped:
        raise _Invalid("no timestamp countersignature was found in the signature envelope")
    if envelope.timestamped and tsa:
        raise NotDecided("the signature carries an RFC 3161 timestamp countersignature, which kyrec does not "
                         "verify")
    for cert in envelope.chain:     # authentic timestamp, notary.x509 without a TSA store: valid now
        if now < cert.not_valid_before_utc:
            raise _Invalid(f"verification time is before certificate {_q(_go_name(cert))} validity period, it will "
                           f"be valid from {_q(_go_time(cert.not_valid_before_utc))}")
        if now > cert.not_valid_after_utc:
            raise _Invalid(f"verification time is after certificate {_q(_go_name(cert))} validity period, it was "
                           f"expired at {_q(_go_time(cert.not_valid_after_utc))}")
    try:
        claimed = json.loads(envelope.payload)["targetArtifact"]
        same = (claimed.get("mediaType") == target["mediaType"] and claimed.get("digest") == target["digest"]
                and claimed.get("size") == target["size"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise _Invalid("the signed payload is not notation's payload") from None
    if not same:
        raise _Invalid("content descriptor mismatch")


def _revocation_responder(cert: x509.Certificate) -> bool:
    """Whether the certificate names an OCSP responder (Go's OCSPServer) or CRL distribution points."""
    try:
        access = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
        if any(d.access_method == AuthorityInformationAccessOID.OCSP for d in access):
            return True
    except x509.ExtensionNotFound:
        pass
    try:
        cert.extensions.get_extension_for_oid(ExtensionOID.CRL_DISTRIBUTION_POINTS)
    except x509.ExtensionNotFound:
        return False
    return True


def _parse(blob: bytes, media_type: str) -> Envelope:
    try:
        if media_type == JWS:
            return _parse_jws(blob)
        if media_type == COSE:
            return _parse_cose(blob)
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise _Invalid(f"unable to parse the digital signature, error : {err}") from None
    raise _Invalid(f"unable to parse the digital signature, error : signature envelope format with media type "
                   f"{_q(media_type)} is not supported")


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _parse_jws(blob: bytes) -> Envelope:
    """notation-core-go signature/jws: the JSON serialization, x5c (standard base64 DER) in the unprotected
    header, the signed attributes in the protected one."""
    data = json.loads(blob)
    protected = json.loads(_b64url(data["protected"]))
    chain = [x509.load_der_x509_certificate(base64.b64decode(c)) for c in data["header"]["x5c"]]
    if not chain:
        raise _Invalid("certificate chain is not present")
    expiry = protected.get("io.cncf.notary.expiry")
    return Envelope(str(protected["alg"]), f"{data['protected']}.{data['payload']}".encode(),
                    _b64url(data["signature"]), chain, str(protected.get("cty")), _b64url(data["payload"]),
                    str(protected.get("io.cncf.notary.signingScheme")),
                    datetime.datetime.fromisoformat(expiry) if isinstance(expiry, str) else None,
                    bool(data["header"].get("io.cncf.notary.timestampSignature")))


def _parse_cose(blob: bytes) -> Envelope:
    """notation-core-go signature/cose over go-cose: COSE_Sign1 (tag 18), the signed attributes in the
    protected header, the chain (x5chain, label 33) in the unprotected one."""
    value, rest = _cbor(blob, 0)
    if rest != len(blob) or not isinstance(value, _Tag) or value.number != 18:
        raise ValueError("not a COSE_Sign1 message")
    protected_raw, unprotected, payload, signature = value.value
    protected, _ = _cbor(protected_raw, 0)
    x5chain = unprotected[_COSE_X5CHAIN]
    chain = [x509.load_der_x509_certificate(c) for c in (x5chain if isinstance(x5chain, list) else [x5chain])]
    expiry = protected.get("io.cncf.notary.expiry")
    # Sig_structure (RFC 9052 4.4): ["Signature1", protected, external_aad (empty), payload]
    signed = (b"\x84" + _cbor_bytes(3, b"Signature1") + _cbor_bytes(2, protected_raw) + b"\x40"
              + _cbor_bytes(2, payload))
    return Envelope(_COSE_ALGORITHMS.get(protected.get(1), str(protected.get(1))), signed, signature, chain,
                    str(protected.get(3)), payload, str(protected.get("io.cncf.notary.signingScheme")),
                    datetime.datetime.fromtimestamp(expiry.value, datetime.timezone.utc)
                    if isinstance(expiry, _Tag) else None,
                    "io.cncf.notary.timestampSignature" in unprotected, COSE)


@dataclass(frozen=True)
class _Tag:
    number: int
    value: Any


def _cbor(data: bytes, at: int) -> tuple[Any, int]:
    """One CBOR item of definite length (what go-cose writes): (value, next offset)."""
    head = data[at]
    major, info = head >> 5, head & 0x1F
    at += 1
    if info < 24:
        arg = info
    elif info <= 27:
        size = 1 << (info - 24)
        arg = int.from_bytes(data[at:at + size], "big")
        at += size
    else:
        raise ValueError(f"unsupported CBOR item 0x{head:02x}")
    if major == 0:
        return arg, at
    if major == 1:
        return -1 - arg, at
    if major in (2, 3):
        chunk = data[at:at + arg]
        if len(chunk) != arg:
            raise ValueError("truncated CBOR string")
        return (chunk if major == 2 else chunk.decode()), at + arg
    if major == 4:
        items = []
        for _ in range(arg):
            item, at = _cbor(data, at)
            items.append(item)
        return items, at
    if major == 5:
        out = {}
        for _ in range(arg):
            key, at = _cbor(data, at)
            out[key], at = _cbor(data, at)
        return out, at
    if major == 6:
        inner, at = _cbor(data, at)
        return _Tag(arg, inner), at
    simple = {20: False, 21: True, 22: None}
    if info in simple:
        return simple[info], at
    raise ValueError(f"unsupported CBOR item 0x{head:02x}")


def _cbor_bytes(major: int, body: bytes) -> bytes:
    size = len(body)
    if size < 24:
        head = bytes([major << 5 | size])
    elif size < 256:
        head = bytes([major << 5 | 24, size])
    elif size < 65536:
        head = bytes([major << 5 | 25]) + size.to_bytes(2, "big")
    else:
        head = bytes([major << 5 | 26]) + size.to_bytes(4, "big")
    return head + body


def _check_signature(envelope: Envelope, leaf: x509.Certificate) -> None:
    spec = _ALGORITHMS.get(envelope.algorithm)
    if spec is None:
        raise _Invalid(f"signature algorithm {_q(envelope.algorithm)} is not supported")
    hash_type, curve_bits = spec
    key = leaf.public_key()
    # jwt-go's (JWS) and go-cose's error texts
    failed = "verification error" if envelope.media_type == COSE else \
        "crypto/ecdsa: verification error" if curve_bits else "crypto/rsa: verification error"
    try:
        if curve_bits:
            if not isinstance(key, ec.EllipticCurvePublicKey):
                raise InvalidSignature
            size = (curve_bits + 7) // 8
            if len(envelope.signature) != 2 * size:
                raise InvalidSignature
            r = int.from_bytes(envelope.signature[:size], "big")
            s = int.from_bytes(envelope.signature[size:], "big")
            key.verify(encode_dss_signature(r, s), envelope.signed, ec.ECDSA(hash_type()))
        else:
            if not isinstance(key, rsa.RSAPublicKey):
                raise InvalidSignature
            key.verify(envelope.signature, envelope.signed,
                       padding.PSS(mgf=padding.MGF1(hash_type()), salt_length=padding.PSS.AUTO), hash_type())
    except InvalidSignature:
        raise _Invalid(f"signature is invalid. Error: {failed}") from None


def _key_algorithm(cert: x509.Certificate) -> str:
    """notation-core-go ExtractKeySpec + SignatureAlgorithm: the algorithm a certificate's key implies."""
    key = cert.public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        return {256: "ES256", 384: "ES384", 521: "ES512"}.get(key.curve.key_size, "unsupported EC key")
    if isinstance(key, rsa.RSAPublicKey):
        return {2048: "PS256", 3072: "PS384", 4096: "PS512"}.get(key.key_size, "unsupported RSA key")
    return "unsupported key"


def _chain_problem(chain: list[x509.Certificate]) -> str:
    """notation-core-go x509 ValidateCodeSigningCertChain (no signing time): "" or its complaint."""
    for i, cert in enumerate(chain):
        last = i == len(chain) - 1
        if last and len(chain) > 1 and not _issued_by(cert, cert):
            return (f"root certificate with subject {_q(_go_name(cert))} is not self-signed. Certificate chain must "
                    "end with a valid self-signed root certificate")
        if len(chain) == 1 and not _issued_by(cert, cert):
            return f"invalid self-signed certificate. subject: {_q(_go_name(cert))}"
        if not last:
            if _issued_by(cert, cert):
                return (f"leaf certificate with subject {_q(_go_name(cert))} is self-signed. Certificate chain must "
                        "not contain self-signed leaf certificate" if i == 0 else
                        f"intermediate certificate with subject {_q(_go_name(cert))} is self-signed. Certificate "
                        "chain must not contain self-signed intermediate certificate")
            if not _issued_by(cert, chain[i + 1]):
                return f"certificate with subject {_q(_go_name(cert))} is not issued by {_q(_go_name(chain[i + 1]))}"
        usage = _key_usage(cert)
        if usage is None:
            return f"certificate with subject {_q(_go_name(cert))}: key usage extension must be present"
        if i == 0:
            if _is_ca(cert):
                return (f"certificate with subject {_q(_go_name(cert))}: if the basic constraints extension is "
                        "present, the ca field must be set to false")
            if not usage.digital_signature or usage.key_cert_sign or usage.crl_sign:
                return f"the certificate with subject {_q(_go_name(cert))} is invalid"
            try:
                ekus = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
            except x509.ExtensionNotFound:
                ekus = None
            excluded = {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH,
                        ExtendedKeyUsageOID.EMAIL_PROTECTION, ExtendedKeyUsageOID.TIME_STAMPING,
                        ExtendedKeyUsageOID.OCSP_SIGNING}
            if ekus is not None and excluded & set(ekus):
                return f"certificate with subject {_q(_go_name(cert))}: extended key usage is not for code signing"
        else:
            if not _is_ca(cert):
                return (f"certificate with subject {_q(_go_name(cert))}: ca field in basic constraints must be "
                        "present, critical, and set to true")
            path = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length
            if path is not None and path < i - 1:
                return (f"certificate with subject {_q(_go_name(cert))}: expected path length of {i - 1} but "
                        f"certificate has path length {path} instead")
            if not usage.key_cert_sign:
                return (f"certificate with subject {_q(_go_name(cert))}: key usage must have the bit positions for "
                        "key cert sign set")
    return ""


def _issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    if cert.issuer != issuer.subject:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _key_usage(cert: x509.Certificate) -> x509.KeyUsage | None:
    """The key usage extension when present and critical (notation requires both)."""
    try:
        ext = cert.extensions.get_extension_for_class(x509.KeyUsage)
    except x509.ExtensionNotFound:
        return None
    return ext.value if ext.critical else None


def _go_name(cert: x509.Certificate) -> str:
    """Go's pkix.Name.String() of the subject (RFC 2253 order, as cryptography's RFC 4514 string)."""
    return cert.subject.rfc4514_string()


def _q(text: str) -> str:
    """Go's %q of a plain string."""
    return json.dumps(text, ensure_ascii=False)


def _go_time(when: datetime.datetime) -> str:
    """Go's time.RFC1123Z layout."""
    return when.astimezone(datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S +0000")
