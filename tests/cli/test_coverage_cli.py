"""`kyrec coverage` end to end on testdata/coverage-cli (policy + state with reports + exclusions)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASE = Path(__file__).resolve().parents[2] / "testdata" / "coverage-cli"
ARGS = ["coverage", "-p", str(CASE / "policy.yaml"), "--state", str(CASE / "state.json"),
        "--now", "2026-11-29T00:00:00Z"]


def run(*extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [*ARGS, *extra])
    return result.exit_code, result.stdout, result.stderr


def test_coverage_json_classifies_every_subject() -> None:
    # a reports controller obeying the ConfigMap's resourceFilters (not a default install: see below)
    code, out, _ = run("--exclusions", str(CASE / "exclusions.yaml"), "-o", "json", "--skip-resource-filters=false")
    assert code == 1
    doc = json.loads(out)
    assert doc["kind"] == "CoverageResult"
    assert doc["counts"] == {"inScope": 5, "current": 1, "missing": 1, "stale": 1, "duplicate": 0,
                             "misnamed": 1, "excluded": 1, "orphan": 1, "split": 0, "unpaired": 0,
                             "failedReads": 0}
    status = {s["subject"]["name"]: (s["status"], s["reason"]) for s in doc["subjects"]}
    assert status["good"][0] == "current"
    assert status["changed"] == ("stale", "outcome-changed")
    assert status["new"][0] == "missing"
    assert status["renamed"] == ("misnamed", "expected-name")
    assert status["excluded"][0] == "excluded"
    # the kube-system pod is filtered by the chart's resourceFilters: not in scope at all
    assert "coredns" not in status
    assert doc["derivedFrom"] == {"subjects": 1, "of": 5, "complete": False, "excluded": 1,
                                  "excludedFor": [{"reason": "batch pods finish before the hourly scan",
                                                   "subjects": 1}]}
    assert doc["totals"]["pass"] == 1 and doc["totals"]["fail"] == 0
    assert [u["index"] for u in doc["unusedExclusions"]] == [1]


def test_a_default_install_reports_kube_system_too() -> None:
    # the reports controller's --skipResourceFilters defaults to true: the kube-system pod owes a report
    code, out, _ = run("--exclusions", str(CASE / "exclusions.yaml"), "-o", "json")
    assert code == 1
    doc = json.loads(out)
    status = {s["subject"]["name"]: (s["status"], s["reason"]) for s in doc["subjects"]}
    assert status["coredns"][0] == "missing"
    assert doc["counts"]["inScope"] == 6 and doc["counts"]["missing"] == 2


def test_without_exclusions_the_batch_pod_is_missing() -> None:
    code, out, _ = run("-o", "json")
    assert code == 1
    doc = json.loads(out)
    # new, the batch pod, and the kube-system pod a default install reports too
    assert doc["counts"]["missing"] == 3 and doc["counts"]["excluded"] == 0


def test_exit_code_false_reports_but_exits_zero() -> None:
    code, out, _ = run("--exit-code", "false")
    assert code == 0
    assert out.startswith("SUBJECTS")


def test_expired_exclusion_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "ex.yaml"
    bad.write_text("- namespace: batch\n  reason: old\n  expires: '2020-01-01T00:00:00Z'\n")
    code, _, err = run("--exclusions", str(bad))
    assert code == 3
    assert err.startswith(f"error: {bad}:3: exclusions[0]: expired at 2020-01-01T00:00:00Z")


def test_diff_reports_shares_the_classification_and_shows_result_diffs() -> None:
    result = CliRunner().invoke(cli, ["diff", "--reports", "-p", str(CASE / "policy.yaml"), "--state",
                                      str(CASE / "state.json"), "--now", "2026-11-29T00:00:00Z", "-o", "json",
                                      "--skip-resource-filters=false"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["kind"] == "DiffResult"
    assert doc["summary"]["report"] == {"current": 1, "missing": 2, "stale": 1, "orphan": 1, "duplicate": 0,
                                        "misnamed": 1, "undetermined": 0}
    stale = next(c for c in doc["changes"] if c["class"] == "stale")
    assert stale["domain"] == "report" and stale["reason"] == "outcome-changed"
    # kubectl diff's direction: from the cluster's report (pass) to the one the next scan writes (fail)
    assert ("-  result: pass\n-  message: success\n+  result: fail\n+  message: pods need a team label\n"
            in stale["diff"])
    table = CliRunner().invoke(cli, ["diff", "--reports", "-p", str(CASE / "policy.yaml"), "--state",
                                     str(CASE / "state.json"), "--now", "2026-11-29T00:00:00Z", "--color", "never",
                                     "--skip-resource-filters=false"])
    assert table.stdout.startswith("Reports (wgpolicyk8s.io/v1alpha2): 1 current, 2 missing, 1 stale")
    assert "--- live/wgpolicyk8s.io.v1alpha2.PolicyReport.shop.11111111-0000-0000-0000-000000000002" in table.stdout


def test_default_diff_compares_reports_when_the_state_has_some() -> None:
    result = CliRunner().invoke(cli, ["diff", "-p", str(CASE / "policy.yaml"), "--state", str(CASE / "state.json"),
                                      "--now", "2026-11-29T00:00:00Z", "-o", "json"])
    doc = json.loads(result.stdout)
    assert {c["domain"] for c in doc["changes"]} == {"report"}
    assert "report checks skipped" not in result.stderr
