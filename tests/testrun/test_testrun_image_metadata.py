"""`kyrec test` and `image.GetMetadata(ref)`: the default mode keeps Kyverno's CLI's answer (its fake context
provider holds only the test's context file's `images`, `--registry` or not: kk pkg/cel/libs/fake_context.go);
`--strict` decides as a cluster, which reads the image's registry (kk pkg/cel/libs/context.go GetImageData), as
it does for classic imageRegistry context entries: with `--registry` it reads the registry, without it the row
is `undetermined` (needs-registry) and the row's warning names that reason. A context file's image answers
first in both modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.registry.fixture import OciRegistry

PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
CHECK = "variables.m.manifest.schemaVersion == 2"


def vpol() -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "metadata"},
            "spec": {"validationActions": ["Audit"], "matchConstraints": PODS,
                     "variables": [{"name": "m", "expression": "image.GetMetadata(object.spec.containers[0].image)"}],
                     "validations": [{"expression": CHECK, "message": "unexpected image data"}]}}


def ivpol() -> dict[str, Any]:
    """An ImageValidatingPolicy selecting no image (nothing fetched before the validations) whose validation
    reads image.GetMetadata: the same library in its environment (kk ivpol compiler.go)."""
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": "image-metadata"},
            "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "nothing.example/*"}],
                     "attestors": [{"name": "a", "cosign": {"key": {"data": "unused"}}}],
                     "validations": [{"expression": "images.containers.all(i, image.GetMetadata(i).manifest"
                                                    ".schemaVersion == 2)", "message": "unexpected"}]}}


def write_suite(tmp_path: Path, images: dict[str, str], given: dict[str, Any] | None = None) -> Path:
    """A test over both policies, one Pod per image (name -> image), every row expecting pass; `given`: a
    context file's image data for one image."""
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([vpol(), ivpol()]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": image}]}} for name, image in images.items()]))
    test: dict[str, Any] = {
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "image-metadata"},
        "policies": ["policies.yaml"], "resources": ["pods.yaml"],
        "results": [{"policy": policy, "kind": "Pod", "resources": [name], "result": "pass",
                     **({"isValidatingPolicy": True} if policy == "metadata" else {})}
                    for policy in ("metadata", "image-metadata") for name in images]}
    if given is not None:
        (tmp_path / "context.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context", "metadata": {"name": "c"},
             "spec": {"images": [given]}}))
        test["context"] = "context.yaml"
    (tmp_path / "kyverno-test.yaml").write_text(yaml.safe_dump(test))
    return tmp_path


def run(path: Path, *flags: str) -> tuple[int, dict[tuple[str, str], tuple[str, str]], list[dict[str, Any]]]:
    """(exit code, (policy, pod name) -> (actual, message), warnings) of `kyrec test PATH -o json FLAGS`."""
    done = CliRunner().invoke(cli, ["test", str(path), "-o", "json", *flags])
    assert done.exit_code in (0, 1), done.output
    doc = json.loads(done.stdout)
    rows = {(r["policy"], r["resource"].split("/")[-1]): (r["actual"], r.get("message", "")) for r in doc["rows"]}
    return done.exit_code, rows, doc["warnings"]


def test_offline_strict_is_needs_registry_and_the_default_the_clis_error(tmp_path: Path) -> None:
    image = "registry.invalid/app:v1"
    path = write_suite(tmp_path, {"p": image})
    code, rows, warnings = run(path)
    assert code == 1
    cli_error = f"failed to get image data: image data for {image} not found in the context"
    assert rows[("metadata", "p")] == ("error", f"error: {cli_error}")
    assert rows[("image-metadata", "p")] == ("error", f"failed to evaluate policy: {cli_error}")
    code, strict, strict_warnings = run(path, "--strict")
    assert code == 1
    for policy in ("metadata", "image-metadata"):
        actual, message = strict[(policy, "p")]
        assert actual == "undetermined" and message.startswith("needs-registry: "), (policy, message)
        assert "--registry" in message and "not found in the context" not in message
    # both modes fail every row; each row's warning names the cluster's reason, in either mode
    for said in (warnings, strict_warnings):
        assert len(said) == 2 and {w["reason"] for w in said} == {"cluster-difference"}
        assert all("; in a cluster: fail (result-mismatch: needs-registry: " in w["message"] for w in said)


def test_a_context_files_image_answers_in_both_modes(tmp_path: Path) -> None:
    image = "registry.invalid/app:v1"
    path = write_suite(tmp_path, {"p": image}, {"image": image, "manifest": {"schemaVersion": 2}})
    for flags in ((), ("--strict",)):
        code, rows, warnings = run(path, *flags)
        assert (code, set(rows.values()), warnings) == (0, {("pass", "success")}, []), flags


def test_with_the_registry_strict_reads_it_and_the_default_does_not(oci_registry: OciRegistry,
                                                                    tmp_path: Path) -> None:
    repo = oci_registry.repo("testrun-metadata")
    oci_registry.push(f"{repo}:v1")
    path = write_suite(tmp_path, {"there": f"{repo}:v1", "gone": f"{repo}:gone"})
    code, rows, _ = run(path, "--strict", "--registry")
    assert code == 1
    assert rows[("metadata", "there")] == ("pass", "success")
    assert rows[("image-metadata", "there")] == ("pass", "success")
    # a fetch that fails is the expression's error, as eval gives it (never needs-registry with the switch)
    actual, message = rows[("metadata", "gone")]
    assert actual == "error" and message.startswith("error: failed to get image data: GET http://") \
        and "/manifests/gone: 404" in message, message
    # Kyverno's CLI reads no registry for image.GetMetadata whatever its flags (its fake provider)
    code, rows, _ = run(path, "--registry")
    assert code == 1 and {a for a, _ in rows.values()} == {"error"}
    assert all("not found in the context" in m for _, m in rows.values())
