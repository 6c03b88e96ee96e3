"""Expected policy reports: one per subject, named by its uid (SEMANTICS D.1, DESIGN section 5).

Only what the background scan would write: results of policies with background enabled, no
matchConditions skips (the scan filters them), nothing from policies labelled reports.kyverno.io/disabled.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kubectl_kyrec.model import Ref, Result

WGPOLICY = "wgpolicyk8s.io/v1alpha2"
OPENREPORTS = "openreports.io/v1alpha1"
REPORT_KINDS: dict[str, tuple[str, str]] = {
    WGPOLICY: ("PolicyReport", "ClusterPolicyReport"),
    OPENREPORTS: ("Report", "ClusterReport"),
}
STATUSES = ("pass", "fail", "warn", "error", "skip")
SYNTHETIC_UID_ANNOTATION = "kyrec.io/uid-synthetic"


def report_result(result: Result, now: datetime.datetime,
                  timestamp: dict[str, int] | None = None) -> dict[str, Any]:
    """One `results[]` entry as Kyverno's ToPolicyReportResult writes it (empty fields omitted).

    Entries share `timestamp` and the result's properties mapping: reports are built in bulk and never
    modified afterwards.
    """
    out: dict[str, Any] = {"source": result.source, "policy": result.policy}
    if result.rule:
        out["rule"] = result.rule
    out["result"] = result.result
    out["message"] = result.message
    out["scored"] = result.scored
    if result.category:
        out["category"] = result.category
    if result.severity:
        out["severity"] = result.severity
    if result.properties:
        out["properties"] = result.properties
    out["timestamp"] = timestamp if timestamp is not None else {"seconds": int(now.timestamp()), "nanos": 0}
    return out


def _sort_key(entry: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(entry.get("policy", "")), str(entry.get("rule", "")), str(entry.get("source", "")))


def summary(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for entry in entries:
        status = str(entry.get("result", ""))
        if status in counts:
            counts[status] += 1
    return counts


def build_report(subject: Ref, results: Sequence[Result], now: datetime.datetime,
                 api: str = WGPOLICY) -> dict[str, Any]:
    namespaced_kind, cluster_kind = REPORT_KINDS[api]
    # CEL sources are keyed by source/policy/uid: one result per policy per resource; later wins.
    # Classic policies (source kyverno) by source/policy/rule/uid: one per rule.
    keyed: dict[tuple[str, str, str], Result] = {}
    for r in results:
        keyed[(r.source, r.policy, r.rule if r.source == "kyverno" else "")] = r
    stamp = {"seconds": int(now.timestamp()), "nanos": 0}
    entries = sorted((report_result(r, now, stamp) for r in keyed.values()), key=_sort_key)
    metadata: dict[str, Any] = {"name": subject.uid}
    if subject.namespace:
        metadata["namespace"] = subject.namespace
    metadata["labels"] = {"app.kubernetes.io/managed-by": "kyverno"}
    if subject.synthetic:
        # the subject came from a manifest without a uid: the name is kyrec's stand-in, not a real uid
        metadata["annotations"] = {SYNTHETIC_UID_ANNOTATION: "true"}
    metadata["ownerReferences"] = [{"apiVersion": subject.api_version, "kind": subject.kind,
                                    "name": subject.name, "uid": subject.uid}]
    scope: dict[str, Any] = {"apiVersion": subject.api_version, "kind": subject.kind, "name": subject.name}
    if subject.namespace:
        scope["namespace"] = subject.namespace
    scope["uid"] = subject.uid
    return {
        "apiVersion": api,
        "kind": namespaced_kind if subject.namespace else cluster_kind,
        "metadata": metadata,
        "scope": scope,
        "summary": summary(entries),
        "results": entries,
    }


def reportable(result: Result, background: bool, disabled: bool) -> bool:
    """Would the background scan put this result in a report?"""
    if disabled or not background:
        return False
    # a matchConditions skip (rule "" and message "skip") is dropped by the scan
    return not (result.result == "skip" and result.rule == "" and result.message == "skip")


def expected_reports(results: Iterable[tuple[Result, bool]], now: datetime.datetime,
                     api: str = WGPOLICY) -> list[dict[str, Any]]:
    """Reports for every subject with at least one reportable result; input pairs (result, reportable)."""
    return list(iter_expected_reports(results, now, api))


def iter_expected_reports(results: Iterable[tuple[Result, bool]], now: datetime.datetime,
                          api: str = WGPOLICY) -> Iterator[dict[str, Any]]:
    """`expected_reports` one report at a time, so a writer never holds them all (one pass to group)."""
    by_subject: dict[str, tuple[Ref, list[Result]]] = {}
    for result, ok in results:
        if not ok:
            continue
        found = by_subject.get(result.subject.uid)
        if found is None:
            by_subject[result.subject.uid] = (result.subject, [result])
        else:
            found[1].append(result)
    for ref, rs in by_subject.values():
        yield build_report(ref, rs, now, api)
