"""Report reconciliation: golden cases in testdata/reports/<case>/ plus the rules they rest on."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.expect.resource_hash import resource_hash
from kubectl_kyrec.load.run_inputs.kyverno_config import default_kyverno_config, parse_resource_filters
from kubectl_kyrec.model import Ref, Subject, ref_of
from kubectl_kyrec.reconcile.reports import (
    OPENREPORTS,
    WGPOLICY,
    NextScan,
    ReportChange,
    ReportClass,
    StaleReason,
    compare_results,
    diff_reports,
)
from kubectl_kyrec.render.report_diff_table import render_report_diff
from kubectl_kyrec.render.unified_diff import unified_diff
from tests.shared_inputs import require, shared

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "testdata" / "reports"
# KYREC_UPDATE_GOLDEN=1 rewrites the want-table.txt files from what kyrec prints (review the diff!)
UPDATE_TABLES = os.environ.get("KYREC_UPDATE_GOLDEN") == "1"
CORPUS = shared("corpus/kyverno-conformance/validating-policies/report")
NOW = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)


def _items(path: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load(path.read_text())
    return list(doc["items"]) if doc else []


def _display(ref: Ref | None) -> str | None:
    return ref.display() if ref is not None else None


def _project(change: ReportChange) -> dict[str, Any]:
    return {
        "class": str(change.klass), "reason": change.reason, "subject": _display(change.subject),
        "object": _display(change.report), "fields": list(change.fields), "diff": unified_diff(change.shown),
        "next_scan": str(change.next_scan) if change.next_scan else None,
        "next_scan_reason": change.next_scan_reason,
        "oldest_ephemeral_age_s": change.oldest_ephemeral_age_s, "in_scope": change.in_scope,
    }


def load_case(case: Path) -> dict[str, Any]:
    state = _items(case / "state.yaml")
    expected = _items(case / "expected.yaml")
    spec = yaml.safe_load((case / "case.yaml").read_text())
    owed = {r["scope"]["uid"] for r in expected}
    by_uid = {o["metadata"].get("uid"): o for o in state}
    subjects = [Subject(by_uid[uid], ref_of(by_uid[uid]), None) for uid in by_uid if uid in owed]
    filters_spec = spec.get("resource_filters")
    filters = (default_kyverno_config().resource_filters if filters_spec == "default"
               else parse_resource_filters(filters_spec) if filters_spec else ())
    return {"state": state, "expected": expected, "subjects": subjects, "filters": filters,
            "now": datetime.datetime.fromisoformat(spec["now"].replace("Z", "+00:00")),
            "policy_versions": spec.get("policy_versions")}


def run_case(case: Path):
    c = load_case(case)
    return diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"],
                        policy_versions=c["policy_versions"], resource_filters=c["filters"])


@pytest.mark.parametrize("case", sorted(p for p in CASES.iterdir() if (p / "want.yaml").exists()),
                         ids=lambda p: p.name)
def test_golden_case(case: Path) -> None:
    diff = run_case(case)
    got: dict[str, Any] = {"summary": diff.summary(), "changes": [_project(c) for c in diff.changes]}
    want = yaml.safe_load((case / "want.yaml").read_text())
    if os.environ.get("KYREC_UPDATE_GOLDEN") == "1":
        (case / "want.yaml").write_text(yaml.safe_dump({**want, **got}, sort_keys=False))
        pytest.skip("expectations rewritten")
    assert got["summary"] == want["summary"]
    assert got["changes"] == want["changes"]
    if "filtered" in want:
        assert [r.display() for r in diff.filtered_subjects] == want["filtered"]
    if "ignored" in want:
        assert [r.display() for r in diff.ignored_reports] == want["ignored"]
    if "report_api" in want:
        assert diff.report_api == want["report_api"]
    if "subject_status" in want:
        assert {s.subject.display(): str(s.status) for s in diff.subjects} == want["subject_status"]


def test_change_json_is_the_design_contract() -> None:
    diff = run_case(CASES / "stale-outcome-changed")
    doc = diff.changes_json(unified_diff)[0]
    assert list(doc) == ["domain", "class", "reason", "enforced", "policy", "trigger", "subject", "object",
                         "fields", "diff", "nextScan", "nextScanReason", "oldestEphemeralAgeSeconds",
                         "inScope", "message", "cause"]
    assert doc["domain"] == "report" and doc["enforced"] is True and doc["trigger"] is None
    assert doc["object"] == {"apiVersion": WGPOLICY, "kind": "PolicyReport", "namespace": "shop",
                             "name": "11111111-0000-0000-0000-000000000003",
                             "uid": "r-11111111-0000-0000-0000-0000000000"}
    assert doc["subject"]["uid"] == "11111111-0000-0000-0000-000000000003"


def test_missing_subject_status_has_no_report() -> None:
    diff = run_case(CASES / "missing")
    [status] = diff.subjects
    assert status.status == ReportClass.MISSING and status.report is None
    assert status.results == (("require-labels", "fail"),)


def _result(policy: str, result: str, **extra: Any) -> dict[str, Any]:
    return {"source": "KyvernoValidatingPolicy", "policy": policy, "result": result, "scored": True, **extra}


def test_empty_omitempty_fields_equal_absent_ones_and_timestamps_are_ignored() -> None:
    expected = [_result("p", "skip", message="", rule="", properties={}, category="",
                        timestamp={"seconds": 1, "nanos": 0})]
    actual = [_result("p", "skip", timestamp={"seconds": 99, "nanos": 0})]
    assert compare_results(expected, actual).reasons == ()


def test_scored_is_compared_and_absent_means_false() -> None:
    comparison = compare_results([_result("p", "warn")], [{"source": "KyvernoValidatingPolicy", "policy": "p",
                                                          "result": "warn"}])
    assert comparison.reasons == (StaleReason.OUTCOME_CHANGED,)
    assert comparison.fields == ("/results/0/scored",)


def test_property_differences_point_at_the_property() -> None:
    comparison = compare_results([_result("p", "pass", properties={"a/b": "1", "c": "2"})],
                                 [_result("p", "pass", properties={"a/b": "9", "c": "2"})])
    assert comparison.fields == ("/results/0/properties/a~1b",)


def test_all_stale_reasons_are_listed_in_table_order() -> None:
    comparison = compare_results(
        [_result("changed", "pass"), _result("missing", "pass")],
        [_result("extra", "fail"), _result("changed", "fail")])
    assert comparison.reasons == (StaleReason.OUTCOME_CHANGED, StaleReason.RESULT_OF_ABSENT_POLICY,
                                  StaleReason.RESULT_MISSING)
    assert comparison.fields == ("/results/0", "/results/1/result", "/results/-")


def test_rule_is_part_of_the_key() -> None:
    # ClusterPolicy results are one per rule: the same policy with another rule is another result
    comparison = compare_results([_result("cpol", "pass", rule="a")], [_result("cpol", "pass", rule="b")])
    assert comparison.reasons == (StaleReason.RESULT_OF_ABSENT_POLICY, StaleReason.RESULT_MISSING)


def _scan_case(**ephemeral_changes: Any) -> ReportChange:
    c = load_case(CASES / "current")
    for obj in c["state"]:
        if obj["kind"] == "EphemeralReport":
            meta = obj["metadata"]
            for key, value in ephemeral_changes.items():
                section, _, name = key.partition(":")
                if value is None:
                    meta[section].pop(name, None)
                else:
                    meta[section][name] = value
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"],
                        policy_versions=c["policy_versions"])
    return diff.changes[0]


def test_scan_interval_boundary_is_strictly_after() -> None:
    # Go: time.Now().After(last.Add(1h)); exactly one hour is not yet after
    on_the_hour = _scan_case(**{"annotations:audit.kyverno.io/last-scan-time": "2026-03-01T11:00:00Z"})
    assert (on_the_hour.next_scan, on_the_hour.next_scan_reason) == (NextScan.NONE, None)
    past = _scan_case(**{"annotations:audit.kyverno.io/last-scan-time": "2026-03-01T10:59:59.5Z"})
    assert (past.next_scan, past.next_scan_reason) == (NextScan.FULL, "scan-interval-elapsed")


def test_scan_time_with_offset_is_parsed_as_rfc3339() -> None:
    change = _scan_case(**{"annotations:audit.kyverno.io/last-scan-time": "2026-03-01T13:30:00+02:00"})
    assert change.next_scan == NextScan.NONE


@pytest.mark.parametrize(("value", "reason"), [
    (None, "last-scan-time-missing"),
    ("", "last-scan-time-missing"),
    ("2026-03-01 11:30:00", "last-scan-time-invalid"),
])
def test_scan_time_absent_or_unparsable_forces_a_full_scan(value: str | None, reason: str) -> None:
    change = _scan_case(**{"annotations:audit.kyverno.io/last-scan-time": value})
    assert (change.next_scan, change.next_scan_reason) == (NextScan.FULL, reason)


def test_hash_label_absent_forces_a_full_scan() -> None:
    change = _scan_case(**{"labels:audit.kyverno.io/resource.hash": None})
    assert (change.next_scan, change.next_scan_reason) == (NextScan.FULL, "resource-hash-changed")


def test_policy_label_removed_or_added_is_partial() -> None:
    removed = _scan_case(**{"labels:vpol.kyverno.io/check-replicas": None})
    assert (removed.next_scan, removed.next_scan_reason) == (NextScan.PARTIAL, "policy-versions-changed")
    exception = _scan_case(**{"labels:polex.kyverno.io/allow-web": "7"})
    assert exception.next_scan == NextScan.PARTIAL


def test_labels_without_a_policy_prefix_do_not_count() -> None:
    change = _scan_case(**{"labels:team.example.com/owner": "a"})
    assert change.next_scan == NextScan.NONE


def test_unknown_policy_versions_skip_the_partial_decision() -> None:
    c = load_case(CASES / "current")
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"], policy_versions=None)
    assert (diff.changes[0].next_scan, diff.changes[0].next_scan_reason) == (
        NextScan.NONE, "policy-versions-not-checked")


def test_unadopted_admission_report_counts_as_pending() -> None:
    c = load_case(CASES / "missing")
    pending: dict[str, Any] = {"apiVersion": "reports.kyverno.io/v1", "kind": "EphemeralReport",
               "metadata": {"name": "0d2c-abcde", "namespace": "shop",
                            "creationTimestamp": "2026-03-01T11:00:00Z",
                            "labels": {"audit.kyverno.io/source": "admission",
                                       "audit.kyverno.io/resource.uid": "",
                                       "audit.kyverno.io/resource.kind": "Deployment"},
                            "annotations": {"audit.kyverno.io/resource.namespace": "shop",
                                            "audit.kyverno.io/resource.name": "api"}}}
    other = {**pending, "metadata": {**pending["metadata"], "name": "other",
                                     "creationTimestamp": "2026-03-01T09:00:00Z",
                                     "annotations": {"audit.kyverno.io/resource.namespace": "shop",
                                                     "audit.kyverno.io/resource.name": "not-api"}}}
    diff = diff_reports(c["expected"], c["subjects"], c["state"] + [pending, other], now=c["now"])
    assert diff.changes[0].oldest_ephemeral_age_s == 3600
    assert diff.changes[0].next_scan_reason == "no-scan-metadata"


def test_current_hash_of_the_subject_is_what_the_label_is_compared_with() -> None:
    c = load_case(CASES / "current")
    web = next(o for o in c["state"] if o["kind"] == "Deployment")
    meta = next(o for o in c["state"] if o["kind"] == "EphemeralReport")
    assert meta["metadata"]["labels"]["audit.kyverno.io/resource.hash"] == resource_hash(web)
    web["spec"]["replicas"] = 3   # the resource changed since the scan
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"],
                        policy_versions=c["policy_versions"])
    assert diff.changes[0].next_scan_reason == "resource-hash-changed"


def test_policies_outside_the_run_are_left_out_on_both_sides() -> None:
    c = load_case(CASES / "stale-absent-policy")
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"], policies={"require-labels"})
    assert diff.changes[0].klass == ReportClass.CURRENT


def test_reports_of_objects_the_run_did_not_evaluate_are_not_examined() -> None:
    c = load_case(CASES / "filtered")
    evaluated = {s.ref.uid for s in c["subjects"] if s.ref.namespace != "kube-system"}
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"],
                        resource_filters=c["filters"], evaluated_uids=evaluated)
    assert [str(ch.klass) for ch in diff.changes] == ["missing"]
    assert [r.display() for r in diff.ignored_reports] == [
        "PolicyReport kube-system/33333333-0000-0000-0000-000000000001"]


def test_without_filters_the_kube_system_pod_is_in_scope_and_current() -> None:
    # Kyverno's reports controller skips resourceFilters by default: these get background reports
    c = load_case(CASES / "filtered")
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"],
                        resource_filters=default_kyverno_config().background_scan_filters())
    assert {s.subject.name: str(s.status) for s in diff.subjects} == {
        "coredns-abc": "current", "web-5d8f": "missing", "web-5d8f-xyz": "missing"}


def test_report_api_can_be_overridden() -> None:
    c = load_case(CASES / "openreports")
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"], report_api=WGPOLICY)
    assert diff.report_api == WGPOLICY
    assert [(str(ch.klass), ch.reason) for ch in diff.changes] == [("misnamed", "expected-name")]
    assert [r.kind for r in diff.ignored_reports] == ["Report"]
    detected = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"])
    assert detected.report_api == OPENREPORTS


def test_reports_not_managed_by_kyverno_are_not_examined() -> None:
    c = load_case(CASES / "orphan")
    for obj in c["state"]:
        if obj["kind"] == "PolicyReport":
            obj["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "trivy-operator"}
    diff = diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"])
    assert [(str(ch.klass), _display(ch.subject)) for ch in diff.changes] == [
        ("missing", "Deployment shop/keep")]


def test_cluster_scoped_subject_expects_a_cluster_report() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "uid": "ns-1"}}
    expected = [{"apiVersion": WGPOLICY, "kind": "ClusterPolicyReport", "metadata": {"name": "ns-1"},
                 "scope": {"apiVersion": "v1", "kind": "Namespace", "name": "team-a", "uid": "ns-1"},
                 "results": [_result("ns-labels", "pass")]}]
    wrong_kind = {"apiVersion": WGPOLICY, "kind": "PolicyReport",
                  "metadata": {"name": "ns-1", "namespace": "team-a",
                               "labels": {"app.kubernetes.io/managed-by": "kyverno"}},
                  "scope": {"apiVersion": "v1", "kind": "Namespace", "name": "team-a", "uid": "ns-1"},
                  "results": [_result("ns-labels", "pass")]}
    diff = diff_reports(expected, [Subject(ns, ref_of(ns), None)], [ns, wrong_kind], now=NOW)
    assert [(str(ch.klass), ch.reason) for ch in diff.changes] == [("misnamed", "expected-name")]
    missing = diff_reports(expected, [Subject(ns, ref_of(ns), None)], [ns], now=NOW)
    assert missing.changes[0].report.display() == "ClusterPolicyReport ns-1"
    assert missing.changes[0].next_scan_reason == "no-scan-metadata"


def test_table_leads_with_counts_and_lists_what_differs() -> None:
    # the table is checked against the text it printed when reviewed (want-table.txt, fitted to 80
    # columns); the parts that carry meaning are asserted on their own so a layout change cannot hide a
    # content change
    text = render_report_diff(run_case(CASES / "duplicate"), width=80)
    # the counts continue on an indented line rather than past 80 columns
    head = text.split("\n\n")[0]
    assert " ".join(head.split()) == ("Reports (wgpolicyk8s.io/v1alpha2): 1 current, 0 missing, 0 stale, "
                                      "0 orphan, 2 duplicate, 1 misnamed")
    assert max(len(line) for line in head.splitlines()) <= 80
    # fitted, never cut: kubectl's short kind names, each name whole (render.fit); `wide` shows every column
    assert "shop deploy/worker" in text and "shop polr/worker-old" in text and "..." not in text
    wide = render_report_diff(run_case(CASES / "duplicate"), wide=True)
    rows = [line.split() for line in wide.splitlines()[3:]]
    want = [
        ["duplicate", "Deployment", "shop/worker", "PolicyReport", "shop/worker-old", "full", "-"],
        ["misnamed", "expected-name", "Deployment", "shop/batch", "PolicyReport", "shop/batch-b", "full",
         "-"],
        ["duplicate", "Deployment", "shop/batch", "PolicyReport", "shop/batch-a", "full", "-"]]
    assert [row[:len(w)] for row, w in zip(rows, want)] == want and len(rows) == len(want)
    # no width (a pipe): as wide shows the names, one line per row
    assert "Deployment shop/worker  PolicyReport shop/worker-old" in render_report_diff(run_case(CASES / "duplicate"))
    if UPDATE_TABLES:
        (CASES / "duplicate" / "want-table.txt").write_text(text)
    assert text == (CASES / "duplicate" / "want-table.txt").read_text()


# --- the conformance corpus: Kyverno's own report asserts read as actual reports ---------------------------

def _corpus(rel: str) -> Path:
    require(CORPUS, "Kyverno's report asserts compared as current reports")
    path = CORPUS / rel
    # the corpus is present: a file missing from it is a broken test, not a skip
    assert path.exists(), f"{path} does not exist"
    return path


def _expected_like_kyrec(subject: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """An expected report as the evaluator writes one: message always present, timestamp set."""
    meta = subject["metadata"]
    entries = [{"source": "KyvernoValidatingPolicy", "policy": r["policy"], "result": r["result"],
                "message": r.get("message", ""), "scored": True, **({"properties": r["properties"]}
                                                                    if "properties" in r else {}),
                "timestamp": {"seconds": 1, "nanos": 0}} for r in results]
    return {"apiVersion": WGPOLICY, "kind": "PolicyReport",
            "metadata": {"name": meta["uid"], "namespace": meta["namespace"]},
            "scope": {"apiVersion": subject["apiVersion"], "kind": subject["kind"], "name": meta["name"],
                      "namespace": meta["namespace"], "uid": meta["uid"]},
            "results": entries}


@pytest.mark.parametrize(("deployment", "report"), [
    ("background/standard/deployment.yaml", "background/standard/report.yaml"),
    ("with-exception/skipped-deployment.yaml", "with-exception/skipped-report-assert.yaml"),
    ("with-exception-pass-result/skipped-deployment.yaml",
     "with-exception-pass-result/pass-report-assert.yaml"),
])
def test_kyverno_report_shapes_compare_as_current(deployment: str, report: str) -> None:
    subject = yaml.safe_load(_corpus(deployment).read_text())
    subject["metadata"].update(namespace="default", uid="5c1ae6a1-0000-4000-8000-000000000001")
    actual = yaml.safe_load(_corpus(report).read_text())
    # Kyverno fills these in; the asserts leave them out
    actual["metadata"].update(name=subject["metadata"]["uid"], namespace="default")
    actual["scope"].update(uid=subject["metadata"]["uid"], namespace="default")
    expected = _expected_like_kyrec(subject, actual["results"])
    subjects = [Subject(subject, ref_of(subject), None)]
    diff = diff_reports([expected], subjects, [subject, actual], now=NOW)
    assert [(str(c.klass), c.reason) for c in diff.changes] == [("current", None)]
    # and a different outcome is caught
    flipped = {**actual, "results": [{**actual["results"][0], "result": "error"}]}
    stale = diff_reports([expected], subjects, [subject, flipped], now=NOW)
    assert [(str(c.klass), c.reason) for c in stale.changes] == [("stale", "outcome-changed")]


def test_unknown_report_api_is_a_usage_error() -> None:
    c = load_case(CASES / "current")
    with pytest.raises(UsageError, match="unknown report API 'v1'"):
        diff_reports(c["expected"], c["subjects"], c["state"], now=c["now"], report_api="v1")


def test_results_of_kinds_kyrec_does_not_evaluate_are_left_out_with_one_notice() -> None:
    # A MutatingPolicy's result beside the ValidatingPolicy's: kyrec owes none, and the report stays current
    c = load_case(CASES / "current")
    report = next(o for o in c["state"] if o["kind"] == "PolicyReport")
    report["results"].append({"source": "KyvernoMutatingPolicy", "policy": "add-labels", "result": "pass"})
    # a report about an object that is gone, carrying only a MutatingAdmissionPolicy result: not an orphan
    gone = yaml.safe_load(yaml.safe_dump(report))
    gone["metadata"]["name"] = gone["scope"]["uid"] = "99999999-0000-0000-0000-000000000009"
    gone["results"] = [{"source": "MutatingAdmissionPolicy", "policy": "set-owner", "result": "fail"}]
    diff = diff_reports(c["expected"], c["subjects"], [*c["state"], gone], now=c["now"],
                        policy_versions=c["policy_versions"])
    assert [str(ch.klass) for ch in diff.changes] == ["current"]
    assert [r.display() for r in diff.ignored_reports] == [
        "PolicyReport shop/99999999-0000-0000-0000-000000000009"]
    assert diff.left_out_sources == ("KyvernoMutatingPolicy", "MutatingAdmissionPolicy")
    notice = diff.left_out_notice()
    assert notice is not None and notice.endswith("KyvernoMutatingPolicy, MutatingAdmissionPolicy")
    # the same report with a ValidatingPolicy result kyrec does not owe is still an orphan
    gone["results"].append({"source": "KyvernoValidatingPolicy", "policy": "x", "result": "pass"})
    diff = diff_reports(c["expected"], c["subjects"], [*c["state"], gone], now=c["now"],
                        policy_versions=c["policy_versions"])
    assert sorted(str(ch.klass) for ch in diff.changes) == ["current", "orphan"]


def test_a_property_a_later_kyverno_release_adds_is_not_stale_when_the_cluster_lacks_it() -> None:
    # Kyverno main writes cel.validationIndex on a failed ValidatingPolicy validation, v1.17.2 does not: a
    # v1.17 report without it is what that cluster's controller writes (recorded in testdata/kyverno-truth)
    expected = [_result("p", "fail", properties={"process": "background scan", "cel.validationIndex": "1"})]
    without = [_result("p", "fail", properties={"process": "background scan"})]
    assert compare_results(expected, without).reasons == ()
    # carried, it is compared like any other property
    other = [_result("p", "fail", properties={"process": "background scan", "cel.validationIndex": "0"})]
    comparison = compare_results(expected, other)
    assert comparison.reasons == (StaleReason.OUTCOME_CHANGED,)
    assert comparison.fields == ("/results/0/properties/cel.validationIndex",)
    # and only the release's own properties are spared: another missing property is stale
    assert compare_results([_result("p", "fail", properties={"process": "background scan", "x": "1"})],
                           without).reasons == (StaleReason.OUTCOME_CHANGED,)
