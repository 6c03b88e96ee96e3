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
import json
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from kubectl_kyrec.load.registry import ImageRef, Registry, RegistryError, parse_image

SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
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


def verify_signatures(registry: Registry, image: str, key_pem: str, hash_name: str = "sha256") -> Verification:
    """cosign signatures of `image` checked with one public key. RegistryError when the registry could not be
    read (the image's manifest or its signatures); KeyError_ for an unreadable key."""
    key = load_public_key(key_pem)
    ref = parse_ref(image)
    digest = registry.resolve(ref)
    result = Verification(digest)
    layers = _layers(registry, ref, digest, "sig")
    if not layers:
        result.reasons.append(f"no signatures found for {ref.name}@{digest}")
    for body, layer_annotations in layers:
        try:
            signature = base64.b64decode(layer_annotations.get(SIGNATURE_ANNOTATION, ""), validate=True)
        except ValueError:
            result.reasons.append("a signature annotation is not base64")
            continue
        if not verify_blob(key, signature, body, hash_name):
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
        else:
            result.verified += 1
    return result


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
