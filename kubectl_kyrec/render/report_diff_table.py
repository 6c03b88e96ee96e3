"""Table for report changes (`kyrec diff`, report domain): counts first, then the objects that differ."""

from __future__ import annotations

import io

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.reports import ReportClass, ReportDiff
from kubectl_kyrec.render.fit import END, MIDDLE, TABLE_WIDTH, fit_rows, wrap_counts
from kubectl_kyrec.render.text_table import write_rows


def _ref(ref: Ref | None) -> str:
    return ref.display() if ref is not None else "-"


def _age(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def render_report_diff(diff: ReportDiff, *, wide: bool = False, all_rows: bool = False,
                       width: int = TABLE_WIDTH) -> str:
    """Counts per class, then one row per change; current ones only with `all_rows`. Fitted to `width`
    (names cut in the middle) unless `wide`."""
    summary = diff.summary()
    # undetermined only arises from a failed or missing read: said when there are some, not as a 0 every time
    counts = [f"{summary[str(c)]} {c}" for c in ReportClass
              if c is not ReportClass.UNDETERMINED or summary[str(c)]]
    head = (f"Reports ({diff.report_api}): " + ", ".join(counts) if wide
            else wrap_counts(f"Reports ({diff.report_api}):", counts, width))
    rows = []
    for change in diff.changes:
        if change.klass == ReportClass.CURRENT and not all_rows:
            continue
        row = [str(change.klass), change.reason or "", _ref(change.subject), _ref(change.report),
               str(change.next_scan) if change.next_scan else "-", _age(change.oldest_ephemeral_age_s)]
        if wide:
            row += [change.next_scan_reason or "", " ".join(change.fields)]
        rows.append(row)
    headers = ["CLASS", "REASON", "SUBJECT", "REPORT", "NEXT SCAN", "OLDEST EPHEMERAL"]
    if wide:
        headers += ["SCAN REASON", "FIELDS"]
    if not wide and all(row[5] == "-" for row in rows):
        # no ephemeral report waiting anywhere: the column would spend 18 of 80 columns on dashes
        headers.pop(5)
        rows = [row[:5] for row in rows]
    if not wide:
        rows = fit_rows(headers, rows, {1: END, 2: MIDDLE, 3: MIDDLE}, floors={1: 15, 2: 16, 3: 20},
                        width=width, header_pad=0)
    lines = [head]
    if rows:
        table = io.StringIO()
        write_rows(table, headers, rows)
        lines += ["", table.getvalue().rstrip("\n")]
    if diff.ignored_reports:
        lines += ["", f"{len(diff.ignored_reports)} report(s) not examined (other report API, or objects "
                      f"outside this run)"]
    return "\n".join(lines) + "\n"
