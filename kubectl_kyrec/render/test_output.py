"""Renderers for `test`: table (the default), json/yaml (the DESIGN section 3 contract) and junit."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from kubectl_kyrec.model import Source
from kubectl_kyrec.render.envelope import envelope, to_json, to_yaml
from kubectl_kyrec.testsuite.rows import Mode, Row, SuiteRun


def _loc(source: Source | None) -> dict[str, Any] | None:
    return source.as_location() if source is not None else None


def all_rows(runs: Sequence[SuiteRun], fail_only: bool = False) -> list[Row]:
    return [r for run in runs for r in run.rows if not (fail_only and r.passed)]


def counts(runs: Sequence[SuiteRun]) -> dict[str, int]:
    rows = all_rows(runs)
    # rows of policy kinds kyrec does not evaluate are neither passed nor failed
    return {"passed": sum(1 for r in rows if r.passed and r.evaluated),
            "failed": sum(1 for r in rows if not r.passed),
            "errors": sum(1 for run in runs if run.errors),
            "notEvaluated": sum(1 for r in rows if not r.evaluated)}


def row_json(row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {
        "file": row.file, "test": row.test, "policy": row.policy, "kind": row.kind, "resource": row.resource,
        "expected": row.expected, "actual": row.actual, "status": row.status, "reason": row.reason,
        "location": _loc(row.location), "message": row.message,
    }
    if row.diff is not None:
        out["diff"] = row.diff
    return out


def test_document(runs: Sequence[SuiteRun], mode: Mode, *, fail_only: bool = False,
                  load_errors: Sequence[tuple[str, Source | None]] = (), notices: Sequence[str] = ()
                  ) -> dict[str, Any]:
    """The `TestResult` envelope. `load_errors` are test files that could not even be parsed."""
    summary = counts(runs)
    summary["errors"] += len(load_errors)
    errors = [*load_errors, *((m, s) for run in runs for m, s in run.errors)]
    return envelope("TestResult", {
        "mode": mode.value,
        "summary": summary,
        "rows": [row_json(r) for r in all_rows(runs, fail_only)],
        "errors": [{"message": m, "location": _loc(s)} for m, s in errors],
        "notices": list(notices),
    })


def render_json(doc: dict[str, Any]) -> str:
    return to_json(doc)


def render_yaml(doc: dict[str, Any]) -> str:
    return to_yaml(doc)


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def render_table(runs: Sequence[SuiteRun], *, fail_only: bool = False) -> str:
    """One line per row, failures first; diffs of generated resources below; `N passed, M failed` last."""
    rows = all_rows(runs, fail_only)
    ordered = [r for r in rows if not r.passed] + [r for r in rows if r.passed]
    table = [[r.status.upper(), str(r.location) if r.location else r.file, r.policy, r.kind, r.resource,
              r.expected, r.actual or "-", r.reason,
              _one_line(r.message, 70) if not r.passed or not r.evaluated else ""]
             for r in ordered]
    parts = []
    if table:
        parts.append(tabulate(table, headers=["STATUS", "ROW", "POLICY", "KIND", "RESOURCE", "EXPECTED",
                                              "ACTUAL", "REASON", "MESSAGE"], tablefmt="plain"))
    for r in ordered:
        if r.diff:
            parts.append(f"{r.location}: {r.policy} {r.kind} {r.resource}:\n" + r.diff.rstrip("\n"))
    total = counts(runs)
    parts.append(f"{total['passed']} passed, {total['failed']} failed"
                 + (f", {total['notEvaluated']} not evaluated" if total["notEvaluated"] else ""))
    return "\n\n".join(parts) + "\n"


def render_junit(runs: Sequence[SuiteRun], *, fail_only: bool = False,
                 load_errors: Sequence[tuple[str, Source | None]] = ()) -> str:
    """JUnit XML: a testsuite per test file, a testcase per row; load errors are `error` testcases."""
    root = ET.Element("testsuites")
    total_tests = total_failures = total_errors = 0
    for message, source in load_errors:
        suite = ET.SubElement(root, "testsuite", name=source.file if source else "kyverno-test",
                              tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", name="load", classname=source.file if source else "")
        ET.SubElement(case, "error", message=message).text = f"{source}: {message}" if source else message
        total_tests += 1
        total_errors += 1
    for run in runs:
        rows = [r for r in run.rows if not (fail_only and r.passed)]
        failures = sum(1 for r in rows if not r.passed)
        suite = ET.SubElement(root, "testsuite", name=run.test or run.file, file=run.file,
                              tests=str(len(rows)), failures=str(failures), errors=str(len(run.errors)))
        for message, source in run.errors:
            ET.SubElement(suite, "system-err").text = f"{source}: {message}" if source else message
        for r in rows:
            case = ET.SubElement(suite, "testcase", classname=run.file,
                                 name=f"{r.policy} {r.kind} {r.resource}")
            if r.location is not None:
                case.set("line", str(r.location.line))
            if not r.evaluated:
                ET.SubElement(case, "skipped", message=r.message)
            elif not r.passed:
                summary = f"{r.reason}: expected {r.expected}, got {r.actual or 'no result'}"
                failure = ET.SubElement(case, "failure", message=summary, type=r.reason)
                failure.text = r.message + (f"\n{r.diff}" if r.diff else "")
        total_tests += len(rows)
        total_failures += failures
        total_errors += len(run.errors)
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", str(total_errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
