"""A result kyrec cannot decide (`undetermined`) shows in every `eval` format, not only in the table.

The fixture: a GeneratingPolicy whose output names `request.userInfo`, run without `--values`, so its
result for the Namespace trigger is undetermined (testdata/diff/needs-request).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASE = Path(__file__).resolve().parents[2] / "testdata" / "diff" / "needs-request"
ARGS = ["eval", "--now", "2026-11-29T00:00:00Z", "-p", str(CASE / "policy.yaml"), "--state",
        str(CASE / "state.yaml")]


def run(fmt: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*ARGS, "-o", fmt])
    return result.exit_code, result.stdout


def test_table() -> None:
    code, out = run("table")
    # its result row, then its counts in the per-policy table
    row, counts = [line for line in out.splitlines() if "creator-binding" in line]
    assert row.split()[:4] == ["creator-binding", "Namespace", "team-a", "undetermined"]
    assert counts.split() == ["creator-binding", "0", "0", "0", "0", "0", "1"]
    assert "undetermined: 1" in out
    # undetermined is not a failure: the exit code follows --fail-on as before
    assert code == 0


def test_json_and_yaml() -> None:
    for fmt, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        _, out = run(fmt)
        doc = load(out)
        [result] = doc["results"]
        assert (result["policy"], result["result"]) == ("creator-binding", "undetermined")
        assert "request.userInfo" in result["message"]
        assert result["subject"]["name"] == "team-a"
        assert doc["summary"]["undetermined"] == 1


def test_junit_marks_it_skipped_with_the_reason() -> None:
    _, out = run("junit")
    root = ET.fromstring(out)
    [case] = root.iter("testcase")
    [skipped] = case.findall("skipped")
    assert skipped.get("type") == "undetermined" and "request.userInfo" in (skipped.get("message") or "")
    # the JUnit schema kyrec follows (testdata/schemas/junit-10.xsd) counts skipped cases per suite only
    [suite] = root.iter("testsuite")
    assert suite.get("skipped") == "1"


def test_sarif_asks_for_review() -> None:
    _, out = run("sarif")
    [result] = json.loads(out)["runs"][0]["results"]
    assert (result["ruleId"], result["kind"], result["level"]) == ("creator-binding", "review", "none")
    assert result["properties"]["result"] == "undetermined"


def test_github_notice() -> None:
    _, out = run("github")
    [line] = out.splitlines()
    assert line.startswith("::notice file=") and "creator-binding" in line and "undetermined" in line


def test_reports_say_which_result_they_cannot_hold() -> None:
    _, out = run("reports")
    # a PolicyReport result is pass/fail/warn/error/skip: the report cannot carry it, so a comment names it
    comments = [line for line in out.splitlines() if line.startswith("#")]
    assert len(comments) == 1 and "creator-binding" in comments[0] and "Namespace team-a" in comments[0]
    for doc in yaml.safe_load_all(out):
        for entry in (doc or {}).get("results") or []:
            assert entry["result"] != "undetermined"


REPORT = """\
apiVersion: wgpolicyk8s.io/v1alpha2
kind: ClusterPolicyReport
metadata:
  name: ns-a
  labels: {app.kubernetes.io/managed-by: kyverno}
scope: {apiVersion: v1, kind: Namespace, name: team-a, uid: ns-a}
results:
- {source: KyvernoGeneratingPolicy, policy: creator-binding, rule: creator-binding, result: pass, message: "",
   scored: true, timestamp: {seconds: 1, nanos: 0}}
summary: {pass: 1, fail: 0, warn: 0, error: 0, skip: 0}
"""


def test_diff_does_not_call_a_report_stale_for_a_result_it_cannot_decide(tmp_path: Path) -> None:
    # the cluster's report holds the GeneratingPolicy's result (Kyverno saw the real userInfo); kyrec
    # cannot decide it, so it must not call the report stale (`result-of-absent-policy`) over it
    report = tmp_path / "report.yaml"
    report.write_text(REPORT)
    result = CliRunner().invoke(cli, ["diff", "--reports", "--now", "2026-11-29T00:00:00Z", "-p",
                                      str(CASE / "policy.yaml"), "--state", str(CASE / "state.yaml"),
                                      "--state", str(report), "-o", "json"])
    doc = json.loads(result.stdout)
    assert [(c["class"], c["reason"]) for c in doc["changes"] if c["domain"] == "report"
            and c["class"] != "current"] == []
    assert any("undetermined" in n and "creator-binding" in n for n in doc["notices"]), doc["notices"]
