"""`validate.manifests` (signed YAML manifests, sigstore), verified offline with public keys.

kk: pkg/engine/handlers/validation/validate_manifest.go over sigstore/k8s-manifest-sigstore (at the version
Kyverno pins, 4152ec03ed3d: pkg/k8smanifest/verify_resource.go `VerifyResource`, verify.go
`BlobManifestFetcher` / `BlobSignatureVerifier`, pkg/util/mapnode). An object signed by `kubectl sigstore
sign` carries its manifest in `<domain>/message` (base64 of gzip of the manifest YAML, or of a .tar.gz
holding it) and one signature per signer in `<domain>/signature`, `signature_1`, ...; each attestor entry:
1. finds the manifest of the object's group, kind and name among the message's documents (none of its
   kind: the "message not found" failure);
2. compares it with the object as the direct match does (mapnode's flattened diff, Kyverno's and
   k8s-manifest-sigstore's default ignore fields and the policy's `ignoreFields`, a manifest without a
   namespace, canonicalized image names);
3. verifies the signatures over the gunzipped message with the entry's key, as cosign's verify-blob does
   without a transparency log (ECDSA P-256, RSA PKCS#1 v1.5 and Ed25519 over SHA-256, with sigstore's
   error texts): a signature that no key verifies is the rule's error, a verified signature over a
   manifest that differs is a failure naming the diff.
Written by hand over `cryptography`: the `sigstore` Python package verifies Sigstore bundles, not these
annotations. What needs more than the object and the keys is `undetermined`, saying why: manifests kept in
an OCI image (`repository`, the resourceBundleRef annotation), certificate and keyless attestors, key
references that are not PEM keys (Secrets, KMS, PGP), signatures with a certificate or Rekor bundle
annotation, a manifest found only by the value search, a diff that only a dry run (`dryRun.enable`) could
resolve, other ECDSA curves. On DELETE the handler is not made: no result.
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import io
import re
import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from cryptography.hazmat.primitives.asymmetric import ec

from kubectl_kyrec.classic.validate import FAIL, PASS, Response, error
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.golang.json import marshal
from kubectl_kyrec.golang.regexp import RegexSyntaxError, compile_re2
from kubectl_kyrec.load.cosign import KeyError_, load_public_key, sigstore_verify_error
from kubectl_kyrec.model import UNDETERMINED

DEFAULT_DOMAIN = "cosign.sigstore.dev"
_BEGIN_KEY = "-----BEGIN PUBLIC KEY-----"
_END_KEY = "-----END PUBLIC KEY-----"
_NO_SIGNATURE = "signature not found"
_NOT_IN_MESSAGE = "YAML manifest not found for this resource: failed to find a YAML manifest in the gzipped message"

# (fields, objects) ignore-field bindings every verification starts with: k8s-manifest-sigstore's
# pkg/k8smanifest/resources/default-config.yaml, then Kyverno's pkg/engine/resources/default-config.yaml
_ALL = ({"kind": "*"},)
_DEFAULT_IGNORE: tuple[tuple[tuple[str, ...], tuple[Mapping[str, str], ...]], ...] = (
    (tuple(f"metadata.annotations.cosign.sigstore.dev/{n}" for n in
           ("resourceBundleRef", "signature", "message", "certificate", "bundle")), _ALL),
    (("metadata.managedFields.*", "metadata.resourceVersion", "metadata.selfLink",
      "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", "metadata.annotations.namespace",
      "metadata.creationTimestamp", "metadata.generation", "metadata.uid", "metadata.finalizers",
      "metadata.labels.app.kubernetes.io/instance", "status"), _ALL),
    (("secrets.*.name", "imagePullSecrets.*.name"), ({"kind": "ServiceAccount"},)),
    (("spec.ports.*.nodePort", "spec.clusterIP", "spec.clusterIPs.0"), ({"kind": "Service"},)),
    (("metadata.annotations.deployment.kubernetes.io/revision",), ({"kind": "Deployment"},)),
    (("metadata.annotations.deprecated.daemonset.template.generation",), ({"kind": "DaemonSet"},)),
    (("spec.host",), ({"kind": "Route", "group": "route.openshift.io"},)),
    (("metadata.namespace", "spec.containers.*.imagePullPolicy", "spec.containers.*.terminationMessagePath",
      "spec.containers.*.terminationMessagePolicy", "spec.dnsPolicy", "spec.restartPolicy", "spec.schedulerName",
      "spec.terminationGracePeriodSeconds", "metadata.labels.app.kubernetes.io/instance",
      "metadata.managedFields.*", "metadata.resourceVersion", "metadata.selfLink",
      "metadata.annotations.control-plane.alpha.kubernetes.io/leader",
      "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", "metadata.finalizers*",
      "metadata.annotations.namespace", "metadata.annotations.deprecated.daemonset.template.generation",
      "metadata.creationTimestamp", "metadata.uid", "metadata.generation", "status",
      "metadata.annotations.deployment.kubernetes.io/revision"), _ALL),
    (("spec.volumes.*.name", "spec.volumes.*.projected.*", "spec.volumes.*.configMap.defaultMode",
      "spec.containers.*.volumeMounts.*", "spec.tolerations.*", "spec.enableServiceLinks", "spec.preemptionPolicy",
      "spec.priority", "spec.serviceAccount"), ({"kind": "Pod"},)),
    (("spec.progressDeadlineSeconds", "spec.revisionHistoryLimit", "spec.strategy.*",
      "spec.template.metadata.creationTimestamp", "spec.containers.*.ports.*.protocol", "spec.containers.*.resources",
      "spec.securityContext"), ({"kind": "Deployment"},)),
    (("spec.conversion.strategy", "spec.names.listKind"), ({"kind": "CustomResourceDefinition"},)),
    (("spec.ports.*.nodePort", "spec.clusterIP", "spec.clusterIPs.0", "spec.sessionAffinity", "spec.type",
      "spec.ipFamilies.*", "spec.ipFamilyPolicy", "spec.internalTrafficPolicy"), ({"kind": "Service"},)),
    (("metadata.annotations.pod-policies.kyverno.io/autogen-controllers", "spec.failurePolicy", "spec.background",
      "spec.validationFailureAction"), ({"kind": "ClusterPolicy"}, {"kind": "Policy"})),
    (("secrets.*.name", "imagePullSecrets.*.name"), ({"kind": "ServiceAccount"},)),
)


class _Undecidable(Exception):
    """Deciding needs what kyrec does not have offline; str() says what."""


@dataclass(frozen=True)
class _Subject:
    """The object under verification and what every attestor entry reads of it."""

    obj: Mapping[str, Any]
    annotations: Mapping[str, str]
    domain: str
    ignore_fields: tuple[str, ...]
    dry_run: bool

    @property
    def signed(self) -> bool:
        return f"{self.domain}/message" in self.annotations


def evaluate(manifests: Mapping[str, Any], obj: Mapping[str, Any], operation: str) -> Response | None:
    if operation == "DELETE":
        return None
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    annotations = {str(k): str(v) for k, v in ((meta or {}).get("annotations") or {}).items()}
    domain = str(manifests.get("annotationDomain") or "") or DEFAULT_DOMAIN
    dry_run = bool((manifests.get("dryRun") or {}).get("enable")) if isinstance(manifests.get("dryRun"), Mapping) \
        else False
    try:
        if manifests.get("repository") or f"{domain}/resourceBundleRef" in annotations:
            raise _Undecidable("its manifests are read from an OCI image, which kyrec does not fetch")
        subject = _Subject(obj, annotations, domain, _ignore_fields(manifests, obj, domain), dry_run)
        verified: list[str] = []
        for i, attestor_set in enumerate(manifests.get("attestors") or []):
            ok, reason, err = _attestor_set(attestor_set, f".attestors[{i}]", subject)
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


def _attestor_set(attestor_set: Any, path: str, subject: _Subject) -> tuple[bool, str, str]:
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
            ok, reason, err = _attestor_set(entry["attestor"], entry_path, subject)
            if err:
                err = f"failed to verify signature; {entry_path}: {err}"
        else:
            ok, reason, err = _entry(entry, entry_path, subject)
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


def _entry(entry: Mapping[str, Any], path: str, subject: _Subject) -> tuple[bool, str, str]:
    """kk: k8sVerifyResource -> (verified, reason, error)."""
    expected = entry.get("annotations")
    if isinstance(expected, Mapping):
        # Go ranges over a map: with several mismatches Kyverno names any one; kyrec the first by key
        for key in sorted(expected, key=str):
            value, got = str(expected[key]), subject.annotations.get(str(key), "")
            if value != got:
                return False, "", (f"annotations mismatch: {got} does not match expected value {value} "
                                   f"for key {key}")
    if entry.get("repository"):
        raise _Undecidable("its manifests are read from an OCI image, which kyrec does not fetch")
    sub, key_pem = "", ""
    if entry.get("keys") is not None:
        sub = ".keys"
        key_pem = str((entry.get("keys") or {}).get("publicKeys") or "")
    elif entry.get("certificates") is not None:
        sub = ".certificates"
    elif entry.get("keyless") is not None:
        sub = ".keyless"
        if (entry.get("keyless") or {}).get("roots"):
            # an unparsable roots bundle is an error before the manifest is looked for
            raise _Undecidable("a keyless attestor's roots would have to be parsed as Go's x509 does")
    where = path + sub
    if not subject.signed:
        return False, f"{where}: YAML manifest not found for this resource: message not found", ""
    if sub != ".keys":
        raise _Undecidable(f"{where}: certificate and keyless attestors need Fulcio's roots or Rekor, which "
                           "kyrec does not contact")
    manifest = _find_manifest(subject)
    if manifest is None:
        return False, f"{where}: {_NOT_IN_MESSAGE}", ""
    diff = _direct_diff(manifest, subject)
    if diff and subject.dry_run:
        raise _Undecidable("the signed manifest differs from the object and dryRun is enabled: only a "
                           "server-side dry run could say whether they match")
    sig_error = _verify_signatures(key_pem, subject)
    if sig_error == _NO_SIGNATURE:      # IsSignatureNotFoundError: a failure, not an error
        return False, f"{where}: failed to verify signature: {sig_error}", ""
    if sig_error:
        return False, "", f"{where}: failed to verify signature: {sig_error}"
    if diff:
        return False, f"{where}: failed to verify signature. diff found; {_diff_json(diff)}", ""
    return True, "singed by a valid signer: ", ""   # sic (Kyverno's word); a key gives no signer name


# ---------------------------------------------------------------------------------------------------------
# the message (kk: BlobManifestFetcher.Fetch, util.GetYAMLsInArtifact, util.FindManifestYAML)


def _raw_message(subject: _Subject) -> bytes:
    """The signed bytes: base64 of the annotation, gunzipped when it is gzip (else as it is, util.GzipDecompress)."""
    text = subject.annotations[f"{subject.domain}/message"]
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Undecidable(f"{subject.domain}/message is not valid base64 (Go's decoder error is not "
                           "reproduced)") from None
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return data


def _documents(raw: bytes) -> list[Mapping[str, Any]]:
    """The manifests in the message: its YAML documents, else the .yaml/.yml files of its .tar.gz."""
    docs = _yaml_documents(raw)
    if docs is not None:
        return docs
    out: list[Mapping[str, Any]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile() and not m.name.startswith("..")
                              and m.name.endswith((".yaml", ".yml"))), key=lambda m: m.name)
            for member in members:
                handle = tar.extractfile(member)
                found = _yaml_documents(handle.read() if handle else b"") or []
                if found and isinstance(found[0].get("kind"), str) and found[0]["kind"]:
                    out.extend(found)
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        raise _Undecidable("the signed message is neither YAML nor a .tar.gz kyrec can read") from None
    return out


def _yaml_documents(raw: bytes) -> list[Mapping[str, Any]] | None:
    """The mapping documents of `raw` read as YAML; None when it is not YAML text."""
    try:
        docs = list(yaml.safe_load_all(raw.decode("utf-8")))
    except (UnicodeDecodeError, yaml.YAMLError):
        return None
    found = [d for d in docs if isinstance(d, Mapping)]
    for doc in found:
        _json_only(doc)
    return found or None


def _json_only(value: Any) -> None:
    """Go reads YAML through JSON: a date or a binary scalar would be a string there; kyrec does not guess."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise _Undecidable("the signed manifest has a non-string key, which kyrec does not convert as Go does")
            _json_only(v)
    elif isinstance(value, list):
        for v in value:
            _json_only(v)
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise _Undecidable(f"the signed manifest holds a YAML {type(value).__name__}, which kyrec does not convert "
                           "as Go does")


def _group(api_version: Any) -> str:
    text = str(api_version or "")
    return text.split("/", 1)[0] if "/" in text else ""


def _find_manifest(subject: _Subject) -> Mapping[str, Any] | None:
    """The object's manifest in the message: of its kind, then of its group, kind and name (a namespace
    match preferred among several); None when none has its kind."""
    obj = subject.obj
    meta = obj.get("metadata") or {}
    kind = obj.get("kind")
    same_kind = [d for d in _documents(_raw_message(subject)) if d.get("kind") == kind]
    if not same_kind:
        return None
    name, namespace, group = meta.get("name") or "", meta.get("namespace") or "", _group(obj.get("apiVersion"))

    def ident(d: Mapping[str, Any]) -> tuple[str, str, str]:
        m = d.get("metadata") if isinstance(d.get("metadata"), Mapping) else {}
        return _group(d.get("apiVersion")), str((m or {}).get("name") or ""), str((m or {}).get("namespace") or "")

    named = [d for d in same_kind if ident(d)[:2] == (group, name)]
    if not named:
        raise _Undecidable("no signed manifest has the object's name: k8s-manifest-sigstore would pick one by "
                           "comparing values (ManifestSearchByValue), which kyrec does not reproduce")
    in_namespace = [d for d in named if ident(d)[2] == namespace]
    return (in_namespace or named)[0]


# ---------------------------------------------------------------------------------------------------------
# the comparison (kk: verify_resource.go directMatch, mapnode FindDiffBetweenNodes / DiffResult.Filter)

_Diff = list[tuple[str, Any, Any]]       # (flattened key, before: the manifest's, after: the object's)


def _ravel(value: Any, path: str, out: dict[str, Any]) -> dict[str, Any]:
    """mapnode's Ravel: scalar leaves by dotted path (list items by index); nulls and empty containers vanish."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _ravel(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _ravel(v, f"{path}.{i}" if path else str(i), out)
    elif value is not None:
        out[path] = value
    return out


def _go_type(value: Any) -> str:
    return "bool" if isinstance(value, bool) else "string" if isinstance(value, str) else "float64"


def _go_s(value: Any) -> str:
    """fmt's `%s` of a JSON scalar."""
    return value if isinstance(value, str) else f"%!s({_go_type(value)}={sprint(value)})"


def _direct_diff(manifest: Mapping[str, Any], subject: _Subject) -> _Diff:
    before, after = _ravel(manifest, "", {}), _ravel(subject.obj, "", {})
    items: _Diff = []
    typed: _Diff = []
    for key in before.keys() | after.keys():
        b, a = before.get(key), after.get(key)
        if b is not None and a is not None and _go_type(b) != _go_type(a):
            typed.append((key, f"(type: {_go_type(b)}) {_go_s(b)}", f"(type: {_go_type(a)}) {_go_s(a)}"))
        elif b is None or a is None or b != a:
            items.append((key, b, a))
    items = _drop_moved_list_items(items)
    # removeDiffWithDefaultConversion compares reflect.Values: only "" against an absent field (Go boxes every
    # empty string at the same address) is no difference; false and 0 are (Kyverno's CLI agrees: the oracle)
    kept = [(key, b, a) for key, b, a in items if not ((b is None) != (a is None) and (a if b is None else b) == ""
                                                          and isinstance(a if b is None else b, str))]
    diff = sorted(kept + typed, key=lambda d: d[0])
    diff = [d for d in diff if not _canonical_image(d)]
    diff = [d for d in diff if not any(_key_match(d[0], f"{field}*") for field in subject.ignore_fields)]
    # the manifest may have no namespace (kk: matchResourceWithManifest's namespacePattern)
    return [d for d in diff if not (d[0] == "metadata.namespace" and d[1] is None)]


_LIST_INDEX = re.compile(r"\.\d+\.")


def _drop_moved_list_items(items: _Diff) -> _Diff:
    """mapnode's removeKeyDiffsInListNode: a list item's field deleted at one index and created with the same
    value at another is no difference."""
    out: _Diff = []
    for key, b, a in items:
        drop = False
        if _LIST_INDEX.search(key) and (b is None or a is None):
            search = _go_regexp(_LIST_INDEX.sub(lambda _m: r"\.\d+\.", key))
            for other, ob, oa in items:
                if search is not None and search.search(other) is not None and (
                        (a is None and ob is None and b == oa) or (b is None and oa is None and a == ob)):
                    drop = True
                    break
        if not drop:
            out.append((key, b, a))
    return out


def _canonical_image(d: tuple[str, Any, Any]) -> bool:
    key, b, a = d
    return key.endswith("image") and isinstance(b, str) and isinstance(a, str) and (
        "docker.io/" + b == a or b + ":latest" == a)


@functools.lru_cache(maxsize=512)
def _go_regexp(pattern: str) -> Any:
    try:
        return compile_re2(pattern)
    except RegexSyntaxError:     # Go's regexp.MatchString: a pattern that does not compile matches nothing
        return None


def _key_match(key: str, pattern: str) -> bool:
    """mapnode's patternMatchString: `*` is `.*` in an unanchored Go regular expression."""
    if key == pattern or pattern in ("*", ""):
        return True
    if "*" not in pattern:
        return False
    compiled = _go_regexp(pattern.replace("*", ".*"))
    return compiled is not None and compiled.search(key) is not None


def _diff_json(diff: _Diff) -> str:
    return marshal({"items": [{"key": k, "values": {"after": a, "before": b}} for k, b, a in diff]})


def _ignore_fields(manifests: Mapping[str, Any], obj: Mapping[str, Any], domain: str) -> tuple[str, ...]:
    """The ignore fields whose objects match `obj` (kk: ObjectFieldBindingList.Match): the defaults, the
    policy's, then the annotation keys of the domain (SetAnnotationIgnoreFields)."""
    bindings: list[tuple[tuple[str, ...], tuple[Mapping[str, Any], ...]]] = list(_DEFAULT_IGNORE)
    for binding in manifests.get("ignoreFields") or []:
        if isinstance(binding, Mapping):
            bindings.append((tuple(str(f) for f in binding.get("fields") or []),
                             tuple(o for o in binding.get("objects") or [] if isinstance(o, Mapping))))
    bindings.append((tuple(f"metadata.annotations.{domain}/{n}*" for n in
                           ("message", "signature", "certificate", "bundle", "resourceBundleRef")), _ALL))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    ref = {"group": group, "version": version, "kind": str(obj.get("kind") or ""),
           "name": str((meta or {}).get("name") or ""), "namespace": str((meta or {}).get("namespace") or "")}
    out: list[str] = []
    for fields, objects in bindings:
        if not objects or any(all(_match_pattern(str(o.get(k) or ""), v) for k, v in ref.items())
                              for o in objects):
            out.extend(fields)
    return tuple(out)


def _match_pattern(pattern: str, value: str) -> bool:
    """k8s-manifest-sigstore's util.MatchPattern."""
    pattern = pattern.strip()
    if pattern in ("", "*") or (pattern == "-" and value == "") or pattern == value:
        return True
    if pattern.endswith("*"):
        return value.startswith(pattern.rstrip("*"))
    if "," in pattern:
        return any(_match_pattern(p, value) for p in pattern.split(","))
    return False


# ---------------------------------------------------------------------------------------------------------
# the signatures (kk: BlobSignatureVerifier.Verify, AnnotationConfig.GetAllSignatureSets, cosign VerifyBlob)


def _verify_signatures(key_pem: str, subject: _Subject) -> str:
    """"" when one signature on the object verifies with the key, else k8s-manifest-sigstore's error."""
    key_text = key_pem.strip()
    if not key_pem.startswith(_BEGIN_KEY):
        raise _Undecidable("a key given by reference (Secret, KMS) or as PGP, which kyrec does not read")
    try:
        key = load_public_key(key_text)
        if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name != "secp256r1":
            raise _Undecidable("an ECDSA key on a curve other than P-256 (cosign's hash choice is not reproduced)")
    except KeyError_:
        raise _Undecidable("a public key that cosign might read and kyrec cannot") from None
    sets: list[str] = []
    for i in range(len(subject.annotations) + 2):
        name = f"{subject.domain}/signature" + (f"_{i}" if i else "")
        if name not in subject.annotations:
            break
        for extra in ("certificate", "bundle"):
            if f"{subject.domain}/{extra}" + (f"_{i}" if i else "") in subject.annotations:
                raise _Undecidable(f"a signature with a {extra} annotation is verified against Rekor, which "
                                   "kyrec does not contact")
        sets.append(subject.annotations[name])
    if not sets:
        return _NO_SIGNATURE
    raw = _raw_message(subject)
    trials: list[str] = []
    for j, sig_text in enumerate(sets):
        try:
            signature = base64.b64decode(sig_text, validate=True)
        except (binascii.Error, ValueError):
            raise _Undecidable("a signature that is not valid base64 (cosign's error is not reproduced)") from None
        why = sigstore_verify_error(key, signature, raw)
        if not why:
            return ""
        trials.append(f"[publickey 1/1] [signature {j + 1}/{len(sets)}] error: cosign.VerifyBlobCmd.Exec() "
                      f"returned an error: {why}")
    return f"verification failed for {len(sets)} signature. all trials: {marshal(trials)}"
