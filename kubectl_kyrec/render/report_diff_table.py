"""Table for report changes (`kyrec diff`, report domain): counts first, then the objects that differ."""

from __future__ import annotations

import io
from collections.abc import Collection

from kubectl_kyrec.k8s.times import kubectl_age
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.reports import ReportClass, ReportDiff
from kubectl_kyrec.render.fit import (
    REF,
    TEXT,
    Column,
    cause_header,
    cause_lines,
    render_table,
    with_causes,
    wrap_counts,
)
from kubectl_kyrec.render.text_table import write_rows


def _ref(ref: Ref | None) -> str:
    return ref.display() if ref is not None else "-"


BASELINED = " (baselined)"
# NEXT SCAN and OLDEST EPHEMERAL say when the report will change: dropped (the age first) before any
# identity when the table does not fit; -o wide shows them
_COLUMNS = (Column("CLASS"), Column("REASON", TEXT, label="reason"), Column("SUBJECT", REF), Column("REPORT", REF),
            Column("NEXT SCAN", drop=1), Column("OLDEST EPHEMERAL", drop=2))


def render_report_diff(diff: ReportDiff, *, wide: bool = False, all_rows: bool = False,
                       width: int | None = None, baselined: Collection[int] = ()) -> str:
    """Counts per class, then one row per change; current ones only with `all_rows`. Fitted to `width`
    (render/fit.py; None: no limit) unless `wide`. `baselined`: the ids of the changes `--baseline`
    accepts, whose CLASS reads `stale (baselined)`."""
    summary = diff.summary()
    # undetermined only arises from a failed or missing read: said when there are some, not as a 0 every time
    counts = [f"{summary[str(c)]} {c}" for c in ReportClass
              if c is not ReportClass.UNDETERMINED or summary[str(c)]]
    head = (f"Reports ({diff.report_api}): " + ", ".join(counts) if wide
            else wrap_counts(f"Reports ({diff.report_api}):", counts, width))
    rows = []
    causes = []
    for change in diff.changes:
        if change.klass == ReportClass.CURRENT and not all_rows:
            continue
        row = [str(change.klass) + (BASELINED if baselined and id(change) in baselined else ""),
               change.reason or "", _ref(change.subject), _ref(change.report),
               str(change.next_scan) if change.next_scan else "-", kubectl_age(change.oldest_ephemeral_age_s)]
        causes.append(change.cause.text if change.cause else "")
        if wide:
            row += [change.next_scan_reason or "", " ".join(change.fields)]
        rows.append(row)
    columns = list(_COLUMNS)
    if not wide and all(row[5] == "-" for row in rows):
        # no ephemeral report waiting anywhere: a column of dashes says nothing
        columns.pop(5)
        rows = [row[:5] for row in rows]
    if wide:
        out = io.StringIO()
        write_rows(out, [c.header for c in columns] + ["SCAN REASON", "FIELDS"] + cause_header(causes),
                   with_causes(rows, causes))
        table = out.getvalue().rstrip("\n")
    else:
        table = render_table(columns, rows, width, cause_lines(causes))
    lines = [head]
    if rows:
        lines += ["", table]
    if diff.ignored_reports:
        lines += ["", f"{len(diff.ignored_reports)} report(s) not examined (other report API, or objects "
                      f"outside this run)"]
    return "\n".join(lines) + "\n"
