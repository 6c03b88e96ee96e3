"""A verifyImages rule on a resource one of whose images is no image reference (`...:signe*`, which the API
server admits): Kyverno's image extraction fails for the whole resource and the rule gives no response,
whatever the other images. Recorded from Kyverno CLI v1.17.2 (`kubectl-kyverno apply POLICY --resource POD
--registry -p`): no result for the Pod below; two results (fail, error) once the first image is a reference.
kyrec verified the other images (a verdict where Kyverno has none)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

KEY = ("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8nXRh950IZbRj8Ra/N9sbqOPZrfM\n"
       "5/KAQN0/KjHcorm/J5yctVd7iEcnessRQjU917hmKO6JWVGHpDguIyakZA==\n-----END PUBLIC KEY-----")
POLICY = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "verify"},
          "spec": {"validationFailureAction": "Enforce", "background": False, "rules": [{
              "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
              "verifyImages": [{"imageReferences": ["127.0.0.1:*"], "attestors": [{"entries": [{"keys": {
                  "publicKeys": KEY,
                  "rekor": {"ignoreTlog": True}, "ctlog": {"ignoreSCT": True}}}]}]}]}]}}


def _results(tmp_path: Path, *images: str) -> list[tuple[str, str]]:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(POLICY))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "pod.yaml"),
                                   "-o", "json"])
    assert run.exit_code in (0, 1), run.output
    return [(r["rule"], r["result"]) for r in json.loads(run.stdout)["results"]]


def test_an_image_that_is_no_reference_leaves_the_rule_without_a_response(tmp_path: Path) -> None:
    assert _results(tmp_path, "127.0.0.1:5000/app:signe*", "127.0.0.1:1/x:unsigned") == []
    assert _results(tmp_path, "127.0.0.1:5000/app:signe*") == []


def test_with_every_image_a_reference_the_rule_answers(tmp_path: Path) -> None:
    # offline the answer is undetermined (needs-registry): the rule responds, as Kyverno's does
    assert [result for _, result in _results(tmp_path, "127.0.0.1:5000/app:signed", "127.0.0.1:1/x:unsigned")]
