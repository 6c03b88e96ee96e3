"""Coverage: every subject in scope current, or named; totals only from the current set."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.errors import ExitCode, InputError
from kubectl_kyrec.load.run_inputs.exclusions import load_exclusions, parse_exclusions, parse_rfc3339
from kubectl_kyrec.load.run_inputs.kyverno_config import default_kyverno_config
from kubectl_kyrec.model import Subject, ref_of
from kubectl_kyrec.reconcile.coverage import compute_coverage, coverage
from kubectl_kyrec.reconcile.reports import diff_reports
from kubectl_kyrec.render.coverage_table import render_coverage

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "testdata" / "reports" / "coverage"
# KYREC_UPDATE_GOLDEN=1 rewrites want-table.txt from what kyrec prints (review the diff!)
UPDATE_TABLE = os.environ.get("KYREC_UPDATE_GOLDEN") == "1"
NOW = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)


def _items(path: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load(path.read_text())["items"])


def _inputs(case: Path = CASE) -> tuple[list[dict[str, Any]], list[Subject], list[dict[str, Any]]]:
    state = _items(case / "state.yaml")
    expected = _items(case / "expected.yaml")
    owed = {r["scope"]["uid"] for r in expected}
    subjects = [Subject(o, ref_of(o), None) for o in state if o["metadata"].get("uid") in owed]
    return expected, subjects, state


def _exclusions(name: str = "exclusions.yaml"):
    return parse_exclusions((CASE / name).read_text(), name, now=NOW)


def test_coverage_golden() -> None:
    expected, subjects, state = _inputs()
    cov = coverage(expected, subjects, state, now=NOW, exclusions=_exclusions())
    doc = cov.to_json()
    want = yaml.safe_load((CASE / "want-coverage.yaml").read_text())
    assert doc["counts"] == want["counts"]
    assert {s["subject"]["kind"] + " " + s["subject"]["namespace"] + "/" + s["subject"]["name"]:
            [s["status"], s["reason"]] for s in doc["subjects"]} == want["subjects"]
    assert doc["totals"] == want["totals"]
    assert doc["perPolicy"] == want["perPolicy"]
    assert doc["derivedFrom"] == want["derivedFrom"]
    assert doc["unusedExclusions"] == want["unusedExclusions"]
    assert cov.exit_code == ExitCode.FINDINGS


def test_counts_lead_in_the_documented_order() -> None:
    expected, subjects, state = _inputs()
    doc = coverage(expected, subjects, state, now=NOW).to_json()
    assert list(doc["counts"]) == ["inScope", "current", "missing", "stale", "duplicate", "misnamed",
                                   "excluded", "orphan", "split", "unpaired"]
    assert list(doc)[:6] == ["counts", "subjects", "totals", "perPolicy", "derivedFrom",
                             "unusedExclusions"]


def test_excluded_subject_names_what_it_covers() -> None:
    expected, subjects, state = _inputs()
    cov = coverage(expected, subjects, state, now=NOW, exclusions=_exclusions())
    [job] = [s for s in cov.to_json()["subjects"] if s["status"] == "excluded"]
    assert (job["excludedBy"], job["gap"], job["report"]) == (0, "missing", None)


def test_exclusion_matching_a_current_subject_is_used_but_changes_nothing() -> None:
    expected, subjects, state = _inputs()
    cov = coverage(expected, subjects, state, now=NOW, exclusions=_exclusions())
    foxtrot = next(s for s in cov.subjects if s.subject.name == "foxtrot")
    assert foxtrot.status == "current" and foxtrot.excluded_by is None
    assert [u.index for u in cov.unused_exclusions] == [2]


def test_exit_is_clean_only_when_everything_in_scope_is_current_or_excluded() -> None:
    expected, subjects, state = _inputs()
    keep = {"alpha", "foxtrot", "nightly-export-29500"}
    some = [s for s in subjects if s.ref.name in keep]
    cov = coverage(expected, some, state, now=NOW, exclusions=_exclusions())
    assert cov.exit_code == ExitCode.CLEAN
    assert cov.count("orphan") == 1           # orphans are counted, they do not fail the check
    # the exclusion completes coverage for its subject: totals from the 2 current ones are complete
    assert cov.to_json()["derivedFrom"] == {
        "subjects": 2, "of": 3, "complete": True, "excluded": 1,
        "excludedFor": [{"reason": "nightly Jobs finish before the hourly background scan reaches them",
                         "subjects": 1}]}
    assert ("Totals complete: from 2 current subjects of 3 in scope, 1 excluded: nightly Jobs finish before the "
            "hourly background scan reaches them (1):") in render_coverage(cov).splitlines()
    [job] = [s for s in cov.to_json()["subjects"] if s["status"] == "excluded"]
    assert job["evidence"] is None            # the entry records none; the reason is required, evidence not
    without = coverage(expected, some, state, now=NOW)
    assert without.exit_code == ExitCode.FINDINGS
    assert [g.subject.name for g in without.gaps] == ["nightly-export-29500"]


def test_totals_come_only_from_current_subjects() -> None:
    expected, subjects, state = _inputs()
    cov = coverage(expected, subjects, state, now=NOW)
    # alpha (pass+fail) and foxtrot (pass) are current; the other five owe two results each
    assert cov.totals.to_json() == {"pass": 2, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    assert (cov.derived_from.current, cov.derived_from.in_scope, cov.derived_from.complete) == (2, 7, False)


def test_expired_entry_is_an_input_error_at_its_line() -> None:
    with pytest.raises(InputError) as info:
        _exclusions("exclusions-expired.yaml")
    assert str(info.value).startswith("exclusions-expired.yaml:8: exclusions[1]: "
                                      "expired at 2026-02-28T00:00:00Z "
                                   "(now 2026-03-01T12:00:00Z)")


def test_entry_without_reason_is_an_input_error_at_its_line() -> None:
    with pytest.raises(InputError) as info:
        _exclusions("exclusions-no-reason.yaml")
    assert str(info.value).startswith("exclusions-no-reason.yaml:5: exclusions[1]: reason is required")


def test_load_exclusions_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "ex.yaml"
    path.write_text("- {kind: Job, reason: short-lived}\n")
    [entry] = load_exclusions(str(path), now=NOW)
    assert (entry.kind, entry.reason, entry.source.line) == ("Job", "short-lived", 1)
    with pytest.raises(InputError) as info:
        load_exclusions(str(tmp_path / "nope.yaml"), now=NOW)
    assert str(info.value).startswith(f"{tmp_path / 'nope.yaml'}: cannot read")


@pytest.mark.parametrize(("text", "message"), [
    ("- {reason: everything}\n", "x.yaml:1: exclusions[0]: give at least one of"),
    ("- {kind: Pod, reason: r, expiry: 2027-01-01T00:00:00Z}\n",
     "x.yaml:1: exclusions[0]: unknown key 'expiry'"),
    ("- {kind: Pod, reason: r, expires: '2027-01-01'}\n",
     "x.yaml:1: exclusions[0]: expires '2027-01-01' is not"),
    ("- {kind: Pod, reason: r, expires: 2027-01-01T00:00:00}\n",
     "x.yaml:1: exclusions[0]: expires needs a time"),
    ("- {kind: 3, reason: r}\n", "x.yaml:1: exclusions[0]: kind must be a string"),
    ("- kind: Pod\n  reason: r\n  selector: {matchExpressions: [{key: a, operator: In}]}\n",
     "x.yaml:3: exclusions[0]: selector.matchExpressions[0]: In needs values"),
    ("- kind: Pod\n  reason: r\n  selector: {matchExpressions: [{key: a, operator: Gt, values: ['1']}]}\n",
     "x.yaml:3: exclusions[0]: selector.matchExpressions[0]: operator 'Gt'"),
    ("exclusions: {kind: Pod}\n", "x.yaml:1: expected a list of exclusions"),
    ("extras: []\n", "x.yaml:1: unknown key 'extras'"),
    ("- [a\n", "x.yaml:2: bad YAML"),
])
def test_malformed_entries_are_input_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_exclusions(text, "x.yaml", now=NOW)
    assert str(info.value).startswith(message)


def test_selector_and_glob_matching() -> None:
    [entry] = parse_exclusions(
        "- namespace: 'sh?p'\n  selector:\n    matchLabels: {app: nightly-export}\n"
        "    matchExpressions: [{key: tier, operator: DoesNotExist},\n"
        "                       {key: env, operator: NotIn, values: [prod]}]\n"
        "  reason: r\n", "x.yaml", now=NOW)
    expected, subjects, state = _inputs()
    job = next(s for s in subjects if s.ref.kind == "Job")
    assert entry.matches(job.ref, {"app": "nightly-export"})
    assert entry.matches(job.ref, {"app": "nightly-export", "env": "dev"})
    assert not entry.matches(job.ref, {"app": "nightly-export", "env": "prod"})
    assert not entry.matches(job.ref, {"app": "nightly-export", "tier": "x"})
    assert not entry.matches(job.ref, {"app": "other"})


def test_empty_namespace_pattern_matches_only_cluster_scoped() -> None:
    [entry] = parse_exclusions("- {namespace: '', reason: r}\n", "x.yaml", now=NOW)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "uid": "1"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "a", "uid": "2"}}
    assert entry.matches(ref_of(ns), {}) and not entry.matches(ref_of(pod), {})


def test_rfc3339_as_go_parses_it() -> None:
    assert parse_rfc3339("2026-03-01T11:00:00.25+01:30") == datetime.datetime(
        2026, 3, 1, 9, 30, 0, 250000, tzinfo=datetime.UTC)
    for bad in ("2026-03-01t11:00:00Z", "2026-03-01T11:00:00", "2026-02-30T00:00:00Z", "2026-03-01T11:00Z"):
        assert parse_rfc3339(bad) is None, bad


def test_kube_system_pod_under_default_filters_is_out_of_scope() -> None:
    case = REPO / "testdata" / "reports" / "filtered"
    expected, subjects, state = _inputs(case)
    config = default_kyverno_config()
    cov = coverage(expected, subjects, state, now=NOW, resource_filters=config.resource_filters)
    assert [s.subject.display() for s in cov.subjects] == ["Pod shop/web-5d8f-xyz"]
    assert cov.filtered_subjects == 2
    assert cov.count("inScope") == 1 and cov.count("missing") == 1
    # the reports controller's own default (--skipResourceFilters=true) keeps them in scope
    cov = coverage(expected, subjects, state, now=NOW, resource_filters=config.background_scan_filters())
    assert cov.count("inScope") == 3 and cov.filtered_subjects == 0


def test_compute_coverage_takes_an_existing_diff() -> None:
    expected, subjects, state = _inputs()
    diff = diff_reports(expected, subjects, state, now=NOW)
    direct = coverage(expected, subjects, state, now=NOW)
    assert compute_coverage(diff, subjects).to_json() == direct.to_json()


def test_table_leads_with_the_counts() -> None:
    expected, subjects, state = _inputs()
    text = render_coverage(coverage(expected, subjects, state, now=NOW, exclusions=_exclusions()), width=80)
    lines = text.splitlines()
    assert [line.split()[-1] for line in lines[1:9]] == ["7", "2", "1", "1", "1", "1", "1", "1"]
    assert [" ".join(line.split()[:-1]) for line in lines[1:9]] == [
        "in scope", "current", "missing", "stale", "duplicate", "misnamed", "excluded", "orphan reports"]
    # fitted to 80 columns: the sentence wrapped; names whole with kubectl's short kind names, reasons and
    # matches under their rows (render.fit)
    assert " ".join(lines[10:13]) == (
        "Totals from 2 of 7 subjects in scope; 4 are neither current nor excluded (missing 1, duplicate 1, "
        "misnamed 1, stale 1): not cluster-wide. 1 excluded: nightly Jobs finish before the hourly background "
        "scan reaches them (1).")
    assert "..." not in text
    gaps = lines.index("Subjects without a current report:")
    row = next(i for i in range(gaps, len(lines)) if lines[i].startswith("excluded "))
    assert lines[row].split() == ["excluded", "missing", "shop", "job/nightly-export-29500", "-"]
    assert " ".join(" ".join(lines[row + 1:row + 3]).split()).startswith("reason: nightly Jobs")
    assert "kind=CronJob selector=" in text
    if UPDATE_TABLE:
        (CASE / "want-table.txt").write_text(text)
    assert text == (CASE / "want-table.txt").read_text()


def test_wide_table_shows_every_cell_whole() -> None:
    expected, subjects, state = _inputs()
    text = render_coverage(coverage(expected, subjects, state, now=NOW, exclusions=_exclusions()), wide=True)
    assert ("Totals from 2 of 7 subjects in scope; 4 are neither current nor excluded (missing 1, duplicate 1, "
            "misnamed 1, stale 1): not cluster-wide. 1 excluded: nightly Jobs finish before the hourly "
            "background scan reaches them (1).") in text.splitlines()
    assert "nightly Jobs finish before the hourly background scan reaches them  Job shop/nightly-export-29500" in text
    assert 'exclusions.yaml:11  kind=CronJob selector={"matchLabels":{"app":"legacy-reports"}}' in text
    assert "PolicyReport shop/44444444-0000-0000-0000-000000000003" in text


def test_totals_line_says_when_they_are_cluster_wide() -> None:
    expected, subjects, state = _inputs()
    only_current = [s for s in subjects if s.ref.name in ("alpha", "foxtrot")]
    text = render_coverage(coverage(expected, only_current, state, now=NOW))
    assert "Totals from all 2 subjects in scope:" in text
    assert "Subjects without a current report" not in text
