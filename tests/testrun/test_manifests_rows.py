"""`kyrec test` evaluates classic validate.manifests rows (issue 37): the shape of Kyverno's
test/cli/test/manifests/verify-signature (an object without a message fails; one signed by the second of two
keys passes an attestor set with `count: 1`; one with two signatures passes the rule needing both keys, and
one signature there is the rule's error: the other key fails to verify it),
on objects signed here. These rows were `not-evaluated` before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.consistency.manifests_oracle import make_key, policy, public_pem, service, signed


def test_signed_manifest_rows_are_evaluated(tmp_path: Path) -> None:
    a, b = make_key("ecdsa"), make_key("ecdsa")
    entries = [{"keys": {"publicKeys": public_pem(k), "signatureAlgorithm": "sha256"}} for k in (a, b)]
    doc = policy("validate-yaml", [{"count": 1, "entries": entries}])
    both = policy("both", [{"entries": entries}])["spec"]["rules"][0]
    doc["spec"]["rules"].append({**both, "name": "multi-sig"})
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "resources.yaml").write_text(yaml.safe_dump_all([
        service("test-service"), signed(service("test-service2"), [b]), signed(service("test-service3"), [a, b])]))
    rows = [("validate-yaml", "verify", "test-service", "fail"), ("validate-yaml", "verify", "test-service2", "pass"),
            ("validate-yaml", "multi-sig", "test-service3", "pass"), ("validate-yaml", "multi-sig", "test-service2",
                                                                      "error")]
    (tmp_path / "kyverno-test.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "t"},
        "policies": ["policies.yaml"], "resources": ["resources.yaml"],
        "results": [{"policy": p, "rule": r, "resources": [n], "kind": "Service", "result": res}
                    for p, r, n, res in rows]}))
    run = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "test", str(tmp_path), "-o", "json"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Kyverno's CLI:" not in run.stdout        # no row the cluster decides differently
    out = json.loads(run.stdout)
    assert out["summary"] == {"passed": 4, "failed": 0, "errors": 0, "notEvaluated": 0}
