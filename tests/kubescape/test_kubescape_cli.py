"""`kyrec coverage --producer kubescape` end to end on the golden states."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASES = Path(__file__).resolve().parents[2] / "testdata" / "kubescape"
NOW = "2026-10-02T15:30:00Z"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["coverage", "--producer", "kubescape", "--now", NOW, *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_keeps_the_coverage_contract_with_containers_and_refused_totals() -> None:
    code, out, err = run("--state", str(CASES / "seed-001" / "state.json"), "-o", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert (doc["apiVersion"], doc["kind"]) == ("kyrec/v1", "CoverageResult")
    assert {k: doc["counts"][k] for k in ("inScope", "current", "missing", "stale", "split", "unpaired",
                                          "splitSummaries", "unpairedSummaries")} == {
        "inScope": 79, "current": 0, "missing": 9, "stale": 13, "split": 0, "unpaired": 57, "splitSummaries": 31,
        "unpairedSummaries": 126}
    assert all({"status", "reason"} <= set(s) and s["subject"]["container"] == "app" for s in doc["subjects"])
    assert doc["totals"]["complete"] is False and doc["totals"]["incompleteSubjects"] == 79
    assert doc["totals"]["critical"] is None
    assert err == ""


def test_exclusions_and_namespace_filter() -> None:
    code, out, _ = run("--state", str(CASES / "classes" / "state.json"), "--exclusions",
                       str(CASES / "classes" / "exclusions.yaml"), "-o", "json", "-n", "shop")
    doc = json.loads(out)
    assert code == 1 and doc["counts"]["excluded"] == 1
    legacy = next(s for s in doc["subjects"] if s["status"] == "excluded")
    assert legacy["evidence"] and legacy["gap"] == "missing"
    code, out, _ = run("--state", str(CASES / "classes" / "state.json"), "-o", "json", "-n", "other")
    assert json.loads(out)["counts"]["inScope"] == 0 and code == 0


def test_skip_namespaces_brings_kube_system_into_scope() -> None:
    code, out, _ = run("--state", str(CASES / "classes" / "state.json"), "-o", "json", "--skip-namespaces", "")
    doc = json.loads(out)
    coredns = next(s for s in doc["subjects"] if s["subject"]["name"] == "coredns")
    assert coredns["status"] == "current"
    assert "unscanned-namespace" not in doc["outOfScope"]


def test_scan_period_flag_turns_fresh_summaries_stale() -> None:
    _, out, _ = run("--state", str(CASES / "classes" / "state.json"), "-o", "json", "--scan-period", "1h",
                    "--scan-grace", "0s")
    web = next(s for s in json.loads(out)["subjects"] if s["subject"]["name"] == "web")
    assert (web["status"], web["reason"]) == ("stale", "not-rescanned")
    assert json.loads(out)["scan"] == {"period": "1h", "grace": "0s", "source": "flag"}


def test_one_read_says_so_on_stderr() -> None:
    code, _, err = run("--state", str(CASES / "one-read" / "state.json"))
    assert code == 1
    assert "split is undetermined" in err


def test_usage_errors() -> None:
    code, _, err = run("--state", str(CASES / "classes" / "state.json"), "-p", "x.yaml")
    assert code == 2 and "-p is for --producer kyverno" in err
    # without --state the live cluster is read (tests/cluster/test_kubescape_live.py)
    result = CliRunner().invoke(cli, ["coverage", "--scan-period", "1h", "-p", "x", "--state", "y"])
    assert result.exit_code == 2 and "--scan-period is for --producer kubescape" in result.stderr


def test_the_two_reads_as_kubectl_writes_them(tmp_path: Path) -> None:
    """`kubectl get -o json` (a List of metadata rows) and `kubectl get --raw '...?resourceVersion=fullSpec'`
    (a typed list whose items carry no apiVersion or kind) given as two --state files."""
    items = json.loads((CASES / "seed-001" / "state.json").read_text())["items"]
    kind = "VulnerabilityManifestSummary"

    def filled(o: dict) -> bool:
        return bool(o["spec"]["vulnerabilitiesRef"]["all"]["name"])

    rest = [o for o in items if o.get("kind") != kind]
    plain = [o for o in items if o.get("kind") == kind and not filled(o)]
    full = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
            for o in items if o.get("kind") == kind and filled(o)]
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": rest}))
    (tmp_path / "plain.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": plain}))
    (tmp_path / "full.json").write_text(json.dumps({
        "apiVersion": "spdx.softwarecomposition.kubescape.io/v1beta1", "kind": "VulnerabilityManifestSummaryList",
        "metadata": {"resourceVersion": "9000"}, "items": full}))
    code, out, err = run("--state", str(tmp_path / "cluster.json"), "--state", str(tmp_path / "plain.json"),
                         "--state", str(tmp_path / "full.json"), "-o", "json")
    doc = json.loads(out)
    assert (code, err) == (1, "")
    assert {k: doc["counts"][k] for k in ("inScope", "unpaired", "missing", "stale", "splitSummaries")} == {
        "inScope": 79, "unpaired": 57, "missing": 9, "stale": 13, "splitSummaries": 31}
    assert doc["reads"] == {"metadata": True, "payload": True, "manifests": True}


def test_a_file_output_alone_says_the_counts_on_stderr(tmp_path: Path) -> None:
    target = tmp_path / "coverage.json"
    code, out, err = run("--state", str(CASES / "classes" / "state.json"), "-o", f"json={target}")
    assert code == 1 and out == ""
    assert err.strip() == ("kyrec coverage: 15 in scope (3 current, 2 missing, 6 stale, 1 duplicate, 1 misnamed, "
                           "1 split, 1 unpaired), 3 orphan summaries, 3 split summaries, 3 unpaired summaries; "
                           f"wrote {target}")
    assert json.loads(target.read_text())["counts"]["stale"] == 6
