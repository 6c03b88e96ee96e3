"""ExpectedReports: the expected reports built when read, the same documents `expected_reports` builds."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

import kubectl_kyrec.expect.reports as reports_module
from kubectl_kyrec.expect.reports import ExpectedReports, expected_reports
from kubectl_kyrec.model import OPENREPORTS, Ref, Result, Subject
from kubectl_kyrec.reconcile.reports import ReportDiff, diff_reports

NOW = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)
POD_A = Ref("v1", "Pod", "shop", "a", "uid-a")
POD_B = Ref("v1", "Pod", "shop", "b", "uid-b")
NODE = Ref("v1", "Node", "", "n1", "uid-n")
MANIFEST = Ref("v1", "Pod", "shop", "m", "synthetic-m", synthetic=True)


def _r(subject: Ref, policy: str, result: str, *, source: str = "KyvernoValidatingPolicy", rule: str = "",
       message: str = "", **extra: Any) -> Result:
    return Result(policy=policy, source=source, rule=rule, result=result, message=message, subject=subject, **extra)


PAIRS = [
    (_r(POD_A, "zeta", "fail", message="zeta failed"), True),
    (_r(POD_A, "alpha", "pass", properties={"k": "v"}, category="Best Practices", severity="medium"), True),
    # a CEL policy's second result for one subject: the later one wins
    (_r(POD_A, "alpha", "fail", message="second"), True),
    # classic policies keep one result per rule, ordered by rule
    (_r(POD_B, "cpol", "pass", source="kyverno", rule="r2"), True),
    (_r(POD_B, "cpol", "fail", source="kyverno", rule="r1", message="r1 failed", scored=False), True),
    (_r(POD_B, "not-reported", "pass"), False),
    (_r(NODE, "nodes", "warn"), True),
    (_r(MANIFEST, "alpha", "skip", message="excluded"), True),
]


def test_the_reports_read_are_those_expected_reports_builds() -> None:
    for api in ("wgpolicyk8s.io/v1alpha2", OPENREPORTS):
        built = expected_reports(PAIRS, NOW, api)
        lazy = ExpectedReports(PAIRS, NOW, api)
        assert len(lazy) == len(built) == 4
        assert list(lazy) == built
        assert [lazy[i] for i in range(len(lazy))] == built
        assert lazy[-1] == built[-1] and lazy[1:3] == built[1:3]
        assert lazy.uids() == [r["metadata"]["name"] for r in built] == ["uid-a", "uid-b", "uid-n", "synthetic-m"]
        for uid, report in zip(lazy.uids(), built, strict=True):
            assert lazy.entries(uid) == report["results"]
            assert [(r.policy, r.rule, r.result) for r in lazy.reported(uid)] == [
                (e["policy"], e.get("rule", ""), e["result"]) for e in report["results"]]


def test_a_subject_owed_nothing_has_no_entries() -> None:
    lazy = ExpectedReports(PAIRS, NOW)
    assert lazy.entries("uid-unknown") == [] and lazy.reported("uid-unknown") == []
    assert [e["policy"] for e in lazy.entries("uid-a")] == ["alpha", "zeta"]
    assert lazy.entries("uid-a")[0]["message"] == "second"
    assert [e["rule"] for e in lazy.entries("uid-b")] == ["r1", "r2"]


def _obj(ref: Ref) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ref.name, "uid": ref.uid}
    if ref.namespace:
        meta["namespace"] = ref.namespace
    return {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta}


def _report_json(diff: ReportDiff) -> Any:
    return ([(str(c.klass), c.reason, c.subject, c.report, c.fields, c.next_scan_reason) for c in diff.changes],
            [(s.subject, str(s.status), s.reason, s.report, s.results) for s in diff.subjects],
            diff.left_out_sources)


def test_the_report_diff_is_the_same_from_either_form() -> None:
    subjects_refs = (POD_A, POD_B, NODE)
    subjects = [Subject(_obj(ref), ref, None) for ref in subjects_refs]
    built = expected_reports(PAIRS, NOW)
    # the cluster: uid-a's report current, uid-b's stale (an outcome changed, a result of another policy,
    # one of a policy kind kyrec does not evaluate), uid-n's missing, and an orphan
    current = {**built[0], "metadata": {**built[0]["metadata"], "labels": {"app.kubernetes.io/managed-by": "kyverno"}}}
    stale_results = [dict(e) for e in built[1]["results"]]
    stale_results[0]["result"] = "pass"
    stale_results.append({"source": "KyvernoValidatingPolicy", "policy": "gone", "result": "fail", "scored": True})
    stale_results.append({"source": "KyvernoMutatingPolicy", "policy": "m", "result": "pass", "scored": True})
    stale = {**built[1], "results": stale_results}
    orphan = {**built[0], "metadata": {**built[0]["metadata"], "name": "uid-gone"},
              "scope": {**built[0]["scope"], "uid": "uid-gone", "name": "gone"}}
    state = [*(s.obj for s in subjects), current, stale, orphan]
    for policies in (None, frozenset({"alpha", "cpol", "nodes"})):
        from_list = diff_reports(built, subjects, state, now=NOW, policies=policies)
        from_lazy = diff_reports(ExpectedReports(PAIRS, NOW), subjects, state, now=NOW, policies=policies)
        assert _report_json(from_lazy) == _report_json(from_list)
    statuses = {s.subject.uid: (str(s.status), s.reason) for s in from_lazy.subjects}
    assert statuses == {"uid-a": ("current", None), "uid-b": ("stale", "outcome-changed"), "uid-n": ("missing", None)}
    assert {s.subject.uid: s.results for s in from_lazy.subjects}["uid-b"] == (("cpol", "fail"), ("cpol", "pass"))
    assert from_lazy.left_out_sources == ("KyvernoMutatingPolicy",)


@pytest.mark.parametrize("cap", [None, 1, 3])
def test_entries_shared_between_reports_keep_each_results_own_fields(cap: int | None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # ExpectedReports makes one entry per distinct outcome, shared by the reports carrying it: subjects
    # whose results differ in one field only (each field in turn) must still get their own entries
    base: dict[str, Any] = {"policy": "p", "source": "KyvernoValidatingPolicy", "rule": "", "result": "fail",
                            "message": "m", "scored": True, "category": "c", "severity": "high",
                            "properties": {"process": "background scan"}}
    changes: list[tuple[str, Any]] = [
        ("policy", "q"), ("source", "kyverno"), ("rule", "r1"), ("result", "pass"), ("message", "other"),
        ("scored", False), ("category", ""), ("severity", "low"), ("properties", {"process": "admission review"}),
        ("properties", {"process": "background scan", "cel.validationIndex": "1"}), ("properties", {}),
        ("properties", {"process": "background scan", "x": ["not", "hashable"]})]
    pairs = []
    for i, (field, value) in enumerate([("policy", "p"), *changes, *changes]):
        ref = Ref("v1", "Pod", "shop", f"s{i}", f"uid-{i}")
        pairs.append((Result(subject=ref, **{**base, field: value}), True))
    if cap is not None:         # the cache emptied as it fills: the same reports
        monkeypatch.setattr(reports_module, "_SHARED_MAX", cap)
    lazy = ExpectedReports(pairs, NOW)
    built = expected_reports(pairs, NOW)
    assert list(lazy) == built
    assert [lazy.entries(uid) for uid in lazy.uids()] == [r["results"] for r in built]
