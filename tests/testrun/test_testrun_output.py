"""`kubectl kyrec test` through the CLI: output formats, --fail-only, exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli

CASES = Path(__file__).resolve().parents[2] / "testdata" / "testrun"
CONTRACT_ROW_KEYS = {"file", "test", "policy", "kind", "resource", "expected", "actual", "status", "reason",
                     "location"}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["test", *args])


def test_table_lists_failures_first_and_ends_with_the_counts() -> None:
    result = invoke(str(CASES / "failing-row"), "--strict")
    assert result.exit_code == 1
    lines = result.stdout.rstrip("\n").splitlines()
    assert lines[0].split()[:3] == ["STATUS", "ROW", "POLICY"]
    statuses = [line.split()[0] for line in lines[1:] if line and line.split()[0] in ("PASS", "FAIL")]
    assert statuses == ["FAIL", "FAIL", "PASS", "PASS"]
    failing = next(line for line in lines if "missing-pod" in line)
    assert failing.startswith("FAIL") and "yaml:24" in failing and " pass " in failing
    # the reason and message of a failing row have a line of their own under the table
    assert "kyverno-test.yaml:24: not-found: no resource named 'missing-pod' in the test" in lines
    assert lines[-1] == "2 passed, 2 failed, 1 warning(s)"


def test_fail_only_hides_passing_rows_but_not_the_counts() -> None:
    result = invoke(str(CASES / "failing-row"), "--fail-only", "--strict")
    rows = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert [r.split()[0] for r in rows] == ["FAIL", "FAIL"]
    assert result.stdout.rstrip().endswith("2 passed, 2 failed, 1 warning(s)")
    doc = json.loads(invoke(str(CASES / "failing-row"), "--fail-only", "--strict", "-o", "json").stdout)
    assert {r["status"] for r in doc["rows"]} == {"fail"} and doc["summary"]["passed"] == 2


def test_table_shows_the_diff_of_a_generated_resource() -> None:
    result = invoke(str(CASES / "generated-mismatch"))
    assert "-  owner: platform" in result.stdout and "+  owner: web" in result.stdout
    assert result.stdout.rstrip().endswith("1 passed, 1 failed")


def test_json_follows_the_contract() -> None:
    doc = json.loads(invoke(str(CASES / "not-matched"), "--strict", "-o", "json").stdout)
    assert set(doc) >= {"apiVersion", "kind", "kyrecVersion", "mode", "summary", "rows"}
    assert doc["summary"] == {"passed": 1, "failed": 2, "errors": 0, "notEvaluated": 0}
    for row in doc["rows"]:
        assert set(row) >= CONTRACT_ROW_KEYS
        assert row["location"]["file"].endswith("not-matched/kyverno-test.yaml")
        assert row["test"] == "not-matched"
    assert [r["location"]["line"] for r in doc["rows"]] == [11, 17, 23]


def test_junit_has_a_testcase_per_row_and_a_failure_per_failing_row() -> None:
    result = invoke(str(CASES / "failing-row"), "--strict", "-o", "junit")
    root = ET.fromstring(result.stdout.split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "0")
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 4
    failures = [c.find("failure") for c in cases if c.find("failure") is not None]
    assert [f.get("type") for f in failures if f is not None] == ["result-mismatch", "not-found"]


def test_junit_reports_a_file_that_does_not_load_as_an_error() -> None:
    root = ET.fromstring(invoke(str(CASES / "broken-file"), "-o", "junit").stdout.split("\n", 1)[1])
    assert root.get("errors") == "1"
    error = root.find("./testsuite/testcase/error")
    assert error is not None and "kyverno-test.yaml:15" in (error.text or "")


def test_several_outputs_at_once(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = invoke(str(CASES / "passing-suite"), "-o", "table", "-o", f"json={target}")
    assert result.exit_code == 0
    assert result.stdout.rstrip().endswith("4 passed, 0 failed")
    assert json.loads(target.read_text())["summary"] == {"passed": 4, "failed": 0, "errors": 0, "notEvaluated": 0}


def test_a_file_that_does_not_load_wins_over_failing_rows_and_the_rest_still_runs() -> None:
    result = invoke(str(CASES), "-o", "json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["summary"]["errors"] == 1 and doc["summary"]["failed"] > 0 and doc["summary"]["passed"] > 0
    assert "kyverno-test.yaml:15: results[0].result" in result.stderr


def test_exit_code_false_turns_failing_rows_into_zero() -> None:
    assert invoke(str(CASES / "failing-row"), "--exit-code=false").exit_code == 0
    assert invoke(str(CASES / "broken-file"), "--exit-code=false").exit_code == 3


def test_no_tests_found(tmp_path: Path) -> None:
    result = invoke(str(tmp_path))
    assert result.exit_code == 0 and "no kyverno-test.yaml found" in result.stderr
    assert invoke(str(tmp_path), "--require-tests").exit_code == 3


def test_file_name_picks_other_test_files(tmp_path: Path) -> None:
    suite = (CASES / "passing-suite" / "kyverno-test.yaml").read_text()
    suite = suite.replace("- policy.yaml", f"- {CASES / 'passing-suite' / 'policy.yaml'}")
    suite = suite.replace("- resources.yaml", f"- {CASES / 'passing-suite' / 'resources.yaml'}")
    (tmp_path / "my-test.yaml").write_text(suite)
    result = invoke(str(tmp_path), "--file-name", "my-test.yaml")
    assert result.exit_code == 0 and result.stdout.rstrip().endswith("4 passed, 0 failed")


def test_unknown_output_format_is_a_usage_error() -> None:
    result = invoke(str(CASES / "passing-suite"), "-o", "reports")
    assert result.exit_code == 2 and "unknown output format 'reports'" in result.stderr


# ---- rows kyrec cannot evaluate (issue 22, item 7) ---------------------------------------------------------

def test_rows_not_evaluated_fail_the_run_and_say_so() -> None:
    # a suite whose only evaluated row passes is no pass when two of its rows were never evaluated
    result = invoke(str(CASES / "not-evaluated"))
    assert result.exit_code == 1
    assert result.stdout.rstrip().endswith("1 passed, 0 failed, 2 not evaluated")
    assert result.stderr.splitlines() == ["notice: 2 row(s) not evaluated (kinds or rules kyrec does not evaluate) "
                                          "fail the run; --allow-not-evaluated accepts them"]
    doc = json.loads(invoke(str(CASES / "not-evaluated"), "-o", "json").stdout)
    assert doc["allowNotEvaluated"] is False and doc["summary"]["notEvaluated"] == 2


def test_allow_not_evaluated_accepts_them() -> None:
    result = invoke(str(CASES / "not-evaluated"), "--allow-not-evaluated", "-o", "json")
    assert result.exit_code == 0 and result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["allowNotEvaluated"] is True and doc["summary"]["notEvaluated"] == 2
    # a failing row still fails
    assert invoke(str(CASES / "failing-row"), "--allow-not-evaluated").exit_code == 1


def test_ci_formats_show_rows_not_evaluated_as_skipped() -> None:
    # JUnit showed them passing, which a run that exits 1 for them would contradict
    root = ET.fromstring(invoke(str(CASES / "not-evaluated"), "-o", "junit").stdout)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "0", "2")
    skipped = [case.get("name") for case in root.iter("testcase") if case.find("skipped") is not None]
    assert len(skipped) == 2 and all("ConfigMap" in str(name) for name in skipped)
