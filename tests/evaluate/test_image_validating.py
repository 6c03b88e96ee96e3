"""ImageValidatingPolicy offline: Kyverno's ivpol engine order, and `undetermined` (needs-registry) wherever
the answer needs a registry or a signature check (kk: pkg/imageverification/evaluator/policy.go Evaluate,
pkg/cel/policies/ivpol/engine/engine.go handleMutation)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.pipeline import EvalOptions, EvalOutcome, run_eval
from kubectl_kyrec.load.policy.image_validating import parse_image_validating_policy
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document, Source

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
NOTARY = [{"name": "notary", "notary": {"certs": {"value": "-----BEGIN CERTIFICATE-----"}}}]


def ivpol(**spec: Any) -> Document:
    body = {"matchConstraints": PODS, "attestors": NOTARY, "matchImageReferences": [{"glob": "ghcr.io/*"}],
            "validations": [{"expression": "true"}], **spec}
    return Document({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
                     "metadata": {"name": "iv"}, "spec": body}, Source("p.yaml", 1))


def pod(name: str, *images: str, kind: str = "Pod", **labels: str) -> Document:
    containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    if kind == "Pod":
        spec: dict[str, Any] = {"containers": containers}
        api = "v1"
    else:
        spec = {"selector": {}, "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}}}
        api = "apps/v1"
    return Document({"apiVersion": api, "kind": kind,
                     "metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec},
                    Source("r.yaml", 1))


def run(policy: Document, *resources: Document, provider: Any = None, extra: tuple[Document, ...] = ()
        ) -> EvalOutcome:
    policies = classify([policy, *extra])
    assert not policies.errors, policies.errors
    return run_eval(policies, list(resources), list(resources), kinds=KindTable(),
                    libraries=library_factory(LibraryContext(now=NOW, provider=provider or EmptyProvider())),
                    options=EvalOptions(now=NOW))


def only(outcome: EvalOutcome) -> tuple[str, str, str]:
    assert not outcome.errors, outcome.errors
    [result] = outcome.results
    return result.rule, result.result, result.message


def test_a_signature_check_is_undetermined_never_a_pass() -> None:
    policy = ivpol(validations=[{"expression": "images.containers.map(i, verifyImageSignatures(i, "
                                               "[attestors.notary])).all(e, e > 0)"}])
    rule, status, message = only(run(policy, pod("p", "ghcr.io/kyverno/x:signed")))
    assert (rule, status) == ("iv", UNDETERMINED)
    assert message.startswith("needs-registry: ")
    assert "ghcr.io/kyverno/x:signed" in message


def test_unmatched_images_need_no_registry() -> None:
    # Kyverno fetches only images matchImageReferences matches, and counts an unmatched one 0 verified
    policy = ivpol(validations=[{"expression": "images.containers.map(i, verifyImageSignatures(i, "
                                               "[attestors.notary])).all(e, e == 0)"}])
    assert only(run(policy, pod("p", "docker.io/nginx:1"))) == ("iv", "pass", "success")
    failing = ivpol(validations=[{"expression": "images.containers.all(i, verifyImageSignatures(i, "
                                                "[attestors.notary]) > 0)", "message": "unsigned"}])
    assert only(run(failing, pod("p", "nginx"))) == ("iv", "fail", "unsigned")


def test_the_prefetch_makes_any_matched_image_undetermined_and_says_what_follows() -> None:
    policy = ivpol(validations=[{"expression": "object.metadata.name == 'ok'", "message": "bad name"}])
    rule, status, message = only(run(policy, pod("p", "ghcr.io/a/b:1")))
    assert status == UNDETERMINED
    assert message.endswith("; if the fetch succeeds: fail (bad name)")


def test_supplied_image_data_lets_the_rest_be_decided() -> None:
    context = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
               "spec": {"images": [{"image": "ghcr.io/a/b:1", "resolvedImage": "ghcr.io/a/b@sha256:00",
                                    "registry": "ghcr.io", "repository": "a/b", "tag": "1",
                                    "config": {"config": {"User": "1000"}}}]}}
    provider = ObjectsProvider(context_file=context)
    policy = ivpol(validations=[
        {"expression": "image.GetMetadata(images.containers[0]).config.config.User != ''", "message": "root"}])
    assert only(run(policy, pod("p", "ghcr.io/a/b:1"), provider=provider)) == ("iv", "pass", "success")
    # data for one image does not answer for another
    assert only(run(policy, pod("p", "ghcr.io/a/b:1", "ghcr.io/c/d:2"), provider=provider))[1] == UNDETERMINED
    # getImageData answers with the same data (Kyverno's has image.GetMetadata's fields)
    fetched = ivpol(validations=[{"expression": "getImageData(images.containers[0]).config.config.User == '1000'"}])
    assert only(run(fetched, pod("p", "ghcr.io/a/b:1"), provider=provider)) == ("iv", "pass", "success")
    # and a signature check stays undetermined with the data
    signed = ivpol(validations=[{"expression": "verifyImageSignatures(images.containers[0], [attestors.notary]) > 0"}])
    assert only(run(signed, pod("p", "ghcr.io/a/b:1"), provider=provider))[1] == UNDETERMINED


def test_false_match_condition_gives_no_response() -> None:
    policy = ivpol(matchConditions=[{"name": "prod", "expression": "object.metadata.name == 'prod'"}])
    outcome = run(policy, pod("p", "nginx"))
    assert outcome.results == [] and not outcome.errors


def test_exception_skips_before_any_image_is_fetched() -> None:
    exception = Document({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "PolicyException",
                          "metadata": {"name": "e", "namespace": "default"},
                          "spec": {"policyRefs": [{"name": "iv", "kind": "ImageValidatingPolicy"}],
                                   "matchConditions": [{"name": "n", "expression": "object.metadata.name == 'p'"}]}},
                         Source("e.yaml", 1))
    outcome = run(ivpol(), pod("p", "ghcr.io/a/b:1"), extra=(exception,))
    # Kyverno keys the exception through a pointer to a pointer, which MetaNamespaceKeyFunc cannot key: ""
    # (v1.17.2's CLI: `rule is skipped due to policy exception: `)
    assert only(outcome) == ("exception", "skip", "rule is skipped due to policy exception: ")
    assert outcome.results[0].properties["exceptions"] == "e"


def test_autogen_reads_the_pod_template_and_keeps_the_policy_name() -> None:
    policy = ivpol(validations=[{"expression": "object.spec.containers.size() == 1", "message": "one"}])
    deployment = pod("d", "nginx", "busybox", kind="Deployment")
    rule, status, message = only(run(policy, deployment))
    assert (rule, status, message) == ("iv", "fail", "one")


def test_undetermined_is_never_reported_and_fail_is() -> None:
    undetermined = run(ivpol(validations=[{"expression": "getImageData(images.containers[0]) != null"}]),
                       pod("p", "nginx"))
    assert [(r.result, reported) for r, reported in undetermined.pairs] == [(UNDETERMINED, False)]
    failing = run(ivpol(validations=[{"expression": "false"}]), pod("p", "nginx"))
    assert [(r.result, r.source, reported) for r, reported in failing.pairs] == [
        ("fail", "KyvernoImageValidatingPolicy", True)]


def test_an_undeclared_attestation_is_kyvernos_error_not_undetermined() -> None:
    policy = ivpol(validations=[{"expression": "extractPayload(images.containers[0], 'sbom') != null"}])
    rule, status, message = only(run(policy, pod("p", "nginx")))
    assert (rule, status) == ("evaluation", "error")
    assert "attestation not found in policy: sbom" in message


def test_cel_image_references_and_custom_extractors() -> None:
    policy = ivpol(matchImageReferences=[{"expression": "parseImageReference(ref).registry() == 'quay.io'"}],
                   images=[{"name": "all", "expression": "[object.metadata.annotations.img]"}],
                   validations=[{"expression": "images.all.size() == 1 && images.containers.size() == 1"}])
    doc = pod("p", "nginx")
    doc.obj["metadata"]["annotations"] = {"img": "quay.io/x/y:1"}
    assert only(run(policy, doc))[1] == UNDETERMINED       # quay.io/x/y:1 is fetched first
    doc.obj["metadata"]["annotations"] = {"img": "ghcr.io/x/y:1"}
    assert only(run(policy, doc)) == ("iv", "pass", "success")


def test_bad_glob_and_missing_reference_are_load_errors() -> None:
    with pytest.raises(InputError, match=r"matchImageReferences\[0\]: Invalid value: either glob or expression"):
        parse_image_validating_policy(ivpol(matchImageReferences=[{}]))
    outcome = run(ivpol(matchImageReferences=[{"glob": "ghcr.io/[a"}]), pod("p", "nginx"))
    assert [e.message for e in outcome.errors] == [
        "ImageValidatingPolicy \"iv\": spec.matchImageReferences[0].glob: Invalid value: 'ghcr.io/[a': "
        "unexpected end of input: unclosed '['"]


def test_the_namespaced_kind_is_served_from_v1beta1_only() -> None:
    doc = ivpol()
    doc.obj.update(kind="NamespacedImageValidatingPolicy", apiVersion="policies.kyverno.io/v1alpha1")
    with pytest.raises(InputError, match="unknown version 'policies.kyverno.io/v1alpha1'"):
        parse_image_validating_policy(Document(doc.obj, doc.source))
    doc.obj["apiVersion"] = "policies.kyverno.io/v1beta1"
    policy = parse_image_validating_policy(Document(doc.obj, doc.source))
    assert policy.meta.namespace == "default"     # applied without one, as kubectl puts it
