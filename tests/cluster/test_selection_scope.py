"""Every action stays inside the user's selection (issue 22,
docs/architecture.md#scope-filters-narrow-what-is-shown-never-what-is-evaluated): `--policy-name`, `-l`,
`--kind` and `-n` limit the rows of `diff` and every write and delete of `apply`; `--reports` and
`--downstreams` narrow `apply` to one domain, as they narrow `diff`.

The cluster holds the policies (no -p), so every downstream of the cluster is in view: base-config's
ConfigMaps for the team namespaces (team-a labelled team=blue, team-b team=red), secret-index's ConfigMaps for
the Secrets of team-a (one of whose triggers is gone), the classic netpol's NetworkPolicies, and a
ConfigMap labelled for a policy the cluster no longer has. Each case runs `apply --prune --dry-run=server`,
which plans and sends every write as a dry run, and compares what it acted on with what the selection holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.cluster.test_live_cli import CLASSIC_NETPOL
from tests.kubeapi.server import ApiServer

DATA = Path(__file__).parent / "data"
OTHER = {"app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "other-policy",
         "generate.kyverno.io/trigger-uid": "0000-gone", "generate.kyverno.io/trigger-kind": "Namespace",
         "generate.kyverno.io/trigger-version": "v1", "generate.kyverno.io/trigger-name": "team-z",
         "generate.kyverno.io/trigger-namespace": "", "generate.kyverno.io/trigger-group": ""}


def kyrec(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                                    "XDG_CACHE_HOME": str(tmp_path / "cache")})


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name, team in (("default", ""), ("team-a", "blue"), ("team-b", "red")):
            api.seed({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": name, "labels": {"team": team} if team else {}}})
        for name in ("s1", "s2"):
            api.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "team-a"},
                      "data": {"k": "dg=="}})
        api.seed(*(yaml.safe_load(t) for t in ((DATA / "gpol-configmap.yaml").read_text(),
                                               (DATA / "gpol-secret-trigger.yaml").read_text(), CLASSIC_NETPOL)))
        api.kubeconfig(tmp_path / "kubeconfig")
        assert kyrec(tmp_path, "apply", "--yes").exit_code == 0
        # every class of change at once: drift in both team namespaces, a trigger gone, a policy gone
        for ns in ("team-a", "team-b"):
            api.store.mutate("v1", "ConfigMap", ns, "base", lambda o: o["data"].update(a="edited"))
            api.store.mutate("networking.k8s.io/v1", "NetworkPolicy", ns, "deny-all",
                             lambda o: o["spec"].update(policyTypes=["Egress"]))
        api.store.delete(api.catalogue.by_kind("v1", "Secret"), "v1", "team-a", "s2")  # type: ignore[arg-type]
        api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "left", "namespace": "team-b",
                                                                        "labels": OTHER}})
        api.clear_log()
        yield api


def _acted(tmp_path: Path, *flags: str) -> set[tuple[str, str, str, str]]:
    result = kyrec(tmp_path, "apply", "--prune", "--dry-run=server", "-o", "json", *flags)
    assert result.exit_code == 0, result.stdout + result.stderr
    return {(o["action"], o["object"]["kind"], o["object"]["namespace"], o["object"]["name"])
            for o in json.loads(result.stdout)["outcomes"] if o["action"] != "skip"}


def _rows(tmp_path: Path, *flags: str) -> set[tuple[str, str, str]]:
    result = kyrec(tmp_path, "diff", "--downstreams", "-o", "json", *flags)
    return {(c["object"]["kind"], c["object"]["namespace"], c["object"]["name"])
            for c in json.loads(result.stdout)["changes"]}


# ("left", the downstream of a policy the cluster no longer has, is never deleted: whether that policy
# orphaned its downstreams is not known; see test_an_orphan_of_a_policy_the_cluster_no_longer_has_stays)
EVERYTHING = {
    ("update", "ConfigMap", "team-a", "base"), ("update", "ConfigMap", "team-b", "base"),
    ("update", "NetworkPolicy", "team-a", "deny-all"), ("update", "NetworkPolicy", "team-b", "deny-all"),
    ("delete", "ConfigMap", "default", "index-s2"),
}


def test_without_a_selection_everything_is_acted_on(cluster: ApiServer, tmp_path: Path) -> None:
    assert _acted(tmp_path) == EVERYTHING
    assert all(r.query.get("dryRun") == "All" or (r.json_body() or {}).get("dryRun") == ["All"]
               for r in cluster.writes())


def test_policy_name_scopes_orphans_of_other_policies_out(cluster: ApiServer, tmp_path: Path) -> None:
    assert _acted(tmp_path, "--policy-name", "base-config") == {
        ("update", "ConfigMap", "team-a", "base"), ("update", "ConfigMap", "team-b", "base")}
    assert ("ConfigMap", "team-b", "left") not in _rows(tmp_path, "--policy-name", "base-config")
    assert _acted(tmp_path, "--policy-name", "secret-index") == {("delete", "ConfigMap", "default", "index-s2")}


def test_a_label_selector_scopes_by_the_triggers_labels(cluster: ApiServer, tmp_path: Path) -> None:
    blue = _acted(tmp_path, "-l", "team=blue")
    assert blue == {("update", "ConfigMap", "team-a", "base"), ("update", "NetworkPolicy", "team-a", "deny-all")}
    red = _acted(tmp_path, "-l", "team=red")
    assert red == {("update", "ConfigMap", "team-b", "base"), ("update", "NetworkPolicy", "team-b", "deny-all")}
    # the orphans' triggers are gone: judged by their own labels, which carry no team
    assert ("ConfigMap", "team-b", "left") not in _rows(tmp_path, "-l", "team=red")


def test_kind_scopes_by_the_triggers_kind(cluster: ApiServer, tmp_path: Path) -> None:
    assert _acted(tmp_path, "--kind", "Secret") == {("delete", "ConfigMap", "default", "index-s2")}
    assert _acted(tmp_path, "--kind", "namespaces") == EVERYTHING - {("delete", "ConfigMap", "default", "index-s2")}


def test_namespace_scopes_by_where_the_object_is(cluster: ApiServer, tmp_path: Path) -> None:
    assert _acted(tmp_path, "-n", "team-b") == {
        ("update", "ConfigMap", "team-b", "base"), ("update", "NetworkPolicy", "team-b", "deny-all")}
    assert ("ConfigMap", "team-b", "left") in _rows(tmp_path, "-n", "team-b")


def test_an_orphan_of_a_policy_the_cluster_no_longer_has_stays(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(tmp_path, "apply", "--prune", "--dry-run=server", "-o", "json")
    (left,) = [o for o in json.loads(result.stdout)["outcomes"] if o["object"]["name"] == "left"]
    assert left["action"] == "skip" and "orphanDownstreamOnPolicyDelete" in left["message"]
    assert not [w for w in cluster.writes() if w.method == "DELETE" and "left" in w.path]


def test_apply_reports_writes_no_downstream(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(tmp_path, "apply", "--reports", "--prune", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert cluster.writes() == []
    outcomes: list[dict[str, Any]] = json.loads(result.stdout)["outcomes"]
    assert all(o["object"]["kind"] in ("PolicyReport", "ClusterPolicyReport") for o in outcomes)
    assert _acted(tmp_path, "--downstreams") == EVERYTHING
