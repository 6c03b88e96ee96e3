"""`kyrec test` and `image.GetMetadata(ref)` in a MutatingPolicy, a DeletingPolicy and a GeneratingPolicy, as
tests/testrun/test_testrun_image_metadata.py checks it for the validating kinds: the default mode keeps
Kyverno's CLI's answer (its fake provider's error: kk pkg/cel/libs/fake_context.go), `--strict` decides as a
cluster (needs-registry without `--registry`, the registry with it), and every row's warning says what a
cluster gives, GeneratingPolicy rows too (their generation was taken to be the same in both modes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.consistency.test_image_kinds_registry import DPOL, GPOL, MPOL
from tests.registry.fixture import OciRegistry
from tests.testrun.test_testrun_image_metadata import run

FLAGS = {"mpol-digest": "isMutatingPolicy", "dpol-digest": "isDeletingPolicy", "gpol-digest": "isGeneratingPolicy"}


def write_suite(tmp_path: Path, image: str) -> Path:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([MPOL, DPOL, GPOL]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": image}]}}))
    test: dict[str, Any] = {
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "image-kinds"},
        "policies": ["policies.yaml"], "resources": ["pods.yaml"],
        "results": [{"policy": name, flag: True, "kind": "Pod", "resources": ["p"], "result": "pass"}
                    for name, flag in FLAGS.items()]}
    (tmp_path / "kyverno-test.yaml").write_text(yaml.safe_dump(test))
    return tmp_path


def test_offline_the_default_keeps_the_clis_error_and_strict_is_needs_registry(tmp_path: Path) -> None:
    image = "registry.invalid/app:v1"
    path = write_suite(tmp_path, image)
    _, rows, warnings = run(path)
    cli_error = f"failed to get image data: image data for {image} not found in the context"
    assert rows[("mpol-digest", "p")] == ("error", f"failed to evaluate policy: {cli_error}")
    assert rows[("dpol-digest", "p")] == ("error", cli_error)
    _, strict, strict_warnings = run(path, "--strict")
    for name in FLAGS:
        actual, message = strict[(name, "p")]
        assert actual == "undetermined" and message.startswith("needs-registry: ") and "--registry" in message, \
            (name, message)
    # each row's warning gives a cluster's answer, in either mode: the GeneratingPolicy's too (it said the
    # CLI's error as a cluster's)
    for said in (warnings, strict_warnings):
        assert {w["policy"] for w in said} == set(FLAGS)
        assert all("in a cluster: fail (result-mismatch: needs-registry: " in w["message"] for w in said), said


def test_with_the_registry_strict_reads_it(oci_registry: OciRegistry, tmp_path: Path) -> None:
    image = f"{oci_registry.repo('testrun-kinds')}:v1"
    oci_registry.push(image)
    path = write_suite(tmp_path, image)
    code, rows, warnings = run(path, "--strict", "--registry")
    assert {name: rows[(name, "p")][0] for name in FLAGS} == dict.fromkeys(FLAGS, "pass")
    # the default mode keeps the CLI's error, and its warnings say a cluster passes (the CLI's excluded
    # GeneratingPolicy row passes as a cluster's does: no warning)
    _, rows, warnings = run(path, "--registry")
    assert rows[("mpol-digest", "p")][0] == rows[("dpol-digest", "p")][0] == "error"
    assert rows[("gpol-digest", "p")] == ("", "Excluded")
    assert {w["policy"] for w in warnings} == {"mpol-digest", "dpol-digest"}
    assert all("in a cluster: pass" in w["message"] for w in warnings), warnings
