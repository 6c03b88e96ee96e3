"""`eval --base-policy` output: what a policy change does, as tables and GitHub workflow annotations."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from kubectl_kyrec.reconcile.impact import NEW, PASS_TO_FAIL, Impact
from kubectl_kyrec.render import unified_diff as unified
from kubectl_kyrec.render.fit import END, MIDDLE, START, TABLE_WIDTH, fit_rows
from kubectl_kyrec.render.text_table import write_rows


def _table(title: str, headers: Sequence[str], rows: list[list[str]], cuttable: Mapping[int, str],
           floors: Mapping[int, int], *, wide: bool, width: int) -> str:
    out = io.StringIO()
    cut = {i: mode for i, mode in cuttable.items() if i < len(headers)}
    write_rows(out, headers, rows if wide else fit_rows(headers, rows, cut, floors=floors, width=width,
                                                        header_pad=0))
    return f"{title}:\n" + out.getvalue().rstrip("\n")


def render_impact_table(impact: Impact, *, wide: bool = False, width: int = TABLE_WIDTH) -> str:
    """Two tables (downstreams, results), then the diff of every changed downstream.

    Fitted to `width` unless `wide`: names cut in the middle, paths kept at their end, notes and messages
    cut at the end; a result's change is shown as `before -> after` (what CHANGE says, in less room:
    `pass -> fail` is pass-to-fail, `- -> fail` new, `pass -> -` gone). `wide`: every column whole."""
    if not impact.changed:
        return "The policy change changes nothing for these resources.\n"
    parts = []
    if impact.downstreams:
        headers = ["CHANGE", "POLICY", "TRIGGER", "DOWNSTREAM", "LOCATION", "NOTE"]
        rows = [[d.change, d.policy, d.trigger.display(), d.object.display(), str(d.location or "-"), d.note]
                for d in impact.downstreams]
        if not wide and not any(d.note for d in impact.downstreams):
            # no note anywhere (sync on): the column would spend its header's room on nothing
            headers.pop()
            rows = [row[:-1] for row in rows]
        parts.append(_table("Downstream changes", headers, rows, {1: MIDDLE, 2: MIDDLE, 3: MIDDLE, 4: START, 5: END},
                            {1: 12, 2: 14, 3: 16, 4: 14, 5: 12}, wide=wide, width=width))
    if impact.results:
        if wide:
            headers = ["CHANGE", "POLICY", "RULE", "SUBJECT", "BEFORE", "AFTER", "LOCATION", "MESSAGE"]
            rows = [[r.change, r.policy, r.rule or "-", r.subject.display(), r.before or "-", r.after or "-",
                     str(r.location or "-"), " ".join(r.message.split())] for r in impact.results]
        else:
            headers = ["POLICY", "SUBJECT", "RESULT", "LOCATION", "MESSAGE"]
            rows = [[r.policy, r.subject.display(), f"{r.before or '-'} -> {r.after or '-'}",
                     str(r.location or "-"), " ".join(r.message.split())] for r in impact.results]
        parts.append(_table("Result changes", headers, rows, {0: MIDDLE, 1: MIDDLE, 3: START, 4: END},
                            {0: 14, 1: 16, 3: 16, 4: 12}, wide=wide, width=width))
    diffs = "".join(filter(None, (unified.unified_diff(d.shown) for d in impact.downstreams)))
    text = "\n\n".join(parts) + "\n"
    return text + ("\n" + diffs if diffs else "")


def github_annotations(impact: Impact) -> list[str]:
    """Workflow annotations for what changes, at the resource's file:line."""
    lines = []
    for d in impact.downstreams:
        where = f"file={d.location.file},line={d.location.line or 1}," if d.location else ""
        lines.append(f"::notice {where}title={d.policy}::downstream {d.object.display()} would {d.change}")
    for r in impact.results:
        level = "error" if r.change in (PASS_TO_FAIL, NEW) and r.after == "fail" else "notice"
        where = f"file={r.location.file},line={r.location.line or 1}," if r.location else ""
        lines.append(f"::{level} {where}title={r.policy}::{r.subject.display()}: {r.change} "
                     f"({r.before or '-'} -> {r.after or '-'})")
    return lines
