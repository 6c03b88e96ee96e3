"""An image verification offline, the image's data given (a context file's images), reaches the signature
check itself (cel/kyverno_imageverify.py): its result is `undetermined` with the one needs-registry wording
(cel/decl.py `registry_needed`), which names `--registry`, in eval and explain alike. Before, it said
"(kyrec verifies no signature offline)" and never named the switch."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.consistency.test_image_kinds_registry import PODS, eval_results, kyrec, pod
from tests.registry.keys import make_key

IMAGE = "127.0.0.1:1/app:v1"        # never contacted: offline


def test_a_signature_check_offline_names_the_switch(tmp_path: Path) -> None:
    key = make_key(tmp_path)
    ivpol = {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
             "metadata": {"name": "verify-ivpol"},
             "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                      "attestors": [{"name": "a", "cosign": {"key": {"data": key.public}}}],
                      "validations": [{"expression": "images.containers.all(i, verifyImageSignatures(i, "
                                                     "[attestors.a]) > 0)", "message": "unsigned"}]}}
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump(ivpol))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(pod(IMAGE)))
    (tmp_path / "context.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
        "spec": {"images": [{"image": IMAGE, "digest": "sha256:" + "a" * 64, "registry": "127.0.0.1:1",
                             "repository": "app", "tag": "v1"}]}}))
    context = ("--context-file", str(tmp_path / "context.yaml"))
    status, message = eval_results(tmp_path, *context)["verify-ivpol"]
    assert status == "undetermined" and message.startswith("needs-registry: "), message
    assert f"verifyImageSignatures({IMAGE!r}): needs registry access to verify its signatures, which kyrec has " \
           "only with --registry" in message
    assert "verifies no signature offline" not in message
    _, doc = kyrec(tmp_path, "explain", "Pod/p", "-n", "default", "-r", str(tmp_path / "pods.yaml"), *context)
    [tree] = [e for e in doc["explanations"] if e["policy"] == "verify-ivpol"]
    assert [(r["result"], r["message"]) for r in tree["results"]] == [(status, message)]
