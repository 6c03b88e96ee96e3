"""Renderers for `eval`: table, wide, json/yaml (the contract), reports, GitHub annotations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from kubectl_kyrec.model import UNDETERMINED, Result, Source
from kubectl_kyrec.render.envelope import envelope, to_json, to_yaml, to_yaml_stream

STATUS_ORDER = {"error": 0, "fail": 1, UNDETERMINED: 2, "warn": 3, "skip": 4, "pass": 5}


def _loc(source: Source | None) -> dict[str, Any] | None:
    return source.as_location() if source is not None else None


def result_json(r: Result) -> dict[str, Any]:
    return {
        "policy": r.policy, "source": r.source, "rule": r.rule, "subject": r.subject.to_json(),
        "result": r.result, "message": r.message, "scored": r.scored, "category": r.category,
        "severity": r.severity, "validationActions": list(r.validation_actions),
        "properties": dict(r.properties), "location": _loc(r.location), "policyLocation": _loc(r.policy_location),
    }


def summary(results: Sequence[Result]) -> dict[str, int]:
    counts = dict.fromkeys(("pass", "fail", "warn", "error", "skip", UNDETERMINED), 0)
    for r in results:
        counts[r.result] = counts.get(r.result, 0) + 1
    return counts


def eval_document(results: Sequence[Result], reports: Sequence[dict[str, Any]], downstreams: Sequence[Any],
                  errors: Sequence[tuple[str, Source | None]], notices: Sequence[str],
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "results": [result_json(r) for r in results],
        "downstreams": list(downstreams),
        "reports": list(reports),
        "errors": [{"message": m, "location": _loc(s)} for m, s in errors],
        "notices": list(notices),
        "summary": summary(results),
    }
    if extra:
        body.update(extra)
    return envelope("EvalResult", body)


def render_json(doc: dict[str, Any]) -> str:
    return to_json(doc)


def render_yaml(doc: dict[str, Any]) -> str:
    return to_yaml(doc)


def render_reports(reports: Sequence[dict[str, Any]], results: Sequence[Result] = ()) -> str:
    """The expected reports; a comment first for each result they cannot hold (undetermined: Kyverno's
    report has a pass/fail/... there that kyrec could not decide)."""
    notes = "".join(f"# {UNDETERMINED}: {r.policy} for {r.subject.display()}: {' '.join(r.message.split())} "
                    "(the report holds a result for it that kyrec cannot decide)\n"
                    for r in _sorted(results) if r.result == UNDETERMINED)
    return notes + (to_yaml_stream(list(reports)) if reports else "")


def _sorted(results: Sequence[Result]) -> list[Result]:
    return sorted(results, key=lambda r: (STATUS_ORDER.get(r.result, 9), r.policy, r.subject.kind,
                                          r.subject.namespace, r.subject.name))


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def render_table(results: Sequence[Result], *, wide: bool = False) -> str:
    if not results:
        return "No policy matched any resource.\n"
    rows = []
    # ClusterPolicy/Policy answer per rule: the plain table names the rule too when any of them answered
    rules = any(r.source == "kyverno" for r in results)
    for r in _sorted(results):
        subject = r.subject.display()
        where = str(r.location) if r.location else ""
        if wide:
            rows.append([r.policy, r.rule or "-", subject, r.result, r.message, ",".join(r.validation_actions),
                         r.severity or "-", where])
        elif rules:
            rows.append([r.policy, r.rule or "-", subject, r.result, _short(r.message, 80), where])
        else:
            rows.append([r.policy, subject, r.result, _short(r.message, 80), where])
    headers = (["POLICY", "RULE", "SUBJECT", "RESULT", "MESSAGE", "ACTIONS", "SEVERITY", "LOCATION"] if wide
               else ["POLICY", "RULE", "SUBJECT", "RESULT", "MESSAGE", "LOCATION"] if rules
               else ["POLICY", "SUBJECT", "RESULT", "MESSAGE", "LOCATION"])
    counts = summary(results)
    tail = ", ".join(f"{k}: {v}" for k, v in counts.items() if v or k != UNDETERMINED)
    return tabulate(rows, headers=headers, tablefmt="plain") + "\n\n" + tail + "\n"


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def render_github(results: Sequence[Result]) -> str:
    """GitHub workflow commands: one annotation per failing/erroring/warning result, at file:line; a notice
    for each undetermined one."""
    level = {"fail": "error", "error": "error", "warn": "warning", UNDETERMINED: "notice"}
    lines = []
    for r in _sorted(results):
        if r.result not in level:
            continue
        where = f"file={r.location.file},line={r.location.line or 1}," if r.location else ""
        title = _escape(f"{r.policy}{'/' + r.rule if r.source == 'kyverno' else ''}: {r.subject.display()}")
        message = f"{UNDETERMINED}: {r.message}" if r.result == UNDETERMINED else r.message
        lines.append(f"::{level[r.result]} {where}title={title}::{_escape(message)}")
    return "\n".join(lines) + ("\n" if lines else "")
