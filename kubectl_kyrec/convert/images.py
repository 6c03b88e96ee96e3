"""A ClusterPolicy/Policy of verifyImages rules -> ImageValidatingPolicies (Kyverno's migration mapping,
kyverno/kyverno#16506 and the website's migration guide; docs/convert.md, "verifyImages rules").

The classic rule is evaluated in two phases (kk: pkg/engine/internal/imageverifier.go, the mutate phase that
verifies each image an entry references and patches digests in; handlers/validation/validate_image.go, the
validate phase: verifyDigest and required). The reference for what the conversion must decide is kyrec's
model of both, kubectl_kyrec/classic/verify_images.py. The ImageValidatingPolicy decides it with
`verifyImageSignatures` (kk: pkg/cel/libs/imageverify), which counts the attestors that verify an image the
policy's `matchImageReferences` select, 0 for any other image:

- each attestor set is one `verifyImageSignatures(image, [attestors...]) >= count` (count: the set's own,
  else every entry, as kk RequiredCount), every set required (kk verifyAttestors);
- the images are the request's (Kyverno's default extractors: containers, initContainers,
  ephemeralContainers), each one the entry references and does not skip checked; `imageReferences` are the
  policy's `matchImageReferences` globs (only those images are fetched, as only they were verified);
- `verifyDigest` without `mutateDigest`: the classic validate phase fails an image without a digest when
  every image of the resource is one the entry references (it stops with no answer at the first it does
  not): written as that condition;
- `mutateDigest`, `verifyDigest`, `required` are also carried to `validationConfigurations`, which Kyverno
  v1.17.2's ImageValidatingPolicy engine does not read (named in a `# difference:` line).

What has no exact counterpart is refused by field (Unconvertible), never written weaker."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.classic.verify_images import DIGEST_MUTATION_IN_AUDIT
from kubectl_kyrec.convert.cel_text import Unconvertible, conj, has_wildcard, literal, wildcard_as_re2

# the default image extractors' lists (kk: pkg/cel/compiler/images.go), which are the containers the classic
# rule reads (kubectl_kyrec/classic/request.py containers)
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")

# gobwas/glob (matchImageReferences) reads these as syntax; Kyverno's wildcard reads them as themselves
_GLOB_SYNTAX = re.compile(r"[\[\]{}\\!,]")

_ENTRY_FIELDS = {"imageReferences", "skipImageReferences", "attestors", "mutateDigest", "verifyDigest",
                 "required", "useCache", "repository", "type", "failureAction", "validate", "attestations",
                 "imageRegistryCredentials", "cosignOCI11", "image", "key", "roots", "subject", "issuer",
                 "annotations", "additionalExtensions", "imageExtractors"}

DIFFERENCES = {
    "configurations": "validationConfigurations (mutateDigest, verifyDigest, required) are carried over, but "
                      "Kyverno v1.17.2's ImageValidatingPolicy engine does not read them: no digest is patched "
                      "into the stored object (the ClusterPolicy's mutateDigest writes image@digest), and "
                      "verifyDigest is written as a validation where it decides (mutateDigest false)",
    "update": "on UPDATE the ClusterPolicy does not verify an image the request leaves unchanged (it reads the "
              "kyverno.io/verify-images annotation instead); the ImageValidatingPolicy verifies every image "
              "again",
    "normalized": "the ClusterPolicy matches imageReferences against Kyverno's normalized image "
                  "(docker.io/ and :latest added, a tag beside a digest dropped), the ImageValidatingPolicy "
                  "against the image as the resource writes it: an image written without its registry or tag "
                  "is matched differently",
    "fetch": "an image the registry does not have (or cannot give): the ClusterPolicy fails it (the digest "
             "lookup and verification fail), the ImageValidatingPolicy gives an error (Kyverno fetches every "
             "selected image before its validations); both deny it under Enforce",
    "reference": "an image that is no image reference (a `*` in it, a one-letter repository): the ClusterPolicy "
                 "gives the resource no result at all (its image extraction fails), the ImageValidatingPolicy still "
                 "decides: an error (`could not parse reference`) where its references select that image, else "
                 "the other images' verdict; both deny under Enforce what they fail (Kyverno CLI v1.17.2; no "
                 "CEL test reads the classic parser's rules exactly, and leaving such images out would pass "
                 "images the ClusterPolicy fails)",
    "no-image": "a container without an image (which the API server refuses: `image: Required value`): the "
                "ClusterPolicy passes it over, the ImageValidatingPolicy's default image extractor is an error",
    "useCache": "useCache is not carried over (an ImageValidatingPolicy has no such setting; the cache "
                "changes no verdict)",
}


def pod_extractors() -> list[dict[str, str]]:
    """The default image extractors of a Pod (kk: pkg/cel/compiler/images.go), each leaving out a container
    without an image, which the classic rule passes over (classic/request.py containers) and the default
    extractor would be an error on. Written on `object.spec`, which Kyverno's ImageValidatingPolicy autogen
    rewrites into each controller's pod template (kk: pkg/cel/policies/ivpol/autogen)."""
    return [{"name": name, "expression": f"object.spec.?{name}.orValue([]).filter(e, has(e.image)).map(e, e.image)"}
            for name in CONTAINER_LISTS]


def images_all(check: str) -> str:
    """`check` (over `i`) holds for every image of the request's default extractors (a kind without pod
    containers has none: the classic rule has no image to verify there)."""
    return f"{literal(list(CONTAINER_LISTS))}.all(k, !(k in images) || images[k].all(i, {check}))"


def _references(patterns: Any, at: str) -> list[str]:
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        raise Unconvertible(at, "must be a list of image reference patterns")
    for p in patterns:
        if _GLOB_SYNTAX.search(p):
            raise Unconvertible(at, f"{p!r}: a character matchImageReferences' glob reads as syntax and "
                                    "Kyverno's wildcard as itself; not converted")
    return patterns


def _matches(patterns: list[str]) -> str:
    return " || ".join(f"i.matches({literal(wildcard_as_re2(p))})" for p in patterns)


def _ctlog(spec: dict[str, Any], at: str) -> dict[str, Any]:
    """A classic entry's `rekor` and `ctlog` as an ImageValidatingPolicy cosign `ctlog`."""
    rekor = spec.get("rekor") or {}
    ctlog = spec.get("ctlog") or {}
    if not isinstance(rekor, dict) or not isinstance(ctlog, dict):
        raise Unconvertible(at, "rekor and ctlog must be objects")
    out: dict[str, Any] = {}
    for source, key, target in ((rekor, "url", "url"), (rekor, "pubkey", "rekorPubKey"),
                                (rekor, "ignoreTlog", "insecureIgnoreTlog"), (ctlog, "pubkey", "ctLogPubKey"),
                                (ctlog, "ignoreSCT", "insecureIgnoreSCT"), (ctlog, "tsaCertChain", "tsaCertChain")):
        if source.get(key) not in (None, "", False):
            out[target] = source[key]
    extra = sorted({*rekor} - {"url", "pubkey", "ignoreTlog"}) + sorted({*ctlog} - {"pubkey", "ignoreSCT",
                                                                                       "tsaCertChain"})
    if extra:
        raise Unconvertible(at, f"{extra}: not converted")
    return out


def _cosign_attestors(entry: dict[str, Any], at: str, repository: str) -> list[dict[str, Any]]:
    """One attestor set entry as IVPOL cosign attestors (several public keys in one entry: one each, as kk
    ExpandStaticKeys splits them)."""
    if entry.get("attestor") is not None:
        raise Unconvertible(f"{at}.attestor", "nested attestor sets are not converted")
    if entry.get("annotations"):
        raise Unconvertible(f"{at}.annotations", "signature annotations are not converted yet")
    if entry.get("repository"):
        repository = str(entry["repository"])
    kinds = [k for k in ("keys", "keyless", "certificates") if entry.get(k) is not None]
    if len(kinds) != 1:
        raise Unconvertible(at, f"expected one of keys/keyless/certificates, found {kinds or 'none'}")
    spec = entry[kinds[0]]
    where = f"{at}.{kinds[0]}"
    if not isinstance(spec, dict):
        raise Unconvertible(where, "must be an object")
    source = {"source": {"repository": repository}} if repository else {}
    ctlog = _ctlog(spec, where)
    log = {"ctlog": ctlog} if ctlog else {}
    if kinds[0] == "keys":
        unknown = sorted({*spec} - {"publicKeys", "signatureAlgorithm", "kms", "rekor", "ctlog"})
        if unknown:
            raise Unconvertible(where, f"{unknown}: not converted (secret: a key from a Secret)")
        keys: list[dict[str, Any]] = []
        if spec.get("kms"):
            if spec.get("publicKeys"):
                raise Unconvertible(where, "both kms and publicKeys")
            keys.append({"kms": str(spec["kms"])})
        else:
            text = spec.get("publicKeys")
            if not isinstance(text, str) or not text.strip():
                raise Unconvertible(f"{where}.publicKeys", "no public key")
            if text.lstrip().startswith("k8s://"):
                raise Unconvertible(f"{where}.publicKeys", "a key from a Secret (k8s://) is not converted")
            # kk splitPEM: several keys become one entry each; one (or no END line) stays as written
            pems = [p.strip() + "\n-----END PUBLIC KEY-----\n"
                    for p in text.split("-----END PUBLIC KEY-----")[:-1]]
            keys.extend({"data": pem} for pem in (pems if len(pems) > 1 else [text]))
        algorithm = {"hashAlgorithm": spec["signatureAlgorithm"]} if spec.get("signatureAlgorithm") else {}
        return [{"cosign": {"key": {**key, **algorithm}, **log, **source}} for key in keys]
    if kinds[0] == "keyless":
        unknown = sorted({*spec} - {"subject", "subjectRegExp", "issuer", "issuerRegExp", "roots", "rekor",
                                    "ctlog", "additionalExtensions"})
        if unknown:
            raise Unconvertible(where, f"{unknown}: not converted")
        identity: dict[str, str] = {}
        for name in ("subject", "issuer"):
            plain, pattern = spec.get(name), spec.get(f"{name}RegExp")
            if plain and pattern:
                # the classic rule accepts a certificate either matches (subject) or must match both (issuer);
                # cosign's identity reads the regular expression alone
                raise Unconvertible(f"{where}.{name}RegExp", f"both {name} and {name}RegExp; not converted")
            if plain and has_wildcard(str(plain)):
                # kk pkg/cosign matchCertificateData: a wildcard match; cosign's identity compares exactly
                identity[f"{name}RegExp"] = wildcard_as_re2(str(plain))
            elif plain or pattern:
                identity[name if plain else f"{name}RegExp"] = str(plain or pattern)
        if not identity:
            raise Unconvertible(where, "keyless without subject or issuer (no identity to check); not converted")
        if spec.get("roots"):
            # kk pkg/imageverification/imageverifiers/cosign/opts.go: CheckOpts.TrustedMaterial (the TUF
            # repository's trusted_root.json), which cosign prefers to the attestor's roots
            # (docs/compatibility.md, ImageValidatingPolicy keyless): the conversion would trust Sigstore's
            # roots in place of the original's own, admitting what they sign
            raise Unconvertible(f"{where}.roots", "Kyverno v1.17.2's ImageValidatingPolicy checks a keyless "
                                                  "chain against its TUF trusted root, never the attestor's "
                                                  "roots: the conversion would trust other roots; not converted")
        keyless: dict[str, Any] = {"identities": [identity]}
        if spec.get("additionalExtensions"):
            keyless["additionalExtensions"] = spec["additionalExtensions"]
        return [{"cosign": {"keyless": keyless, **log, **source}}]
    unknown = sorted({*spec} - {"cert", "certChain", "rekor", "ctlog"})
    if unknown:
        raise Unconvertible(where, f"{unknown}: not converted")
    certificate = {name: {"value": spec[key]} for key, name in (("cert", "cert"), ("certChain", "certChain"))
                   if spec.get(key)}
    if "cert" not in certificate:
        raise Unconvertible(f"{where}.cert", "a certificates entry without cert is not converted")
    return [{"cosign": {"certificate": certificate, **log, **source}}]


def _notary_attestor(entry: dict[str, Any], at: str) -> dict[str, Any]:
    """A `type: Notary` entry's certificates: the certificate then its chain are notation's trust store (kk:
    pkg/notary combineCerts), an IVPOL notary attestor's `certs`."""
    certs = entry.get("certificates")
    if not isinstance(certs, dict) or set(entry) - {"certificates"} or not certs.get("cert"):
        raise Unconvertible(at, "a Notary entry is converted with `certificates.cert` (and certChain) only")
    unknown = sorted({*certs} - {"cert", "certChain"})
    if unknown:
        raise Unconvertible(f"{at}.certificates", f"{unknown}: not converted")
    pem = "\n".join(str(certs[k]).strip() for k in ("cert", "certChain") if certs.get(k)) + "\n"
    return {"notary": {"certs": {"value": pem}}}


def _attestations_refused(attestations: Any) -> str:
    """Why an entry's attestations are not converted."""
    text = str(attestations)
    if "'ignoreTlog': True" in text:
        # kk pkg/imageverification/imageverifiers/cosign/verifier.go VerifyAttestationSignature: an attestation
        # whose Rekor bundle does not verify is `cosign bundle verification failed`, even when the attestor skips
        # the log; the classic rule accepts it there (kk pkg/cosign; cel/kyverno_imageverify.py
        # verify_attestations)
        return ("attestations verified without the Rekor log (rekor.ignoreTlog) are not converted: Kyverno "
                "v1.17.2's ImageValidatingPolicy counts no attestor of an attestation whose Rekor bundle it did "
                "not verify, so the conversion would deny what the original admits")
    return ("attestations are not converted yet (their conditions on the payload would become extractPayload "
            "checks; neither side's attestations can be verified by kyrec to prove it)")


def convert_entry(image: dict[str, Any], at: str) -> tuple[dict[str, Any], list[str]]:
    """One verifyImages entry -> (the IVPOL spec fields it gives: matchImageReferences, attestors,
    validations, validationConfigurations; the `# difference:` lines)."""
    unknown = sorted(set(image) - _ENTRY_FIELDS)
    if unknown:
        raise Unconvertible(at, f"{unknown}: not converted")
    for key, why in (("image", "the deprecated `image` field"), ("key", "the deprecated `key` field"),
                     ("roots", "the deprecated `roots` field"), ("subject", "the deprecated `subject` field"),
                     ("issuer", "the deprecated `issuer` field"),
                     ("annotations", "the deprecated `annotations` field"),
                     ("additionalExtensions", "the deprecated `additionalExtensions` field"),
                     ("imageExtractors", "custom image extractors"),
                     ("imageRegistryCredentials", "registry credentials (an IVPOL's `credentials`)"),
                     ("cosignOCI11", "OCI 1.1 cosign signatures"),
                     ("validate", "verifyImages.validate (deny conditions on the verified images)")):
        if image.get(key):
            raise Unconvertible(f"{at}.{key}", f"{why}: not converted yet")
    if image.get("attestations"):
        raise Unconvertible(f"{at}.attestations", _attestations_refused(image["attestations"]))
    kind = str(image.get("type") or "Cosign")
    if kind not in ("Cosign", "Notary"):
        raise Unconvertible(f"{at}.type", f"{kind}: not converted (Cosign and Notary are)")
    references = _references(image.get("imageReferences"), f"{at}.imageReferences")
    skips = _references(image.get("skipImageReferences") or [], f"{at}.skipImageReferences")
    mutate_digest = image.get("mutateDigest") is not False
    verify_digest = image.get("verifyDigest") is not False
    required = image.get("required") is not False
    if skips and required:
        # classic validate phase: `required` reads the verification the mutate phase records, which a skipped
        # image never gets (kubectl_kyrec/classic/verify_images.py _validate); not modelled in CEL
        raise Unconvertible(f"{at}.skipImageReferences", "with required (its default), the classic validate "
                                                         "phase fails a skipped image the verification record "
                                                         "does not name; not converted (required: false is)")
    sets = image.get("attestors")
    if not isinstance(sets, list) or not sets:
        raise Unconvertible(f"{at}.attestors", "an entry without attestors (digest checks only) is not "
                                               "converted yet")
    attestors: list[dict[str, Any]] = []
    checks: list[str] = []
    repository = str(image.get("repository") or "")
    if repository and kind == "Notary":
        raise Unconvertible(f"{at}.repository", "a Notary entry's repository is not converted")
    for i, attestor_set in enumerate(sets):
        where = f"{at}.attestors[{i}]"
        if not isinstance(attestor_set, dict) or not isinstance(attestor_set.get("entries"), list) \
                or not attestor_set["entries"]:
            raise Unconvertible(where, "an attestor set without entries")
        unknown = sorted(set(attestor_set) - {"entries", "count"})
        if unknown:
            raise Unconvertible(where, f"{unknown}: not converted")
        names: list[str] = []
        for j, entry in enumerate(attestor_set["entries"]):
            if not isinstance(entry, dict):
                raise Unconvertible(f"{where}.entries[{j}]", "must be an object")
            made = ([_notary_attestor(entry, f"{where}.entries[{j}]")] if kind == "Notary"
                    else _cosign_attestors(entry, f"{where}.entries[{j}]", repository))
            for attestor in made:
                name = f"s{i}_e{len(names)}"
                names.append(name)
                attestors.append({"name": name, **attestor})
        count = attestor_set.get("count")
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
            raise Unconvertible(f"{where}.count", "must be a positive integer")
        needed = count if count is not None else len(names)
        listed = ", ".join(f"attestors.{n}" for n in names)
        checks.append(f"verifyImageSignatures(i, [{listed}]) >= {needed}")
    referenced = _matches(references)
    skipped = _matches(skips) if skips else ""
    exempt = f"!({referenced})" + (f" || {skipped}" if skipped else "")
    validations = [{"expression": images_all(f"{exempt} || ({conj(checks)})"),
                    "message": "failed to verify image signatures"}]
    if verify_digest and not mutate_digest:
        # kk validate_image.go: an image the entry does not reference ends the phase with no answer; else an
        # image without a digest fails (`missing digest for <image>`)
        # (skipImageReferences do not exempt an image from the digest check)
        has_digest = images_all(f"!({referenced}) || i.contains('@')")
        validations.append({"expression": f"!({images_all(referenced)}) || {has_digest}",
                            "message": "missing digest"})
    spec = {"matchImageReferences": [{"glob": p} for p in references], "attestors": attestors,
            "validations": validations,
            "validationConfigurations": {"mutateDigest": mutate_digest, "verifyDigest": verify_digest,
                                         "required": required}}
    differences = [DIFFERENCES[k] for k in ("configurations", "update", "normalized", "fetch", "reference")]
    if image.get("useCache") is not None:
        differences.append(DIFFERENCES["useCache"])
    return spec, differences


@dataclass(frozen=True)
class PolicyParts:
    """What convert/policy.py converts for every kind of rule, handed in (it imports this module): the spec
    settings, the autogen annotation, a rule's match as matchConstraints and matchConditions, the failure
    actions, and the names it writes."""

    spec_settings: Callable[[dict[str, Any], Any], tuple[str, dict[str, Any]]]
    autogen: Callable[[dict[str, Any], Any], dict[str, Any] | None]
    rule_constraints: Callable[[dict[str, Any], str, Any, Any], tuple[dict[str, Any], list[dict[str, str]]]]
    actions: dict[str, str]
    autogen_annotation: str
    api_version: str


def convert_image_rules(doc: dict[str, Any], conv: Any, kinds: Any, base: PolicyParts) -> None:
    """A policy whose rules are all verifyImages rules -> one ImageValidatingPolicy per rule (`<policy>-<rule>`
    when there are several: each rule's images, attestors and match are its own), into `conv`
    (convert/policy.py Conversion)."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    rules = spec.get("rules") or []
    if not all(isinstance(r, dict) and r.get("verifyImages") for r in rules):
        raise Unconvertible("spec.rules", "a policy with both verifyImages and other rules is not converted yet")
    if str(spec.get("applyRules", "All")) == "One" and len(rules) > 1:
        raise Unconvertible("spec.applyRules", "applyRules: One stops at the first matching rule; "
                                               "ImageValidatingPolicies are evaluated each")
    default_action, settings = base.spec_settings(spec, conv)
    documents: list[dict[str, Any]] = []
    differences: list[str] = []
    pods = False
    for i, rule in enumerate(rules):
        at = f"spec.rules[{i}]"
        for key in ("context", "celPreconditions", "validate", "mutate", "generate"):
            if rule.get(key):
                raise Unconvertible(f"{at}.{key}", f"{key} on a verifyImages rule is not converted yet")
        entries = rule["verifyImages"]
        if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
            raise Unconvertible(f"{at}.verifyImages", "one entry per rule is converted (several entries share "
                                                      "the rule's validate phase, which stops at the first "
                                                      "entry with an image it does not reference)")
        entry = entries[0]
        action = str(entry.get("failureAction") or default_action)
        if action.lower() not in base.actions:
            raise Unconvertible(f"{at}.verifyImages[0].failureAction", f"unknown action {action!r}")
        if action.lower() == "audit" and entry.get("mutateDigest", True) is True:
            # kk: ImageVerification.Validate refuses the original (classic/verify_images.py
            # refused_digest_mutation); nothing that Kyverno would not load is converted
            raise Unconvertible(f"{at}.verifyImages[0].mutateDigest", DIGEST_MUTATION_IN_AUDIT)
        constraints, match_conditions = base.rule_constraints(rule, at, kinds, conv)
        fields, notes = convert_entry(entry, f"{at}.verifyImages[0]")
        differences.extend(n for n in notes if n not in differences)
        out_spec: dict[str, Any] = {"validationActions": [base.actions[action.lower()]], **settings,
                                    "matchConstraints": constraints}
        if match_conditions:
            out_spec["matchConditions"] = match_conditions
        out_spec.update(fields)
        resource_rules = constraints.get("resourceRules") or []
        if [(r.get("apiGroups"), r.get("resources")) for r in resource_rules] == [([""], ["pods"])]:
            out_spec["images"] = pod_extractors()
        else:
            differences.extend(n for n in (DIFFERENCES["no-image"],) if n not in differences)
        targets_pods = any("pods" in r.get("resources", []) for r in constraints.get("resourceRules", []))
        pods = pods or targets_pods
        out_meta: dict[str, Any] = {"name": conv.name if len(rules) == 1 else f"{conv.name}-{rule.get('name', i)}"}
        if doc.get("kind") == "Policy" and meta.get("namespace"):
            out_meta["namespace"] = meta["namespace"]
        kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k != base.autogen_annotation}
        if kept:
            out_meta["annotations"] = kept
        if meta.get("labels"):
            out_meta["labels"] = meta["labels"]
        kind = "ImageValidatingPolicy" if doc.get("kind") == "ClusterPolicy" else "NamespacedImageValidatingPolicy"
        documents.append({"apiVersion": base.api_version, "kind": kind, "metadata": out_meta, "spec": out_spec})
        conv.rule_policies[str(rule.get("name", i))] = (out_meta["name"], "ImageValidatingPolicy")
        conv.rule_skips[str(rule.get("name", i))] = "skip" if rule.get("preconditions") else "pass"
    if pods:
        autogen = base.autogen(meta, conv)
        if autogen is not None:
            for document in documents:
                if any("pods" in r.get("resources", [])
                       for r in document["spec"]["matchConstraints"].get("resourceRules", [])):
                    document["spec"]["autogen"] = autogen
    if len(rules) > 1:
        differences.append("each verifyImages rule became its own ImageValidatingPolicy, named <policy>-<rule>")
    conv.substitutes.extend(differences)
    conv.documents = documents
