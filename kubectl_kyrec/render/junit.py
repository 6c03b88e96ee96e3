"""JUnit XML: a test suite per policy (or per test file, or per domain), a test case per finding row.

The shape is the one the Jenkins xUnit plugin's `junit-10.xsd` accepts (shipped under testdata/schemas/
and checked by the tests): test cases take only `name`, `classname` and `time`, so the file:line of the
object goes at the start of the failure message, where CI report viewers show it.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import IO

from kubectl_kyrec.reconcile.findings import Finding

# characters XML 1.0 cannot carry at all; a message from a policy may hold them
_XML_INVALID = {c: None for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)}


def _clean(text: str) -> str:
    return text.translate(_XML_INVALID)


def _case_name(f: Finding) -> str:
    name = f.subject_display() or f.message_class
    return f"{name} [{f.rule}]" if f.rule and f.rule != f.policy else name


def _message(f: Finding) -> str:
    text = f"{f.location}: {f.message}" if f.location is not None else f.message
    return _clean(text + (" (baselined)" if f.baselined else ""))


def junit_tree(findings: Sequence[Finding], *, name: str) -> ET.Element:
    suites: dict[str, list[Finding]] = {}
    for f in findings:
        suites.setdefault(f.suite, []).append(f)
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite_name in sorted(suites):
        cases = suites[suite_name]
        counts = {"tests": len(cases),
                  # a baselined finding is shown as passing: the check accepted it
                  "failures": sum(f.outcome in ("fail", "warn") and not f.baselined for f in cases),
                  "errors": sum(f.outcome == "error" and not f.baselined for f in cases)}
        for key, value in counts.items():
            totals[key] += value
        suite = ET.SubElement(root, "testsuite", {"name": _clean(suite_name) or "kyrec",
                                                  **{k: str(v) for k, v in counts.items()},
                                                  "skipped": str(sum(f.outcome == "skip" or f.undetermined
                                                                     for f in cases)),
                                                  "time": "0"})
        policy_file = next((f.policy_location.file for f in cases if f.policy_location), None)
        if policy_file:
            suite.set("file", policy_file)
        for f in cases:
            case = ET.SubElement(suite, "testcase", name=_clean(_case_name(f)),
                                 classname=_clean(f.suite or f.command), time="0")
            if f.baselined and f.is_finding:
                ET.SubElement(case, "system-out").text = "baselined: " + _message(f)
            elif f.outcome in ("fail", "warn"):
                ET.SubElement(case, "failure", message=_message(f), type=f.message_class).text = _message(f)
            elif f.outcome == "error":
                ET.SubElement(case, "error", message=_message(f), type=f.message_class).text = _message(f)
            elif f.outcome == "skip":
                ET.SubElement(case, "skipped", message=_message(f))
            elif f.undetermined:
                # JUnit has no "unknown": skipped, typed, so a CI view shows it was not decided
                ET.SubElement(case, "skipped", message=f"{f.outcome}: {_message(f)}", type=f.outcome)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", "0")
    ET.indent(root)
    return root


def write(findings: Sequence[Finding], stream: IO[str], *, name: str) -> None:
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(junit_tree(findings, name=name), encoding="unicode"))
    stream.write("\n")


def render(findings: Sequence[Finding], *, name: str) -> str:
    out = io.StringIO()
    write(findings, out, name=name)
    return out.getvalue()
