"""`eval --base-policy` on manifests says what a change does to admission: an Audit -> Deny change of
validationActions (or a failurePolicy change of a policy that errs) leaves every result as it was and
still changes which requests the API server would deny."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "testdata" / "admission" / "impact"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _impact(head: Path, base: Path, *more: str) -> tuple[int, dict]:
    code, out, err = run("eval", "-p", str(head), "-r", str(CASE / "pods.yaml"), "--base-policy", str(base),
                         "-o", "json", *more)
    assert out, err
    return code, json.loads(out)["impact"]


def test_audit_to_deny_rejects_what_fails() -> None:
    code, impact = _impact(CASE / "head.yaml", CASE / "base.yaml")
    assert code == ExitCode.FINDINGS
    assert impact["results"] == []          # every result is what it was
    assert [(a["change"], a["subject"]["name"], a["deniedBy"]) for a in impact["admission"]] == [
        ("rejected", "unlabelled", ["require-owner"])]
    assert impact["summary"]["admission"] == {"rejected": 1, "admitted": 0, "mutated-differently": 0}


def test_deny_to_audit_admits_what_was_denied() -> None:
    code, impact = _impact(CASE / "base.yaml", CASE / "head.yaml")
    assert code == ExitCode.FINDINGS
    assert [(a["change"], a["subject"]["name"]) for a in impact["admission"]] == [("admitted", "unlabelled")]


def test_failure_policy_decides_whether_an_error_denies(tmp_path: Path) -> None:
    erring = (CASE / "head.yaml").read_text().replace(
        "has(object.metadata.labels) && 'owner' in object.metadata.labels", "object.metadata.labels.missing == 'x'")
    fail = tmp_path / "fail.yaml"
    fail.write_text(erring)
    ignore = tmp_path / "ignore.yaml"
    ignore.write_text(erring.replace("  validationActions: [Deny]",
                                     "  failurePolicy: Ignore\n  validationActions: [Deny]"))
    code, impact = _impact(fail, ignore)
    assert code == ExitCode.FINDINGS
    # both pods' evaluations err (no such label): with Fail both requests are denied, with Ignore neither
    assert sorted((a["change"], a["subject"]["name"]) for a in impact["admission"]) == [
        ("rejected", "labelled"), ("rejected", "unlabelled")]


def test_the_same_policies_change_nothing() -> None:
    code, impact = _impact(CASE / "head.yaml", CASE / "head.yaml")
    # the results that fail before and after still fail the run (issue 33); the change introduces nothing
    assert code == ExitCode.FINDINGS and impact["admission"] == [] and impact["introduced"] is False
    code, impact = _impact(CASE / "head.yaml", CASE / "head.yaml", "--only-changes")
    assert code == ExitCode.CLEAN and impact["exitOn"] == "changes"


def test_table_names_the_rejected_request_and_the_policy() -> None:
    code, out, _ = run("eval", "-p", str(CASE / "head.yaml"), "-r", str(CASE / "pods.yaml"), "--base-policy",
                       str(CASE / "base.yaml"))
    assert code == ExitCode.FINDINGS
    table = out[out.index("Admission changes:"):].splitlines()
    assert table[1].split() == ["CHANGE", "SUBJECT", "OPERATION", "LOCATION", "DENIED", "BY"]
    row = table[2].split()
    assert row[:4] == ["rejected", "Pod", "shop/unlabelled", "CREATE"]
    assert row[4].endswith("testdata/admission/impact/pods.yaml:10") and row[5:] == ["require-owner"]
    assert "changes nothing" not in out
