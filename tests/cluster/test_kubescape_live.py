"""`coverage --producer kubescape` on the live path: both reads of the summaries by LIST pages only (the plain
LIST from storage's metadata rows, the fullSpec LIST from its payloads), and the same LISTs given as files
classify alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.catalogue import crd_type
from tests.kubeapi.server import KUBESCAPE_STORAGE, ApiServer

NOW = ["--now", "2026-10-02T15:30:00Z"]
GV = f"{KUBESCAPE_STORAGE}/v1beta1"
IMAGE = "reg.example/{0}@sha256:" + "77" * 32


def _workload(name: str) -> list[dict[str, Any]]:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": f"{name}-5d8f7c", "namespace": "shop",
          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": f"u-{name}",
                               "controller": True}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-5d8f7c-0", "namespace": "shop",
           "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-5d8f7c",
                                "uid": f"r-{name}", "controller": True}]},
           "spec": {"containers": [{"name": "app", "image": f"reg.example/{name}"}]},
           "status": {"phase": "Running", "containerStatuses": [{"name": "app", "imageID": IMAGE.format(name)}]}}
    return [rs, pod]


def _summary(name: str) -> dict[str, Any]:
    zero = {"all": 0, "relevant": 0}
    ref = {"kind": "VulnerabilityManifest", "name": f"deployment-{name}-app", "namespace": "shop"}
    return {"apiVersion": GV, "kind": "VulnerabilityManifestSummary",
            "metadata": {"name": f"deployment-{name}-app", "namespace": "shop", "annotations": {
                "kubescape.io/wlid": f"wlid://cluster-prod/namespace-shop/deployment-{name}",
                "kubescape.io/workload-container-name": "app", "kubescape.io/image-id": IMAGE.format(name),
                "kubescape.io/timestamp": "1790933400", "kubescape.io/status": "ready"}},
            "spec": {"severities": {k: {**zero, "all": 1} if k == "high" else zero for k in
                                    ("critical", "high", "medium", "low", "negligible", "unknown")},
                     "vulnerabilitiesRef": {"all": ref, "relevant": ref}}}


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        api.catalogue.add(crd_type(KUBESCAPE_STORAGE, ["v1beta1"], "VulnerabilityManifestSummary",
                                   "vulnerabilitymanifestsummaries", True))
        api.catalogue.add(crd_type(KUBESCAPE_STORAGE, ["v1beta1"], "VulnerabilityManifest",
                                   "vulnerabilitymanifests", True))
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        for name in ("web", "api", "cart"):          # cart runs without a summary: missing
            api.seed(*_workload(name))
        for name in ("web", "api"):
            api.seed(_summary(name), {"apiVersion": GV, "kind": "VulnerabilityManifest",
                                      "metadata": {"name": f"deployment-{name}-app", "namespace": "shop"}})
        api.split[("shop", "deployment-api-app")] = "999999"   # api's payload is ahead of its metadata row
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


def kyrec(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["coverage", "--producer", "kubescape", *NOW, "-o", "json", *args],
                              env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                   "XDG_CACHE_HOME": str(tmp_path / "cache")})


def test_live_reads_both_summary_lists_by_list_only(cluster: ApiServer, tmp_path: Path) -> None:
    live = kyrec(tmp_path)
    assert live.exit_code == 1, live.stderr
    doc = json.loads(live.stdout)
    status = {s["subject"]["name"]: s["status"] for s in doc["subjects"]}
    # api's payload is ahead: only the two LISTs together show it (fresh, but split: not current)
    assert status == {"web": "current", "api": "split", "cart": "missing"}
    assert (doc["counts"]["split"], doc["counts"]["splitSummaries"]) == (1, 1)
    integrity = {s["subject"]["name"]: s.get("integrity") for s in doc["subjects"] if s["report"]}
    assert integrity == {"web": "intact", "api": "split"}
    summaries = [r for r in cluster.requests() if r.resource.startswith("vulnerabilitymanifestsummaries")]
    assert {r.verb for r in summaries} == {"list"}
    assert sorted(r.query.get("resourceVersion", "") for r in summaries) == ["", "fullSpec"]
    assert all(r.verb == "list" for r in cluster.requests() if r.resource)
    writes = [r for r in cluster.requests() if r.method != "GET"]
    assert writes == []



def _raw_lists(tmp_path: Path, order: tuple[str, ...]) -> list[str]:
    """The state files a user makes by hand: each LIST the live run makes, as the API serves it, one file
    each (`kubectl get --raw`), in the order given."""
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions

    client = connect(ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    summaries = f"/apis/{GV}/vulnerabilitymanifestsummaries"
    reads = {"pods": ("/api/v1/pods", {}), "replicasets": ("/apis/apps/v1/replicasets", {}),
             "manifests": (f"/apis/{GV}/vulnerabilitymanifests", {}), "plain": (summaries, {}),
             "fullSpec": (summaries, {"resourceVersion": "fullSpec"})}
    paths = []
    for name in order:
        path, query = reads[name]
        out = tmp_path / f"{name}.json"
        out.write_text(json.dumps(client.get_json(path, query=query)))
        paths.append(str(out))
    return paths


def _classes(result: Result) -> dict[str, tuple[str, str | None]]:
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    return {s["subject"]["name"]: (s["status"], s.get("integrity")) for s in doc["subjects"]}


@pytest.mark.parametrize("order", [("pods", "replicasets", "manifests", "plain", "fullSpec"),
                                   ("fullSpec", "manifests", "replicasets", "pods", "plain")])
def test_the_same_two_lists_from_files_classify_as_live(cluster: ApiServer, tmp_path: Path,
                                                        order: tuple[str, ...]) -> None:
    """Issue 14's open question: a file holding the double's raw LISTs said `intact` where live said `split`.
    Cause: the double's fullSpec LIST wrote the payload's resourceVersion into the stored metadata row, so
    every plain LIST after it showed the split summary as agreeing. The file loader keeps both copies (the
    Kubescape producer reads the state without the one-copy-per-object rule)."""
    live = _classes(kyrec(tmp_path))
    files = _raw_lists(tmp_path, order)
    again = _classes(kyrec(tmp_path))
    from_files = _classes(kyrec(tmp_path, *(arg for path in files for arg in ("--state", path))))
    assert live["api"] == ("split", "split")
    assert from_files == live
    assert again == live


def test_capture_then_file_run_classifies_as_live(cluster: ApiServer, tmp_path: Path) -> None:
    """`capture --producer kubescape` writes both reads of the summaries (and what was listed), so the file
    reproduces the live classification, split included; by LIST pages only, and nothing written."""
    live = kyrec(tmp_path)
    cluster.clear_log()
    captured = CliRunner().invoke(cli, ["capture", "--producer", "kubescape", "-o", str(tmp_path / "vulns.json")],
                                  env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                       "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert captured.exit_code == 0, captured.stderr
    assert all(r.verb == "list" for r in cluster.requests() if r.resource)
    from_file = kyrec(tmp_path, "--state", str(tmp_path / "vulns.json"))
    assert from_file.exit_code == live.exit_code == 1
    doc, live_doc = json.loads(from_file.stdout), json.loads(live.stdout)
    assert doc["counts"] == live_doc["counts"] and doc["counts"]["split"] == 1
    assert _classes(from_file) == _classes(live)
    assert "only one read" not in from_file.stderr


def test_capture_for_kubescape_refuses_kyverno_flags(cluster: ApiServer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["capture", "--producer", "kubescape", "-p", "policy.yaml"],
                                env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert result.exit_code == 2 and "-p is for --producer kyverno" in result.stderr
