"""Notary (notation) signatures with `--registry` against the test registry: signatures made and stored by
notation-go itself (push --notary, tests/registry/notary.go), JWS and COSE envelopes, verified by classic
`verifyImages` `type: Notary` rules (`certificates`) and an ImageValidatingPolicy's `notary` attestor on
signed, unsigned, wrongly signed (another CA), tampered and expired signatures; the referrers tag-schema
fallback; what kyrec does not decide (a revocation responder); a registry that is down; the offline default
(kk: pkg/notary/notary.go, pkg/imageverification/imageverifiers/notary, notation-go notation.Verify)."""

from __future__ import annotations

import datetime
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load import notary
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document, Source
from tests.registry import build
from tests.registry.fixture import OciRegistry
from tests.registry.keys import TestCA, make_ca, make_leaf, notary_chain

# the certificates are made now: the run's time must be now too (notation checks them against it)
NOW = datetime.datetime.now(datetime.timezone.utc)
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
SIGNED = "images.containers.map(i, verifyImageSignatures(i, [attestors.notary])).all(e, e > 0)"


def _now() -> datetime.datetime:
    """The registry's time: now (a signature's expiry is seconds after it was pushed)."""
    return datetime.datetime.now(datetime.timezone.utc)


def classic_policy(certs: str, **entry: Any) -> dict[str, Any]:
    # Enforce: Kyverno refuses an Audit policy whose entry patches digests (mutateDigest's default)
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "notary"},
            "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{"type": "Notary", "imageReferences": ["127.0.0.1:*"],
                                  "attestors": [{"entries": [{"certificates": {"cert": certs, **entry}}]}]}]}]}}


def ivpol(certs: dict[str, Any], **notary_fields: Any) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": "notary"},
            "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                     "attestors": [{"name": "notary", "notary": {"certs": certs, **notary_fields}}],
                     "validations": [{"expression": SIGNED, "message": "not verified"}]}}


def evaluate(pol: dict[str, Any], image: str, registry: Registry | None) -> list[tuple[str, str]]:
    policies = classify([Document(pol, Source("p.yaml", 1))])
    assert not policies.errors, policies.errors
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": image}]}}
    outcome = run_eval(policies, [Document(pod, Source("r.yaml", 1))], [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW, registry=registry,
                                           classic=ClassicOptions(registry=registry)))
    assert not outcome.errors, outcome.errors
    return [(r.result, r.message) for r in outcome.results]


@pytest.fixture(scope="module")
def signed(oci_registry: OciRegistry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    keys = tmp_path_factory.mktemp("notary-keys")
    ca, other = make_ca("kyrec notary root"), make_ca("another root")
    leaf, stranger = make_leaf(keys, ca, "dev@example.com", "https://issuer"), \
        make_leaf(keys, other, "dev@example.com", "https://issuer")
    chain, foreign = notary_chain(leaf), notary_chain(stranger)
    repo = oci_registry.repo("notary")
    pushes: dict[str, tuple[Any, ...]] = {
        "jws": ("--notary", chain, leaf.private),
        "cose": ("--notary", chain, leaf.private, "--cose"),
        "unsigned": (),
        "wrong": ("--notary", foreign, stranger.private),
        "tampered": ("--notary", chain, leaf.private, "--tamper"),
        "cose-tampered": ("--notary", chain, leaf.private, "--cose", "--tamper"),
        "expiring": ("--notary", chain, leaf.private, "--expiry", "1"),
    }
    digests = {tag: oci_registry.push(f"{repo}:{tag}", *args) for tag, args in pushes.items()}
    time.sleep(1.2)             # "expiring" has expired
    return {"ca": ca, "repo": repo, "digests": digests, "keys": keys}


def _failure(signed: dict[str, Any], tag: str) -> tuple[str, str]:
    """notation's reason for the tag's image: (what follows `failed to verify <repo>@<digest>: `, up to the
    signature's digest; what follows that digest)."""
    if tag == "unsigned":
        return (f"no signature is associated with \"{signed['repo']}@{signed['digests'][tag]}\", make sure the "
                "artifact was signed successfully", "")
    reason = {"wrong": "the signature's certificate chain does not contain any trusted certificate",
              "tampered": "signature is invalid. Error: crypto/ecdsa: verification error",
              "cose-tampered": "signature is invalid. Error: verification error",
              "expiring": "digital signature has expired on "}[tag]
    return "signature verification failed\nfailed to verify signature with digest sha256:", ", " + reason


@pytest.mark.parametrize("tag", ["jws", "cose"])
def test_classic_notary_signature_passes_both_phases(signed: dict[str, Any], tag: str) -> None:
    image = f"{signed['repo']}:{tag}"
    assert evaluate(classic_policy(signed["ca"].pem), image, Registry(now=_now())) == [
        ("pass", f"verified image signatures for {image}"), ("pass", "image verified")]


@pytest.mark.parametrize("tag", ["unsigned", "wrong", "tampered", "cose-tampered", "expiring"])
def test_classic_unsigned_wrong_tampered_and_expired_fail_with_notations_reason(signed: dict[str, Any],
                                                                               tag: str) -> None:
    repo, digest = signed["repo"], signed["digests"][tag]
    results = evaluate(classic_policy(signed["ca"].pem), f"{repo}:{tag}", Registry(now=_now()))
    prefix = (f"failed to verify image {repo}:{tag}: .attestors[0].entries[0]: failed to verify "
              f"{repo}@{digest}: ")
    [(status, message), validated] = sorted(results, key=lambda r: not r[1].startswith("failed"))
    assert status == "fail" and message.startswith(prefix), message
    head, reason = _failure(signed, tag)
    assert message[len(prefix):].startswith(head) and reason in message
    # the digest is patched in whatever the verification said (as for cosign): the validate phase
    assert validated == ("fail", f"unverified image {repo}@{digest}")


def test_classic_certificate_chain_entry_is_part_of_the_trust_store(signed: dict[str, Any]) -> None:
    """kk pkg/notary combineCerts: `cert` and `certChain` together are the CA trust store; the root given
    as certChain beside an unrelated cert verifies."""
    unrelated = make_ca("unrelated").pem
    image = f"{signed['repo']}:jws"
    assert evaluate(classic_policy(unrelated, certChain=signed["ca"].pem), image, Registry(now=_now()))[0][0] == "pass"
    assert evaluate(classic_policy(unrelated), image, Registry(now=_now()))[0][0] == "fail"


@pytest.mark.parametrize("tag", ["jws", "cose"])
def test_ivpol_notary_attestor_counts_a_verified_signature(signed: dict[str, Any], tag: str) -> None:
    image = f"{signed['repo']}:{tag}"
    assert evaluate(ivpol({"value": signed["ca"].pem}), image, Registry(now=_now())) == [("pass", "success")]


@pytest.mark.parametrize("tag", ["unsigned", "wrong", "tampered", "cose-tampered", "expiring"])
def test_ivpol_unsigned_wrong_tampered_and_expired_count_zero(signed: dict[str, Any], tag: str) -> None:
    assert evaluate(ivpol({"value": signed["ca"].pem}), f"{signed['repo']}:{tag}", Registry(now=_now())) == [
        ("fail", "not verified")]


@pytest.mark.parametrize("cose", [False, True])
def test_rsa_pss_and_an_intermediate_ca(oci_registry: OciRegistry, signed: dict[str, Any], cose: bool) -> None:
    """An RSA 2048 leaf (PS256: RSASSA-PSS) issued by an intermediate of the trusted root; the chain
    leaf -> intermediate -> root; trusting the intermediate alone verifies too (notation trusts a chain
    that contains a trusted certificate); trusting another root does not."""
    root = make_ca("pss root")
    intermediate = make_ca("pss intermediate", parent=root)
    leaf = make_leaf(signed["keys"], intermediate, "dev@example.com", "https://issuer", rsa_key=True)
    image = f"{signed['repo']}:pss-{'cose' if cose else 'jws'}"
    oci_registry.push(image, "--notary", notary_chain(leaf), leaf.private, *(["--cose"] if cose else []))
    for trusted, verdict in ((root.pem, "pass"), (intermediate.pem, "pass"), (signed["ca"].pem, "fail")):
        assert evaluate(classic_policy(trusted), image, Registry(now=_now()))[0][0] == verdict
    tampered = f"{signed['repo']}:pss-tampered-{'cose' if cose else 'jws'}"
    oci_registry.push(tampered, "--notary", notary_chain(leaf), leaf.private, "--tamper",
                      *(["--cose"] if cose else []))
    outcome = notary.verify_signatures(Registry(now=_now()), tampered, root.pem)
    error = "verification error" if cose else "crypto/rsa: verification error"
    assert outcome.verified == 0 and outcome.reasons[0].endswith(f"signature is invalid. Error: {error}")


def test_ivpol_tsa_certs_demand_a_timestamp(signed: dict[str, Any]) -> None:
    """With tsaCerts notation's trust policy has a TSA store and (verifyTimestamp: always) requires a timestamp
    countersignature, which notation-go's signer without a timestamper does not add."""
    pol = ivpol({"value": signed["ca"].pem}, tsaCerts={"value": make_ca("tsa").pem})
    assert evaluate(pol, f"{signed['repo']}:jws", Registry(now=_now())) == [("fail", "not verified")]
    outcome = notary.verify_signatures(Registry(now=_now()), f"{signed['repo']}:jws", signed["ca"].pem,
                                       make_ca("tsa").pem)
    assert outcome.verified == 0
    assert outcome.reasons[0].endswith("no timestamp countersignature was found in the signature envelope")


def test_ivpol_notary_attestor_on_an_intoto_attestation_is_kyvernos_error(signed: dict[str, Any]) -> None:
    """kk impl.go verify_image_attestations_string_string_stringarray: a notary attestor verifies only OCI 1.1
    referrer attestations; an in-toto one is the function's error."""
    pol = ivpol({"value": signed["ca"].pem})
    pol["spec"]["attestations"] = [{"name": "prov", "intoto": {"type": "https://slsa.dev/provenance/v0.2"}}]
    pol["spec"]["validations"] = [{"expression": "verifyAttestationSignatures(images.containers[0], "
                                                 "attestations.prov, [attestors.notary]) > 0"}]
    [(status, message)] = evaluate(pol, f"{signed['repo']}:jws", Registry(now=_now()))
    assert status == "error" and "notary verifier only supports oci 1.1 referrers as attestations" in message


def test_ivpol_certs_expression_is_not_decided(signed: dict[str, Any]) -> None:
    [(status, message)] = evaluate(ivpol({"expression": "'x'"}), f"{signed['repo']}:jws", Registry(now=_now()))
    assert status == UNDETERMINED and "notary.certs.expression" in message


def test_without_registry_stays_needs_registry(signed: dict[str, Any]) -> None:
    image = f"{signed['repo']}:jws"
    for pol in (classic_policy(signed["ca"].pem), ivpol({"value": signed["ca"].pem})):
        results = evaluate(pol, image, None)
        assert results and all(s == UNDETERMINED and "needs-registry" in m for s, m in results), results


def test_a_revocation_responder_is_not_decided(oci_registry: OciRegistry, signed: dict[str, Any]) -> None:
    """notation would ask the OCSP responder the leaf names; kyrec contacts only registries: undetermined,
    never a pass or a fail."""
    ca = signed["ca"]
    assert isinstance(ca, TestCA)
    leaf = make_leaf(signed["keys"], ca, "dev@example.com", "https://issuer", ocsp="http://ocsp.invalid")
    image = f"{signed['repo']}:ocsp"
    oci_registry.push(image, "--notary", notary_chain(leaf), leaf.private)
    for pol in (classic_policy(ca.pem), ivpol({"value": ca.pem})):
        results = evaluate(pol, image, Registry(now=_now()))
        assert results and all(s == UNDETERMINED for s, _ in results), results
        assert any("revocation responder" in m for _, m in results), results


def test_a_missing_image_fails_in_kyvernos_words(signed: dict[str, Any]) -> None:
    """kk pkg/notary parseReferenceCrane: the image's HEAD failing is `failed to parse image reference`."""
    image = f"{signed['repo']}:missing"
    results = evaluate(classic_policy(signed["ca"].pem), image, Registry(now=_now()))
    assert any(s == "fail" and m.startswith(f"failed to verify image {image}: .attestors[0].entries[0]: failed to "
                                            f"parse image reference: {image}: GET http") for s, m in results), results
    assert ("fail", f"missing digest for {image}") in results


def test_a_registry_that_is_down_is_an_error_not_a_fail(signed: dict[str, Any]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        down = f"127.0.0.1:{sock.getsockname()[1]}"
    results = evaluate(classic_policy(signed["ca"].pem), f"{down}/app:v1", Registry(now=_now(), timeout=2))
    assert results and "fail" not in {s for s, _ in results}, results


def test_signatures_found_under_the_referrers_tag_schema(tmp_path: Path) -> None:
    """A registry without the OCI 1.1 referrers API (404): the signature is the index tagged sha256-<hex>,
    as oras-go stores it and go-containerregistry's remote.Referrers finds it."""
    registry = OciRegistry(build.build(), "--no-referrers")
    registry.start()
    try:
        ca = make_ca("tag schema root")
        leaf = make_leaf(tmp_path, ca, "dev@example.com", "https://issuer")
        repo = registry.repo("notary")
        digest = registry.push(f"{repo}:v1", "--notary", notary_chain(leaf), leaf.private, "--tag-schema")
        client = Registry(now=_now())
        ref = notary.parse_ref(f"{repo}:v1")
        with pytest.raises(notary.RegistryError) as refused:
            client.get(ref, f"referrers/{digest}", notary.INDEX_TYPE)
        assert refused.value.status == 404
        assert notary.verify_signatures(client, f"{repo}:v1", ca.pem).verified == 1
        assert evaluate(classic_policy(ca.pem), f"{repo}:v1", client)[0] == (
            "pass", f"verified image signatures for {repo}:v1")
    finally:
        registry.stop()
