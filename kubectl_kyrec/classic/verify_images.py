"""A classic verifyImages rule offline: what Kyverno's two handlers decide before a registry is needed.

kk: pkg/engine/utils/image.go (ExtractMatchingImages, GetMatchingImages, IsImageVerified),
handlers/mutation/mutate_image.go with internal/imageverifier.go (Verify, verifyImage: the mutate phase),
handlers/validation/validate_image.go (the verifyDigest / required checks), and api/kyverno/v1
ImageVerification.Convert (the deprecated `image` field).

- No image of the resource matches an entry's `imageReferences`: neither handler exists, no response.
- Mutate phase, per matched image and entry: an entry without attestors or attestations answers nothing;
  else an image the entry does not reference, or one of its `skipImageReferences`, is skipped (`skipping
  image reference image <img>, policy <p> ruleName <r>`); anything else is a signature or attestation
  check against the registry. `mutateDigest` (default true) on an image without a digest looks the digest
  up in the registry. An image an UPDATE leaves unchanged is not checked again.
- Validate phase (an entry with `verifyDigest` or `required`, both default true), over every image of the
  resource: an image an entry does not reference ends the phase with no response; `verifyDigest` without a
  digest fails (`missing digest for <img>`); `required` reads the `kyverno.io/verify-images` annotation the
  mutate phase writes: with no rule of the run checking signatures of the resource's images, the resource's
  own annotation; else what the registry said (needs the registry).

Whatever needs the registry makes the whole rule NEEDS: kyrec answers `undetermined`, never a guess.

With `--registry` (a load.registry.Registry given), the mutate phase runs against the registry for entries
kyrec can verify (attestors whose entries are `keys.publicKeys`, or `keyless` with their own `roots`, the
subject/issuer checked as pkg/cosign matchSignatures does, SCTs skipped; the Rekor log skipped; `type: Notary`
entries' `certificates`, load/notary.py; of attestations, a Notary entry's OCI 1.1 referrer attestations with
their conditions, see _verify_attestations):
`verified image signatures for <img>` (pass) or `failed to verify image <img>: <why>` (fail; an unreachable
registry: error, as handleRegistryErrors treats a network error), `mutateDigest` resolves the tag's digest
and patches it in whatever the verification said, the `kyverno.io/verify-images` annotation records each
image's outcome, and the validate phase then runs on the resource so patched (kk: imageverifier.go Verify,
verifyAttestors, verifyAttestorSet, handleMutateDigest). Its fail after a registry that could not be reached
is an error: Kyverno's `missing digest` there is the network's doing, not the image's.
Anything else an entry asks for stays NEEDS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.classic.conditions import evaluate_conditions
from kubectl_kyrec.classic.image_info import ImageError, get_image_info
from kubectl_kyrec.classic.json_context import EvalContext
from kubectl_kyrec.classic.request import containers, pod_spec
from kubectl_kyrec.errors import EngineError, InputError
from kubectl_kyrec.golang.wildcard import match
from kubectl_kyrec.load.cosign import certificate_identity, verify_signatures
from kubectl_kyrec.load.notary import AttestationError, NotDecided, fetch_attestations
from kubectl_kyrec.load.notary import verify_signatures as notary_signatures
from kubectl_kyrec.load.policy.classic import ClassicPolicy
from kubectl_kyrec.load.registry import Registry, RegistryError, parse_image

ANNOTATION_IMAGE_VERIFY = "kyverno.io/verify-images"


@dataclass(frozen=True)
class _Entry:
    references: tuple[str, ...]
    skip_references: tuple[str, ...]
    verifies: bool                  # attestors or attestations: a signature check
    mutate_digest: bool
    verify_digest: bool
    required: bool
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Image:
    text: str                       # ImageInfo.String()
    digest: str
    pointer: tuple[str | int, ...]


@dataclass
class Outcome:
    """The rule's responses as (status, message), or the images whose answer needs the registry."""

    responses: list[tuple[str, str]] = field(default_factory=list)
    needs_registry: list[str] = field(default_factory=list)
    what: str = "signatures, attestations, digests"      # what the registry would answer
    order_dependent: str = ""       # why the answer depends on an order Kyverno does not fix


def _entries(rule: Mapping[str, Any]) -> list[_Entry]:
    out = []
    for e in rule.get("verifyImages") or []:
        if not isinstance(e, Mapping):
            continue
        refs = [str(r) for r in e.get("imageReferences") or []]
        if e.get("image"):
            refs.append(str(e["image"]))
        # Convert turns the deprecated key / issuer / annotations into an attestor
        verifies = bool(e.get("attestors") or e.get("attestations") or e.get("key") or e.get("issuer")
                        or e.get("annotations"))
        out.append(_Entry(tuple(refs), tuple(str(r) for r in e.get("skipImageReferences") or []), verifies,
                          e.get("mutateDigest") is not False, e.get("verifyDigest") is not False,
                          e.get("required") is not False, e))
    return out


def _images(obj: Mapping[str, Any]) -> list[_Image] | None:
    """The resource's images; None when one of them is no image reference (`nginx:late*`, which the API server
    admits): Kyverno's extraction then fails for the whole resource and its verifyImages rules give no
    response at all, whatever the other images (kk: pkg/utils/api/image.go extract returns the error;
    Kyverno CLI v1.17.2 shows no result for a Pod with such an image beside an unsigned one)."""
    spec, pointer = pod_spec(obj)
    if spec is None:
        return []
    base = tuple(p for p in pointer.split("/") if p)
    out = []
    for key, index, container in containers(spec):
        if not isinstance(container.get("image"), str):
            continue
        try:
            info = get_image_info(container["image"])
        except ImageError:
            return None
        out.append(_Image(str(info), info.digest, (*base, key, index, "image")))
    return out


def _at(obj: Mapping[str, Any] | None, pointer: tuple[str | int, ...]) -> Any:
    node: Any = obj
    for step in pointer:
        if isinstance(step, int):
            node = node[step] if isinstance(node, list) and step < len(node) else None
        else:
            node = node.get(step) if isinstance(node, Mapping) else None
    return node


def _refers(patterns: tuple[str, ...], image: str) -> bool:
    return any(match(p, image) for p in patterns)


def attesting_references(rules: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The imageReferences of every verifyImages entry that checks signatures or attestations (its mutate
    phase writes the `kyverno.io/verify-images` annotation a `required` check reads)."""
    return tuple(dict.fromkeys(ref for rule in rules for e in _entries(rule) if e.verifies for ref in e.references))


def evaluate(rule: Mapping[str, Any], obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
             policy_name: str, rule_name: str, attesting: tuple[str, ...] = (),
             registry: Registry | None = None, ctx: Any = None) -> Outcome | None:
    """None when no image matches (no response); else the rule's outcome. `old`: the old object on UPDATE.
    `attesting`: attesting_references of every verifyImages rule of the run: Kyverno's CLI runs every
    policy's mutate phase before any validate phase, each that verified something replacing the annotation,
    so when one of them references an image of the resource, what `required` reads is the registry's.
    `ctx`: the rule's JSON context (EvalContext), which attestation conditions read beside the statement."""
    if rule.get("imageExtractors"):
        # custom extractors read fields kyrec does not extract: which images they find is not known here
        return Outcome(needs_registry=["the images its imageExtractors find"])
    if not obj:
        return None
    entries = _entries(rule)
    images = _images(obj)
    if images is None:
        return None
    matched = [i for i in images for e in entries if _refers(e.references, i.text)]
    if not matched:
        return None
    undecided = ""
    if registry is not None:
        try:
            conditions_ctx = ctx if isinstance(ctx, EvalContext) and not rule.get("context") else None
            answered = _with_registry(registry, entries, matched, images, obj, old, policy_name, rule_name,
                                      conditions_ctx)
        except NotDecided as err:
            answered, undecided = None, str(err)
        if answered is not None:
            return answered
    out = Outcome()
    if undecided:
        out.what = undecided
    for entry in entries:
        for image in matched:
            if old is not None and _at(old, image.pointer) == _at(obj, image.pointer):
                continue            # kk: imageverifier.go Verify: HasChanged is false
            if entry.verifies:
                if not _refers(entry.references, image.text) or _refers(entry.skip_references, image.text):
                    out.responses.append(("skip", f"skipping image reference image {image.text}, policy "
                                                  f"{policy_name} ruleName {rule_name}"))
                elif image.text not in out.needs_registry:
                    out.needs_registry.append(image.text)
            if entry.mutate_digest and not image.digest and image.text not in out.needs_registry:
                out.needs_registry.append(image.text)
    if out.needs_registry or not any(e.verify_digest or e.required for e in entries):
        return out
    if any(e.required for e in entries) and any(_refers(attesting, i.text) for i in images):
        out.needs_registry.extend(i.text for i in images if _refers(attesting, i.text)
                                  and i.text not in out.needs_registry)
        out.what = "`required` reads the verification a signature-checking verifyImages rule records"
        return out
    validated = _validate(entries, images, obj)
    if isinstance(validated, str):
        out.order_dependent = validated
    elif validated is not None:
        out.responses.append(validated)
    return out


def _validate(entries: list[_Entry], images: list[_Image], obj: Mapping[str, Any]) -> tuple[str, str] | str | None:
    """kk: validate_image.go Process and validateImage, for a resource the mutate phase left as it was.

    Kyverno walks each entry's images in Go map order (by container list, then container name), stopping
    at the first image the entry does not reference (no response) or the first that fails: when an entry
    has both, which comes first is not fixed, and the answer is a str saying so. Several failing images
    give the first in container order (Kyverno names whichever its map meets first)."""
    skipped: list[str] = []
    passed: list[str] = []
    for entry in entries:
        unreferenced = [i.text for i in images if not _refers(entry.references, i.text)]
        failures: list[str] = []
        statuses: list[tuple[str, str]] = []
        for image in images:
            if not _refers(entry.references, image.text):
                continue
            if entry.verify_digest and not image.digest:
                failures.append(f"missing digest for {image.text}")
                continue
            if entry.required:
                status, problem = _verified(obj, image.text)
                if problem:
                    failures.append(problem)
                    continue
                statuses.append((status, image.text))
        if unreferenced and failures:
            return (f"Kyverno stops at whichever it meets first in Go map order: {unreferenced[0]}, which no "
                    f"imageReferences entry names (no response), or {failures[0]}")
        if unreferenced:
            return None
        if failures:
            return "fail", failures[0]
        skipped.extend(text for status, text in statuses if status == "skip")
        passed.extend(text for status, text in statuses if status == "pass")
    if passed or not skipped:
        if skipped:
            return "pass", " ".join(["image verified, skipped images:", *skipped])
        return "pass", "image verified"
    return "skip", " ".join(["image skipped, skipped images:", *skipped])


def _verified(obj: Mapping[str, Any], image: str) -> tuple[str, str]:
    """kk: IsImageVerified and the caller's `unverified image` (status, failure message or "")."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if not annotations:
        return "fail", f"unverified image {image}"
    data = annotations.get(ANNOTATION_IMAGE_VERIFY)
    if data is None:
        return "fail", "image is not verified"
    try:
        parsed = json.loads(str(data))
    except ValueError as exc:
        return "fail", f"failed to parse image metadata: {exc}"
    status = parsed.get(image, "fail") if isinstance(parsed, dict) else "fail"
    if status == "fail":
        return "fail", f"unverified image {image}"
    return str(status), ""


@dataclass(frozen=True)
class _Signer:
    """One attestor entry kyrec verifies: a public key, or keyless-style certificates (roots and identity)."""

    path: str                       # .attestors[i].entries[j].keys|keyless, as Kyverno's messages name it
    key: str = ""
    keyless: Mapping[str, Any] = field(default_factory=dict)
    notary: str = ""                # type Notary: the entry's certificates (cert, then certChain)


def _keyless(spec: Any, path: str) -> _Signer | None:
    """A keyless entry kyrec verifies: its own `roots` (Fulcio's are TUF's), the Rekor log and SCTs skipped,
    no additionalExtensions; None otherwise."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("roots"), str) or not spec["roots"].strip():
        return None
    rekor, ctlog = spec.get("rekor"), spec.get("ctlog")
    if not (isinstance(rekor, Mapping) and rekor.get("ignoreTlog")):
        return None
    if not (isinstance(ctlog, Mapping) and ctlog.get("ignoreSCT")) or spec.get("additionalExtensions"):
        return None
    return _Signer(path, keyless=spec)


def _key_entries(entry: _Entry) -> list[tuple[int, list[_Signer]]] | None:
    """The entry's attestor sets as (required count, signers) when kyrec can verify every one of them
    (static keys or keyless with roots, Rekor skipped, no attestations); None otherwise. kk: ExpandStaticKeys
    splits several PEM keys of one entry into one entry each; RequiredCount: `count`, else every entry."""
    raw = entry.raw
    if (raw.get("attestations") and raw.get("type") != "Notary") or raw.get("issuer") or raw.get("annotations") \
            or raw.get("repository"):
        return None
    sets = list(raw.get("attestors") or [])
    if raw.get("key"):              # ImageVerification.Convert: the deprecated key becomes one attestor
        rekor = raw.get("rekor") if isinstance(raw.get("rekor"), Mapping) else {}
        sets = [{"entries": [{"keys": {"publicKeys": raw["key"], "rekor": rekor}}]}]
    out = []
    notary = raw.get("type") == "Notary"
    for i, attestor_set in enumerate(sets):
        if not isinstance(attestor_set, Mapping):
            return None
        keys: list[_Signer] = []
        for attestor in attestor_set.get("entries") or []:
            if notary:
                # kk pkg/notary combineCerts: the entry's certificate, then its chain, are the trust store
                certs = attestor.get("certificates") if isinstance(attestor, Mapping) else None
                if not isinstance(certs, Mapping):
                    return None     # keys or keyless under Notary: not what notation reads
                pem = "\n".join(str(certs[k]) for k in ("cert", "certChain") if certs.get(k))
                keys.append(_Signer(f".attestors[{i}].entries[{len(keys)}]", notary=pem))
                continue
            if isinstance(attestor, Mapping) and "keyless" in attestor:
                signer = _keyless(attestor["keyless"], f".attestors[{i}].entries[{len(keys)}].keyless")
                if signer is None:
                    return None
                keys.append(signer)
                continue
            spec = attestor.get("keys") if isinstance(attestor, Mapping) else None
            if not isinstance(spec, Mapping) or not isinstance(spec.get("publicKeys"), str):
                return None
            rekor = spec.get("rekor")
            if not (isinstance(rekor, Mapping) and rekor.get("ignoreTlog")):
                return None         # Kyverno checks the Rekor entry: not reachable here
            text = spec["publicKeys"]
            # kk splitPEM: several keys become one entry each; one (or no END line) stays as written
            pems = [p + "-----END PUBLIC KEY-----" for p in text.split("-----END PUBLIC KEY-----")[:-1]]
            for pem in pems if len(pems) > 1 else [text]:
                keys.append(_Signer(f".attestors[{i}].entries[{len(keys)}].keys", key=pem))
        if not keys:
            return None             # kk: no entry verified and no error: Kyverno's "invalid response" error
        count = attestor_set.get("count")
        out.append((int(count) if isinstance(count, int) and count > 0 else len(keys), keys))
    return out


@dataclass(frozen=True)
class _Attestation:
    """One attestation of a classic `type: Notary` entry: an OCI 1.1 referrer artifact type, checked by its
    attestor sets (required count, each entry's certificates; "" for `certificates: {}`, whose statement
    Kyverno reads unverified) and its conditions."""

    index: int
    type: str                       # `type`, else the deprecated `predicateType`
    name: str
    conditions: tuple[Mapping[str, Any], ...]
    sets: tuple[tuple[int, tuple[str, ...]], ...]


def _notary_attestations(entry: _Entry) -> list[_Attestation] | None:
    """The entry's attestations when kyrec checks them (a Notary entry, attestor entries with `certificates`,
    no `validate`); [] without attestations; None otherwise."""
    raw = entry.raw
    items = raw.get("attestations") or []
    if not items:
        return []
    if raw.get("type") != "Notary" or raw.get("validate") or not isinstance(items, list):
        return None
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return None
        # kk verifyAttestations: no attestors is one empty entry, whose missing `certificates`
        # buildNotaryVerifier dereferences: Kyverno's CLI v1.17.2 panics (not an answer kyrec gives)
        sets = []
        for attestor_set in item.get("attestors") or [{"entries": [{}]}]:
            if not isinstance(attestor_set, Mapping):
                return None
            pems = []
            for attestor in attestor_set.get("entries") or []:
                certs = attestor.get("certificates") if isinstance(attestor, Mapping) else None
                if not isinstance(certs, Mapping):
                    return None     # no certificates (keys or keyless under Notary): not what notation reads
                pems.append("\n".join(str(certs[k]) for k in ("cert", "certChain") if certs.get(k)))
            count = attestor_set.get("count")
            sets.append((int(count) if isinstance(count, int) and count > 0 else len(pems), tuple(pems)))
        conditions = item.get("conditions") or []
        out.append(_Attestation(i, str(item.get("type") or item.get("predicateType") or ""),
                                str(item.get("name") or ""),
                                tuple(c for c in conditions if isinstance(c, Mapping)), tuple(sets)))
    return out


def _verify_attestations(registry: Registry, attestations: Sequence[_Attestation], image: str,
                         ctx: EvalContext | None) -> tuple[str, str, str]:
    """(status, message, digest) of verifyAttestations for a Notary entry (kk: imageverifier.go
    verifyAttestations, verifyAttestation, checkAttestations; pkg/notary FetchAttestations). A registry not
    reached is the rule's error, not a fail."""
    info = get_image_info(image)
    digest = ""
    for att in attestations:
        path = f".attestations[{att.index}]"
        if not att.type:
            return "fail", f"{path}: missing type", ""
        for j, (required, entries) in enumerate(att.sets):
            verified = 0
            errors: list[str] = []
            unreachable = False
            for certs in entries:
                # kk: the entry's path takes the attestation's index, not the entry's
                entry_path = f"{path}.attestors[{j}].entries[{att.index}]"
                try:
                    found, statements = fetch_attestations(registry, str(info), att.type, certs)
                except RegistryError as err:
                    unreachable = unreachable or err.unreachable
                    errors.append(str(err))
                    continue
                except AttestationError as err:
                    errors.append(str(err))
                    continue
                if not info.digest:
                    info = get_image_info(f"{info}@{found}")
                digest = digest or found
                problem = _attestation_problem(statements, att, str(info), ctx)
                if not problem:
                    verified += 1
                    if verified >= required:
                        break
                else:
                    errors.append(f"{entry_path}: {problem}")
            if verified < required:
                why = "; ".join(errors) or "attestations verification failed"
                return ("error" if unreachable else "fail"), (
                    f"image attestations verification failed, verifiedCount: {verified}, requiredCount: "
                    f"{required}, error: {why}"), ""
    return "pass", f"verified image attestations for {info}", digest


def _attestation_problem(statements: list[dict[str, Any]], att: _Attestation, image: str,
                         ctx: EvalContext | None) -> str:
    """kk verifyAttestation and checkAttestations: "" when every statement of the attestation's type meets its
    conditions (each read with the statement's predicate merged into the rule's context), else why not."""
    matching = [s for s in statements if s.get("type") == att.type]
    if not matching:
        return f"attestions not found for predicate type {att.type}"
    for statement in matching:
        if not att.conditions:
            continue
        if ctx is None:
            raise NotDecided("attestation conditions need the rule's context, which kyrec loads after the "
                             "registry is asked")
        checked = EvalContext(ctx.data)
        predicate = statement.get("predicate")
        if att.name:
            checked.add_context_entry(att.name, predicate)     # kk: AddContextEntry(name, rawResp)
        checked.add_json(predicate if isinstance(predicate, dict) else {})
        try:
            for block in att.conditions:
                ok, msg = evaluate_conditions(checked, block)
                if not ok:
                    return f"attestation checks failed for {image} and predicate {att.type}: {msg}"
        except EngineError as err:
            return f"failed to check attestations: {err}"
    return ""


def _identity_mismatch(spec: Mapping[str, Any], certificates: list[Any]) -> str:
    """kk: pkg/cosign matchSignatures / matchCertificateData: "" when one verified signature's certificate
    has the entry's subject and issuer (wildcards; regular expressions searched, as Go's MatchString), else
    every certificate's mismatch."""
    subject, subject_re = str(spec.get("subject") or ""), str(spec.get("subjectRegExp") or "")
    issuer, issuer_re = str(spec.get("issuer") or ""), str(spec.get("issuerRegExp") or "")
    for text, what in ((subject_re, "subject"), (issuer_re, "issuer")):
        try:
            re.compile(text)
        except re.error as err:
            return f"invalid regexp for {what}: {text} : {err}"
    errors = []
    for cert in certificates:
        sans, oidc_issuer = certificate_identity(cert)
        if (subject or subject_re) and sans and not (
                (subject and any(match(subject, s) for s in sans))
                or (subject_re and any(re.search(subject_re, s) for s in sans))):
            errors.append(f"subject mismatch: expected {subject or subject_re}, received {', '.join(sans)}")
        elif issuer and not match(issuer, oidc_issuer):
            errors.append(f"issuer mismatch: expected {issuer}, received {oidc_issuer}")
        elif issuer_re and not re.search(issuer_re, oidc_issuer):
            errors.append(f"issuer mismatch: expected {issuer_re}, received {oidc_issuer}")
        else:
            return ""
    return "; ".join(errors)


def _verify_entry(registry: Registry, sets: list[tuple[int, list[_Signer]]], image: str,
                  attestations: Sequence[_Attestation] = (), ctx: EvalContext | None = None
                  ) -> tuple[str, str, str]:
    """(status, message, digest) of verifyAttestors for one image (kk: verifyAttestorSet,
    handleRegistryErrors: a network error is the rule's error, anything else its failure), then of its
    attestations (kk verifyImage: attestors first, attestations after them passed)."""
    if not sets:
        return _verify_attestations(registry, attestations, image, ctx)
    digest = ""
    for required, keys in sets:
        verified = 0
        errors: list[str] = []
        unreachable = False
        for signer in keys:
            path = signer.path
            if signer.notary:
                status, why = _verify_notary(registry, signer, image)
                if status == "pass":
                    verified += 1
                    digest = why
                    if verified >= required:
                        break
                else:
                    unreachable = unreachable or status == "error"
                    errors.append(f"{path}: {why}")
                continue
            try:
                if signer.keyless:
                    outcome = verify_signatures(registry, image, "", roots_pem=str(signer.keyless["roots"]))
                else:
                    outcome = verify_signatures(registry, image, signer.key)
            except RegistryError as err:
                unreachable = unreachable or err.unreachable
                errors.append(f"{path}: {err}")
                continue
            except ValueError as err:
                errors.append(f"{path}: {err}")
                continue
            digest = outcome.digest
            mismatch = _identity_mismatch(signer.keyless, outcome.certificates) if outcome.ok else ""
            if outcome.ok and not mismatch:
                verified += 1
                if verified >= required:
                    break
            elif mismatch:
                errors.append(f"{path}: {mismatch}")
            elif not outcome.found:
                errors.append(f"{path}: no signatures found")        # cosign's ErrNoSignaturesFound
            else:
                errors.append(f"{path}: no matching signatures: {'; '.join(outcome.reasons)}")
        if verified < required:
            return ("error" if unreachable else "fail"), f"failed to verify image {image}: {'; '.join(errors)}", ""
    if attestations:
        # kk verifyImage: the attestors' digest becomes the image's before its attestations are checked
        known = get_image_info(image)
        status, message, found = _verify_attestations(
            registry, attestations, image if known.digest or not digest else f"{image}@{digest}", ctx)
        return status, message, (digest or found) if status == "pass" else ""
    return "pass", f"verified image signatures for {image}", digest


def _verify_notary(registry: Registry, signer: _Signer, image: str) -> tuple[str, str]:
    """("pass", digest), or ("fail"|"error", why) for one Notary entry (kk: pkg/notary VerifySignature:
    `failed to verify <repo>@<digest>: <notation's error>`; a registry not reached: "error")."""
    try:
        outcome = notary_signatures(registry, image, signer.notary)
    except RegistryError as err:
        return ("error" if err.unreachable else "fail"), str(err)
    except ValueError as err:       # unreadable certificates (NotDecided is the caller's)
        if isinstance(err, NotDecided):
            raise
        return "fail", str(err)
    if outcome.ok:
        return "pass", outcome.digest
    return "fail", f"failed to verify {parse_image(image).name}@{outcome.digest}: {'; '.join(outcome.reasons)}"


def _with_registry(registry: Registry, entries: list[_Entry], matched: list[_Image], images: list[_Image],
                   obj: Mapping[str, Any], old: Mapping[str, Any] | None, policy_name: str,
                   rule_name: str, ctx: EvalContext | None = None) -> Outcome | None:
    """Both phases with the registry, or None when an entry asks for what kyrec does not verify. `ctx`: the
    context attestation conditions read (None: they are not decided)."""
    plans = []
    for entry in entries:
        sets = _key_entries(entry) if entry.verifies else []
        attestations = _notary_attestations(entry)
        if sets is None or attestations is None or (
                registry.now is None and any(s.keyless for _, signers in sets for s in signers)):
            return None
        plans.append((entry, sets, attestations))
    out = Outcome()
    patched: dict[tuple[str | int, ...], str] = {}
    verified: dict[str, str] = {}
    unreachable = False             # a registry that did not answer, as opposed to one that said no
    for entry, sets, attestations in plans:
        for image in matched:
            if old is not None and _at(old, image.pointer) == _at(obj, image.pointer):
                continue
            text, digest = image.text, image.digest
            response: tuple[str, str] | None = None
            if entry.verifies:
                if not _refers(entry.references, text) or _refers(entry.skip_references, text):
                    out.responses.append(("skip", f"skipping image reference image {text}, policy "
                                                  f"{policy_name} ruleName {rule_name}"))
                    continue
                status, message, found = _verify_entry(registry, sets, text, attestations, ctx)
                response = (status, message)
                unreachable = unreachable or status == "error"      # _verify_entry's error: no answer
                digest = digest or found
            if entry.mutate_digest and not image.digest:
                try:
                    digest = digest or registry.resolve(parse_image(text))
                except (RegistryError, ValueError) as err:
                    unreachable = unreachable or (isinstance(err, RegistryError) and err.unreachable)
                    # kk registryclient FetchImageDescriptor's wording around the registry's error
                    out.responses.append(("error", f"failed to update digest: failed to fetch image reference: "
                                                   f"{text}, error: {err}"))
                    digest = ""
                # kk Verify: the digest is patched in whatever the verification said (the validate phase then
                # reports `unverified image <img>@<digest>`, not `missing digest`)
                if digest:
                    info = get_image_info(text)
                    patched[image.pointer] = f"{info}@{digest}"
                    if response is None:
                        response = ("pass", "mutated image digest")
                    text = str(get_image_info(patched[image.pointer]))
            if response is not None:
                if entry.verifies:
                    verified[text] = "pass" if response[0] == "pass" else "fail"
                out.responses.append(response)
    if not any(e.verify_digest or e.required for e in entries):
        return out
    admitted = _patched(obj, patched, verified)
    validated = _validate(entries, _images(admitted) or [], admitted)
    if isinstance(validated, str):
        out.order_dependent = validated
    elif validated is not None:
        if unreachable and validated[0] == "fail":
            # Kyverno's validate phase then fails for the digest or verification the registry did not give
            # (`missing digest for <img>`): a fail whose cause is the network, not the image, which kyrec never
            # reports (docs/compatibility.md, "Registries")
            validated = ("error", f"{validated[1]} (not a fail: the registry could not be reached)")
        out.responses.append(validated)
    return out


def _patched(obj: Mapping[str, Any], images: Mapping[tuple[str | int, ...], str],
             verified: Mapping[str, str]) -> dict[str, Any]:
    """The resource as the mutate phase leaves it: digests patched in, the verify-images annotation set."""
    out: dict[str, Any] = json.loads(json.dumps(obj))
    for pointer, value in images.items():
        node: Any = out
        for step in pointer[:-1]:
            node = node[step]
        node[pointer[-1]] = value
    if verified:
        meta = out.setdefault("metadata", {})
        annotations = meta.get("annotations") or {}
        previous = annotations.get(ANNOTATION_IMAGE_VERIFY)
        try:
            record = json.loads(previous) if isinstance(previous, str) else {}
        except ValueError:
            record = {}
        record = {**(record if isinstance(record, dict) else {}), **verified}
        meta["annotations"] = {**annotations, ANNOTATION_IMAGE_VERIFY: json.dumps(record, separators=(",", ":"))}
    return out


# kk: api/kyverno/v1/image_verification_types.go ImageVerification.Validate
DIGEST_MUTATION_IN_AUDIT = "mutateDigest must be set to false for \u2018Audit\u2019 failure action"


def refused_digest_mutation(policy: ClassicPolicy) -> InputError | None:
    """Kyverno refuses a verifyImages entry that would patch digests in a policy that only audits (kk:
    pkg/validation/policy/validate.go Validate: the policy's validationFailureAction, Audit unless Enforce,
    replaced by the entry's own failureAction when it has one). `mutateDigest` defaults to true (the CRD's
    default, which the API server and Kyverno's CLI both apply), so an Audit entry must say false."""
    policy_audits = policy.validation_failure_action != "Enforce"
    for rule in policy.rules:
        entries = rule.raw.get("verifyImages")
        for j, entry in enumerate(entries if isinstance(entries, list) else ()):
            if not isinstance(entry, Mapping):
                continue
            own = str(entry.get("failureAction") or "")
            audits = own.lower() != "enforce" if own else policy_audits
            if audits and entry.get("mutateDigest", True) is True:
                path = f"spec.rules[{rule.index}].verifyImages[{j}].mutateDigest"
                return InputError(f"{policy.meta.label}: {path}: Invalid value: true: {DIGEST_MUTATION_IN_AUDIT}",
                                  policy.meta.source, path)
    return None
