"""JUnit output: valid against the Jenkins xUnit schema, a suite per policy, file:line in messages."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.reconcile.findings import Finding
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
    # every character XML 1.0 cannot carry is dropped, tab, newline and carriage return are kept
    every = "".join(chr(c) for c in range(0x30))
    kept = junit.render([finding(message=every)], name="kyrec eval")
    assert junit_errors(kept) == []
    assert 'message="m.yaml:3: &#09;&#10;&#13; !&quot;#$%&amp;\'()*+,-./"' in kept
    assert '>m.yaml:3: \t\n\r !"#$%&amp;\'()*+,-./</failure>' in kept


def _tree_text(findings: list[Finding], name: str) -> str:
    """The file as ElementTree builds and indents the whole tree: what the streaming writer must equal."""
    suites: dict[str, list[Finding]] = {}
    for f in findings:
        suites.setdefault(f.suite, []).append(f)
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite_name in sorted(suites):
        cases = suites[suite_name]
        counts = {"tests": len(cases),
                  "failures": sum(f.outcome in ("fail", "warn") and not f.baselined for f in cases),
                  "errors": sum(f.outcome == "error" and not f.baselined for f in cases)}
        for key, value in counts.items():
            totals[key] += value
        suite = ET.SubElement(root, "testsuite", {"name": junit._clean(suite_name) or "kyrec",
                                                  **{k: str(v) for k, v in counts.items()},
                                                  "skipped": str(sum(f.outcome in ("skip", "undetermined")
                                                                     for f in cases)), "time": "0"})
        policy_file = next((f.policy_location.file for f in cases if f.policy_location), None)
        if policy_file:
            suite.set("file", policy_file)
        for f in cases:
            case = ET.SubElement(suite, "testcase", name=junit._clean(junit._case_name(f)),
                                 classname=junit._clean(f.suite or f.command), time="0")
            message = junit._message(f)
            if f.baselined and f.is_finding:
                ET.SubElement(case, "system-out").text = "baselined: " + message
            elif f.outcome in ("fail", "warn", "error"):
                tag = "error" if f.outcome == "error" else "failure"
                ET.SubElement(case, tag, message=message, type=f.message_class).text = message
            elif f.outcome == "skip":
                ET.SubElement(case, "skipped", message=message)
            elif f.outcome == "undetermined":
                ET.SubElement(case, "skipped", message=f"{f.outcome}: {message}", type=f.outcome)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def test_streamed_file_is_the_tree_built_text() -> None:
    # the writer formats the XML itself (no tree): escaping, empty elements and indentation must be
    # ElementTree's, for every kind of case and for characters that need escaping
    tricky = 'a & b < c > d "q" \t tab \r\n line caf\u00e9'
    findings = [finding("a"), finding("b", outcome="pass"), finding("c", outcome="error", file=None),
                finding("d", outcome="skip"), finding("e", baselined=True), finding("f", outcome="warn"),
                finding("g", outcome="undetermined"), finding("h", message=tricky),
                finding("i", policy="", command="coverage", message_class="missing & <gone>"),
                finding("j", policy="other", file=None, message=""), finding("k", policy="z&<", outcome="pass")]
    for chosen in (findings, findings[1:2], findings[9:10], []):
        assert junit.render(chosen, name='kyrec "eval" & <co>') == _tree_text(chosen, 'kyrec "eval" & <co>')
    assert junit_errors(junit.render(findings, name="kyrec eval")) == []
