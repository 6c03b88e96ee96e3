"""Order-dependent precision (issue 37): when MutatingPolicies whose order Kyverno's webhook does not fix
admit different objects, `eval` validates each object the orders tried admit. A ValidatingPolicy every
object agrees on keeps its verdict; one whose verdict differs is `undetermined` (order-dependent), saying how
many orders were tried and what each object gave. Before, every validation of such a subject was
undetermined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "dev"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
PODS = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}


def _mutating(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [PODS]}, "mutations": [{
                "patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": f'Object{{metadata: Object.metadata{{labels: {{"tier": "{value}"}}}}}}'}}]}}


def _validating(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": name},
            "spec": {"validationActions": ["Audit"], "matchConstraints": {"resourceRules": [PODS]},
                     "validations": [{"expression": expression, "message": f"{name} failed"}]}}


def _eval(tmp_path: Path, *docs: dict[str, Any]) -> dict[str, dict[str, str]]:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(list(docs)))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(POD))
    run = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", "policies.yaml", "-r", "pod.yaml",
                          "-o", "json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    return {r["policy"]: r for r in json.loads(run.stdout)["results"] if r["source"] == "KyvernoValidatingPolicy"}


def test_only_the_verdicts_that_differ_between_orders_are_undetermined(tmp_path: Path) -> None:
    got = _eval(tmp_path, _mutating("gold", "gold"), _mutating("silver", "silver"),
                _validating("has-tier", "has(object.metadata.labels) && 'tier' in object.metadata.labels"),
                _validating("no-bronze", "object.metadata.labels['tier'] != 'bronze'"),
                _validating("gold-only", "object.metadata.labels['tier'] == 'gold'"))
    # both orders set the label and neither makes it bronze: the verdicts stand
    assert got["has-tier"]["result"] == "pass"
    assert got["no-bronze"]["result"] == "pass"
    # gold in one order, silver in the other: the verdict depends on the order
    assert got["gold-only"]["result"] == "undetermined"
    message = got["gold-only"]["message"]
    assert message.startswith("order-dependent: the policy gives ")
    assert "on the 2 objects that 2 orders of the mutations admit" in message
    assert "MutatingPolicies gold, silver" in message


def test_an_agreed_fail_stays_a_fail(tmp_path: Path) -> None:
    got = _eval(tmp_path, _mutating("gold", "gold"), _mutating("silver", "silver"),
                _validating("bronze-only", "object.metadata.labels['tier'] == 'bronze'"))
    assert got["bronze-only"]["result"] == "fail"
    assert got["bronze-only"]["message"] == "bronze-only failed"
