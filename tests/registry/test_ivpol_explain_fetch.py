"""explain of an ImageValidatingPolicy whose image fetch fails with `--registry`: the matchImageReferences step
says what failed (the registry's own error, as the policy's result `failed to evaluate policy: ...` says it),
not that it needs one; Kyverno stops at the first failed fetch (kk:
pkg/imageverification/evaluator/policy.go Evaluate, ictx.AddImages). Offline the step gives the cause eval's
result gives (needs-registry, naming --registry): nothing was fetched."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.registry.failing import failing_host

PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
POLICY = {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
          "metadata": {"name": "signed"},
          "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                   "attestors": [{"name": "signer", "cosign": {"key": {"data": "unused"},
                                                               "ctlog": {"insecureIgnoreTlog": True}}}],
                   "validations": [{"expression": "true", "message": "unexpected"}]}}


@pytest.fixture
def failing() -> Iterator[Callable[[str], str]]:
    stops: list[Any] = []
    yield lambda mode: failing_host(mode, stops)
    for stop in stops:
        stop()


def steps(tree: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield tree
    for child in tree.get("children") or ():
        yield from steps(child)


def explain(tmp_path: Path, images: list[str], *flags: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the matchImageReferences step, the explanation's result) of explain on one Pod with `images`."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(POLICY))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    done = CliRunner().invoke(cli, ["explain", "Pod/p", "-p", str(tmp_path / "policy.yaml"), "-r",
                                    str(tmp_path / "pod.yaml"), "--no-mutate", "-o", "json", *flags])
    assert done.exit_code == 0, done.output
    [explanation] = json.loads(done.stdout)["explanations"]
    [step] = [s for s in steps(explanation["tree"]) if s["name"] == "matchImageReferences"]
    [result] = [s for s in explanation["tree"]["children"] if s["name"] == "result"]
    return step, result


def test_a_failed_fetch_is_said_as_the_registry_said_it(failing: Callable[[str], str], tmp_path: Path) -> None:
    missing, down = failing("404"), failing("down")
    first, second = f"{missing}/app:v1", f"{down}/app:v1"
    step, result = explain(tmp_path, [first, second], "--registry")
    assert step["outcome"] == "fetch failed"
    by_image = {s["name"]: (s["outcome"], s.get("detail", "")) for s in step["children"]}
    error = f"GET http://{missing}/v2/app/manifests/v1: 404"
    assert by_image[first][0] == "error"
    assert by_image[first][1].startswith(f"Kyverno fetches it from the registry, which failed: {error}")
    # Kyverno stops at the first failure: the next image is not fetched
    assert by_image[second] == ("matched", "not fetched: an earlier image's fetch failed")
    assert "needs-registry" not in json.dumps(step)
    # the same error as the policy's result
    assert result["outcome"] == "error" and f"failed to evaluate policy: {error}" in result["detail"]


def test_offline_the_step_names_the_switch(failing: Callable[[str], str], tmp_path: Path) -> None:
    image = f"{failing('404')}/app:v1"
    step, result = explain(tmp_path, [image])
    assert step["outcome"] == "needs registry"
    assert [(s["name"], s["outcome"], s["detail"]) for s in step["children"]] == [
        (image, "matched", "Kyverno fetches it from the registry (needs-registry: kyrec reads it only with "
                           "--registry)")]
    # the step and the result give one cause, as eval's result does
    assert result["outcome"] == "undetermined" and "needs-registry: " in result["detail"] \
        and "kyrec reads only with --registry" in result["detail"] and "no registry access" not in json.dumps(step)
    assert "which failed" not in json.dumps(step)
