"""Renderers for `test`: table (the default), json/yaml (the DESIGN section 3 contract) and junit."""

from __future__ import annotations

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


