"""ImageValidatingPolicy with `--registry` against the test registry: verifyImageSignatures,
verifyAttestationSignatures and extractPayload on signed, unsigned, wrongly signed and tampered images, the
registry failures, and the offline default unchanged (kk: pkg/cel/libs/imageverify/impl.go,
pkg/imageverification/evaluator/policy.go)."""

from __future__ import annotations

import datetime
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.cosign import verify_attestations as cosign_attestations
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document, Source
from tests.registry.fixture import OciRegistry
from tests.registry.keys import KeyPair, make_key

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
PROVENANCE = "https://slsa.dev/provenance/v0.2"
SIGNED = "images.containers.map(i, verifyImageSignatures(i, [attestors.signer])).all(e, e > 0)"


def policy(key: KeyPair, *validations: str, ignore_tlog: bool = True) -> dict[str, Any]:
    cosign: dict[str, Any] = {"key": {"data": key.public}}
    if ignore_tlog:
        cosign["ctlog"] = {"insecureIgnoreTlog": True, "insecureIgnoreSCT": True}
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": "signed"},
            "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                     "attestors": [{"name": "signer", "cosign": cosign}],
                     "attestations": [{"name": "prov", "intoto": {"type": PROVENANCE}}],
                     "validations": [{"expression": v, "message": f"validation {i} failed"}
                                     for i, v in enumerate(validations or (SIGNED,))]}}


def pod(image: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": image}]}}


def evaluate(pol: dict[str, Any], image: str, registry: Registry | None) -> tuple[str, str]:
    policies = classify([Document(pol, Source("p.yaml", 1))])
    assert not policies.errors, policies.errors
    resource = Document(pod(image), Source("r.yaml", 1))
    outcome = run_eval(policies, [resource], [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW, registry=registry))
    assert not outcome.errors, outcome.errors
    [result] = outcome.results
    return result.result, result.message


@pytest.fixture
def images(oci_registry: OciRegistry, tmp_path: Path) -> dict[str, Any]:
    key, other = make_key(tmp_path, "ecdsa"), make_key(tmp_path, "ecdsa")
    predicate = tmp_path / "predicate.json"
    predicate.write_text(json.dumps({"builder": {"id": "https://ci.example/builder"}}))
    repo = oci_registry.repo()
    oci_registry.push(f"{repo}:signed", "--sign", key.private, "--attest", PROVENANCE, predicate,
                      "--key", key.private)
    oci_registry.push(f"{repo}:unsigned")
    oci_registry.push(f"{repo}:wrong", "--sign", other.private)
    oci_registry.push(f"{repo}:tampered", "--sign", key.private, "--tamper")
    return {"key": key, "other": other, "repo": repo}


def test_signatures_decide_the_validation(images: dict[str, Any]) -> None:
    repo, key = images["repo"], images["key"]
    assert evaluate(policy(key), f"{repo}:signed", Registry()) == ("pass", "success")
    for tag in ("unsigned", "wrong", "tampered"):
        assert evaluate(policy(key), f"{repo}:{tag}", Registry()) == ("fail", "validation 0 failed"), tag
    # the same image with the other key: signed by someone else
    assert evaluate(policy(images["other"]), f"{repo}:signed", Registry())[0] == "fail"
    assert evaluate(policy(images["other"]), f"{repo}:wrong", Registry())[0] == "pass"


def test_without_the_switch_nothing_is_contacted_and_the_answer_stays_undetermined(
        images: dict[str, Any]) -> None:
    status, message = evaluate(policy(images["key"]), f"{images['repo']}:signed", None)
    assert status == UNDETERMINED and message.startswith("needs-registry: ")


def test_attestations_and_their_payload(images: dict[str, Any]) -> None:
    repo, key = images["repo"], images["key"]
    attested = ("images.containers.all(i, verifyAttestationSignatures(i, attestations.prov, [attestors.signer]) > 0"
                " && extractPayload(i, attestations.prov).builder.id == 'https://ci.example/builder')")
    # kk cosign/verifier.go VerifyAttestationSignature: without a verified Rekor bundle (the log skipped, as
    # every key attestor kyrec verifies does) Kyverno v1.17.2 counts no attestor, even for a good envelope;
    # its CLI agrees (testdata/kyverno-truth/registry.json)
    for tag in ("signed", "unsigned"):
        assert evaluate(policy(key, attested), f"{repo}:{tag}", Registry()) == ("fail", "validation 0 failed")
    counted = "verifyAttestationSignatures(images.containers[0], attestations.prov, [attestors.signer]) == 0"
    assert evaluate(policy(key, counted), f"{repo}:signed", Registry()) == ("pass", "success")
    # the envelope itself is checked all the same (load/cosign.py): the signer's key verifies it, another not
    assert cosign_attestations(Registry(), f"{repo}:signed", key.public, PROVENANCE).verified == 1
    assert cosign_attestations(Registry(), f"{repo}:signed", images["other"].public, PROVENANCE).verified == 0


def test_a_key_attestor_that_needs_rekor_is_undetermined(images: dict[str, Any]) -> None:
    status, message = evaluate(policy(images["key"], ignore_tlog=False), f"{images['repo']}:signed", Registry())
    assert status == UNDETERMINED and "transparency log" in message


def test_a_missing_image_is_kyvernos_error_not_a_fail(images: dict[str, Any]) -> None:
    status, message = evaluate(policy(images["key"]), f"{images['repo']}:nope", Registry())
    # Kyverno's CLI v1.17.2: `failed to evaluate policy: GET http://.../manifests/nope: MANIFEST_UNKNOWN: ...`
    assert status == "error" and message.startswith("failed to evaluate policy: GET ") and "404" in message
    assert "failed to get imagedata" not in message


def test_a_registry_that_is_down_or_silent_is_an_error_in_bounded_time(images: dict[str, Any]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]          # closed again: nothing listens there
    status, message = evaluate(policy(images["key"]), f"127.0.0.1:{port}/app:v1", Registry())
    assert status == "error" and message.startswith("failed to evaluate policy: GET ")
    # one that accepts and never answers: the request's bound, then an error (never a hang, never a fail)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(5)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
    try:
        began = time.monotonic()
        status, message = evaluate(policy(images["key"]), f"127.0.0.1:{silent.getsockname()[1]}/app:v1",
                                   Registry(timeout=1.5))
        assert time.monotonic() - began < 10
        assert status == "error" and "timed out" in message
    finally:
        silent.close()
        for conn in held:
            conn.close()


def test_the_cli_switch(images: dict[str, Any], tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(yaml.safe_dump(policy(images["key"])))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump_all([{**pod(f"{images['repo']}:{tag}"),
                                         "metadata": {"name": tag, "namespace": "default"}}
                                        for tag in ("signed", "unsigned")]))

    def kyrec(*extra: str) -> tuple[int, dict[str, str]]:
        done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(policy_file),
                               "-r", str(pods), "--no-mutate", "-o", "json", *extra],
                              capture_output=True, text=True, timeout=120)
        rows = json.loads(done.stdout)["results"]
        return done.returncode, {r["subject"]["name"]: r["result"] for r in rows}

    code, by_pod = kyrec("--registry")
    assert (code, by_pod) == (1, {"signed": "pass", "unsigned": "fail"})
    code, by_pod = kyrec()
    assert set(by_pod.values()) == {UNDETERMINED}


def test_explain_and_test_take_the_switch(images: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy(images["key"])))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(
        [{**pod(f"{images['repo']}:{tag}"), "metadata": {"name": tag, "namespace": "default"}}
         for tag in ("signed", "tampered")]))
    (tmp_path / "kyverno-test.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "signed"},
        "policies": ["policy.yaml"], "resources": ["pods.yaml"],
        "results": [{"policy": "signed", "rule": "signed", "resources": ["signed"], "kind": "Pod",
                     "result": "pass"},
                    {"policy": "signed", "rule": "signed", "resources": ["tampered"], "kind": "Pod",
                     "result": "fail"}]}))

    def kyrec(*args: str) -> tuple[int, Any]:
        done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", *args, "-o", "json"], capture_output=True,
                              text=True, timeout=120)
        return done.returncode, json.loads(done.stdout)

    code, doc = kyrec("test", str(tmp_path), "--registry")
    assert code == 0 and {(r["resource"], r["actual"]) for r in doc["rows"]} == {
        ("default/signed", "pass"), ("default/tampered", "fail")}
    code, doc = kyrec("test", str(tmp_path))
    assert code == 1 and {r["actual"] for r in doc["rows"]} == {UNDETERMINED}
    code, doc = kyrec("explain", "Pod/signed", "-p", str(tmp_path / "policy.yaml"), "-r",
                      str(tmp_path / "pods.yaml"), "--no-mutate", "--registry")
    assert code == 0 and '"pass"' in json.dumps(doc) and "needs-registry" not in json.dumps(doc)
    code, doc = kyrec("explain", "Pod/signed", "-p", str(tmp_path / "policy.yaml"), "-r",
                      str(tmp_path / "pods.yaml"), "--no-mutate")
    assert "needs-registry" in json.dumps(doc)


def test_insecure_registry_needs_the_switch(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(tmp_path), "-r", str(tmp_path),
                           "--insecure-registry", "example.com"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--insecure-registry needs --registry" in done.stderr


def test_get_image_data_and_an_unverified_payload(images: dict[str, Any]) -> None:
    repo, key = images["repo"], images["key"]
    data = ("getImageData(images.containers[0]).resolvedImage.startsWith('" + repo + ":signed@sha256:')"
            " && getImageData(images.containers[0]).manifest.schemaVersion == 2"
            " && getImageData(images.containers[0]).tag == 'signed'")
    assert evaluate(policy(key, data), f"{repo}:signed", Registry()) == ("pass", "success")
    assert evaluate(policy(key, data), f"{repo}:signed", None)[0] == UNDETERMINED
    # kk imagedataloader GetPayload: extractPayload before verifyAttestationSignatures is an error
    early = "extractPayload(images.containers[0], attestations.prov).builder.id != ''"
    status, message = evaluate(policy(key, early), f"{repo}:signed", Registry())
    assert status == "error" and "cannot be fetch before verifying intoto attestation" in message
