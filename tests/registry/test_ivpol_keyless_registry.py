"""ImageValidatingPolicy cosign `keyless` attestors with `--registry`, on images signed keyless-style with a
test CA's certificates (push.sh --sign KEY --cert CERT --chain CHAIN).

Kyverno v1.17.2 checks such a signature's certificate chain against the trusted root of the attestor's TUF
repository, not the policy's `roots` (kk: pkg/imageverification/imageverifiers/cosign/opts.go checkOptions sets
CheckOpts.TrustedMaterial from TUF's trusted_root.json, and cosign ValidateAndUnpackCert prefers it to
RootCerts); kyrec reads no TUF repository. So a signature that passes every other check (its certificate's
key verifies it, the payload names the image, the certificate is valid now, an identity matches: cosign
verifyInternal, CheckCertificatePolicy) leaves the count `undetermined`, whichever CA issued it, and an image
none of whose signatures passes them counts 0 (Kyverno counts every verification error 0), so the policy
decides."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document, Source
from tests.registry.fixture import OciRegistry
from tests.registry.keys import make_ca, make_key, make_leaf

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
SUBJECT, ISSUER = "dev@example.com", "https://issuer.example"
SIGNED = "images.containers.map(i, verifyImageSignatures(i, [attestors.signer])).all(e, e > 0)"
TRUST_ROOT = "trusted root of the attestor's TUF repository"


def policy(roots: str, identities: list[dict[str, str]], *, ignore_tlog: bool = True,
           expression: str = SIGNED, key: str = "") -> dict[str, Any]:
    cosign: dict[str, Any] = {"keyless": {"identities": identities, "roots": roots}}
    if ignore_tlog:
        cosign["ctlog"] = {"insecureIgnoreTlog": True, "insecureIgnoreSCT": True}
    attestors = [{"name": "signer", "cosign": cosign}]
    if key:
        attestors.append({"name": "key", "cosign": {"key": {"data": key},
                                                    "ctlog": {"insecureIgnoreTlog": True}}})
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": "keyless"},
            "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                     "attestors": attestors,
                     "validations": [{"expression": expression, "message": "not signed"}]}}


def evaluate(pol: dict[str, Any], image: str, *, now: datetime.datetime | None = None,
             timed: bool = True) -> tuple[str, str]:
    policies = classify([Document(pol, Source("p.yaml", 1))])
    assert not policies.errors, policies.errors
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": image}]}}
    # certificates are checked at the run's time: the wall clock (the test CA's are made relative to it)
    registry = Registry(now=(now or datetime.datetime.now(datetime.timezone.utc)) if timed else None)
    outcome = run_eval(policies, [Document(pod, Source("r.yaml", 1))], [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW, registry=registry))
    assert not outcome.errors, outcome.errors
    [result] = outcome.results
    return result.result, result.message


@pytest.fixture(scope="module")
def images(oci_registry: OciRegistry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    keys = tmp_path_factory.mktemp("keys")
    ca, other_ca = make_ca(), make_ca("another CA")
    leaf = make_leaf(keys, ca, SUBJECT, ISSUER)
    key = make_key(keys, "ecdsa")
    repo = oci_registry.repo("keyless")
    pushed = {"good": (leaf, ()), "expired": (make_leaf(keys, ca, SUBJECT, ISSUER, expired=True), ()),
              "other-ca": (make_leaf(keys, other_ca, SUBJECT, ISSUER), ()), "tampered": (leaf, ("--tamper",))}
    for tag, (signer, extra) in pushed.items():
        oci_registry.push(f"{repo}:{tag}", "--sign", signer.private, "--cert", signer.cert, "--chain", signer.chain,
                          *extra)
    oci_registry.push(f"{repo}:unsigned")
    oci_registry.push(f"{repo}:key-signed", "--sign", key.private)
    return {"repo": repo, "roots": ca.pem, "key": key}


MATCHING = [{"subject": SUBJECT, "issuer": ISSUER}]


def test_a_signature_that_passes_every_other_check_waits_for_the_trust_root(images: dict[str, Any]) -> None:
    repo, roots = images["repo"], images["roots"]
    for tag in ("good", "other-ca"):        # Kyverno ignores `roots`: another CA may well be in its TUF root
        status, message = evaluate(policy(roots, MATCHING), f"{repo}:{tag}")
        assert status == UNDETERMINED and message.startswith("needs-registry") and TRUST_ROOT in message, tag
    # regular expressions (searched, as Go's MatchString), and one matching identity among several
    for identities in ([{"subjectRegExp": "^dev@", "issuerRegExp": "example$"}],
                       [{"subject": "eve@example.com", "issuer": ISSUER}, MATCHING[0]], [{"issuer": ISSUER}]):
        status, message = evaluate(policy(roots, identities), f"{repo}:good")
        assert status == UNDETERMINED and TRUST_ROOT in message, identities


def test_what_fails_whatever_the_trust_root_counts_zero(images: dict[str, Any]) -> None:
    repo, roots = images["repo"], images["roots"]
    cases = {
        # cosign CheckCertificatePolicy: the subject and the issuer are compared exactly
        "another subject": (policy(roots, [{"subject": "eve@example.com", "issuer": ISSUER}]), "good"),
        "a subject pattern": (policy(roots, [{"subject": "*@example.com", "issuer": ISSUER}]), "good"),
        "another issuer": (policy(roots, [{"subject": SUBJECT, "issuer": "https://other.example"}]), "good"),
        "a regexp that does not match": (policy(roots, [{"subjectRegExp": "^eve@"}]), "good"),
        # the log skipped and no timestamp: the certificate must be valid now
        "an expired certificate": (policy(roots, MATCHING), "expired"),
        "a tampered payload": (policy(roots, MATCHING), "tampered"),
        "no signature": (policy(roots, MATCHING), "unsigned"),
        "a signature without a certificate": (policy(roots, MATCHING), "key-signed"),
    }
    for name, (pol, tag) in cases.items():
        assert evaluate(pol, f"{repo}:{tag}") == ("fail", "not signed"), name
        counted = policy(roots, MATCHING, expression="verifyImageSignatures(images.containers[0], "
                                                     "[attestors.signer]) == 0")
        counted["spec"]["attestors"] = pol["spec"]["attestors"]
        assert evaluate(counted, f"{repo}:{tag}") == ("pass", "success"), name


def test_a_decided_zero_lets_another_attestor_decide(images: dict[str, Any]) -> None:
    repo = images["repo"]
    both = "verifyImageSignatures(images.containers[0], [attestors.signer, attestors.key]) == 1"
    pol = policy(images["roots"], MATCHING, expression=both, key=images["key"].public)
    assert evaluate(pol, f"{repo}:key-signed") == ("pass", "success")
    # the keyless one undecided: so is the count
    assert evaluate(pol, f"{repo}:good")[0] == UNDETERMINED


def test_what_kyrec_does_not_reach_stays_undetermined(images: dict[str, Any]) -> None:
    repo, roots = images["repo"], images["roots"]
    status, message = evaluate(policy(roots, MATCHING, ignore_tlog=False), f"{repo}:unsigned")
    assert status == UNDETERMINED and "transparency log" in message
    status, message = evaluate(policy(roots, [{"subjectExpression": "'dev@example.com'"}]), f"{repo}:good")
    assert status == UNDETERMINED and "subjectExpression" in message
    status, message = evaluate(policy(roots, MATCHING), f"{repo}:good", timed=False)
    assert status == UNDETERMINED and "run's time" in message
    # a registry that stopped answering says nothing about the signature
    pol = policy(roots, MATCHING)
    assert evaluate(pol, f"{repo}:nope")[0] == "error"          # the image's own fetch: Kyverno's error


def test_the_certificate_is_checked_at_the_runs_time(images: dict[str, Any]) -> None:
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)
    assert evaluate(policy(images["roots"], MATCHING), f"{images['repo']}:good", now=later) == ("fail", "not signed")
