"""`eval` results for CI systems: JUnit XML (one test case per policy and subject) and SARIF 2.1.0.

Both keep the subject's file:line, so a pull-request check can point at the manifest that failed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from kubectl_kyrec import __version__
from kubectl_kyrec.model import UNDETERMINED, Result

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"fail": "error", "error": "error", "warn": "warning"}


def render_junit(results: Sequence[Result]) -> str:
    """A `<testsuites>` document: a suite per policy, a case per subject; fail is a failure, error an error."""
    by_policy: dict[str, list[Result]] = {}
    for r in results:
        by_policy.setdefault(r.policy, []).append(r)
    root = ET.Element("testsuites", name="kyrec eval", tests=str(len(results)))
    totals = {"failures": 0, "errors": 0, "skipped": 0}
    for policy in sorted(by_policy):
        rs = by_policy[policy]
        counts = {"failures": sum(r.result in ("fail", "warn") for r in rs),
                  "errors": sum(r.result == "error" for r in rs),
                  "skipped": sum(r.result in ("skip", UNDETERMINED) for r in rs)}
        for key, value in counts.items():
            totals[key] += value
        suite = ET.SubElement(root, "testsuite", {"name": policy, "tests": str(len(rs)),
                                                  **{k: str(v) for k, v in counts.items()}})
        for r in rs:
            case = ET.SubElement(suite, "testcase", name=r.subject.display(), classname=policy)
            if r.location is not None:
                case.set("file", r.location.file)
                if r.location.line:
                    case.set("line", str(r.location.line))
            if r.result in ("fail", "warn"):
                ET.SubElement(case, "failure", message=r.message, type=r.result).text = r.message
            elif r.result == "error":
                ET.SubElement(case, "error", message=r.message, type="error").text = r.message
            elif r.result == "skip":
                ET.SubElement(case, "skipped", message=r.message)
            elif r.result == UNDETERMINED:
                # JUnit has no "unknown": skipped, typed, so a CI view shows it was not decided
                ET.SubElement(case, "skipped", message=f"{UNDETERMINED}: {r.message}", type=UNDETERMINED)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_sarif(results: Sequence[Result]) -> str:
    """SARIF 2.1.0: a rule per policy, a result per failing, erroring or warning (policy, subject), and one
    of kind `review` (level `none`, as SARIF requires for it) per undetermined result."""
    findings = [r for r in results if r.result in _SARIF_LEVEL or r.result == UNDETERMINED]
    rules: dict[str, dict[str, Any]] = {}
    for r in results:
        if r.policy in rules:
            continue
        rule: dict[str, Any] = {"id": r.policy, "name": r.policy,
                                "shortDescription": {"text": f"Kyverno policy {r.policy}"},
                                "properties": {"source": r.source}}
        if r.category:
            rule["properties"]["category"] = r.category
        if r.severity:
            rule["properties"]["severity"] = r.severity
        if r.policy_location is not None:
            rule["helpUri"] = r.policy_location.file
        rules[r.policy] = rule
    order = {name: i for i, name in enumerate(rules)}
    out_results = []
    for r in findings:
        entry: dict[str, Any] = {
            "ruleId": r.policy, "ruleIndex": order[r.policy],
            **({"kind": "review", "level": "none"} if r.result == UNDETERMINED
               else {"level": _SARIF_LEVEL[r.result]}),
            "message": {"text": f"{r.subject.display()}: {r.message}"},
            "properties": {"result": r.result, "subject": r.subject.to_json()},
        }
        if r.location is not None:
            region = {"startLine": r.location.line} if r.location.line else {}
            entry["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": r.location.file},
                                                        **({"region": region} if region else {})}}]
        out_results.append(entry)
    doc = {"$schema": _SARIF_SCHEMA, "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "kyrec", "version": __version__,
                                         "rules": list(rules.values())}},
                     "results": out_results}]}
    return json.dumps(doc, indent=2) + "\n"
