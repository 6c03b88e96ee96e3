"""JUnit output: valid against the Jenkins xUnit schema, a suite per policy, file:line in messages."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.render import junit
from tests.ci.findings_support import ROOT, finding, junit_errors

EXAMPLES = ROOT / "testdata" / "examples"


def test_schema_rejects_what_it_should() -> None:
    assert junit_errors('<testsuites><testsuite name="x"/></testsuites>')      # tests/failures/errors required
    assert junit_errors('<testsuites><testsuite name="x" tests="1" failures="0" errors="0">'
                        '<testcase name="a" line="3"/></testsuite></testsuites>')


def test_eval_junit_is_valid() -> None:
    out = CliRunner().invoke(cli, ["eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources"),
                                   "-o", "junit"]).stdout
    assert junit_errors(out) == []
    root = ET.fromstring(out.split("\n", 1)[1])
    assert [s.get("name") for s in root] == ["limit-memory", "require-owner-label"]


def test_counts_outcomes_and_locations() -> None:
    findings = [finding("a"), finding("b", outcome="pass"), finding("c", outcome="error", file=None),
                finding("d", outcome="skip"), finding("e", baselined=True), finding("f", outcome="warn")]
    text = junit.render(findings, name="kyrec eval")
    assert junit_errors(text) == []
    root = ET.fromstring(text.split("\n", 1)[1])
    suite = root[0]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == \
        ("6", "2", "1", "1")
    cases = {c.get("name"): c for c in suite}
    failure = cases["Deployment shop/a [require-labels]"] if "Deployment shop/a [require-labels]" in cases \
        else cases["Deployment shop/a"]
    assert failure.find("failure").get("message") == "m.yaml:3: label 'team' is required"  # type: ignore[union-attr]
    assert cases["Deployment shop/c"].find("error").get("message") == "label 'team' is required"  # type: ignore[union-attr]
    baselined = cases["Deployment shop/e"]
    assert baselined.find("failure") is None and "baselined" in (baselined.find("system-out").text or "")  # type: ignore[union-attr]
    assert suite.get("file") == "policies/require-labels.yaml"


def test_control_characters_do_not_break_the_xml() -> None:
    text = junit.render([finding(message="bell \x07 and nul \x00")], name="kyrec eval")
    assert junit_errors(text) == []
    assert "bell  and nul " in text
