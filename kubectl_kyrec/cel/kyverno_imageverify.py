"""The image verification functions of an ImageValidatingPolicy, bound to one policy (kk:
pkg/cel/libs/imageverify lib.go and impl.go): `verifyImageSignatures(image, attestors)`,
`verifyAttestationSignatures(image, attestation, attestors)`, `extractPayload(image, attestation)` and
`getImageData(image)`.

Each of them, in Kyverno, fetches the image's manifest and signatures from its registry and checks them
with cosign or notation; kyrec does neither offline. What Kyverno decides before it reaches a registry is
decided here as it does: an image no `matchImageReferences` entry matches counts 0 verified attestors, an
empty attestor list counts 0, and an attestation the policy does not declare is Kyverno's error;
`getImageData` answers with image data the run was given (a kyrec extension: Kyverno's CLI asks the
registry even then). Anything past that point raises a CelFunctionError carrying NEEDS_REGISTRY: the
expression evaluates to an error, and the ivpol evaluator turns an error carrying it into `undetermined`
(never a pass). CEL's logical operators absorb an error where the other side decides the answer, so a
value that survives one is the value whatever the registry would have said.

With `--registry` (a load.registry.Registry given), the functions ask the registry as Kyverno does
(kk: pkg/cel/libs/imageverify/impl.go): the image is fetched first (a failure is Kyverno's error "failed to
get imagedata: ..."), then each attestor counts 1 when it verifies, 0 when it does not (any verification
error, as Kyverno logs and skips it); an in-toto attestation's cosign attestor counts 0 even when it verifies,
as Kyverno v1.17.2 demands a verified Rekor bundle there (see verify_attestations). A `notary` attestor's
certificates verify Notary signatures (load/notary.py), and the Notary-signed OCI 1.1 referrers an attestation
of `referrer.type` names, whose payload `extractPayload` reads as Kyverno does (the verified referrer, else the
first of the type). A `keyless` attestor counts 0 when no signature
could verify whatever the trust root, else its chain needs the TUF trusted root Kyverno checks it against
(_keyless_count). What kyrec does not verify (a revocation responder or timestamp a Notary signature needs, certificate
attestors, a keyless chain, KMS keys, signatures in another repository, a key attestor that does not skip the Rekor
transparency log) and a registry that stopped answering midway still
raise NEEDS_REGISTRY: undetermined, never a count of 0 that would read as "not signed". load/cosign.py
and load/notary.py check the signatures.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from typing import Any

from kubectl_kyrec.cel.decl import NEEDS_REGISTRY, CelFunctionError, Library, Overload, fn, registry_needed
from kubectl_kyrec.golang.json import unmarshal
from kubectl_kyrec.load.cosign import Verification, identity_mismatch
from kubectl_kyrec.load.cosign import verify_attestations as cosign_attestations
from kubectl_kyrec.load.cosign import verify_signatures as cosign_signatures
from kubectl_kyrec.load.notary import NotDecided, referrer_payload, verify_referrers
from kubectl_kyrec.load.notary import referrers as notary_referrers
from kubectl_kyrec.load.notary import verify_signatures as notary_signatures
from kubectl_kyrec.load.registry import Registry, RegistryError, parse_image

ImageMatcher = Callable[[str], bool]
"""matching.MatchImage over the policy's matchImageReferences (True when there are none); raises
CelFunctionError when a CEL reference fails."""


def _offline(call: str, what: str) -> CelFunctionError:
    return CelFunctionError(registry_needed(call, what))


ImageData = Callable[[str], Any]
"""The image data the run was given for an image (what `image.GetMetadata` answers), or None."""


def _counted(call: str, verify: Callable[[], int]) -> int:
    """What one attestor counts: Kyverno's verification error on an answer counts 0 (the registry answered 403,
    ..., or a key or certificate is unreadable); where the registry stopped answering, or kyrec cannot decide, the
    call is undetermined (never a count that could turn a pass into a fail)."""
    try:
        return verify()
    except NotDecided as err:
        raise _undecided(call, str(err)) from None
    except RegistryError as err:
        if err.unreachable:
            raise _undecided(call, f"the registry stopped answering: {err}") from None
        return 0
    except ValueError:
        return 0


def _undecided(call: str, why: str) -> CelFunctionError:
    return CelFunctionError(f"{call}: {NEEDS_REGISTRY}: {why}")


def _offline_cosign(call: str, cosign: Mapping[str, Any]) -> Mapping[str, Any]:
    """A cosign attestor's `ctlog`, when its signatures can be checked without reaching anything but the
    registry (key and keyless alike); raises NEEDS_REGISTRY otherwise."""
    if cosign.get("source"):
        raise _undecided(call, "kyrec does not read signatures from another repository (cosign.source)")
    ctlog = cosign.get("ctlog")
    if not (isinstance(ctlog, Mapping) and ctlog.get("insecureIgnoreTlog") is True):
        raise _undecided(call, "Kyverno checks the signature's Rekor transparency log entry, which kyrec "
                               "does not reach (ctlog.insecureIgnoreTlog: true skips it)")
    return ctlog


def _key_attestor(call: str, attestor: Any) -> tuple[str, str] | None:
    """(public key PEM, hash algorithm) of a cosign key attestor kyrec verifies; None for a Notary one;
    raises NEEDS_REGISTRY for what kyrec does not verify (the caller must not count it 0)."""
    if not isinstance(attestor, Mapping):
        raise CelFunctionError(f"{call}: an attestor is not an object")
    cosign = attestor.get("cosign")
    if not isinstance(cosign, Mapping):
        if isinstance(attestor.get("notary"), Mapping):
            return None
        raise _undecided(call, "the attestor is neither cosign nor notary")
    key = cosign.get("key")
    data = key.get("data") if isinstance(key, Mapping) else None
    if not isinstance(data, str) or not data or cosign.get("keyless") or cosign.get("certificate"):
        raise _undecided(call, "kyrec verifies cosign signatures with public keys (key.data) only")
    _offline_cosign(call, cosign)
    assert isinstance(key, Mapping)
    return data, str(key.get("hashAlgorithm") or "sha256")


def _keyless_attestor(call: str, attestor: Any) -> Mapping[str, Any] | None:
    """The `cosign.keyless` of a keyless attestor kyrec checks (None for any other attestor); raises
    NEEDS_REGISTRY where Kyverno's answer needs what kyrec does not reach (the caller must not count it 0)."""
    cosign = attestor.get("cosign") if isinstance(attestor, Mapping) else None
    keyless = cosign.get("keyless") if isinstance(cosign, Mapping) else None
    if not isinstance(keyless, Mapping):
        return None
    assert isinstance(cosign, Mapping)
    ctlog = _offline_cosign(call, cosign)
    identities = keyless.get("identities")
    if isinstance(identities, list) and any(isinstance(i, Mapping) and i.get("subjectExpression")
                                            for i in identities):
        raise _undecided(call, "kyrec does not evaluate an identity's subjectExpression")
    if ctlog.get("tsaCertChain"):
        raise _undecided(call, "kyrec does not verify signed timestamps (ctlog.tsaCertChain)")
    return keyless


def _keyless_count(call: str, registry: Registry, image: str, keyless: Mapping[str, Any]) -> int:
    """0 when no signature of `image` could verify for a keyless attestor whatever its trust root: none, or
    each one's certificate missing, its signature or payload not the image's, the certificate expired (no
    log entry nor timestamp vouches for its time), or no identity of the attestor matching it (kk:
    imageverifiers/cosign checkOptions, cosign verifyInternal and CheckCertificatePolicy; any of these is a
    verification error, which Kyverno counts 0). A signature that passes all of them is decided by its
    certificate chain, which Kyverno v1.17.2 checks against the trusted root of the attestor's TUF repository
    (`trusted_root.json`: cosign ValidateAndUnpackCert prefers CheckOpts.TrustedMaterial, which replaces
    `keyless.roots`), which kyrec does not read: NEEDS_REGISTRY then."""
    if registry.now is None:
        raise _undecided(call, "keyless verification needs the run's time")
    outcome = cosign_signatures(registry, image, "", any_root=True)
    identities = keyless.get("identities")
    try:
        candidates = [cert for cert in outcome.certificates
                      if not identity_mismatch(cert, identities if isinstance(identities, list) else [])]
    except ValueError as err:
        raise _undecided(call, str(err)) from None
    if not candidates:
        return 0
    raise _undecided(call, "a signature verifies with its certificate, whose chain Kyverno checks against the "
                           "trusted root of the attestor's TUF repository (trusted_root.json, which replaces "
                           "keyless.roots), which kyrec does not read")


def _notary_attestor(call: str, attestor: Mapping[str, Any]) -> tuple[str, str]:
    """(certs, tsaCerts) of a notary attestor: their `value`s, as Kyverno reads them (kk: impl.go
    Certs.Value); one given only as an `expression` is not decided here."""
    notary = attestor["notary"]
    out = []
    for name in ("certs", "tsaCerts"):
        field = notary.get(name)
        if isinstance(field, Mapping) and field.get("expression") and not field.get("value"):
            raise _undecided(call, f"kyrec does not evaluate notary.{name}.expression")
        value = field.get("value") if isinstance(field, Mapping) else None
        out.append(value if isinstance(value, str) else "")
    return out[0], out[1]


def imageverify_library(matches: ImageMatcher, attestations: Collection[str],
                        supplied: ImageData = lambda image: None, *, registry: Registry | None = None,
                        predicate_types: Mapping[str, str] | None = None,
                        referrer_types: Mapping[str, str] | None = None) -> Library:
    """The functions for one policy: `matches` decides its matchImageReferences, `attestations` are the
    names it declares, `supplied` gives image data the run was given: `getImageData` answers with it, as
    Kyverno's answer has the same fields (imagedataloader ImageDescriptor) as `image.GetMetadata`'s.
    `registry`: the run's `--registry` access (None: offline); `predicate_types`: the in-toto type of each
    attestation by name; `referrer_types`: the artifact type of each OCI 1.1 referrer attestation by name."""
    types = dict(predicate_types or {})
    artifact_types = dict(referrer_types or {})
    # the referrer (its descriptor) whose Notary signature verified, by (image, artifact type): what
    # extractPayload reads first (kk: imagedataloader AddVerifiedReferrer, GetPayload)
    verified_referrers: dict[tuple[str, str], dict[str, Any]] = {}
    # in-toto statements that verified, by (image, attestation): what extractPayload answers from (none while
    # every attestor kyrec verifies skips the Rekor log, see verify_attestations)
    verified: dict[tuple[str, str], dict[str, Any]] = {}

    def fetch(call: str, image: str) -> None:
        """kk: imgCtx.Get before any attestor: a failure is the function's error."""
        assert registry is not None
        try:
            registry.manifest(parse_image(image))
        except (RegistryError, ValueError) as err:
            raise CelFunctionError(f"failed to get imagedata: {err}") from None

    def count(call: str, image: str, attestors: list[Any], check: Callable[[str, str], Verification],
              attestation: bool = False) -> int:
        def verify_one(reg: Registry, attestor: Any, keyless: Mapping[str, Any] | None,
                       key: tuple[str, str] | None) -> int:
            if keyless is not None:
                return _keyless_count(call, reg, image, keyless)
            if key is not None:
                return int(check(*key).verified > 0)
            if attestation:
                # kk impl.go: a notary attestor verifies only OCI 1.1 referrers (which reach here undecided
                # already); an in-toto attestation is Kyverno's error
                raise CelFunctionError("notary verifier only supports oci 1.1 referrers as attestations")
            certs, tsa = _notary_attestor(call, attestor)
            return int(notary_signatures(reg, image, certs, tsa).verified > 0)

        fetch(call, image)
        total = 0
        for attestor in attestors:
            keyless = _keyless_attestor(call, attestor)
            if keyless is not None and attestation:
                raise _undecided(call, "kyrec verifies keyless signatures, not keyless attestations")
            key = _key_attestor(call, attestor) if keyless is None else None
            assert registry is not None
            total += _counted(call, functools.partial(verify_one, registry, attestor, keyless, key))
        return total

    def verify_images(image: str, attestors: list[Any]) -> int:
        if not matches(image) or not attestors:
            return 0
        call = f"verifyImageSignatures({image!r})"
        if registry is None:
            raise _offline(call, "verify its signatures")
        reg = registry
        return count(call, image, attestors, lambda key, algo: cosign_signatures(reg, image, key, algo))

    def verify_attestations(image: str, attestation: str, attestors: list[Any]) -> int:
        if not matches(image) or not attestors:
            return 0
        if attestation not in attestations:
            raise CelFunctionError(f"attestation not found in policy: {attestation}")
        call = f"verifyAttestationSignatures({image!r}, {attestation!r})"
        if registry is None:
            raise _offline(call, "verify its attestations")
        artifact_type = artifact_types.get(attestation)
        if artifact_type is not None:
            return count_referrers(call, image, artifact_type, attestors)
        predicate = types.get(attestation)
        if predicate is None:
            raise _undecided(call, "the attestation is neither in-toto nor an OCI 1.1 referrer")
        reg = registry

        def check(key: str, algo: str) -> Verification:
            outcome = cosign_attestations(reg, image, key, predicate, algo)
            # kk cosign/verifier.go VerifyAttestationSignature: after cosign.VerifyImageAttestations, a result
            # whose Rekor bundle did not verify is `cosign bundle verification failed`, even when the
            # policy skips the log (unlike VerifyImageSignature, which accepts it then). Every key attestor
            # kyrec verifies skips the log (_key_attestor), so Kyverno v1.17.2 counts none of them, and no
            # statement becomes extractPayload's (Kyverno's CLI agrees: testdata/kyverno-truth/registry.json)
            return Verification(outcome.digest, 0, [*outcome.reasons, "cosign bundle verification failed"])
        return count(call, image, attestors, check, attestation=True)

    def count_referrers(call: str, image: str, artifact_type: str, attestors: list[Any]) -> int:
        """kk impl.go: per attestor, the image fetched (its failure the function's error), then a notary
        attestor counts 1 when a referrer of the type verifies with its certificates (notary
        VerifyAttestationSignature), a cosign one 0 (cosign's verifier refuses referrers)."""
        assert registry is not None
        total = 0
        for attestor in attestors:
            fetch(call, image)
            if not isinstance(attestor, Mapping):
                raise CelFunctionError(f"{call}: an attestor is not an object")
            if not isinstance(attestor.get("notary"), Mapping):
                if isinstance(attestor.get("cosign"), Mapping):
                    continue    # "cosgin verifier only supports intoto referrers as attestations"
                raise _undecided(call, "the attestor is neither cosign nor notary")
            certs, tsa = _notary_attestor(call, attestor)
            total += _counted(call, functools.partial(verify_referrer, image, artifact_type, certs, tsa))
        return total

    def verify_referrer(image: str, artifact_type: str, certs: str, tsa: str) -> int:
        assert registry is not None
        verified = verify_referrers(registry, image, artifact_type, certs, tsa).verified
        if verified is None:
            return 0
        verified_referrers[(image, artifact_type)] = verified
        return 1

    def referrer_data(call: str, image: str, attestation: str, artifact_type: str) -> Any:
        """kk: imagedataloader GetPayload for a referrer: the verified referrer of the type, else the image's
        first referrer of the type (verified or not), its one layer read as JSON."""
        assert registry is not None
        try:
            descriptor = verified_referrers.get((image, artifact_type))
            if descriptor is None:
                ref = parse_image(image)
                _, digest = registry.manifest(ref)
                found = notary_referrers(registry, ref, digest, artifact_type)
                if not found:
                    raise CelFunctionError(f"failed to get payload: artifact of type {artifact_type} not found")
                descriptor = found[0]
            body = referrer_payload(registry, image, descriptor)
        except RegistryError as err:
            if err.unreachable:
                raise _undecided(call, f"the registry stopped answering: {err}") from None
            raise CelFunctionError(f"failed to get payload: {err}") from None
        if not body:
            raise CelFunctionError(f"failed to get payload: could not find attestation {attestation}")
        try:
            return unmarshal(body.decode())     # Go's json.Unmarshal into any: every number a double
        except ValueError:
            raise CelFunctionError(f"failed to get payload: failed to unmarshal json for attestation "
                                   f"{attestation}") from None

    def extract_payload(image: str, attestation: str) -> Any:
        if attestation not in attestations:
            raise CelFunctionError(f"attestation not found in policy: {attestation}")
        call = f"extractPayload({image!r}, {attestation!r})"
        if registry is None:
            raise _offline(call, "fetch the attestation's payload")
        fetch("extractPayload", image)
        if attestation in artifact_types:
            return referrer_data(call, image, attestation, artifact_types[attestation])
        statement = verified.get((image, attestation))
        if statement is None:
            # kk: imagedataloader ImageData.GetPayload: only a verified attestation has a payload
            raise CelFunctionError("intoto attestation payload cannot be fetch before verifying intoto attestation")
        return statement.get("predicate")

    def image_data(image: str) -> Any:
        data = supplied(image)
        if data is not None:
            return data
        if registry is None:
            raise _offline(f"getImageData({image!r})", "fetch its manifest and config")
        try:
            return registry.image_descriptor(image)
        except (RegistryError, ValueError) as err:
            raise CelFunctionError(f"failed to get imagedata: {err}") from None

    return Library("kyverno.imageverify", [
        fn("verifyImageSignatures", Overload("verify_image_signature_string_stringarray", ["string", "list<dyn>"],
                                             "int", verify_images)),
        fn("verifyAttestationSignatures", Overload("verify_image_attestations_string_string_stringarray",
                                                   ["string", "string", "list<dyn>"], "int", verify_attestations)),
        fn("getImageData", Overload("get_image_data_string", ["string"], "dyn", image_data)),
        fn("extractPayload", Overload("payload_string_string", ["string", "string"], "dyn", extract_payload)),
    ])
