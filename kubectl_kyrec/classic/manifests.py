"""`validate.manifests` (signed YAML manifests, sigstore): what can be decided offline.

kk: pkg/engine/handlers/validation/validate_manifest.go over sigstore/k8s-manifest-sigstore
(`VerifyResource`, `BlobManifestFetcher.Fetch`). Verifying a signature needs the signed message, its
signature, the keys and, for keyless or Rekor checks, the network, and matching the signed manifest needs a
server-side dry run: kyrec does none of that, so an object that carries a signed message is `undetermined`.
What it can decide is the object that carries none: the fetcher fails before any signature is looked at, so
every attestor entry fails with `YAML manifest not found for this resource: message not found`, and the
rule fails with Kyverno's aggregated message. Manifests kept in an OCI image (`repository`, or the
object's resourceBundleRef annotation) are `undetermined` too. On DELETE the handler is not made: no result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.classic.validate import FAIL, PASS, Response, error
from kubectl_kyrec.model import UNDETERMINED

DEFAULT_DOMAIN = "cosign.sigstore.dev"
_END_KEY = "-----END PUBLIC KEY-----"


class _Undecidable(Exception):
    """Deciding needs what kyrec does not have offline; str() says what."""


def evaluate(manifests: Mapping[str, Any], obj: Mapping[str, Any], operation: str) -> Response | None:
    if operation == "DELETE":
        return None
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    annotations = {str(k): str(v) for k, v in ((meta or {}).get("annotations") or {}).items()}
    domain = str(manifests.get("annotationDomain") or "") or DEFAULT_DOMAIN
    try:
        if manifests.get("repository") or f"{domain}/resourceBundleRef" in annotations:
            raise _Undecidable("its manifests are read from an OCI image, which kyrec does not fetch")
        if f"{domain}/message" in annotations:
            raise _Undecidable(f"the object carries a signed manifest ({domain}/message); kyrec cannot verify "
                               "sigstore signatures offline")
        verified: list[str] = []
        for i, attestor_set in enumerate(manifests.get("attestors") or []):
            ok, reason, err = _attestor_set(attestor_set, f".attestors[{i}]", annotations)
            if err:
                return error("error occurred during manifest verification", err)
            if not ok:
                return Response(FAIL, reason)
            verified.append(reason)
    except _Undecidable as why:
        return Response(UNDETERMINED, f"validate.manifests: {why}")
    return Response(PASS, f"verified manifest signatures; {','.join(verified)}")


def _entries(attestor_set: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """kk: internal.ExpandStaticKeys: an entry whose publicKeys hold several PEM keys becomes one per key."""
    out: list[Mapping[str, Any]] = []
    for entry in attestor_set.get("entries") or []:
        if not isinstance(entry, Mapping):
            raise _Undecidable("an attestor entry is not a mapping")
        keys = entry.get("keys")
        if isinstance(keys, Mapping):
            pieces = str(keys.get("publicKeys") or "").split(_END_KEY)
            if len(pieces) > 2:     # SplitAfter keeps the marker; the part after the last one is dropped
                out.extend({**entry, "keys": {**keys, "publicKeys": p + _END_KEY}} for p in pieces[:-1])
                continue
        out.append(entry)
    return out


def _attestor_set(attestor_set: Any, path: str, annotations: Mapping[str, str]) -> tuple[bool, str, str]:
    """kk: verifyManifestAttestorSet -> (verified, reason, error)."""
    if not isinstance(attestor_set, Mapping):
        raise _Undecidable(f"{path} is not an attestor set")
    entries = _entries(attestor_set)
    count = attestor_set.get("count")
    required = count if isinstance(count, int) and count else len(entries)
    errors: list[str] = []
    verified: list[str] = []
    failed: list[str] = []
    for i, entry in enumerate(entries):
        entry_path = f"{path}.entries[{i}]"
        if entry.get("attestor") is not None:
            entry_path += ".attestor"
            ok, reason, err = _attestor_set(entry["attestor"], entry_path, annotations)
            if err:
                err = f"failed to verify signature; {entry_path}: {err}"
        else:
            ok, reason, err = _entry(entry, entry_path, annotations)
        if err:
            errors.append(err)
        elif ok:
            verified.append(reason)
        else:
            failed.append(reason)
        if len(verified) >= required:
            return True, (f"manifest verification succeeded; verifiedCount {len(verified)}; requiredCount "
                          f"{required}; message {','.join(verified)}"), ""
    if errors:
        return False, "", "; ".join(errors)        # multierr.Combine
    return False, (f"manifest verification failed; verifiedCount {len(verified)}; requiredCount {required}; "
                   f"message {','.join(failed)}"), ""


def _entry(entry: Mapping[str, Any], path: str, annotations: Mapping[str, str]) -> tuple[bool, str, str]:
    """kk: k8sVerifyResource for an object without a signed message."""
    expected = entry.get("annotations")
    if isinstance(expected, Mapping):
        # Go ranges over a map: with several mismatches Kyverno names any one; kyrec the first by key
        for key in sorted(expected, key=str):
            value, got = str(expected[key]), annotations.get(str(key), "")
            if value != got:
                return False, "", (f"annotations mismatch: {got} does not match expected value {value} "
                                   f"for key {key}")
    if entry.get("repository"):
        raise _Undecidable("its manifests are read from an OCI image, which kyrec does not fetch")
    sub = ""
    if entry.get("keys") is not None:
        sub = ".keys"
    elif entry.get("certificates") is not None:
        sub = ".certificates"
    elif entry.get("keyless") is not None:
        sub = ".keyless"
        if (entry.get("keyless") or {}).get("roots"):
            # an unparsable roots bundle is an error before the manifest is looked for
            raise _Undecidable("a keyless attestor's roots would have to be parsed as Go's x509 does")
    return False, f"{path}{sub}: YAML manifest not found for this resource: message not found", ""

