"""Renderers for `test`: table (the default), json/yaml (docs/output.md, `TestResult`) and junit."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

from kubectl_kyrec.model import Source
from kubectl_kyrec.render.fit import REF, Column, wrap
from kubectl_kyrec.render.fit import render_table as render_fitted
from kubectl_kyrec.render.text_table import write_rows
from kubectl_kyrec.testsuite.row_types import Mode, Row, RowWarning, SuiteRun


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
        "file": row.file, "test": row.test, "policy": row.policy, "rule": row.rule, "kind": row.kind,
        "resource": row.resource,
        "expected": row.expected, "actual": row.actual, "status": row.status, "reason": row.reason,
        "location": _loc(row.location), "message": row.message,
    }
    if row.diff is not None:
        out["diff"] = row.diff
    return out


def all_warnings(runs: Sequence[SuiteRun]) -> list[RowWarning]:
    return [w for run in runs for w in run.warnings]


def warning_json(warning: RowWarning) -> dict[str, Any]:
    return {"reason": warning.reason, "policy": warning.policy, "rule": warning.rule, "kind": warning.kind,
            "resource": warning.resource, "location": _loc(warning.location), "message": warning.message}


def warning_lines(runs: Sequence[SuiteRun]) -> list[str]:
    """`file:line: policy[/rule] Kind ns/name: reason: message`, one per warning, where the row is written."""
    lines = []
    for w in all_warnings(runs):
        policy = f"{w.policy}/{w.rule}" if w.rule else w.policy
        resource = f"{w.kind} {w.resource}" if w.kind else w.resource
        lines.append(f"{w.location}: {policy} {resource}: {w.reason}: {w.message}")
    return lines


def suite_summary(runs: Sequence[SuiteRun], load_errors: Sequence[object] = ()) -> dict[str, int]:
    """The document's `summary`: rows by outcome, and test files that did not load counted as errors."""
    summary = counts(runs)
    summary["errors"] += len(load_errors)
    return summary


def suite_parts(runs: Sequence[SuiteRun], mode: Mode, *, fail_only: bool = False,
                load_errors: Sequence[tuple[str, Source | None]] = (), notices: Sequence[str] = (),
                allow_not_evaluated: bool = False) -> list[tuple[str, Any]]:
    """The `TestResult` document after its envelope. `load_errors` are test files that could not even be
    parsed."""
    summary = suite_summary(runs, load_errors)
    errors = [*load_errors, *((m, s) for run in runs for m, s in run.errors)]
    return [
        ("mode", mode.value),
        # whether the rows counted in summary.notEvaluated were accepted (else they fail the run)
        ("allowNotEvaluated", allow_not_evaluated),
        ("summary", summary),
        ("rows", [row_json(r) for r in all_rows(runs, fail_only)]),
        ("errors", [{"message": m, "location": _loc(s)} for m, s in errors]),
        ("notices", list(notices)),
        # rows the cluster decides differently from Kyverno's CLI, and vacuous rows (testsuite/verdicts.py)
        ("warnings", [warning_json(w) for w in all_warnings(runs)]),
    ]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _resource(row: Row) -> str:
    return f"{row.kind} {row.resource}" if row.kind else row.resource


def render_table(runs: Sequence[SuiteRun], *, fail_only: bool = False, wide: bool = False,
                 width: int | None = None) -> str:
    """One line per row, failures first; `reason: message` of the failing rows below it; diffs of generated
    resources below; `N passed, M failed` last. `wide`: every column (KIND, REASON, MESSAGE) and cell whole.

    Fitted to `width` otherwise (render/fit.py; None: no limit): ROW is the row's file:line under the
    directory all rows share (the suites given), the kind goes in front of the resource, and each failing
    row's reason and message get a line of their own, wrapped at spaces. No name or path is ever cut."""
    rows = all_rows(runs, fail_only)
    ordered = [r for r in rows if not r.passed] + [r for r in rows if r.passed]
    explained = [r for r in ordered if not r.passed or not r.evaluated]
    parts = []
    base = "" if wide else _shared_directory(ordered)
    if ordered:
        out = io.StringIO()
        if wide:
            headers = ["STATUS", "ROW", "POLICY", "KIND", "RESOURCE", "EXPECTED", "ACTUAL", "REASON", "MESSAGE"]
            write_rows(out, headers, [[r.status.upper(), _row(r), r.policy, r.kind, r.resource, r.expected,
                                       r.actual or "-", r.reason, _one_line(r.message) if r in explained else ""]
                                      for r in ordered])
            parts.append(out.getvalue().rstrip("\n"))
        else:
            cells = [[r.status.upper(), _row(r, base), r.policy, _resource(r), r.expected, r.actual or "-"]
                     for r in ordered]
            lines = [line for r in explained
                     for line in _explained(f"{_row(r, base)}: {r.reason}: {_one_line(r.message)}" if r.message
                                            else f"{_row(r, base)}: {r.reason}", width)]
            parts.append(render_fitted(_COLUMNS, cells, width) + ("\n\n" + "\n".join(lines) if lines else ""))
    for r in ordered:
        if r.diff:
            parts.append(f"{_row(r, base)}: {r.policy} {r.kind} {r.resource}:\n" + r.diff.rstrip("\n"))
    total = counts(runs)
    warnings = len(all_warnings(runs))
    parts.append(f"{total['passed']} passed, {total['failed']} failed"
                 + (f", {total['notEvaluated']} not evaluated" if total["notEvaluated"] else "")
                 + (f", {warnings} warning(s)" if warnings else ""))
    return "\n\n".join(parts) + "\n"


_COLUMNS = (Column("STATUS"), Column("ROW"), Column("POLICY"), Column("RESOURCE", REF), Column("EXPECTED"),
            Column("ACTUAL"))


def _explained(text: str, width: int | None) -> list[str]:
    """A failing row's `file:line: reason: message`, continued on indented lines rather than past
    `width`; broken at spaces only."""
    return wrap(text, width, first="")


def _shared_directory(rows: Sequence[Row]) -> str:
    """The directory every row's file is under ('' when none, or a single file's own directory is all)."""
    files = {str(r.location.file) if r.location else r.file for r in rows}
    try:
        base = os.path.commonpath([os.path.dirname(f) for f in files])
    except ValueError:      # absolute and relative paths mixed
        return ""
    return base if len(files) > 1 or base else ""


def _row(row: Row, base: str = "") -> str:
    where = str(row.location) if row.location else row.file
    return os.path.relpath(where, base) if base and where.startswith(base + os.sep) else where
