"""`image.GetMetadata(ref)` (the kyverno.imagedata CEL library) with `--registry`: answered from the image's
registry as a cluster's Kyverno answers it (kk: pkg/cel/libs/context.go GetImageData ->
pkg/imageverification/imagedataloader FetchImageData, its ImageDescriptor's JSON), a failed fetch the
expression's error `failed to get image data: ...` (kk: pkg/cel/libs/imagedata/impl.go) whatever the cause,
never a value and never a `fail`; without the switch a provider that answers as Kyverno's CLI does (`kyrec
test`'s default mode) holds only a context file's `images` (kk: pkg/cel/libs/fake_context.go), and eval, which
decides as a cluster, says needs-registry."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source
from tests.registry.failing import ANSWERED, UNREACHABLE, failing_host
from tests.registry.fixture import OciRegistry
from tests.registry.keys import make_key

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
# every field of the ImageDescriptor a tag reference gives, and the config the test registry's images carry
# (go-containerregistry's random.Image: one layer, its history entry written by "random")
FIELDS = " && ".join((
    "m.image == object.spec.containers[0].image", "m.registry + '/' + m.repository + ':' + m.tag == m.image",
    "m.identifier == m.tag", "m.digest.startsWith('sha256:')", "m.resolvedImage == m.image + '@' + m.digest",
    "m.manifest.schemaVersion == 2", "size(m.manifest.layers) == 1",
    "m.manifest.config.digest.startsWith('sha256:')", "m.config.rootfs.type == 'layers'",
    "size(m.config.rootfs.diff_ids) == 1", "m.config.history[0].created_by == 'random'", "!has(m.imageIndex)"))


def vpol(expression: str = FIELDS) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "metadata"},
            "spec": {"validationActions": ["Audit"], "matchConstraints": PODS,
                     "variables": [{"name": "m", "expression": "image.GetMetadata(object.spec.containers[0].image)"}],
                     "validations": [{"expression": expression.replace("m.", "variables.m."),
                                      "message": "unexpected image data"}]}}


def pod(image: str, name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": image}]}}


def evaluate(pol: dict[str, Any], images: list[str], registry: Registry | None,
             context: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    policies = classify([Document(pol, Source("p.yaml", 1))])
    assert not policies.errors, policies.errors
    provider = ObjectsProvider(context_file=context, registry=registry)
    outcome = run_eval(policies, [Document(pod(image, f"p{i}"), Source("r.yaml", i + 1))
                                  for i, image in enumerate(images)], [],
                       kinds=KindTable(), libraries=library_factory(LibraryContext(now=NOW, provider=provider)),
                       options=EvalOptions(now=NOW, registry=registry))
    assert not outcome.errors, outcome.errors
    return [(r.result, r.message) for r in outcome.results]


@pytest.fixture
def images(oci_registry: OciRegistry, tmp_path: Path) -> dict[str, Any]:
    key = make_key(tmp_path, "ecdsa")
    repo = oci_registry.repo("metadata")
    digests = {"signed": oci_registry.push(f"{repo}:signed", "--sign", key.private),
               "unsigned": oci_registry.push(f"{repo}:unsigned")}
    return {"repo": repo, "digests": digests}


def test_the_registry_answers_with_kyvernos_fields(images: dict[str, Any]) -> None:
    repo = images["repo"]
    for tag in ("signed", "unsigned"):          # a signature is no part of the image's data
        assert evaluate(vpol(), [f"{repo}:{tag}"], Registry()) == [("pass", "success")], tag
    # the digest is the tag's now, and a digest reference keeps its own (no tag field then)
    digest = images["digests"]["unsigned"]
    resolved = f"m.resolvedImage == '{repo}:unsigned@{digest}'"
    assert evaluate(vpol(resolved), [f"{repo}:unsigned"], Registry()) == [("pass", "success")]
    by_digest = (f"m.digest == '{digest}' && m.identifier == m.digest && !has(m.tag) && "
                 f"m.resolvedImage == '{repo}@{digest}'")
    assert evaluate(vpol(by_digest), [f"{repo}@{digest}"], Registry()) == [("pass", "success")]
    # a failing check is the validation's fail, as any other value
    assert evaluate(vpol("m.manifest.schemaVersion == 1"), [f"{repo}:signed"], Registry()) == [
        ("fail", "unexpected image data")]


def test_without_the_switch_the_answer_is_unchanged(images: dict[str, Any]) -> None:
    image = f"{images['repo']}:signed"
    [(status, message)] = evaluate(vpol(), [image], None)
    # Kyverno's CLI offline: its fake context provider holds only the context file's images
    assert status == "error" and message == f"error: failed to get image data: image data for {image} not found " \
                                            "in the context"


def test_a_context_files_data_answers_before_the_registry(images: dict[str, Any]) -> None:
    image = f"{images['repo']}:signed"
    context = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
               "spec": {"images": [{"image": image, "resolvedImage": "given@sha256:0", "registry": "r",
                                    "repository": "given"}]}}
    check = "m.resolvedImage == 'given@sha256:0'"
    assert evaluate(vpol(check), [image], Registry(), context) == [("pass", "success")]
    # another image is the registry's
    assert evaluate(vpol(), [f"{images['repo']}:unsigned"], Registry(), context) == [("pass", "success")]


def test_a_missing_image_is_the_expressions_error(images: dict[str, Any]) -> None:
    image = f"{images['repo']}:nope"
    [(status, message)] = evaluate(vpol(), [image], Registry())
    # Kyverno: `failed to get image data: GET http://.../manifests/nope: MANIFEST_UNKNOWN: ...`
    assert status == "error" and message.startswith("error: failed to get image data: GET http://") \
        and "/manifests/nope: 404" in message, message
    # CEL absorbs the error where the other side decides, as for any other function's error
    assert evaluate(vpol("m.image == '' || true"), [image], Registry()) == [("pass", "success")]


@pytest.fixture
def failing() -> Iterator[Any]:
    stops: list[Any] = []
    yield lambda mode: failing_host(mode, stops)
    for stop in stops:
        stop()


@pytest.mark.parametrize("mode", ANSWERED + UNREACHABLE)
def test_every_registry_failure_is_an_error_in_bounded_time(failing: Any, mode: str) -> None:
    image = f"{failing(mode)}/app:v1"
    began = time.monotonic()
    results = evaluate(vpol(), [image, image, image], Registry(timeout=1.5))
    # one fetch a run per reference: three pods on a registry that never answers wait for it once
    assert time.monotonic() - began < 5
    assert len(results) == 3
    for status, message in results:
        assert status == "error" and message.startswith("error: failed to get image data: GET http"), message


def test_the_cli_switch_on_eval_and_explain(images: dict[str, Any], tmp_path: Path) -> None:
    repo = images["repo"]
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(vpol()))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod(f"{repo}:signed", "signed"),
                                                            pod(f"{repo}:gone", "gone")]))

    def kyrec(*args: str) -> tuple[int, Any]:
        done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", *args, "-p", str(tmp_path / "policy.yaml"),
                               "-r", str(tmp_path / "pods.yaml"), "--no-mutate", "-o", "json"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode != 70, done.stderr
        return done.returncode, json.loads(done.stdout)

    code, doc = kyrec("eval", "--registry")
    by_pod = {r["subject"]["name"]: (r["result"], r.get("message", "")) for r in doc["results"]}
    assert by_pod["signed"] == ("pass", "success")
    assert by_pod["gone"][0] == "error" and "failed to get image data: GET http" in by_pod["gone"][1]
    # without the switch eval decides as a cluster, which would read the registry: needs-registry, naming
    # the switch (Kyverno's CLI's "not found in the context" is `kyrec test`'s default mode only)
    code, doc = kyrec("eval")
    assert {r["result"] for r in doc["results"]} == {"undetermined"}
    assert all(r["message"].startswith("needs-registry: ") and "--registry" in r["message"]
               and "not found in the context" not in r["message"] for r in doc["results"])
    code, doc = kyrec("explain", "Pod/signed", "--registry")
    assert code == 0 and "not found in the context" not in json.dumps(doc) and '"pass"' in json.dumps(doc)


def test_in_an_image_validating_policy(images: dict[str, Any], tmp_path: Path) -> None:
    """The ImageValidatingPolicy environment holds the same library (kk ivpol compiler.go)."""
    repo = images["repo"]
    pol = {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
           "metadata": {"name": "metadata"},
           "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                    "attestors": [{"name": "a", "cosign": {"key": {"data": make_key(tmp_path).public}}}],
                    "validations": [{"expression": "images.containers.all(i, image.GetMetadata(i).manifest"
                                                   ".schemaVersion == 2 && image.GetMetadata(i).tag == 'signed')",
                                     "message": "unexpected"}]}}
    assert evaluate(pol, [f"{repo}:signed"], Registry()) == [("pass", "success")]
    assert evaluate(pol, [f"{repo}:unsigned"], Registry()) == [("fail", "unexpected")]
