"""Kyverno's CLI as the oracle of Notary-signed OCI 1.1 referrer attestations (issue 37): ImageValidatingPolicies
whose `attestations` name a `referrer.type`, and classic `type: Notary` verifyImages entries whose `attestations`
name one (with conditions on the statement), verified by a `notary` attestor (`verifyAttestationSignatures`) and
read with `extractPayload`, on images of the test registry with a referrer of that type signed by notation-go
(`push --referrer TYPE PAYLOAD.json --referrer-notary CHAIN.pem KEY.pem`), unsigned, signed by a leaf of another
CA, tampered (its payload changed after signing), absent, of another type, not JSON, an unsigned one beside a
signed one, and one stored under the referrers tag schema on a registry without the referrers API.
`kubectl-kyverno apply POLICY --resource PODS --registry -p` gives the results recorded in
testdata/kyverno-truth/notary-referrers.json with its version and commit; test_notary_referrer_oracle.py replays
kyrec (`kubectl kyrec eval -p POLICY -r PODS --registry`) against them.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/notary_referrer_oracle.py

The notary verifier needs no TUF repository (only cosign's does), so the policies name nothing but the test
CA's certificate. The registry lists referrers in no fixed order, so a policy that reads a payload without
verifying first (Kyverno then reads the first referrer of the type) is given no image with two of them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.consistency.kyverno_policy_validation import (  # noqa: E402
    kyverno_build,
    kyverno_exe_or_exit,
    read_golden,
)
from tests.consistency.registry_oracle import Rows, results  # noqa: E402
from tests.registry.fixture import OciRegistry  # noqa: E402
from tests.registry.keys import make_ca, make_key, make_leaf, notary_chain  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "notary-referrers.json"
SBOM = "application/vnd.cyclonedx+json"
OTHER = "application/vnd.example.other+json"
IMAGES = ("signed", "unsigned", "wrong", "tampered", "none", "other-type", "not-json", "mixed", "tag-schema")
ATTESTED = "images.containers.map(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.signer]))" \
           ".all(e, e > 0)"
PAYLOAD = "images.containers.map(i, extractPayload(i, attestations.sbom).bomFormat == 'CycloneDX').all(e, e)"
BOTH = "images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.signer]) > 0 && " \
       "extractPayload(i, attestations.sbom).bomFormat == 'CycloneDX')"

# policy case -> (validation expression, attestor kind, the image cases its pods use); ImageValidatingPolicies
POLICIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "attested": (ATTESTED, "notary", IMAGES),
    # Kyverno reads the payload of the first referrer of the type, verified or not
    "payload": (PAYLOAD, "notary", tuple(i for i in IMAGES if i != "mixed")),
    # verified first: the payload is the verified referrer's
    "attested-payload": (BOTH, "notary", IMAGES),
    # cosign's verifier refuses referrer attestations: it counts 0
    "cosign-attestor": (ATTESTED, "cosign", ("signed",)),
    # the payload is Go's json.Unmarshal into any: its integer is a double
    "payload-number": ("images.containers.all(i, type(extractPayload(i, attestations.sbom).version) == double)",
                       "notary", ("signed",)),
}
CYCLONEDX = [{"all": [{"key": "{{ bomFormat }}", "operator": "Equals", "value": "CycloneDX",
                       "message": "not a CycloneDX SBOM"}]}]
# classic `type: Notary` verifyImages entries with `attestations`: policy case -> (the attestation's conditions,
# the image cases). Kyverno reads the first referrer of the type only (no `mixed`: the order is not fixed).
CLASSIC: dict[str, tuple[list[dict[str, Any]], tuple[str, ...]]] = {
    "classic": ([], ("signed", "unsigned", "wrong", "tampered", "none", "other-type", "not-json", "tag-schema")),
    "classic-conditions": (CYCLONEDX, ("signed", "unsigned", "tampered", "tag-schema")),
    "classic-conditions-false": ([{"all": [{"key": "{{ bomFormat }}", "operator": "Equals", "value": "SPDX",
                                            "message": "not SPDX"}]}], ("signed",)),
    # the conditions read the request beside the statement
    "classic-request": ([{"any": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals",
                                   "value": "tag-schema"},
                                  {"key": "{{ components[].name }}", "operator": "AnyIn", "value": ["y"]}]}],
                        ("signed", "tag-schema")),
}
CASES = {**{name: cases for name, (_, _, cases) in POLICIES.items()},
         **{name: cases for name, (_, cases) in CLASSIC.items()}}


@dataclass(frozen=True)
class Prepared:
    directory: Path
    replace: dict[str, str]


def _policy(name: str, expression: str, attestor: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "matchImageReferences": [{"glob": "127.0.0.*"}],
                     "attestors": [{"name": "signer", **attestor}],
                     "attestations": [{"name": "sbom", "referrer": {"type": SBOM}}],
                     "validations": [{"expression": expression, "message": "not attested"}]}}


def _classic(name: str, conditions: list[dict[str, Any]], ca: str) -> dict[str, Any]:
    attestation: dict[str, Any] = {"type": SBOM, "name": "sbom",
                                   "attestors": [{"entries": [{"certificates": {"cert": ca}}]}]}
    if conditions:
        attestation["conditions"] = conditions
    # Enforce: Kyverno refuses an Audit policy whose entry patches digests (mutateDigest's default)
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                "name": "sbom", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{"type": "Notary", "imageReferences": ["127.0.0.*"],
                                  "attestations": [attestation]}]}]}}


def prepare(registry: OciRegistry, no_referrers: OciRegistry, directory: Path) -> Prepared:
    """The CA, the images pushed with their referrers, per policy case a policy and pods file. `no_referrers`: a
    registry without the OCI 1.1 referrers API (the tag-schema case)."""
    keys = directory / "keys"
    ca, other_ca = make_ca("referrer root"), make_ca("another root")
    leaf, stranger = make_leaf(keys, ca, "dev@example.com", "https://issuer"), \
        make_leaf(keys, other_ca, "dev@example.com", "https://issuer")
    chain, foreign = notary_chain(leaf), notary_chain(stranger)
    sbom, other_sbom, not_json = directory / "sbom.json", directory / "other.json", directory / "not.json"
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1,
                                "components": [{"name": "x"}]}))
    other_sbom.write_text(json.dumps({"bomFormat": "Other"}))
    not_json.write_text("not json\n")
    signing = ("--referrer-notary", chain, leaf.private)
    pushes: dict[str, tuple[Any, ...]] = {
        "signed": ("--referrer", SBOM, sbom, *signing),
        "unsigned": ("--referrer", SBOM, sbom),
        "wrong": ("--referrer", SBOM, sbom, "--referrer-notary", foreign, stranger.private),
        "tampered": ("--referrer", SBOM, sbom, *signing, "--tamper"),
        "none": (),
        "other-type": ("--referrer", OTHER, sbom, *signing),
        "not-json": ("--referrer", SBOM, not_json, *signing),
        "mixed": ("--referrer", SBOM, other_sbom, "--referrer", SBOM, sbom, *signing),
    }
    repo, tag_repo = registry.repo("referrers-oracle"), no_referrers.repo("referrers-oracle")
    images = {case: f"{repo}:{case}" for case in pushes}
    for case, args in pushes.items():
        registry.push(images[case], *args)
    images["tag-schema"] = f"{tag_repo}:tag-schema"
    no_referrers.push(images["tag-schema"], "--referrer", SBOM, sbom, *signing, "--tag-schema")
    key = make_key(keys, "ecdsa")
    attestors = {"notary": {"notary": {"certs": {"value": ca.pem}}},
                 "cosign": {"cosign": {"key": {"data": key.public}, "ctlog": {"insecureIgnoreTlog": True}}}}
    policies = {name: _policy(name, expression, attestors[kind]) for name, (expression, kind, _) in POLICIES.items()}
    policies.update({name: _classic(name, conditions, ca.pem) for name, (conditions, _) in CLASSIC.items()})
    for name, cases in CASES.items():
        (directory / f"{name}.policy.yaml").write_text(yaml.safe_dump(policies[name]))
        (directory / f"{name}.pods.yaml").write_text(yaml.safe_dump_all(
            [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": case, "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": images[case]}]}} for case in cases]))
    return Prepared(directory, {repo: "REPO", tag_repo: "TAG_REPO", registry.host: "REGISTRY",
                                no_referrers.host: "TAG_REGISTRY"})


def kyverno_results(exe: Path, prepared: Prepared) -> Rows:
    return results(prepared, {name: CASES[name] for name in CASES}, exe, times=False)


def kyrec_results(prepared: Prepared) -> Rows:
    return results(prepared, {name: CASES[name] for name in CASES}, times=False)


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    import tempfile

    from tests.registry import build

    exe = kyverno_exe_or_exit()
    registry, no_referrers = OciRegistry(build.build()), OciRegistry(build.build(), "--no-referrers")
    registry.start()
    no_referrers.start()
    try:
        with tempfile.TemporaryDirectory(prefix="kyrec-referrer-oracle-") as tmp:
            results = kyverno_results(exe, prepare(registry, no_referrers, Path(tmp)))
    finally:
        registry.stop()
        no_referrers.stop()
    data = {
        "description": "Kyverno's CLI on the cases of tests/consistency/notary_referrer_oracle.py (an "
                       "ImageValidatingPolicy's notary attestor on OCI 1.1 referrer attestations, classic "
                       "type: Notary attestations): "
                       "`kubectl-kyverno apply POLICY --resource PODS --registry -p --output-format json` against "
                       "the test registry; per policy case and pod (one image case each), the report's results "
                       "(REPO, TAG_REPO, REGISTRY, TAG_REGISTRY, sha256:DIGEST stand in).",
        "kyverno": kyverno_build(exe),
        "cases": results,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{GOLDEN.relative_to(ROOT)}: " + json.dumps(
        {name: {pod: [r["result"] for r in rows] for pod, rows in pods.items()} for name, pods in results.items()}))


if __name__ == "__main__":
    main()
