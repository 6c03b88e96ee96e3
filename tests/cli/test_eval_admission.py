"""`eval` on manifests runs the admission chain before validation: a MutatingPolicy that gives a Pod its
missing owner label makes it pass the policy requiring one (the README's example), `--no-mutate` gives the
manifests' own results, `-o json` carries each admitted object with its mutations, and a changed mutation
is part of what `--base-policy` reports."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
ARGS = ("eval", "-p", str(EXAMPLES / "policies"), "-p", str(EXAMPLES / "admission"), "-r",
        str(EXAMPLES / "resources"))


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _results(out: str) -> dict[tuple[str, str], str]:
    return {(r["policy"], r["subject"]["name"]): r["result"] for r in json.loads(out)["results"]}


def test_a_mutation_makes_the_failing_pod_pass() -> None:
    code, out, _ = run(*ARGS, "-o", "json")
    assert code == ExitCode.FINDINGS            # batch's 4Gi limit still fails limit-memory
    results = _results(out)
    assert results[("require-owner-label", "batch")] == "pass"
    assert results[("limit-memory", "batch")] == "fail"
    # the mutation's own results: applied to batch, skipped for web (it has an owner)
    assert results[("default-owner", "batch")] == "pass" and results[("default-owner", "web")] == "skip"
    admission = {a["subject"]["name"]: a for a in json.loads(out)["admission"]}
    assert admission["batch"]["mutations"] == [{
        "policy": "default-owner", "kind": "MutatingPolicy",
        "patch": [{"op": "add", "path": "/metadata/labels", "value": {"owner": "platform"}}]}]
    assert admission["batch"]["object"]["metadata"]["labels"] == {"owner": "platform"}
    assert admission["web"]["mutations"] == []
    # the background scan reports what is stored: the mutation's results are admission's, not the report's
    batch_report = next(r for r in json.loads(out)["reports"] if r["scope"]["name"] == "batch")
    assert {e["policy"] for e in batch_report["results"]} == {"limit-memory", "require-owner-label"}


def test_no_mutate_validates_the_manifests_as_written() -> None:
    code, out, _ = run(*ARGS, "--no-mutate", "-o", "json")
    assert code == ExitCode.FINDINGS
    results = _results(out)
    assert results[("require-owner-label", "batch")] == "fail"
    assert ("default-owner", "batch") not in results
    assert json.loads(out)["admission"] == []


def test_the_table_lists_each_mutation() -> None:
    _, out, _ = run(*ARGS)
    table = out[out.index("MUTATED"):].splitlines()
    assert table[0].split() == ["MUTATED", "POLICY", "CHANGE"]
    assert table[1].split() == ["Pod", "shop/batch", "default-owner", "add", "/metadata/labels"]


def test_a_changed_mutation_is_part_of_the_impact(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text((EXAMPLES / "admission" / "default-owner.yaml").read_text().replace('"platform"', '"ops"'))
    owner = str(EXAMPLES / "policies" / "require-owner-label.yaml")
    code, out, _ = run("eval", "-p", owner, "-p", str(EXAMPLES / "admission"), "-r", str(EXAMPLES / "resources"),
                       "--base-policy", owner, "--base-policy", str(base), "-o", "json")
    assert code == ExitCode.FINDINGS
    # (a request denied both ways, as batch is by limit-memory's Deny, is not stored either way: not listed)
    (change,) = json.loads(out)["impact"]["admission"]
    assert (change["change"], change["subject"]["name"]) == ("mutated-differently", "batch")
    assert "-    owner: ops" in change["diff"] and "+    owner: platform" in change["diff"]


SERVICE_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: no-nodeport
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [services]
  validations:
  - expression: object.spec.type != 'NodePort'
    message: NodePort services are not allowed
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def test_the_api_servers_defaults_come_first(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(SERVICE_POLICY)
    (tmp_path / "service.yaml").write_text(SERVICE)
    args = ("eval", "-p", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "service.yaml"), "-o", "json")
    code, out, _ = run(*args)
    # spec.type is ClusterIP once stored (SetDefaults_Service): the policy passes
    assert code == ExitCode.CLEAN and _results(out) == {("no-nodeport", "web"): "pass"}
    (admission,) = json.loads(out)["admission"]
    assert admission["defaulted"] and admission["mutations"] == []
    assert admission["object"]["spec"]["type"] == "ClusterIP"
    assert admission["object"]["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    # as written, the manifest has no spec.type: the expression errs
    code, out, _ = run(*args, "--no-mutate")
    assert _results(out) == {("no-nodeport", "web"): "error"}
