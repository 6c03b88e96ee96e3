"""Notary-signed OCI 1.1 referrer attestations with `--registry` (an ImageValidatingPolicy's `attestations[]
.referrer` verified by a `notary` attestor and read with `extractPayload`; kk: imageverifiers/notary
VerifyAttestationSignature, imagedataloader GetPayload): notation's reason for each unsigned, wrongly signed,
tampered or absent referrer; the payload of the verified referrer; a registry that stops answering midway is
undetermined, one that refuses is Kyverno's count of 0; offline stays needs-registry. Kyverno's own verdicts on
these cases: tests/consistency/test_notary_referrer_oracle.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.load import notary
from kubectl_kyrec.load.registry import ImageRef, Registry, RegistryError
from kubectl_kyrec.model import UNDETERMINED
from tests.registry.fixture import OciRegistry
from tests.registry.keys import make_ca, make_leaf, notary_chain
from tests.registry.test_notary_registry import PODS, _now, evaluate

SBOM = "application/vnd.cyclonedx+json"
COUNT = "verifyAttestationSignatures(images.containers[0], attestations.sbom, [attestors.notary])"
PAYLOAD = "extractPayload(images.containers[0], attestations.sbom)"


def ivpol(certs: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": "sbom"},
            "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                     "attestors": [{"name": "notary", "notary": {"certs": {"value": certs}}}],
                     "attestations": [{"name": "sbom", "referrer": {"type": SBOM}}],
                     "validations": [{"expression": expression, "message": "not attested"}]}}


@pytest.fixture(scope="module")
def attested(oci_registry: OciRegistry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    keys = tmp_path_factory.mktemp("referrer-keys")
    ca, other = make_ca("referrer root"), make_ca("another root")
    leaf, stranger = make_leaf(keys, ca, "dev@example.com", "https://issuer"), \
        make_leaf(keys, other, "dev@example.com", "https://issuer")
    sbom, other_sbom = keys / "sbom.json", keys / "other.json"
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "components": [{"name": "openssl"}]}))
    other_sbom.write_text(json.dumps({"bomFormat": "Other"}))
    signing = ("--referrer-notary", notary_chain(leaf), leaf.private)
    pushes: dict[str, tuple[Any, ...]] = {
        "signed": ("--referrer", SBOM, sbom, *signing),
        "unsigned": ("--referrer", SBOM, sbom),
        "wrong": ("--referrer", SBOM, sbom, "--referrer-notary", notary_chain(stranger), stranger.private),
        "tampered": ("--referrer", SBOM, sbom, *signing, "--tamper"),
        "none": (),
        # an unsigned referrer beside a signed one: the signed one is the attestation, its payload the one read
        "mixed": ("--referrer", SBOM, other_sbom, "--referrer", SBOM, sbom, *signing),
    }
    repo = oci_registry.repo("referrers")
    digests = {tag: oci_registry.push(f"{repo}:{tag}", *args) for tag, args in pushes.items()}
    return {"ca": ca, "repo": repo, "digests": digests}


@pytest.mark.parametrize(("tag", "reason"), [
    ("unsigned", "no signature is associated with \"{repo}@sha256:"),
    ("wrong", "the signature's certificate chain does not contain any trusted certificate"),
    ("tampered", "content descriptor mismatch"),
    ("none", f"attestation verification failed, no attestations found for type: {SBOM}"),
])
def test_notations_reason_for_each_referrer_that_does_not_verify(attested: dict[str, Any], tag: str,
                                                                 reason: str) -> None:
    outcome = notary.verify_referrers(Registry(now=_now()), f"{attested['repo']}:{tag}", SBOM, attested["ca"].pem)
    assert outcome.verified is None and outcome.digest == attested["digests"][tag]
    [why] = outcome.reasons
    assert reason.format(repo=attested["repo"]) in why, why


@pytest.mark.parametrize("tag", ["signed", "mixed"])
def test_the_verified_referrer_is_the_attestation_and_its_payload_is_read(attested: dict[str, Any],
                                                                          tag: str) -> None:
    image = f"{attested['repo']}:{tag}"
    outcome = notary.verify_referrers(Registry(now=_now()), image, SBOM, attested["ca"].pem)
    assert outcome.verified is not None and outcome.verified["artifactType"] == SBOM
    assert json.loads(notary.referrer_payload(Registry(now=_now()), image, outcome.verified)) == {
        "bomFormat": "CycloneDX", "components": [{"name": "openssl"}]}
    pol = ivpol(attested["ca"].pem, f"{COUNT} == 1 && {PAYLOAD}.components.exists(c, c.name == 'openssl')")
    assert evaluate(pol, image, Registry(now=_now())) == [("pass", "success")]


def test_another_ca_counts_zero(attested: dict[str, Any]) -> None:
    assert evaluate(ivpol(make_ca("unrelated").pem, f"{COUNT} > 0"), f"{attested['repo']}:signed",
                    Registry(now=_now())) == [("fail", "not attested")]


class _Failing(Registry):
    """The test registry, except that the referrers API fails as `error` says (a fault the real registry
    does not make)."""

    error: RegistryError | None = None

    def get(self, ref: ImageRef, path: str, accept: str) -> tuple[bytes, str, str]:
        if path.startswith("referrers/") and self.error is not None:
            raise self.error
        return super().get(ref, path, accept)


def test_a_registry_that_stops_answering_midway_is_undetermined_one_that_refuses_counts_zero(
        attested: dict[str, Any]) -> None:
    image, pol = f"{attested['repo']}:signed", ivpol(attested["ca"].pem, f"{COUNT} > 0")
    down = _Failing(now=_now())
    down.error = RegistryError("GET referrers: connection refused", unreachable=True)
    [(status, message)] = evaluate(pol, image, down)
    assert status == UNDETERMINED and "the registry stopped answering" in message, message
    refused = _Failing(now=_now())
    refused.error = RegistryError("GET referrers: 403 Forbidden", status=403)
    # Kyverno: FetchReferrers failed, the attestor is logged and not counted
    assert evaluate(pol, image, refused) == [("fail", "not attested")]


def test_payload_of_an_image_that_stops_answering_is_undetermined(attested: dict[str, Any]) -> None:
    down = _Failing(now=_now())
    down.error = RegistryError("GET referrers: timed out", unreachable=True)
    [(status, message)] = evaluate(ivpol(attested["ca"].pem, f"{PAYLOAD}.bomFormat == 'CycloneDX'"),
                                   f"{attested['repo']}:signed", down)
    assert status == UNDETERMINED and "the registry stopped answering" in message, message


def test_without_registry_stays_needs_registry(attested: dict[str, Any]) -> None:
    for expression in (f"{COUNT} > 0", f"{PAYLOAD}.bomFormat == 'CycloneDX'"):
        [(status, message)] = evaluate(ivpol(attested["ca"].pem, expression), f"{attested['repo']}:signed", None)
        assert status == UNDETERMINED and "needs-registry" in message, message


def test_push_refuses_a_referrer_signature_without_its_referrer(oci_registry: OciRegistry) -> None:
    done = subprocess.run([str(oci_registry.binary), "push", f"{oci_registry.repo()}:x", "--referrer-notary", "a",
                           "b"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--referrer-notary follows the --referrer it signs" in done.stderr


def classic(certs: str | None, conditions: list[dict[str, Any]] | None = None, **entry: Any) -> dict[str, Any]:
    """A classic `type: Notary` entry with one attestation of the SBOM type (`certs` None: no attestors)."""
    attestation: dict[str, Any] = {"type": SBOM, "name": "sbom"}
    if certs is not None:
        attestation["attestors"] = [{"entries": [{"certificates": {"cert": certs}}]}]
    if conditions:
        attestation["conditions"] = conditions
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "sbom"},
            "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                "name": "sbom", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{"type": "Notary", "imageReferences": ["127.0.0.1:*"],
                                  "attestations": [attestation], **entry}]}]}}


OPENSSL = [{"all": [{"key": "{{ components[].name }}", "operator": "AnyIn", "value": ["openssl"]}]}]


def test_classic_attestation_with_conditions_passes_both_phases(attested: dict[str, Any]) -> None:
    repo, digest = attested["repo"], attested["digests"]["signed"]
    assert sorted(evaluate(classic(attested["ca"].pem, OPENSSL), f"{repo}:signed", Registry(now=_now()))) == [
        ("pass", "image verified"), ("pass", f"verified image attestations for {repo}@{digest}")]


def test_classic_signature_and_attestation_of_one_image(oci_registry: OciRegistry, attested: dict[str, Any],
                                                        tmp_path: Path) -> None:
    """attestors first (the image's Notary signature), then the attestations (kk verifyImage)."""
    ca = attested["ca"]
    leaf = make_leaf(tmp_path, ca, "dev@example.com", "https://issuer")
    sbom = tmp_path / "sbom.json"
    sbom.write_text(json.dumps({"bomFormat": "CycloneDX", "components": [{"name": "openssl"}]}))
    image = f"{attested['repo']}:both"
    digest = oci_registry.push(image, "--notary", notary_chain(leaf), leaf.private, "--referrer", SBOM, sbom,
                               "--referrer-notary", notary_chain(leaf), leaf.private)
    pol = classic(ca.pem, OPENSSL, attestors=[{"entries": [{"certificates": {"cert": ca.pem}}]}])
    assert sorted(evaluate(pol, image, Registry(now=_now()))) == [
        ("pass", "image verified"), ("pass", f"verified image attestations for {attested['repo']}@{digest}")]
    unsigned = f"{attested['repo']}:both-unsigned"
    oci_registry.push(unsigned, "--referrer", SBOM, sbom, "--referrer-notary", notary_chain(leaf), leaf.private)
    [(status, message), _] = sorted(evaluate(pol, unsigned, Registry(now=_now())), key=lambda r: r[1])
    assert status == "fail" and message.startswith(f"failed to verify image {unsigned}: .attestors[0].entries[0]: ")


def test_classic_registry_that_stops_answering_is_an_error_not_a_fail(attested: dict[str, Any]) -> None:
    down = _Failing(now=_now())
    down.error = RegistryError("GET referrers: connection refused", unreachable=True)
    results = evaluate(classic(attested["ca"].pem), f"{attested['repo']}:signed", down)
    assert results and {status for status, _ in results} == {"error"}, results


@pytest.mark.parametrize("why", ["no attestors", "rule context", "validate"])
def test_classic_what_kyrec_does_not_decide_is_undetermined(attested: dict[str, Any], why: str) -> None:
    """No attestors (Kyverno's CLI v1.17.2 dereferences the missing certificates and panics); conditions with
    a rule context (kyrec asks the registry before loading it); the entry's `validate`."""
    pol = classic(None if why == "no attestors" else attested["ca"].pem, OPENSSL,
                  **({"validate": {"deny": {"conditions": {"any": []}}}} if why == "validate" else {}))
    if why == "rule context":
        pol["spec"]["rules"][0]["context"] = [{"name": "x", "variable": {"value": 1}}]
    results = evaluate(pol, f"{attested['repo']}:signed", Registry(now=_now()))
    assert results and all(status == UNDETERMINED and "needs-registry" in message for status, message in results), \
        results
    if why == "rule context":
        assert "attestation conditions need the rule's context" in results[0][1]


class _BadGzip(Registry):
    """The test registry, except that every blob claims gzip (its magic bytes) and is not."""

    def blob(self, ref: ImageRef, digest: str) -> bytes:
        return b"\x1f\x8b not gzip"


def test_a_layer_that_is_not_the_gzip_it_claims_is_a_failure_not_a_crash(attested: dict[str, Any]) -> None:
    image = f"{attested['repo']}:unsigned"
    with pytest.raises(notary.AttestationError):
        notary.fetch_attestations(_BadGzip(now=_now()), image, SBOM, "")    # no certificates: not verified
    found = notary.referrers(Registry(), notary.parse_ref(image), attested["digests"]["unsigned"], SBOM)
    with pytest.raises(RegistryError):
        notary.referrer_payload(_BadGzip(now=_now()), image, found[0])
