"""`eval --base-policy` output: what a policy change does, as tables and GitHub workflow annotations."""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_kyrec.reconcile.impact import ADMITTED, MUTATED_DIFFERENTLY, NEW, PASS_TO_FAIL, REJECTED, Impact
from kubectl_kyrec.render import unified_diff as unified
from kubectl_kyrec.render.fit import REF, TEXT, Column, render_table


def _table(title: str, columns: Sequence[Column], rows: list[list[str]], *, wide: bool, width: int | None) -> str:
    return f"{title}:\n" + render_table(columns, rows, None if wide else width)


# LOCATION (the trigger's or subject's file:line) is the first column to leave a narrow table: under its
# row, on a line of its own, as in eval's results table
_DOWNSTREAM_COLUMNS = (Column("CHANGE"), Column("POLICY"), Column("TRIGGER", REF), Column("DOWNSTREAM", REF),
                       Column("LOCATION", drop=1, under=True), Column("NOTE", TEXT, label="note"))
_RESULT_COLUMNS = (Column("POLICY"), Column("SUBJECT", REF), Column("RESULT"),
                   Column("LOCATION", drop=1, under=True), Column("MESSAGE", TEXT))
_WIDE_RESULT_COLUMNS = tuple(Column(h) for h in ("CHANGE", "POLICY", "RULE", "SUBJECT", "BEFORE", "AFTER",
                                                 "LOCATION", "MESSAGE"))


# DENIED BY: the policies that deny the request where it is denied (after the change for `rejected`, before
# it for `admitted`)
_ADMISSION_COLUMNS = (Column("CHANGE"), Column("SUBJECT", REF), Column("OPERATION", drop=2),
                      Column("LOCATION", drop=1, under=True), Column("DENIED BY", TEXT, label="denied by"))


def render_impact_table(impact: Impact, *, wide: bool = False, width: int | None = None) -> str:
    """Two tables (downstreams, results), then the diff of every changed downstream.

    Fitted to `width` (render/fit.py; None: no limit) unless `wide`; a result's change is shown as
    `before -> after` (what CHANGE says, in less room: `pass -> fail` is pass-to-fail, `- -> fail` new,
    `pass -> -` gone). `wide`: every column whole."""
    if not impact.changed:
        return "The policy change changes nothing for these resources.\n"
    parts = []
    if impact.downstreams:
        columns = list(_DOWNSTREAM_COLUMNS)
        rows = [[d.change, d.policy, d.trigger.display(), d.object.display(), str(d.location or "-"), d.note]
                for d in impact.downstreams]
        if not wide and not any(d.note for d in impact.downstreams):
            # no note anywhere (sync on): the column would spend its header's room on nothing
            columns.pop()
            rows = [row[:-1] for row in rows]
        parts.append(_table("Downstream changes", columns, rows, wide=wide, width=width))
    if impact.results:
        if wide:
            rows = [[r.change, r.policy, r.rule or "-", r.subject.display(), r.before or "-", r.after or "-",
                     str(r.location or "-"), " ".join(r.message.split())] for r in impact.results]
            parts.append(_table("Result changes", _WIDE_RESULT_COLUMNS, rows, wide=wide, width=width))
        else:
            rows = [[r.policy, r.subject.display(), f"{r.before or '-'} -> {r.after or '-'}",
                     str(r.location or "-"), " ".join(r.message.split())] for r in impact.results]
            parts.append(_table("Result changes", _RESULT_COLUMNS, rows, wide=wide, width=width))
    if impact.admission:
        rows = [[a.change, a.subject.display(), a.operation, str(a.location or "-"), ", ".join(a.denied_by) or "-"]
                for a in impact.admission]
        parts.append(_table("Admission changes", _ADMISSION_COLUMNS, rows, wide=wide, width=width))
    diffs = "".join(filter(None, (unified.unified_diff(d.shown) for d in impact.downstreams)))
    diffs += "".join(filter(None, (unified.unified_diff(a.shown) for a in impact.admission)))
    text = "\n\n".join(parts) + "\n"
    return text + ("\n" + diffs if diffs else "")


def github_annotations(impact: Impact) -> list[str]:
    """Workflow annotations for what changes, at the resource's file:line."""
    lines = []
    for d in impact.downstreams:
        where = f"file={d.location.file},line={d.location.line or 1}," if d.location else ""
        lines.append(f"::notice {where}title={d.policy}::downstream {d.object.display()} would {d.change}")
    for a in impact.admission:
        level = "error" if a.change == REJECTED else "notice"
        where = f"file={a.location.file},line={a.location.line or 1}," if a.location else ""
        denied = f" by {', '.join(a.denied_by)}" if a.denied_by else ""
        what = {REJECTED: f"would now be denied{denied}", ADMITTED: f"would no longer be denied{denied}",
                MUTATED_DIFFERENTLY: "would be stored differently (mutated differently)"}[a.change]
        lines.append(f"::{level} {where}title=admission::{a.subject.display()} {what}")
    for r in impact.results:
        level = "error" if r.change in (PASS_TO_FAIL, NEW) and r.after == "fail" else "notice"
        where = f"file={r.location.file},line={r.location.line or 1}," if r.location else ""
        lines.append(f"::{level} {where}title={r.policy}::{r.subject.display()}: {r.change} "
                     f"({r.before or '-'} -> {r.after or '-'})")
    return lines
