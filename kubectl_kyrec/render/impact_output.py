"""`eval --base-policy` output: what a policy change does, as tables and GitHub workflow annotations."""

from __future__ import annotations

from tabulate import tabulate

from kubectl_kyrec.reconcile.impact import NEW, PASS_TO_FAIL, Impact
from kubectl_kyrec.render import unified_diff as unified


def render_impact_table(impact: Impact) -> str:
    """Two tables (downstreams, results), then the diff of every changed downstream."""
    if not impact.changed:
        return "The policy change changes nothing for these resources.\n"
    parts = []
    if impact.downstreams:
        rows = [[d.change, d.policy, d.trigger.display(), d.object.display(), str(d.location or "-"), d.note]
                for d in impact.downstreams]
        parts.append("Downstream changes:\n" + tabulate(rows, headers=["CHANGE", "POLICY", "TRIGGER", "DOWNSTREAM",
                                                                "LOCATION", "NOTE"], tablefmt="plain"))
    if impact.results:
        rows = [[r.change, r.policy, r.subject.display(), r.before or "-", r.after or "-",
                 str(r.location or "-"), " ".join(r.message.split())[:80]] for r in impact.results]
        parts.append("Result changes:\n" + tabulate(rows, headers=["CHANGE", "POLICY", "SUBJECT", "BEFORE", "AFTER",
                                                            "LOCATION", "MESSAGE"], tablefmt="plain"))
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
