"""What `apply` reads before its first write: the LISTs its plan depends on, and none of the reads that only
name a finding's cause (Kyverno's Deployments, the RBAC objects, SubjectAccessReviews: cluster/live.py),
since apply names no cause and evidence decides no write. `diff` with the same flags still makes them (the
control: the API double serves them). Against the API double's request log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")
# the LISTs reconcile/causes.py reads its evidence from, and nothing else asks for (the access reviews too,
# sent when a cause asks one)
CAUSE_ONLY = {"deployments.apps", "clusterroles.rbac.authorization.k8s.io",
              "clusterrolebindings.rbac.authorization.k8s.io", "roles.rbac.authorization.k8s.io",
              "rolebindings.rbac.authorization.k8s.io"}
REVIEWS = "subjectaccessreviews.authorization.k8s.io"


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "kyverno", "team-a", "team-b"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


def unselected(api: ApiServer) -> set[str]:
    """The types read by a LIST without a label selector (the owned-downstream search LISTs every type with
    `app.kubernetes.io/managed-by=kyverno`: that one is no evidence, it finds downstreams), and reviews."""
    return {r.resource for r in api.requests() if not r.is_write and "labelSelector" not in r.query}


def kyrec(tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return CliRunner().invoke(cli, list(args), env=env)


def test_apply_makes_no_read_that_only_names_a_cause(cluster: ApiServer, tmp_path: Path) -> None:
    diff = kyrec(tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert diff.exit_code == 1, diff.stderr
    assert unselected(cluster) >= CAUSE_ONLY       # diff reads them all
    assert all(c["cause"] for c in json.loads(diff.stdout)["changes"] if c["domain"] == "downstream")
    cluster.clear_log()
    applied = kyrec(tmp_path, "apply", "-p", POLICY, "--yes", "-o", "json")
    assert applied.exit_code == 0, applied.stderr
    assert json.loads(applied.stdout)["summary"]["done"] == 2
    read = unselected(cluster)
    assert read & {*CAUSE_ONLY, REVIEWS} == set()
    # what the plan depends on is still read, in full, before the first write
    assert {"namespaces", "configmaps"} <= read
    first_write = next(i for i, r in enumerate(cluster.requests()) if r.is_write)
    assert all(r.method == "GET" for r in cluster.requests()[:first_write])
    assert not any(r.method == "GET" for r in cluster.requests()[first_write:])
