"""Classic verifyImages `keyless` attestors with `--registry`, keyless-style: signatures carrying a leaf
certificate from a test CA (push.sh --sign KEY --cert CERT --chain CHAIN), the policy naming the root
(kk: pkg/cosign/cosign.go buildCosignOptions, matchSignatures; cosign verifyInternal, TrustedCert). The
good chain, another root, another subject or issuer, an expired certificate, wildcards and regular
expressions are held against Kyverno's CLI in tests/consistency/test_registry_oracle.py; these are the
cases around them: a chain through an intermediate, what kyrec leaves undetermined, a bad expression."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document, Source
from tests.registry.fixture import OciRegistry
from tests.registry.keys import TestCA, make_ca, make_leaf

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
SUBJECT, ISSUER = "https://github.com/org/repo/.github/workflows/release.yaml@refs/heads/main", \
    "https://token.actions.githubusercontent.com"


def policy(roots: str, **keyless: Any) -> dict[str, Any]:
    entry = {"roots": roots, "subject": SUBJECT, "issuer": ISSUER,
             "rekor": {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"}, "ctlog": {"ignoreSCT": True},
             **keyless}
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "keyless"},
            "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{"imageReferences": ["127.0.0.1:*"],
                                  "attestors": [{"entries": [{"keyless": entry}]}]}]}]}}


def evaluate(pol: dict[str, Any], image: str) -> list[tuple[str, str]]:
    policies = classify([Document(pol, Source("p.yaml", 1))])
    assert not policies.errors, policies.errors
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": image}]}}
    # certificates are checked at the run's time: the wall clock, as the CLI's default --now (the test CA's
    # certificates are made relative to it)
    registry = Registry(now=datetime.datetime.now(datetime.timezone.utc))
    outcome = run_eval(policies, [Document(pod, Source("r.yaml", 1))], [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW, registry=registry, classic=ClassicOptions(registry=registry)))
    assert not outcome.errors, outcome.errors
    return [(r.result, r.message) for r in outcome.results]


@pytest.fixture
def signed(oci_registry: OciRegistry, tmp_path: Path) -> tuple[str, TestCA, TestCA]:
    """An image signed by a leaf of an intermediate CA (a URI identity, as GitHub's workflows have): the
    chain annotation holds the intermediate and the root."""
    root = make_ca("test root")
    intermediate = make_ca("test intermediate", parent=root)
    leaf = make_leaf(tmp_path, intermediate, SUBJECT, ISSUER)
    image = f"{oci_registry.repo('keyless')}:v1"
    oci_registry.push(image, "--sign", leaf.private, "--cert", leaf.cert, "--chain", leaf.chain)
    return image, root, intermediate


def test_a_chain_through_an_intermediate(signed: tuple[str, TestCA, TestCA]) -> None:
    image, root, intermediate = signed
    assert [s for s, _ in evaluate(policy(root.pem), image)] == ["pass", "pass"]
    # the intermediate itself as the root works too (Go's x509.Verify stops at any trusted certificate)
    assert [s for s, _ in evaluate(policy(intermediate.pem), image)] == ["pass", "pass"]
    # the chain annotation's last certificate is never trusted: another root fails
    [(status, message), _] = evaluate(policy(make_ca("another root").pem), image)
    assert status == "fail" and "cert verification failed: x509: certificate signed by unknown authority" in message


def test_an_intermediate_missing_from_the_chain_fails(oci_registry: OciRegistry, tmp_path: Path) -> None:
    root = make_ca("test root")
    intermediate = make_ca("test intermediate", parent=root)
    leaf = make_leaf(tmp_path, intermediate, SUBJECT, ISSUER)
    leaf.chain.write_text(root.pem)              # the intermediate left out
    image = f"{oci_registry.repo('keyless')}:v1"
    oci_registry.push(image, "--sign", leaf.private, "--cert", leaf.cert, "--chain", leaf.chain)
    [(status, message), _] = evaluate(policy(root.pem), image)
    assert status == "fail" and "certificate signed by unknown authority" in message


def test_what_kyrec_does_not_verify_stays_undetermined(signed: tuple[str, TestCA, TestCA]) -> None:
    image, root, _ = signed
    # Fulcio's roots (no `roots`) come from Sigstore's TUF repository; SCTs need the CT log's keys;
    # additionalExtensions are not read
    extensions = {"githubWorkflowTrigger": "push"}
    for pol in (policy(""), policy(root.pem, ctlog={}), policy(root.pem, additionalExtensions=extensions)):
        [(status, message)] = evaluate(pol, image)
        assert status == UNDETERMINED and message.startswith("needs-registry: "), pol


def test_without_the_runs_time_keyless_is_undetermined(signed: tuple[str, TestCA, TestCA]) -> None:
    image, root, _ = signed
    policies = classify([Document(policy(root.pem), Source("p.yaml", 1))])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": image}]}}
    outcome = run_eval(policies, [Document(pod, Source("r.yaml", 1))], [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW, classic=ClassicOptions(registry=Registry())))
    assert [r.result for r in outcome.results] == [UNDETERMINED]


def test_an_expired_certificate_is_checked_at_the_runs_time(oci_registry: OciRegistry, tmp_path: Path) -> None:
    root = make_ca("test root")
    leaf = make_leaf(tmp_path, root, SUBJECT, ISSUER, expired=True)
    image = f"{oci_registry.repo('keyless')}:v1"
    oci_registry.push(image, "--sign", leaf.private, "--cert", leaf.cert, "--chain", leaf.chain)
    [(status, message), _] = evaluate(policy(root.pem), image)
    assert status == "fail" and message.endswith("expected a signed timestamp to verify an expired certificate")


def test_identity_by_regular_expression_and_a_bad_one(signed: tuple[str, TestCA, TestCA]) -> None:
    image, root, _ = signed
    regexps = {"subject": "", "issuer": "", "subjectRegExp": r"^https://github\.com/org/", "issuerRegExp": "github"}
    assert [s for s, _ in evaluate(policy(root.pem, **regexps), image)] == ["pass", "pass"]
    # kk matchCertificateData: a bad expression is the attestor's failure, never a crash
    [(status, message), _] = evaluate(policy(root.pem, subject="", subjectRegExp="(unclosed"), image)
    assert status == "fail" and "invalid regexp for subject: (unclosed : " in message
