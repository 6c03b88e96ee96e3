"""Classic verifyImages with `--registry` against the test registry: key attestors on signed, unsigned,
wrongly signed and tampered images, mutateDigest / verifyDigest / required on the patched resource, a
registry that is down, and the offline default unchanged (kk: pkg/engine/internal/imageverifier.go,
handlers/validation/validate_image.go)."""

from __future__ import annotations

import datetime
import socket
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
from tests.registry.keys import KeyPair, make_key

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def policy(*keys: KeyPair, ignore_tlog: bool = True, **entry: Any) -> dict[str, Any]:
    rekor = {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"} if ignore_tlog else {}
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "verify"},
            # Enforce: Kyverno refuses an Audit policy whose entry patches digests (mutateDigest's default)
            "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{"imageReferences": ["127.0.0.1:*"], **entry, "attestors": [{"entries": [
                    {"keys": {"publicKeys": k.public, "rekor": rekor, "ctlog": {"ignoreSCT": True}}}
                    for k in keys]}]}]}]}}


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


@pytest.fixture
def images(oci_registry: OciRegistry, tmp_path: Path) -> dict[str, Any]:
    key, other = make_key(tmp_path, "ecdsa"), make_key(tmp_path, "rsa")
    repo = oci_registry.repo()
    digests = {"signed": oci_registry.push(f"{repo}:signed", "--sign", key.private)}
    oci_registry.push(f"{repo}:unsigned")
    oci_registry.push(f"{repo}:wrong", "--sign", other.private)
    oci_registry.push(f"{repo}:tampered", "--sign", key.private, "--tamper")
    return {"key": key, "other": other, "repo": repo, "digests": digests}


def test_signed_image_passes_both_phases(images: dict[str, Any]) -> None:
    repo, digest = images["repo"], images["digests"]["signed"]
    results = evaluate(policy(images["key"]), f"{repo}:signed", Registry())
    # the mutate phase verifies the tag's image; mutateDigest patches the digest in, so the validate phase
    # (verifyDigest, required reading the annotation the mutate phase wrote) passes
    assert results == [("pass", f"verified image signatures for {repo}:signed"), ("pass", "image verified")]
    assert digest.startswith("sha256:")


@pytest.mark.parametrize("tag", ["unsigned", "wrong", "tampered"])
def test_unsigned_wrongly_signed_and_tampered_images_fail(images: dict[str, Any], tag: str) -> None:
    results = evaluate(policy(images["key"]), f"{images['repo']}:{tag}", Registry())
    status, message = results[0]
    assert status == "fail" and message.startswith(f"failed to verify image {images['repo']}:{tag}: "
                                                   ".attestors[0].entries[0].keys: ")
    assert {s for s, _ in results} == {"fail"}
    # kk Verify patches the digest in whatever the verification said: the validate phase names the image by
    # its digest
    assert results[1][1].startswith(f"unverified image {images['repo']}@sha256:")


def test_count_of_one_accepts_either_key(images: dict[str, Any]) -> None:
    pol = policy(images["other"], images["key"])
    pol["spec"]["rules"][0]["verifyImages"][0]["attestors"][0]["count"] = 1
    assert evaluate(pol, f"{images['repo']}:signed", Registry())[0][0] == "pass"
    assert evaluate(pol, f"{images['repo']}:wrong", Registry())[0][0] == "pass"
    # without count every entry must verify
    assert evaluate(policy(images["other"], images["key"]), f"{images['repo']}:signed", Registry())[0][0] == "fail"


def test_offline_and_rekor_stay_undetermined(images: dict[str, Any]) -> None:
    [(status, message)] = evaluate(policy(images["key"]), f"{images['repo']}:signed", None)
    assert status == UNDETERMINED and message.startswith("needs-registry: ")
    [(status, message)] = evaluate(policy(images["key"], ignore_tlog=False), f"{images['repo']}:signed", Registry())
    assert status == UNDETERMINED


def test_a_registry_that_is_down_is_an_error_never_a_fail(images: dict[str, Any]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    results = evaluate(policy(images["key"]), f"127.0.0.1:{port}/app:v1", Registry(timeout=2))
    # kk Verify: the digest lookup's RuleError first, then the verification's response, both errors
    # (handleRegistryErrors: a network error is the rule's error); Kyverno's validate phase then fails
    # (`missing digest`), which kyrec reports as an error: its cause is the network (docs/compatibility.md)
    assert [s for s, _ in results] == ["error", "error", "error"]
    assert results[0][1].startswith("failed to update digest: ") and "Connection refused" in results[0][1]
    assert results[1][1].startswith(f"failed to verify image 127.0.0.1:{port}/app:v1: ")
    assert results[2][1] == (f"missing digest for 127.0.0.1:{port}/app:v1 "
                             "(not a fail: the registry could not be reached)")


def test_a_missing_tag_is_the_registrys_answer(images: dict[str, Any]) -> None:
    # the registry answered (404): Kyverno's CLI v1.17.2 gives the digest lookup's error, the verification's
    # fail and the validate phase's `missing digest` fail
    image = f"{images['repo']}:gone"
    results = evaluate(policy(images["key"]), image, Registry())
    assert [s for s, _ in results] == ["error", "fail", "fail"]
    assert results[0][1].startswith(f"failed to update digest: failed to fetch image reference: {image}, error: GET ")
    assert "404" in results[0][1]
    assert results[2][1] == f"missing digest for {image}"


def _context_policy() -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "image-data"},
            "spec": {"background": False, "rules": [{
                "name": "layers", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "context": [{"name": "img", "imageRegistry": {
                    "reference": "{{ request.object.spec.containers[0].image }}"}}],
                "validate": {"message": "{{ img.resolvedImage }} {{ img.identifier }} has "
                                        "{{ length(img.manifest.layers) }}",
                             "deny": {"conditions": {"any": [
                                 {"key": "{{ img.manifest.schemaVersion }}", "operator": "Equals",
                                  "value": 2}]}}}}]}}


def test_image_registry_context_entries(images: dict[str, Any]) -> None:
    repo, digest = images["repo"], images["digests"]["signed"]
    [(status, message)] = evaluate(_context_policy(), f"{repo}:signed", Registry())
    # kk loaders/imagedata.go: resolvedImage is <repository name>@<digest>, identifier the tag
    assert (status, message) == ("fail", f"{repo}@{digest} signed has 1")
    [(status, message)] = evaluate(_context_policy(), f"{repo}:signed", None)
    assert status == UNDETERMINED
    [(status, message)] = evaluate(_context_policy(), f"{repo}:gone", Registry())
    assert status == "error" and f"failed to fetch image descriptor: {repo}:gone" in message


def test_several_keys_in_one_entry_and_the_deprecated_key_field(images: dict[str, Any]) -> None:
    repo = images["repo"]
    pol = policy(images["key"])
    entry = pol["spec"]["rules"][0]["verifyImages"][0]["attestors"][0]
    # kk ExpandStaticKeys: two PEM keys in one entry are two entries; count 1 needs one of them
    entry["entries"][0]["keys"]["publicKeys"] = images["other"].public + images["key"].public
    entry["count"] = 1
    assert evaluate(pol, f"{repo}:signed", Registry())[0][0] == "pass"
    del entry["count"]
    [first, *_] = evaluate(pol, f"{repo}:signed", Registry())
    assert first[0] == "fail" and ".attestors[0].entries[0].keys: " in first[1]
    # ImageVerification.Convert: `key` (with `rekor`) is one key attestor
    legacy = policy(images["key"])
    verify = legacy["spec"]["rules"][0]["verifyImages"][0]
    del verify["attestors"]
    verify.update(key=images["key"].public, rekor={"ignoreTlog": True})
    assert evaluate(legacy, f"{repo}:signed", Registry())[0] == ("pass", f"verified image signatures for {repo}:signed")
    assert evaluate(legacy, f"{repo}:wrong", Registry())[0][0] == "fail"
