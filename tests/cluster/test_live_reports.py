"""Policy reports on the live path: coverage and eval read the cluster; apply --reports deletes orphan and
duplicate reports with preconditions, --write-reports creates missing ones and never overwrites."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

POLICY = str(Path(__file__).parent / "data" / "vpol-team-label.yaml")
NOW = ["--now", "2026-12-01T00:00:00Z"]


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "team-a"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "good", "namespace": "team-a",
                                                                        "labels": {"team": "a"}}},
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": "team-a"}})
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


def kyrec(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                                    "XDG_CACHE_HOME": str(tmp_path / "cache")})


def _report(name: str, uid: str, subject: str) -> dict[str, Any]:
    return {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
            "metadata": {"name": name, "namespace": "team-a",
                         "labels": {"app.kubernetes.io/managed-by": "kyverno"}},
            "scope": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "team-a", "name": subject, "uid": uid},
            "results": [], "summary": {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}}


def test_coverage_and_eval_read_the_cluster(cluster: ApiServer, tmp_path: Path) -> None:
    coverage = kyrec(tmp_path, "coverage", "-p", POLICY, *NOW, "-o", "json")
    assert coverage.exit_code == 1, coverage.stderr
    assert json.loads(coverage.stdout)["counts"]["missing"] == 2
    evaluated = kyrec(tmp_path, "eval", "--live", "-p", POLICY, *NOW, "-o", "json")
    assert evaluated.exit_code == 1, evaluated.stderr
    results = {(r["subject"]["name"], r["result"]) for r in json.loads(evaluated.stdout)["results"]}
    assert results == {("good", "pass"), ("bad", "fail")}
    assert cluster.writes() == []
    # eval goes live only when asked
    offline = kyrec(tmp_path, "eval", "-p", POLICY)
    assert offline.exit_code == 2 and "--live" in offline.stderr


def test_write_reports_then_coverage_is_current_and_nothing_is_overwritten(cluster: ApiServer,
                                                                         tmp_path: Path) -> None:
    result = kyrec(tmp_path, "apply", "-p", POLICY, "--write-reports", "--yes", *NOW, "-o", "json")
    assert result.exit_code == 0, result.stderr
    creates = cluster.writes()
    assert [r.method for r in creates] == ["POST", "POST"]
    assert all(r.path == "/apis/wgpolicyk8s.io/v1alpha2/namespaces/team-a/policyreports" for r in creates)
    assert kyrec(tmp_path, "coverage", "-p", POLICY, *NOW).exit_code == 0
    cluster.clear_log()
    assert kyrec(tmp_path, "apply", "-p", POLICY, "--write-reports", "--yes", *NOW).exit_code == 0
    assert cluster.writes() == []


def test_reports_deletes_orphans_and_duplicates_with_preconditions(cluster: ApiServer, tmp_path: Path) -> None:
    cm = cluster.store.get(cluster.catalogue.by_kind("v1", "ConfigMap"), "v1", "team-a", "good")  # type: ignore[arg-type]
    uid = cm["metadata"]["uid"]
    [orphan, _, dup] = cluster.seed(_report("00000000-dead-4000-8000-000000000000",
                                            "00000000-dead-4000-8000-000000000000", "gone"),
                                    _report(uid, uid, "good"), _report("misnamed-copy", uid, "good"))
    # deletes need --prune, as for downstreams; --reports only narrows to the report domain (as in diff)
    without = kyrec(tmp_path, "apply", "-p", POLICY, "--reports", "--yes", *NOW, "-o", "json")
    assert without.exit_code == 0, without.stderr
    assert cluster.writes() == []
    assert {o["message"] for o in json.loads(without.stdout)["outcomes"]} >= {"not deleted without --prune"}
    result = kyrec(tmp_path, "apply", "-p", POLICY, "--reports", "--prune", "--yes", *NOW, "-o", "json")
    assert result.exit_code == 0, result.stderr
    deletes = {r.path.rsplit("/", 1)[1]: r.json_body()["preconditions"] for r in cluster.requests("DELETE")}
    assert deletes == {
        orphan["metadata"]["name"]: {"uid": orphan["metadata"]["uid"],
                                     "resourceVersion": orphan["metadata"]["resourceVersion"]},
        "misnamed-copy": {"uid": dup["metadata"]["uid"], "resourceVersion": dup["metadata"]["resourceVersion"]}}
    assert not [r for r in cluster.writes() if r.method != "DELETE"]


def test_report_deletes_stay_inside_the_selection(cluster: ApiServer, tmp_path: Path) -> None:
    """An orphan report (its subject gone) is deleted only when the selection holds it: by its own labels
    for -l (the subject's are gone), and with --policy-name only when every result in it is of a selected
    policy, so that a deletion never takes another policy's results with it (issue 22)."""
    orphan = _report("00000000-dead-4000-8000-000000000000", "00000000-dead-4000-8000-000000000000", "gone")
    orphan["results"] = [{"policy": "other-policy", "result": "pass", "source": "KyvernoValidatingPolicy"}]
    cluster.seed(orphan)
    args = ("apply", "-p", POLICY, "--reports", "--prune", "--dry-run=server", *NOW, "-o", "json")

    def deleted(*flags: str) -> list[str]:
        result = kyrec(tmp_path, *args, *flags)
        assert result.exit_code == 0, result.stderr
        return [o["object"]["name"] for o in json.loads(result.stdout)["outcomes"] if o["action"] == "delete"]

    assert deleted() == [orphan["metadata"]["name"]]
    assert deleted("--policy-name", "team-label") == []
    assert deleted("-l", "team=a") == []
    assert deleted("-n", "default") == []
    assert deleted("--kind", "ConfigMap") == [orphan["metadata"]["name"]]
    assert deleted("--kind", "Secret") == []


def test_apply_plans_over_the_scope_diff_compares(cluster: ApiServer, tmp_path: Path) -> None:
    """`apply` plans from `diff`'s own result (run.diff), so the two see one scope: with a Kyverno ConfigMap
    whose resourceFilters exclude team-a's ConfigMaps, and a reports controller obeying them, neither owes
    those ConfigMaps a report; the default install (--skip-resource-filters=true) owes both of them one."""
    config = tmp_path / "kyverno.yaml"
    config.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kyverno\n  namespace: kyverno\n"
                      "data:\n  resourceFilters: '[Event,*,*] [ConfigMap,team-a,*]'\n")
    scope = ("--kyverno-config", str(config), "--skip-resource-filters=false")

    def missing(*flags: str) -> tuple[int, int]:
        diff = kyrec(tmp_path, "diff", "-p", POLICY, "--reports", *NOW, "-o", "json", *flags)
        assert diff.exit_code in (0, 1), diff.stderr
        plan = kyrec(tmp_path, "apply", "-p", POLICY, "--reports", "--write-reports", "--dry-run=client", *NOW,
                     "-o", "json", *flags)
        assert plan.exit_code == 0, plan.stderr
        creates = [o for o in json.loads(plan.stdout)["outcomes"] if o["action"] == "create"]
        return json.loads(diff.stdout)["summary"]["report"]["missing"], len(creates)

    assert missing() == (2, 2)
    assert missing(*scope) == (0, 0)
    assert cluster.writes() == []
