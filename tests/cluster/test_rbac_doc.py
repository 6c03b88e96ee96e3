"""docs/rbac.yaml stays minimal: the read role only lists, and names its kinds (no `*`, no Secrets); the apply
role reads exactly as the read role does and writes only with the verbs apply sends; and a user bound to
the read role cannot write anything, whatever apply tries. (tests/cluster/test_live_cli.py shows that
the roles suffice for the live scenarios.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "rbac.yaml"
POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")


def roles() -> dict[str, list[dict[str, Any]]]:
    return {d["metadata"]["name"]: d["rules"] for d in yaml.safe_load_all(DOC.read_text()) if d}


def test_the_read_roles_only_list_named_kinds() -> None:
    read = roles()["kyrec-read"] + roles()["kyrec-read-kyverno-config"]
    assert {verb for rule in read for verb in rule["verbs"]} == {"list"}
    for rule in read:
        assert "*" not in rule["apiGroups"] and "*" not in rule["resources"], rule
        # a LIST of Secrets returns their values: granted only by the user's own choice (commented out)
        assert "secrets" not in rule["resources"], rule


def test_the_apply_role_reads_as_the_read_role_and_writes_only_what_apply_sends() -> None:
    read, apply = roles()["kyrec-read"], roles()["kyrec-apply"]
    assert [r for r in apply if r["verbs"] == ["list"]] == read
    writes = [r for r in apply if r["verbs"] != ["list"]]
    for rule in writes:
        assert "*" not in rule["apiGroups"] and "*" not in rule["resources"], rule
        reports = set(rule["apiGroups"]) & {"wgpolicyk8s.io", "openreports.io"}
        # reports: created when missing, deleted when orphaned; downstreams: apply (patch, and create when
        # it creates), a classic rule's PUT (update), --prune (delete)
        assert set(rule["verbs"]) == ({"create", "delete"} if reports else {"patch", "create", "update", "delete"})


@pytest.fixture()
def reader(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "team-a", "team-b"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        # an orphan to prune: Kyverno's downstream of a policy left out of the run (--all-policies: gone)
        # whose copy in the cluster has sync on and does not orphan its downstreams
        gone = yaml.safe_load(Path(POLICY).read_text())
        gone["metadata"] = {"name": "gone"}
        api.seed(gone)
        api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "old", "namespace": "team-a", "labels": {
                "app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "gone",
                "generate.kyverno.io/trigger-kind": "Namespace", "generate.kyverno.io/trigger-name": "team-a"}}})
        api.load_rbac(DOC.read_text() + "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
                      "metadata: {name: reader}\n"
                      "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kyrec-read}\n"
                      "subjects: [{kind: User, name: reader}]\n")
        api.add_user("reader", "r")
        api.kubeconfig(tmp_path / "kubeconfig", user="reader", token="r")
        api.clear_log()
        yield api


def test_the_read_role_cannot_write(reader: ApiServer, tmp_path: Path) -> None:
    before = reader.store.list(reader.catalogue.by_kind("v1", "ConfigMap"), "v1", "")  # type: ignore[arg-type]
    result = CliRunner().invoke(cli, ["apply", "-p", POLICY, "--yes", "--prune", "--all-policies"], env={
        "KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.exit_code == 4, result.output
    writes = reader.writes()
    assert {w.method for w in writes} == {"PATCH", "DELETE"}        # it tried the creates and the prune
    assert {w.status for w in writes} == {403}                       # and the server refused every one
    assert 'grant: apiGroups: [""], resources: ["configmaps"], verbs: ["patch"]' in result.stdout
    assert 'grant: apiGroups: [""], resources: ["configmaps"], verbs: ["delete"]' in result.stdout
    after = reader.store.list(reader.catalogue.by_kind("v1", "ConfigMap"), "v1", "")  # type: ignore[arg-type]
    assert after["items"] == before["items"]
