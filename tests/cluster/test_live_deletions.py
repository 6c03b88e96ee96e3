"""DeletingPolicies against the API server double (issue 26): `diff` lists what the next scheduled run deletes
and writes nothing; `apply` deletes nothing of it unless `--deletions` asks, then each DELETE carries the uid
and resourceVersion read and the policy's propagation policy; a failed LIST the answer depends on makes it
`undetermined`, never a delete."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.kubeapi.server import ApiServer

NOW = "2026-09-01T12:00:00Z"

POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: DeletingPolicy
metadata:
  name: expire-scratch
spec:
  schedule: "0 3 * * *"
  deletionPropagationPolicy: Foreground
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
    objectSelector:
      matchLabels: {scratch: "true"}
  conditions:
  - name: dev
    expression: "namespaceObject.metadata.labels['env'] == 'dev'"
"""


def _cm(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace,
                                                                  "labels": labels}, "data": {"a": "b"}}


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name, env in (("default", ""), ("kube-system", ""), ("team-a", "dev"), ("team-b", "prod")):
            api.seed({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": name, "labels": {"env": env} if env else {}}})
        api.seed(_cm("scratch", "team-a", scratch="true"), _cm("scratch", "team-b", scratch="true"),
                 _cm("keep", "team-a"))
        api.kubeconfig(tmp_path / "kubeconfig")
        (tmp_path / "dpol.yaml").write_text(POLICY)
        api.clear_log()
        yield api


def kyrec(tmp_path: Path, *args: str) -> Result:
    from kubectl_kyrec.cli.main import cli

    return CliRunner().invoke(cli, [*args, "--now", NOW], env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                                               "XDG_CACHE_HOME": str(tmp_path / "cache")})


def deletions(result: Result) -> list[tuple[str, str, str | None]]:
    doc = json.loads(result.stdout)
    return [(c["class"], f"{c['object']['namespace']}/{c['object']['name']}", c["reason"])
            for c in doc["changes"] if c["domain"] == "deletion"]


def test_diff_lists_the_next_runs_deletions_and_writes_nothing(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(tmp_path, "diff", "-p", str(tmp_path / "dpol.yaml"), "-o", "json")
    assert result.exit_code == 1, result.stderr      # a scheduled deletion is a finding
    assert deletions(result) == [("scheduled-deletion", "team-a/scratch", None)]
    [change] = [c for c in json.loads(result.stdout)["changes"] if c["domain"] == "deletion"]
    # a manifest not yet in the cluster would be created now: its first run is the schedule's next time
    assert (change["nextRun"], change["due"], change["propagationPolicy"]) == ("2026-09-02T03:00:00Z", False,
                                                                                "Foreground")
    assert cluster.writes() == []


def test_apply_deletes_only_with_deletions_and_with_preconditions(cluster: ApiServer, tmp_path: Path) -> None:
    policy = str(tmp_path / "dpol.yaml")
    without = kyrec(tmp_path, "apply", "-p", policy, "--yes", "-o", "json")
    assert without.exit_code == 0, without.stdout
    assert cluster.requests("DELETE") == []
    [refused] = [o for o in json.loads(without.stdout)["outcomes"] if o["class"] == "scheduled-deletion"]
    assert refused["status"] == "refused" and refused["message"].startswith("not deleted without --deletions")
    live = cluster.store.get(cluster.catalogue.by_kind("v1", "ConfigMap"), "v1", "team-a", "scratch")  # type: ignore[arg-type]
    uid, rv = live["metadata"]["uid"], live["metadata"]["resourceVersion"]
    done = kyrec(tmp_path, "apply", "-p", policy, "--yes", "--deletions", "-o", "json")
    assert done.exit_code == 0, done.stdout
    [delete] = cluster.requests("DELETE")
    assert delete.path == "/api/v1/namespaces/team-a/configmaps/scratch" and delete.status == 200
    body = delete.json_body()
    assert body["preconditions"] == {"uid": uid, "resourceVersion": rv}
    assert body["propagationPolicy"] == "Foreground"
    assert cluster.store.get(cluster.catalogue.by_kind("v1", "ConfigMap"), "v1", "team-b", "scratch")  # type: ignore[arg-type]


def test_a_failed_list_is_undetermined_and_never_deleted(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.inject(r"/api/v1/configmaps$", method="GET", status=403, times=None)
    result = kyrec(tmp_path, "apply", "-p", str(tmp_path / "dpol.yaml"), "--yes", "--deletions", "-o", "json")
    assert result.exit_code == 5
    assert cluster.requests("DELETE") == []
    [skipped] = [o for o in json.loads(result.stdout)["outcomes"] if o["object"]["kind"] == "ConfigMap"]
    assert skipped["class"] == "undetermined" and skipped["status"] == "refused"
    assert "the LIST of ConfigMap failed" in skipped["message"]


def test_the_clusters_own_policy_runs_from_its_last_execution(cluster: ApiServer, tmp_path: Path) -> None:
    obj = {**__import__("yaml").safe_load(POLICY)}
    [seeded] = cluster.seed(obj)
    cluster.store.mutate("policies.kyverno.io/v1", "DeletingPolicy", "", "expire-scratch",
                         lambda o: o.update(status={"lastExecutionTime": "2026-08-30T03:00:00Z"}))
    result = kyrec(tmp_path, "diff", "-o", "json")
    [change] = [c for c in json.loads(result.stdout)["changes"] if c["domain"] == "deletion"]
    # the run of 2026-08-31 03:00 never happened: the controller runs the policy at once
    assert (change["nextRun"], change["due"]) == ("2026-08-31T03:00:00Z", True)
    assert seeded["metadata"]["name"] == "expire-scratch"
