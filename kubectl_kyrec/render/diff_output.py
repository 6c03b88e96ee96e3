"""Renderers for `kyrec diff`: summary table, unified diffs (kubectl diff style), and the DiffResult contract.

Every text here comes from already-masked changes (reconcile.masking): no format prints a Secret value,
its base64, or a last-applied-configuration annotation.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Sequence
from typing import Any

from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
from kubectl_kyrec.model import EvalError, Ref
from kubectl_kyrec.reconcile.deletions import DeletionDiff, empty_summary
from kubectl_kyrec.reconcile.downstreams import DownstreamClass, DownstreamDiff
from kubectl_kyrec.reconcile.reports import ReportClass, ReportDiff
from kubectl_kyrec.render import unified_diff as unified
from kubectl_kyrec.render.envelope import error_entries
from kubectl_kyrec.render.fit import REF, TEXT, Column, cause_header, cause_lines, with_causes, wrap_counts
from kubectl_kyrec.render.fit import render_table as render_fitted
from kubectl_kyrec.render.text_table import write_rows

_RESET = "\x1b[0m"
_COLORS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
_BOLD = "\x1b[1m"


def colorize(diff_text: str) -> str:
    """Colour a unified diff the way `diff --color` does: headers bold, hunks cyan, -/+ red/green."""
    out = []
    for line in diff_text.splitlines(keepends=True):
        body = line.rstrip("\n")
        end = line[len(body):]
        if body.startswith(("---", "+++")):
            out.append(f"{_BOLD}{body}{_RESET}{end}")
        elif body[:1] in _COLORS:
            out.append(f"{_COLORS[body[:1]]}{body}{_RESET}{end}")
        else:
            out.append(line)
    return "".join(out)


def _ref(ref: Ref | None) -> str:
    return ref.display() if ref is not None else "-"


NOT_ENFORCED_MARK = "*"
NOT_ENFORCED_NOTE = "* not enforced: Kyverno would not act on it (see the reason; -o wide: ENFORCED)"
# an undetermined row is no claim about Kyverno: kyrec cannot tell what it is, so it is not marked as one
# Kyverno would leave alone (its ENFORCED is `unknown`), and this line says what the class means
UNDETERMINED_NOTE = "undetermined: kyrec cannot tell (the reason says why); not counted, and apply never acts on it"


BASELINED = " (baselined)"
_DOWNSTREAM_COLUMNS = (Column("CLASS"), Column("REASON", TEXT, label="reason"), Column("POLICY"),
                       Column("TRIGGER", REF), Column("DOWNSTREAM", REF))


def render_downstream_table(diff: DownstreamDiff, *, wide: bool = False, show_all: bool = False,
                            width: int | None = None, baselined: Collection[int] = ()) -> str:
    """Counts per class, then one row per change (in-sync rows only with `wide` or `show_all`). Fitted to
    `width` (render/fit.py; None: no limit; a class Kyverno would not enforce marked `*`) unless `wide`.
    `baselined`: the ids of the changes `--baseline` accepts, whose CLASS reads `drifted (baselined)`."""
    summary = diff.summary()
    counts = [f"{summary[str(c)]} {c}" for c in DownstreamClass]
    head = "Downstreams: " + ", ".join(counts) if wide else wrap_counts("Downstreams:", counts, width)
    rows = []
    causes = []
    for change in diff.changes:
        if change.klass is DownstreamClass.IN_SYNC and not (wide or show_all):
            continue
        row = [str(change.klass), str(change.reason) if change.reason else "", change.policy, _ref(change.trigger),
               _ref(change.object)]
        causes.append(change.cause.text if change.cause else "")
        undetermined = change.klass is DownstreamClass.UNDETERMINED
        if wide:
            row += ["unknown" if undetermined else "yes" if change.enforced else "no", " ".join(change.fields)]
        elif not change.enforced and not undetermined:
            row[0] += NOT_ENFORCED_MARK
        if baselined and id(change) in baselined:
            row[0] += BASELINED
        rows.append(row)
    lines = [head]
    if rows:
        if wide:
            table = io.StringIO()
            write_rows(table, [c.header for c in _DOWNSTREAM_COLUMNS] + ["ENFORCED", "FIELDS"] + cause_header(causes),
                       with_causes(rows, causes))
            text = table.getvalue().rstrip("\n")
        else:
            text = render_fitted(_DOWNSTREAM_COLUMNS, rows, width, cause_lines(causes))
        lines += ["", text]
        if any(NOT_ENFORCED_MARK in row[0] for row in rows) and not wide:
            lines.append(NOT_ENFORCED_NOTE)
        if any(row[0].startswith(str(DownstreamClass.UNDETERMINED)) for row in rows):
            lines.append(UNDETERMINED_NOTE)
    if diff.out_of_scope:
        lines += ["", f"{diff.out_of_scope} downstream(s) of policies or triggers outside this run or its filters "
                      "not shown"]
    return "\n".join(lines) + "\n"


_DELETION_COLUMNS = (Column("CLASS"), Column("REASON", TEXT, label="reason"), Column("POLICY"),
                     Column("OBJECT", REF), Column("NEXT RUN"), Column("PROPAGATION"))


def render_deletion_table(diff: DeletionDiff, *, wide: bool = False, width: int | None = None) -> str:
    """What the DeletingPolicies' next runs delete: counts per class, then one row per object (a failed
    LIST as a row for its kind); the MESSAGE column with `wide`, a message under each row otherwise."""
    summary = diff.summary()
    counts = [f"{n} {c}" for c, n in summary.items()]
    head = "Scheduled deletions: " + ", ".join(counts) if wide else wrap_counts("Scheduled deletions:", counts,
                                                                               width)
    rows = []
    notes = []
    for change in diff.changes:
        ref = change.object
        shown = ref.display() if ref.name else f"{ref.kind} {ref.namespace + '/' if ref.namespace else ''}*"
        row = [str(change.klass), str(change.reason) if change.reason else "", change.policy, shown,
               change.when(), change.propagation_policy or "(default)"]
        notes.append(change.message)
        if not change.enforced and not wide:
            row[0] += NOT_ENFORCED_MARK
        rows.append(row)
    lines = [head]
    if rows:
        if wide:
            table = io.StringIO()
            write_rows(table, [c.header for c in _DELETION_COLUMNS] + ["MESSAGE"],
                       [row + [note] for row, note in zip(rows, notes, strict=True)])
            lines += ["", table.getvalue().rstrip("\n")]
        else:
            lines += ["", render_fitted(_DELETION_COLUMNS, rows, width, cause_lines(notes))]
            if any(NOT_ENFORCED_MARK in row[0] for row in rows):
                lines.append("* undetermined: kyrec cannot tell; never deleted by apply")
    if diff.out_of_scope:
        lines += ["", f"{diff.out_of_scope} deletion(s) outside this run's filters not shown"]
    return "\n".join(lines) + "\n"


def render_unified(diff: DownstreamDiff, *, color: bool = False) -> str:
    """The unified diff of every drifted downstream, one after the other."""
    texts = [t for t in (unified.unified_diff(c.shown) for c in diff.changes if c.shown is not None) if t]
    text = "".join(t if t.endswith("\n") else t + "\n" for t in texts)
    return colorize(text) if color else text


def render_report_unified(reports: ReportDiff, *, color: bool = False) -> str:
    """The unified diff of every stale report's results, one after the other."""
    text = "".join(t for t in (unified.unified_diff(c.shown) for c in reports.changes if c.shown is not None) if t)
    return colorize(text) if color else text


def render_table(diff: DownstreamDiff | None, report_table: str | None = None, *, wide: bool = False,
                 color: bool = False, unified: bool = True, width: int | None = None,
                 show_all: bool = False, baselined: Collection[int] = (),
                 deletions: DeletionDiff | None = None) -> str:
    """The tables (downstreams, scheduled deletions, reports), then (`unified`) the downstreams' unified
    diffs."""
    parts = []
    if diff is not None:
        parts.append(render_downstream_table(diff, wide=wide, width=width, show_all=show_all,
                                             baselined=baselined))
    if deletions is not None:
        parts.append(render_deletion_table(deletions, wide=wide, width=width))
    if report_table:
        parts.append(report_table)
    if diff is not None and unified:
        texts = render_unified(diff, color=color)
        if texts:
            parts.append(texts)
    return "\n".join(parts)


def diff_parts(downstreams: DownstreamDiff | None, reports: ReportDiff | None, errors: Sequence[EvalError],
               notices: Sequence[str], deletions: DeletionDiff | None = None) -> list[tuple[str, Any]]:
    """The DiffResult document of docs/output.md after its envelope: every examined object, all classes
    counted, each drift's unified diff rendered here; the scheduled deletions after the downstreams."""
    changes = [*(downstreams.changes_json(unified.unified_diff) if downstreams is not None else []),
               *(deletions.changes_json() if deletions is not None else []),
               *(reports.changes_json(unified.unified_diff) if reports is not None else [])]
    return [
        ("changes", changes),
        ("summary", {
            "downstream": downstreams.summary() if downstreams is not None
            else {str(c): 0 for c in DownstreamClass},
            "report": reports.summary() if reports is not None else {str(c): 0 for c in ReportClass},
            "deletion": deletions.summary() if deletions is not None else empty_summary(),
        }),
        ("errors", error_entries(errors)),
        ("notices", list(dict.fromkeys(notices))),       # each once, as on stderr (cli emit_notices)
    ]


# ---- `eval`: the downstreams the policies generate ---------------------------------------------------------

def _object_display(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', '')} {namespace}{meta.get('name', '')}"


_GENERATED_COLUMNS = (Column("POLICY"), Column("TRIGGER", REF), Column("DOWNSTREAM", REF))


def render_downstreams(generated: GeneratingOutcome, *, wide: bool = False, width: int | None = None) -> str:
    """`eval`'s table of downstreams (triggers whose output could not be determined are `undetermined`
    results in the results table). Fitted to `width` (render/fit.py; None: no limit) unless `wide`."""
    rows = [[o.policy.key, o.trigger.ref.display(), _object_display(obj)] for o, obj in generated.downstreams]
    if not rows:
        return ""
    return "Generated downstreams:\n" + render_fitted(_GENERATED_COLUMNS, rows, None if wide else width) + "\n"
