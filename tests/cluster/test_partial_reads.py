"""Never act on a partial picture (issue 22, docs/architecture.md#never-act-on-a-partial-picture): a write or delete is
planned only when every read it depends on succeeded.

The fault matrix: a cluster whose policies are the cluster's own (no -p: the dangerous case, where a failed
LIST of a policy kind looks like every policy deleted), with missing, drifted and orphaned downstreams of
GeneratingPolicies and of a classic ClusterPolicy. Every kind the run LISTs in full is made to fail in turn,
with each fault a LIST can meet (403, 404, 500 and 503 after the retries, 410 on a continue token twice,
a timeout on every try); the plan of `apply --prune` must then hold no write or delete that depends on the
failed read, none that the complete read would not plan, and the run must know it was partial (exit 5).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.cluster.client import KubeClient, connect
from kubectl_kyrec.cluster.connection import ConnectionOptions
from kubectl_kyrec.cluster.live_source import LiveSource
from kubectl_kyrec.load.run_inputs.sources import FileSource
from kubectl_kyrec.reconcile.plan import PlanOptions
from kubectl_kyrec.run.apply import ApplyResult, ApplyRunOptions, compute_plan
from tests.cluster.test_live_cli import CLASSIC_NETPOL
from tests.kubeapi.server import ApiServer

DATA = Path(__file__).parent / "data"
NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.timezone.utc)
LABELS = {"team-a": "blue", "team-b": "red"}

FAULTS: dict[str, dict[str, Any]] = {
    "403": {"status": 403},
    "404": {"status": 404},
    "500": {"status": 500},
    "503": {"status": 503},
    "410-on-continue": {"status": 410, "with_continue": True},
    "timeout": {"delay": 0.5},
}


def _doc(path: Path | str) -> dict[str, Any]:
    text = Path(path).read_text() if isinstance(path, Path) else path
    return yaml.safe_load(text)  # type: ignore[no-any-return]


def _seed(api: ApiServer) -> None:
    for name in ("default", "kube-system", "team-a", "team-b"):
        labels = {"team": LABELS[name]} if name in LABELS else {}
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    for name in ("s1", "s2"):
        api.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "team-a"},
                  "data": {"k": "dg=="}})
    api.seed(_doc(DATA / "gpol-configmap.yaml"), _doc(DATA / "gpol-secret-trigger.yaml"), _doc(CLASSIC_NETPOL))


def kyrec(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                                    "XDG_CACHE_HOME": str(tmp_path / "cache")})


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    """Every downstream written, then: one drifted (base in team-a), one missing (base in team-b), one
    orphaned by its trigger's deletion (index-s2), one classic downstream drifted (deny-all in team-b)."""
    with ApiServer() as api:
        _seed(api)
        api.kubeconfig(tmp_path / "kubeconfig")
        assert kyrec(tmp_path, "apply", "--yes").exit_code == 0
        api.store.mutate("v1", "ConfigMap", "team-a", "base", lambda o: o["data"].update(a="edited"))
        api.store.delete(api.catalogue.by_kind("v1", "ConfigMap"), "v1", "team-b", "base")  # type: ignore[arg-type]
        api.store.delete(api.catalogue.by_kind("v1", "Secret"), "v1", "team-a", "s2")  # type: ignore[arg-type]
        api.store.mutate("networking.k8s.io/v1", "NetworkPolicy", "team-b", "deny-all",
                         lambda o: o["spec"].update(policyTypes=["Egress"]))
        api.clear_log()
        yield api


def _plan(tmp_path: Path, *, timeout: float = 0.0) -> tuple[ApplyResult, LiveSource]:
    def fast(options: ConnectionOptions) -> KubeClient:
        return connect(options, sleep=lambda _: None)     # the retries happen, without their waits

    source = LiveSource(FileSource(), ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig"),
                                                        request_timeout=timeout or None),
                        cache_dir=tmp_path / "cache", connect=fast)
    options = ApplyRunOptions(now=NOW, plan=PlanOptions(prune=True, reports=True))
    return compute_plan(options, source), source


def _writes(result: ApplyResult) -> set[tuple[str, str, str, str]]:
    return {(str(c.action), c.object.kind, c.object.namespace, c.object.name) for c in result.plan.writes}


def _full_lists(api: ApiServer) -> dict[str, str]:
    """kind -> path of every LIST the run made in full (not narrowed by a selector)."""
    out = {}
    for r in api.requests("GET"):
        if r.verb == "list" and not r.query.get("labelSelector") and not r.query.get("continue"):
            out[r.resource] = r.path
    return out


def test_the_complete_read_plans_the_corrections(cluster: ApiServer, tmp_path: Path) -> None:
    result, source = _plan(tmp_path)
    assert source.unreadable == {}
    assert _writes(result) == {
        ("update", "ConfigMap", "team-a", "base"), ("create", "ConfigMap", "team-b", "base"),
        ("delete", "ConfigMap", "default", "index-s2"), ("update", "NetworkPolicy", "team-b", "deny-all")}
    # what each depends on is said: the drifted one on the trigger's kind, the orphan on its trigger's, the
    # missing one on its own kind too
    deps = {(c.object.namespace, c.object.name): {(r.kind, r.namespace) for r in c.depends_on}
            for c in result.downstreams.changes} if result.downstreams else {}
    assert deps[("team-b", "base")] >= {("ConfigMap", "team-b"), ("Namespace", "")}
    assert deps[("default", "index-s2")] >= {("Secret", "team-a")}


@pytest.fixture()
def baseline(cluster: ApiServer, tmp_path: Path) -> tuple[set[tuple[str, str, str, str]], dict[str, str]]:
    result, _ = _plan(tmp_path)
    lists = _full_lists(cluster)
    cluster.clear_log()
    return _writes(result), lists


def _assert_held(result: ApplyResult, source: LiveSource, failed: str,
                 complete: set[tuple[str, str, str, str]]) -> None:
    """No planned write depends on the failed read, none is one the complete read would not plan, and the
    run knows it was partial (the CLI's exit 5 comes from `source.unreadable`)."""
    assert source.unreadable, f"{failed}: the failed read was not recorded"
    unread = {(k.api_version.rpartition("/")[0], k.kind) for k in source.unreadable}
    writes = _writes(result)
    assert writes <= complete, f"{failed}: writes the complete read would not plan: {writes - complete}"
    findings = [*(result.downstreams.changes if result.downstreams else ())]
    for planned in result.plan.writes:
        for change in findings:
            if change.object == planned.object:
                hit = [r for r in change.depends_on if (r.api_version.rpartition("/")[0], r.kind) in unread]
                assert not hit, f"{failed}: {planned.action} {planned.object.display()} depends on {hit}"


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_matrix(cluster: ApiServer, tmp_path: Path, baseline: tuple[set[tuple[str, str, str, str]],
                                                                            dict[str, str]],
                      fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_kyrec.cluster import lister

    complete, lists = baseline
    assert len(lists) >= 15, lists            # policy kinds, namespaces, triggers, downstream kinds, reports
    if fault == "410-on-continue":
        # one object a page, so that every kind of two or more objects is read with continue tokens
        monkeypatch.setitem(lister.list_many.__kwdefaults__, "page_size", 1)
    hit_kinds = 0
    for resource, path in sorted(lists.items()):
        cluster.faults.clear()
        injected = cluster.inject(f"^{path}$", times=None, **FAULTS[fault])
        result, source = _plan(tmp_path, timeout=0.2 if fault == "timeout" else 0.0)
        if injected.hits == 0:
            continue        # 410 on continue: a kind read in one page never sends a token
        hit_kinds += 1
        _assert_held(result, source, resource, complete)
    assert hit_kinds >= (3 if fault == "410-on-continue" else len(lists))


@pytest.mark.parametrize("concurrency", ["1", "8"])
@pytest.mark.parametrize("fault", ["403", "404"])
def test_fault_matrix_through_the_cli(cluster: ApiServer, tmp_path: Path, baseline: tuple[
        set[tuple[str, str, str, str]], dict[str, str]], fault: str, concurrency: str) -> None:
    """The same rule as the commands give it (the faults that cost no retry waits): `diff` and
    `apply --prune --dry-run=server` exit 5, and the dry run sends no write the complete read would not,
    with one write in flight or 8."""
    complete, lists = baseline
    for resource, path in sorted(lists.items()):
        cluster.faults.clear()
        cluster.inject(f"^{path}$", times=None, **FAULTS[fault])
        diff = kyrec(tmp_path, "diff", "-o", "json")
        assert diff.exit_code == 5, (resource, diff.stderr)
        cluster.clear_log()
        applied = kyrec(tmp_path, "apply", "--prune", "--dry-run=server", "-o", "json", "--concurrency", concurrency)
        assert applied.exit_code == 5, (resource, applied.stderr)
        sent = {(str(o["action"]), o["object"]["kind"], o["object"]["namespace"], o["object"]["name"])
                for o in json.loads(applied.stdout)["outcomes"] if o["status"] == "dry-run"}
        assert sent <= complete, (resource, sent - complete)
        assert all(r.query.get("dryRun") == "All" or (r.json_body() or {}).get("dryRun") == ["All"]
                   for r in cluster.writes())


@pytest.mark.parametrize("concurrency", ["1", "8"])
def test_a_failed_list_of_the_policies_deletes_nothing(cluster: ApiServer, tmp_path: Path, concurrency: str) -> None:
    """The reported case: with `list generatingpolicies` denied, every GeneratingPolicy downstream looked
    policy-gone and `apply --prune --yes` deleted them all, in-sync ones included."""
    cluster.inject(r"generatingpolicies$", status=403, times=None)
    result = kyrec(tmp_path, "apply", "--prune", "--yes", "-o", "json", "--concurrency", concurrency)
    assert result.exit_code == 5, result.stderr
    assert [r for r in cluster.writes() if r.method == "DELETE"] == []
    doc = json.loads(result.stdout)
    held = [o for o in doc["outcomes"] if o["class"] == "undetermined"]
    assert {o["object"]["name"] for o in held} >= {"base", "index-s1", "index-s2"}
    assert all(o["status"] == "refused" for o in held)
    diff = kyrec(tmp_path, "diff", "-o", "json")
    assert diff.exit_code == 5
    gone = [c for c in json.loads(diff.stdout)["changes"] if c["reason"] == "policy-gone"]
    assert gone == []
    undetermined = [c for c in json.loads(diff.stdout)["changes"] if c["class"] == "undetermined"]
    assert undetermined and all(c["reason"] == "read-failed" for c in undetermined)
    assert "the LIST of GeneratingPolicy.policies.kyverno.io failed" in undetermined[0]["message"]


def test_a_cluster_without_the_classic_kinds_deletes_no_classic_downstream(cluster: ApiServer,
                                                                          tmp_path: Path) -> None:
    """Kyverno's classic CRDs gone: nothing says the ClusterPolicy was deleted (nor does Kyverno act then)."""
    cluster.catalogue.types = [t for t in cluster.catalogue.types if t.group != "kyverno.io"]
    result = kyrec(tmp_path, "apply", "--prune", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert not [r for r in cluster.writes() if "networkpolicies" in r.path]
    [netpol] = [o for o in json.loads(result.stdout)["outcomes"] if o["object"]["kind"] == "NetworkPolicy"
                and o["object"]["namespace"] == "team-a"]
    assert (netpol["class"], netpol["status"]) == ("undetermined", "refused")
    assert "ClusterPolicy.kyverno.io objects were not read" in netpol["message"]


def test_a_failed_namespace_list_holds_what_depends_on_namespace_labels(tmp_path: Path) -> None:
    """A policy that selects namespaces by label: without the Namespaces, nothing matches, and every
    downstream of it would look `no-longer-matches` (pruned)."""
    with ApiServer() as api:
        _seed(api)
        labelled = _doc(DATA / "gpol-secret-trigger.yaml")
        labelled["spec"]["matchConstraints"]["namespaceSelector"] = {"matchLabels": {"team": "blue"}}
        api.seed(labelled)
        api.kubeconfig(tmp_path / "kubeconfig")
        assert kyrec(tmp_path, "apply", "--yes").exit_code == 0
        api.clear_log()
        api.inject(r"^/api/v1/namespaces$", status=503, times=None)
        result, source = _plan(tmp_path)
        assert source.unreadable
        assert [w for w in result.plan.writes if w.object.name.startswith("index-")] == []
        held = {c.object.name: (str(c.klass), str(c.reason)) for c in result.downstreams.changes
                if c.object.name.startswith("index-")} if result.downstreams else {}
        assert held == {"index-s1": ("undetermined", "read-failed"), "index-s2": ("undetermined", "read-failed")}


def test_a_failed_exception_list_holds_what_an_exception_could_exempt(cluster: ApiServer, tmp_path: Path) -> None:
    """With the cluster's policies come the cluster's PolicyExceptions: one that exempts team-b's trigger
    makes its missing ConfigMap owed nothing; unread, the ConfigMap would look missing and be created."""
    cluster.seed({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
                  "metadata": {"name": "team-b-free", "namespace": "default"},
                  "spec": {"policyRefs": [{"name": "base-config", "kind": "GeneratingPolicy"}],
                           "matchConditions": [{"name": "b", "expression": "object.metadata.name == 'team-b'"}]}})
    complete, _ = _plan(tmp_path)
    assert ("create", "ConfigMap", "team-b", "base") not in _writes(complete)
    cluster.inject(r"^/apis/policies.kyverno.io/v1/policyexceptions$", status=403, times=None)
    partial, source = _plan(tmp_path)
    assert source.unreadable
    assert ("create", "ConfigMap", "team-b", "base") not in _writes(partial)
    held = {(c.object.namespace, c.object.name): str(c.reason) for c in partial.downstreams.changes
            if str(c.klass) == "undetermined"} if partial.downstreams else {}
    assert held[("team-b", "base")] == "read-failed"


# ---- offline: a capture that recorded a failed read ------------------------------------------------------

def test_a_captures_unreadable_record_makes_the_offline_run_partial_too(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.inject(r"^/api/v1/secrets$", status=403, times=None)
    capture = kyrec(tmp_path, "capture", "-o", str(tmp_path / "state.json"))
    assert capture.exit_code == 5, capture.stderr
    cluster.faults.clear()
    diff = CliRunner().invoke(cli, ["diff", "--state", str(tmp_path / "state.json"), "-o", "json",
                                    "--now", "2026-06-01T00:00:00Z"])
    assert diff.exit_code == 5, diff.stderr
    assert "error: the state records a read that failed when it was captured: forbidden: cannot list secrets" \
        in diff.stderr
    changes = {c["object"]["name"]: (c["class"], c["reason"]) for c in json.loads(diff.stdout)["changes"]
               if c["domain"] == "downstream"}
    assert changes["index-s2"] == ("undetermined", "read-failed")     # trigger-gone is not known
    coverage = CliRunner().invoke(cli, ["coverage", "--state", str(tmp_path / "state.json"),
                                        "--now", "2026-06-01T00:00:00Z"])
    assert coverage.exit_code == 5, coverage.stderr
    assert "coverage is incomplete: Secret objects could not be read, so they are not in the scope" \
        in coverage.stderr
