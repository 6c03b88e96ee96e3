"""`eval --live -r` and `eval --state CAPTURE -r` without -p admit the manifests through the cluster's mutating
policies (MutatingPolicies, MutatingAdmissionPolicies and their bindings), as `-p` would: the live read and
`capture` LIST those kinds where the server serves them, and a capture's copies are its policy set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode
from tests.kubeapi.catalogue import Catalogue
from tests.kubeapi.server import ApiServer

EXAMPLES = Path(__file__).resolve().parents[2] / "testdata" / "examples"
MPOL = EXAMPLES / "admission" / "default-owner.yaml"          # gives a Pod without one the label owner=platform
VPOL = EXAMPLES / "policies" / "require-owner-label.yaml"    # every Pod needs an owner label
NOW = ("--now", "2026-12-01T00:00:00Z")
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop}
spec:
  containers: [{name: batch, image: busybox:1.36}]
"""
MAPOL = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": "payments"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: team-label}
spec: {policyName: team-label}
"""
MUTATING_PATHS = r"/(mutatingpolicies|namespacedmutatingpolicies|mutatingadmissionpolicies|" \
                 r"mutatingadmissionpolicybindings)$"


def _serve(tmp_path: Path, catalogue: Catalogue | None = None) -> Iterator[ApiServer]:
    with ApiServer(catalogue=catalogue) as api:
        for name in ("default", "kyverno", "shop"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.seed(yaml.safe_load(VPOL.read_text()))
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    yield from _serve(tmp_path)


def kyrec(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                                    "XDG_CACHE_HOME": str(tmp_path / "cache")})


def pod(tmp_path: Path) -> str:
    path = tmp_path / "pod.yaml"
    path.write_text(POD)
    return str(path)


def outcome(result: Result) -> tuple[dict[tuple[str, str], str], list[dict[str, Any]]]:
    """(policy, subject) -> result, and the admission of each manifest."""
    doc = json.loads(result.stdout)
    return ({(r["policy"], r["subject"]["name"]): r["result"] for r in doc["results"]}, doc["admission"])


def test_live_eval_admits_the_manifest_through_the_cluster_s_mutating_policy(cluster: ApiServer,
                                                                              tmp_path: Path) -> None:
    cluster.seed(yaml.safe_load(MPOL.read_text()))
    live = kyrec(tmp_path, "eval", "--live", "-r", pod(tmp_path), "-o", "json", *NOW)
    assert live.exit_code == ExitCode.CLEAN, live.output
    results, admission = outcome(live)
    # the mutation, then the validation of the admitted object: the owner label the policy gave it passes
    assert results == {("default-owner", "batch"): "pass", ("require-owner-label", "batch"): "pass"}
    (admitted,) = admission
    assert [m["policy"] for m in admitted["mutations"]] == ["default-owner"]
    assert admitted["object"]["metadata"]["labels"] == {"owner": "platform"}
    assert {r.status for r in cluster.requests("GET", MUTATING_PATHS)} == {200}
    # the manifest as written fails: the pass above is the cluster's mutation's doing
    written = kyrec(tmp_path, "eval", "--live", "-r", pod(tmp_path), "--no-mutate", "-o", "json", *NOW)
    assert written.exit_code == ExitCode.FINDINGS
    assert outcome(written)[0] == {("require-owner-label", "batch"): "fail"}


def test_a_capture_records_the_mutating_policies_and_an_offline_eval_agrees(cluster: ApiServer,
                                                                            tmp_path: Path) -> None:
    cluster.seed(yaml.safe_load(MPOL.read_text()), *yaml.safe_load_all(MAPOL))
    live = kyrec(tmp_path, "eval", "--live", "-r", pod(tmp_path), "-o", "json", *NOW)
    captured = kyrec(tmp_path, "capture", "-o", f"json={tmp_path / 'state.json'}")
    assert captured.exit_code == 0, captured.output
    state = json.loads((tmp_path / "state.json").read_text())
    assert {"MutatingPolicy", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} <= {
        o["kind"] for o in state["items"]}
    offline = kyrec(tmp_path, "eval", "--state", str(tmp_path / "state.json"), "-r", pod(tmp_path), "-o", "json",
                    *NOW)
    assert live.exit_code == offline.exit_code == ExitCode.CLEAN, offline.output
    assert outcome(live) == outcome(offline)
    results, (admitted,) = outcome(offline)
    # the in-tree MutatingAdmissionPolicy plugin first, then Kyverno's webhook
    assert [m["policy"] for m in admitted["mutations"]] == ["team-label", "default-owner"]
    assert admitted["object"]["metadata"]["labels"] == {"owner": "platform", "team": "payments"}
    assert results[("require-owner-label", "batch")] == "pass"


def test_a_server_that_does_not_serve_the_mutating_kinds_is_no_unreadable_kind(tmp_path: Path) -> None:
    # an older cluster: no MutatingAdmissionPolicy API, no Kyverno MutatingPolicy CRDs
    catalogue = Catalogue()
    catalogue.types = [t for t in catalogue.types if "Mutating" not in t.kind]
    for api in _serve(tmp_path, catalogue):
        live = kyrec(tmp_path, "eval", "--live", "-r", pod(tmp_path), "-o", "json", *NOW)
        assert live.exit_code == ExitCode.FINDINGS, live.output        # the fail, and no exit 5
        assert outcome(live)[0] == {("require-owner-label", "batch"): "fail"}
        assert not api.requests(path=MUTATING_PATHS)


def test_a_state_holding_only_mutating_policies_is_a_policy_set(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    state.write_text(MPOL.read_text())
    result = kyrec(tmp_path, "eval", "--state", str(state), "-r", pod(tmp_path), "-o", "json", *NOW)
    assert result.exit_code == ExitCode.CLEAN, result.output
    assert outcome(result)[0] == {("default-owner", "batch"): "pass"}
    # and a state without any: the usage error, as before
    state.write_text(POD)
    result = kyrec(tmp_path, "eval", "--state", str(state), "-r", pod(tmp_path))
    assert result.exit_code == ExitCode.USAGE and "the state holds no policies" in result.stderr
