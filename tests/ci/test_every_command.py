"""`-o junit|sarif|github` for diff, coverage and test, valid against the shipped schemas."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.ci.findings_support import ROOT, junit_errors, sarif_errors

COVERAGE = ROOT / "testdata" / "coverage-cli"
DIFF = ROOT / "testdata" / "diff" / "trigger-gone"
TESTS = ROOT / "testdata" / "testrun"

COMMANDS = {
    "diff": ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(DIFF / "policy.yaml"), "--state",
             str(DIFF / "state.yaml")],
    "coverage": ["coverage", "-p", str(COVERAGE / "policy.yaml"), "--state", str(COVERAGE / "state.json"),
                 "--now", "2026-11-29T00:00:00Z", "--exclusions", str(COVERAGE / "exclusions.yaml")],
    "test": ["test", "--strict", str(TESTS)],
}


def run(command: str, fmt: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*COMMANDS[command], "-o", fmt])
    return result.exit_code, result.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sarif_is_valid(command: str) -> None:
    code, out = run(command, "sarif")
    doc = json.loads(out)
    assert sarif_errors(doc) == []
    assert doc["runs"][0]["results"], "each case has findings"
    assert code == 1 or command == "test"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_junit_is_valid(command: str) -> None:
    _, out = run(command, "junit")
    assert junit_errors(out) == []


def test_diff_junit_has_a_case_per_downstream_with_file_line() -> None:
    _, out = run("diff", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    cases = {c.get("name"): c for suite in root for c in suite}
    assert set(cases) == {"ConfigMap team-a/team-config", "ConfigMap team-b/team-config"}
    failure = cases["ConfigMap team-b/team-config"].find("failure")
    assert failure is not None and failure.get("message", "").endswith(
        "trigger-gone/state.yaml:37: no object with the trigger's uid in the state")
    assert cases["ConfigMap team-a/team-config"].find("failure") is None


def test_coverage_junit_names_gaps_and_skips_exclusions() -> None:
    _, out = run("coverage", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "coverage"
    outcomes = {c.get("name"): ("failure" if c.find("failure") is not None else
                                "skipped" if c.find("skipped") is not None else "pass") for c in suite}
    assert outcomes == {"Pod shop/good": "pass", "Pod shop/changed": "failure", "Pod shop/new": "failure",
                        "Pod shop/renamed": "failure", "Pod batch/excluded": "skipped",
                        # a default install reports kube-system Pods too (--skipResourceFilters=true)
                        "Pod kube-system/coredns": "failure"}


def test_coverage_github_points_at_the_state_file() -> None:
    _, out = run("coverage", "github")
    lines = [line for line in out.splitlines() if line.startswith("::error ")]
    # each item of a JSON List is at its own line: the annotation points at the subject in the state file
    assert len(lines) == 4 and all(re.search(r"state\.json,line=\d+,title=", line) for line in lines)
    assert len({re.search(r"line=(\d+)", line).group(1) for line in lines}) == 4  # type: ignore[union-attr]


def test_test_command_sarif_points_at_the_test_file() -> None:
    _, out = run("test", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris and all(u.endswith(".yaml") for u in uris)


def test_only_file_outputs_still_say_something_on_stderr(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["eval", "-p", str(ROOT / "testdata" / "examples" / "policies"), "-r",
                                      str(ROOT / "testdata" / "examples" / "resources"), "-o", f"json={target}"])
    assert result.stdout == ""
    assert result.stderr.strip() == f"kyrec eval: 4 pass, 2 fail; wrote {target}"
    both = CliRunner().invoke(cli, ["eval", "-p", str(ROOT / "testdata" / "examples" / "policies"), "-r",
                                    str(ROOT / "testdata" / "examples" / "resources"), "-o", f"json={target}",
                                    "-o", "table"])
    assert both.stderr == ""


@pytest.mark.parametrize(("command", "fmt", "said"), [
    ("diff", "json", "kyrec diff: downstreams 1 in-sync, 1 orphan; wrote "),
    ("coverage", "yaml", "kyrec coverage: 6 in scope (1 current, 2 missing, 1 stale, 1 misnamed, 1 excluded), "
                         "1 orphan reports; wrote "),
    ("test", "junit", "kyrec test: 54 passed, 15 failed, 2 not evaluated, 18 warning(s), 1 test file(s) not loaded; "
                     "wrote "),
])
def test_every_command_says_what_it_found_when_its_outputs_are_files(  # type: ignore[no-untyped-def]
        tmp_path, command: str, fmt: str, said: str) -> None:
    """In each command's own words (diff's classes, coverage's statuses, test's rows), matching its JSON."""
    target = tmp_path / f"out.{fmt}"
    result = CliRunner().invoke(cli, [*COMMANDS[command], "-o", f"{fmt}={target}"])
    lines = [line for line in result.stderr.splitlines() if line.startswith("kyrec ")]
    assert result.stdout == "" and lines == [f"{said}{target}"], result.stderr
    doc = json.loads(CliRunner().invoke(cli, [*COMMANDS[command], "-o", "json"]).stdout)
    if command == "diff":
        assert {k: v for k, v in doc["summary"]["downstream"].items() if v} == {"in-sync": 1, "orphan": 1}
    elif command == "coverage":
        assert doc["counts"]["inScope"] == 6 and doc["counts"]["excluded"] == 1
    elif command == "test":
        assert (doc["summary"]["passed"], doc["summary"]["failed"]) == (54, 15)
    both = CliRunner().invoke(cli, [*COMMANDS[command], "-o", f"{fmt}={target}", "-o", "table"])
    assert not [line for line in both.stderr.splitlines() if line.startswith("kyrec ")]
