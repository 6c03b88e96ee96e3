"""The capture advice names only kinds the server serves (issue 22, item 9): live from discovery, offline from
the `kyrec.io/served` record a capture writes. A kind the server does not serve cannot be listed: advising
`kubectl kyrec capture --kind replicationcontrollers` there gives a command that fails."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
from kubectl_kyrec.load.run_inputs.state import read_state
from tests.kubeapi.server import ApiServer

# Pods are served by the double; ReplicationControllers and PodTemplates (built-in kinds kyrec knows) are not
POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: pods-and-more}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: RESOURCES
  validations:
  - expression: "true"
"""


def kyrec(api: ApiServer, tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(api.kubeconfig(tmp_path / "kubeconfig")), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return CliRunner().invoke(cli, list(args), env=env)


def advice(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "Capture them with" in line]


def policy(tmp_path: Path, resources: str) -> str:
    path = tmp_path / f"policy-{len(list(tmp_path.glob('policy-*')))}.yaml"
    path.write_text(POLICY.replace("RESOURCES", resources))
    return str(path)


def test_a_live_run_advises_no_kind_the_server_does_not_serve(api: ApiServer, tmp_path: Path) -> None:
    pods = policy(tmp_path, "[pods, replicationcontrollers, podtemplates]")
    for command in (["diff", "-p", pods], ["coverage", "-p", pods], ["eval", "--live", "-p", pods]):
        result = kyrec(api, tmp_path, *command)
        assert result.exit_code in (0, 1), result.stderr
        assert advice(result) == [], (command, result.stderr)


def test_a_capture_records_what_the_server_serves_and_offline_runs_heed_it(api: ApiServer, tmp_path: Path) -> None:
    pods = policy(tmp_path, "[pods, replicationcontrollers, podtemplates]")
    state = tmp_path / "state.json"
    assert kyrec(api, tmp_path, "capture", "-p", pods, "-o", str(state)).exit_code == 0
    served = json.loads(json.loads(state.read_text())["metadata"]["annotations"]["kyrec.io/served"])
    assert {"apiVersion": "v1", "kind": "Pod"} in served
    assert {"apiVersion": "apps/v1", "kind": "Deployment"} in served
    assert not [s for s in served if s["kind"] in ("ReplicationController", "PodTemplate")]
    assert advice(kyrec(api, tmp_path, "diff", "-p", pods, "--state", str(state))) == []
    # a kind the server serves and the capture did not list is still advised, and only it
    secrets = policy(tmp_path, "[secrets, replicationcontrollers]")
    lines = advice(kyrec(api, tmp_path, "eval", "-p", secrets, "--state", str(state)))
    assert len(lines) == 1 and "kubectl kyrec capture --kind secrets -A" in lines[0]
    assert "replicationcontrollers" not in lines[0]


def test_a_state_without_the_record_knows_nothing_of_what_is_served(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}]}))
    state = read_state([str(path)])
    assert state.served is None and state.serves("v1", "ReplicationController") is None
    # so offline advice is as before: every kind the policies need that the state never listed
    result = CliRunner().invoke(cli, ["eval", "-p", policy(tmp_path, "[pods, replicationcontrollers]"), "--state",
                                      str(path)])
    assert "kubectl kyrec capture --kind replicationcontrollers -A" in result.stderr


def test_served_record_reads_back_and_kinds_with_objects_count_as_served(tmp_path: Path) -> None:
    path = tmp_path / "capture.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {
        "kyrec.io/listed": "[]", "kyrec.io/served": json.dumps([{"apiVersion": "apps/v1", "kind": "Deployment"}])}},
        "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}]}))
    state: ClusterState = read_state([str(path)])
    assert state.serves("apps/v1", "Deployment") is True and state.serves("apps/v1beta1", "Deployment") is True
    assert state.serves("apps/v1beta1", "Deployment", exact_version=True) is False
    assert state.serves("v1", "Pod") is True and state.serves("v1", "ReplicationController") is False
    path.write_text(path.read_text().replace('"kyrec.io/served": "[', '"kyrec.io/served": "{'))
    result = CliRunner().invoke(cli, ["diff", "-p", policy(tmp_path, "[pods]"), "--state", str(path)])
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: {path}:1: annotation kyrec.io/served must be a JSON array")
