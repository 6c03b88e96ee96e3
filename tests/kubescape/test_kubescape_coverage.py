"""Kubescape vulnerability summaries through the claims engine: golden states in testdata/kubescape/."""

from __future__ import annotations

import datetime
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.load.run_inputs.exclusions import load_exclusions
from kubectl_kyrec.producers.kubescape import (
    KubescapeOptions,
    classify_vulnerabilities,
    cron_period,
    image_identity,
    parse_wlid,
    schedule_from,
)
from kubectl_kyrec.producers.kubescape_coverage import VulnerabilityCoverage, vulnerability_coverage

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "testdata" / "kubescape"
NOW = datetime.datetime(2026, 10, 2, 15, 30, tzinfo=datetime.UTC)


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kubescape_build", CASES / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _build()


def _state(case: str) -> list[dict[str, Any]]:
    return list(json.loads((CASES / case / "state.json").read_text())["items"])


def _coverage(state: list[dict[str, Any]], exclusions: str | None = None) -> VulnerabilityCoverage:
    options = KubescapeOptions(NOW, schedule_from(state))
    excl = load_exclusions(str(CASES / "classes" / exclusions), now=NOW) if exclusions else ()
    return vulnerability_coverage(state, options, excl)


def _subject_table(doc: dict[str, Any]) -> dict[str, list[Any]]:
    out = {}
    for s in doc["subjects"]:
        ref = s["subject"]
        pairing = s["pairing"]
        out[f"{ref['kind']} {ref['name']} {ref['container']}"] = [
            s["status"], s["reason"], s["integrity"],
            pairing["reason"] if pairing is not None and not pairing["paired"] else None]
    return out


def test_states_are_what_build_py_writes(tmp_path: Path) -> None:
    # the committed states are the builder's output, so the builder documents them
    build.HERE = tmp_path
    build.main()
    for case in ("classes", "one-read", "seed-001"):
        assert (tmp_path / case / "state.json").read_text() == (CASES / case / "state.json").read_text(), case


def test_classes_golden() -> None:
    cov = _coverage(_state("classes"), "exclusions.yaml")
    doc = cov.to_json()
    want = yaml.safe_load((CASES / "classes" / "want.yaml").read_text())
    assert doc["counts"] == want["counts"]
    assert list(doc["counts"]) == list(want["counts"])
    assert _subject_table(doc) == want["subjects"]
    assert {o["name"]: o["reason"] for o in doc["orphans"]} == want["orphans"]
    assert [r["name"] for r in doc["split"]] == want["split"]
    assert [r["name"] for r in doc["ignoredSummaries"]] == want["ignoredSummaries"]
    assert doc["outOfScope"] == want["outOfScope"]
    assert doc["totals"] == want["totals"]
    assert [u["index"] for u in doc["unusedExclusions"]] == want["unusedExclusions"]
    assert cov.exit_code == ExitCode.FINDINGS


def test_subject_ref_carries_the_container_and_the_exclusion_its_evidence() -> None:
    doc = _coverage(_state("classes"), "exclusions.yaml").to_json()
    legacy = next(s for s in doc["subjects"] if s["subject"]["name"] == "legacy")
    assert legacy["subject"]["container"] == "app" and legacy["subject"]["kind"] == "Deployment"
    assert (legacy["excludedBy"], legacy["gap"]) == (0, "missing")
    assert legacy["evidence"].startswith("kubevuln log 2026-10-02T01:14Z")


def test_unpaired_says_where_the_manifest_does_resolve() -> None:
    doc = _coverage(_state("classes")).to_json()
    auth = next(s for s in doc["subjects"] if s["subject"]["name"] == "auth")
    assert auth["pairing"]["ref"]["namespace"] == "shop"
    assert auth["pairing"]["resolvesIn"] == ["kubescape"]


def test_stale_reasons_follow_the_annotations() -> None:
    state = _state("classes")
    doc = _coverage(state).to_json()
    cart = next(s for s in doc["subjects"] if s["subject"]["name"] == "cart")
    assert cart["observed"]["imageId"] != cart["imageIds"][0]
    # the same state a week later: every summary is past the daily period plus grace
    later = vulnerability_coverage(state, KubescapeOptions(NOW + datetime.timedelta(days=7))).to_json()
    assert {s["subject"]["name"]: s["reason"] for s in later["subjects"] if s["status"] == "stale"} == {
        "web": "not-rescanned", "cart": "image-changed", "db": "scan-failed", "search": "not-rescanned",
        "queue": "not-rescanned", "cache": "not-rescanned", "auth": "not-rescanned", "report": "not-rescanned",
        "toolbox": "not-rescanned", "fresh": "no-result", "huge": "scan-failed"}


def test_one_read_leaves_split_undetermined_never_absent() -> None:
    cov = _coverage(_state("one-read"))
    doc = cov.to_json()
    assert doc["counts"]["splitSummaries"] == 0
    assert doc["counts"]["splitUndetermined"] == 17
    # pairing cannot be told either: undetermined, not counted unpaired, never assumed paired
    assert doc["counts"]["unpairedSummaries"] == 0
    # neither is a fresh summary current: split (undetermined) names its status, the first that applies
    assert doc["counts"]["current"] == 0
    assert {(s["status"], s["reason"]) for s in doc["subjects"] if s["integrity"] == "undetermined"
            and s["status"] not in ("stale", "duplicate", "misnamed")} == {("split", "undetermined")}
    assert {(s["pairing"]["paired"], s["pairing"]["reason"]) for s in doc["subjects"] if s["report"]} == {
        (None, "payload-not-read")}
    assert {s["integrity"] for s in doc["subjects"] if s["report"]} == {"undetermined"}
    assert doc["reads"] == {"metadata": True, "payload": False, "manifests": False}
    assert doc["totals"]["complete"] is False and doc["totals"]["critical"] is None
    assert doc["totals"]["incompleteBy"]["split-undetermined"] == 6
    # freshness is still judged from the metadata rows; only a stub cannot be told from a metadata row
    both = {s["subject"]["name"]: s["status"] for s in _coverage(_state("classes")).to_json()["subjects"]}
    one = {s["subject"]["name"]: s["status"] for s in doc["subjects"]}
    assert {name for name in both if both[name] == "stale"} - {name for name in one if one[name] == "stale"} == {
        "fresh"}
    assert (both["fresh"], one["fresh"]) == ("stale", "split")


def test_payload_read_alone_pairs_but_cannot_rule_out_a_split() -> None:
    state = [o for o in _state("classes")
             if o.get("kind") != "VulnerabilityManifestSummary" or o["spec"]["vulnerabilitiesRef"]["all"]["name"]]
    doc = _coverage(state).to_json()
    web = next(s for s in doc["subjects"] if s["subject"]["name"] == "web")
    assert (web["status"], web["reason"], web["integrity"], web["pairing"]["paired"]) == (
        "split", "undetermined", "undetermined", True)
    assert doc["counts"]["splitSummaries"] == 0 and doc["totals"]["complete"] is False


def _complete_state() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for name in ("a", "b"):
        image = build.image_id(f"reg.example/{name}", name)
        items += build.deployment("shop", name, {"app": image}, replicas=2)
        copies = build.summary("shop", "deployment", name, "app", image, written=build.days_ago(0.1),
                               severities=(1, 4, 1, 2))
        items += copies + build.manifests_for(copies)
    return items


def test_totals_only_when_every_subject_is_current_intact_and_paired() -> None:
    cov = _coverage(_complete_state())
    totals = cov.to_json()["totals"]
    assert totals == {"critical": 2, "high": 8, "relevant": {"critical": 2, "high": 4}, "complete": True,
                      "incompleteSubjects": 0, "incompleteBy": {},
                      "derivedFrom": {"subjects": 2, "of": 2, "complete": True, "excluded": 0, "excludedFor": []},
                      "partial": None}
    assert cov.exit_code == ExitCode.CLEAN


def test_seed_001_figures_classified_exactly_with_totals_refused() -> None:
    """The seed's recheck: 79 expected, 57 fresh, 9 missing, 13 stale, 31 split among 126 summaries. Its
    references point at the workload namespace while the manifests are in the scanner's (the seed's problem),
    so none of the 57 fresh results is paired: one status each, 57 unpaired and no subject current."""
    state = _state("seed-001")
    cov = _coverage(state)
    doc = cov.to_json()
    counts = doc["counts"]
    assert (counts["inScope"], counts["current"], counts["missing"], counts["stale"], counts["split"],
            counts["unpaired"]) == (79, 0, 9, 13, 0, 57)
    assert (counts["duplicate"], counts["misnamed"], counts["excluded"], counts["orphan"]) == (0, 0, 0, 56)
    summaries = [o for o in state if o.get("kind") == "VulnerabilityManifestSummary"]
    assert len({(o["metadata"]["namespace"], o["metadata"]["name"]) for o in summaries}) == 126
    # every reference points at the workload namespace; the manifests are in the scanner's
    assert (counts["splitSummaries"], counts["unpairedSummaries"]) == (31, 126)
    paired = {(s["pairing"]["reason"], tuple(s["pairing"]["resolvesIn"])) for s in doc["subjects"] if s["pairing"]}
    assert paired == {("not-found", ("kubescape",))}
    assert {s["reason"] for s in doc["subjects"] if s["status"] == "stale"} == {"not-rescanned"}
    # the 13 split subjects are the stale ones (their updates conflict since the split): stale names the
    # status, `integrity` still says split
    assert {s["status"] for s in doc["subjects"] if s["integrity"] == "split"} == {"stale"}
    assert sum(1 for s in doc["subjects"] if s["integrity"] == "split") == 13
    totals = doc["totals"]
    assert (totals["critical"], totals["high"], totals["relevant"], totals["complete"]) == (None, None, None, False)
    assert totals["incompleteSubjects"] == 79
    assert totals["incompleteBy"] == {"missing": 9, "stale": 13, "unpaired": 57}
    assert doc["scan"]["source"] == "CronJob kubescape/kubevuln-scheduler '12 1 * * *'"
    # about 286 running containers, the rest in namespaces the scanner skips
    assert doc["outOfScope"] == {"unscanned-namespace": 143}
    assert cov.exit_code == ExitCode.FINDINGS


def _seed_paired() -> list[dict[str, Any]]:
    """The seed's state with every manifest where its summary's reference says (the pairing the seed asks
    to restore), nothing else changed."""
    state = _state("seed-001")
    where = {ref["name"]: ref["namespace"] for o in state if o.get("kind") == "VulnerabilityManifestSummary"
             for ref in o["spec"]["vulnerabilitiesRef"].values() if ref["name"]}
    return [{**o, "metadata": {**o["metadata"], "namespace": where[o["metadata"]["name"]]}}
            if o.get("kind") == "VulnerabilityManifest" else o for o in state]


def test_seed_001_paired_counts_57_current_the_results_in_the_totals(tmp_path: Path) -> None:
    """`counts.current` is the subjects whose numbers are in the totals: with the pairing restored, the
    seed's 57 (of 79 in scope), while its 13 stale subjects stay stale though their summaries are split."""
    cov = _coverage(_seed_paired())
    doc = cov.to_json()
    counts = doc["counts"]
    assert (counts["inScope"], counts["current"], counts["missing"], counts["stale"], counts["split"],
            counts["unpaired"], counts["excluded"]) == (79, 57, 9, 13, 0, 0, 0)
    assert (counts["splitSummaries"], counts["unpairedSummaries"]) == (31, 0)
    totals = doc["totals"]
    assert (totals["complete"], totals["incompleteSubjects"], totals["incompleteBy"]) == (
        False, 22, {"missing": 9, "stale": 13})
    # each summary holds 1 critical, 2 high, 0 and 1 of them relevant (build.py's defaults)
    assert totals["partial"] == {"critical": 57, "high": 114, "relevant": {"critical": 0, "high": 57},
                                 "subjects": 57}
    # excluded with a reason and evidence, the 22 gaps complete the coverage: totals stated from the 57
    entries = [{"kind": "Deployment", "name": "svc-7?", "container": "app",
                "reason": "image not yet scanned: a new workload", "evidence": "kubevuln log: scan queued"}]
    entries += [{"kind": "Deployment", "name": f"svc-{i}", "reason": "storage split: every update conflicts",
                 "evidence": f"GET vs ?resourceVersion=metadata differ for svc-{i}"} for i in range(57, 70)]
    path = tmp_path / "exclusions.yaml"
    path.write_text(yaml.safe_dump(entries))
    options = KubescapeOptions(NOW, schedule_from(_seed_paired()))
    excused = vulnerability_coverage(_seed_paired(), options, load_exclusions(str(path), now=NOW))
    doc = excused.to_json()
    assert (doc["counts"]["current"], doc["counts"]["excluded"]) == (57, 22)
    totals = doc["totals"]
    assert (totals["complete"], totals["critical"], totals["high"], totals["relevant"]) == (
        True, 57, 114, {"critical": 0, "high": 57})
    assert totals["derivedFrom"] == doc["derivedFrom"] == {
        "subjects": 57, "of": 79, "complete": True, "excluded": 22,
        "excludedFor": [{"reason": "storage split: every update conflicts", "subjects": 13},
                        {"reason": "image not yet scanned: a new workload", "subjects": 9}]}
    assert excused.exit_code == ExitCode.CLEAN


def test_top_owner_walk_stops_where_the_state_stops() -> None:
    image = build.image_id("reg.example/x", "x")
    deploy, rs, pod = build.deployment("shop", "x", {"app": image})
    # without the ReplicaSet, its name does not say which Deployment owns it: the walk ends there
    result = classify_vulnerabilities([pod], KubescapeOptions(NOW))
    [subject] = result.subjects.values()
    assert (subject.workload.kind, subject.workload.name) == ("ReplicaSet", "x-5d8f7c")
    # the ReplicaSet's own reference names the Deployment, whether or not the state holds it
    result = classify_vulnerabilities([rs, pod], KubescapeOptions(NOW))
    [subject] = result.subjects.values()
    assert (subject.workload.kind, subject.workload.name, subject.workload.uid) == (
        "Deployment", "x", deploy["metadata"]["uid"])


def test_a_mirror_pod_is_its_own_top_owner() -> None:
    image = build.image_id("reg.example/etcd", "e")
    mirror = build.pod("infra", "etcd-node-1", None, {"etcd": image})
    mirror["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                                              "uid": "n-1", "controller": True}]
    [subject] = classify_vulnerabilities([mirror], KubescapeOptions(NOW)).subjects.values()
    assert (subject.workload.kind, subject.workload.name) == ("Pod", "etcd-node-1")


@pytest.mark.parametrize(("schedule", "hours"), [
    ("12 1 * * *", 24), ("0 * * * *", 1), ("5 */6 * * *", 6), ("0 3 * * 1", 168), ("*/5 * * * *", None),
    ("0 0 1 * *", None), ("bad", None)])
def test_cron_period(schedule: str, hours: int | None) -> None:
    got = cron_period(schedule)
    assert (got.total_seconds() / 3600 if got else None) == hours


def test_schedule_flags_override_the_cronjob() -> None:
    state = _state("seed-001")
    sched = schedule_from(state, period=datetime.timedelta(hours=12))
    assert (sched.period, sched.grace, sched.source) == (
        datetime.timedelta(hours=12), datetime.timedelta(hours=3), "flag")
    assert schedule_from([]).source == "default (daily)"


def test_identities() -> None:
    assert parse_wlid("wlid://cluster-prod/namespace-shop/deployment-web-api") == ("shop", "deployment", "web-api")
    assert parse_wlid("wlid://cluster-prod/deployment-web") is None
    digest = "sha256:" + "a" * 64
    assert image_identity(f"docker-pullable://reg.example/web@{digest}") == image_identity(
        f"reg.example/web@{digest}") == digest


def test_table_refuses_totals_and_names_the_gaps() -> None:
    from kubectl_kyrec.render.coverage_table import render_vulnerability_coverage

    text = render_vulnerability_coverage(_coverage(_state("seed-001")), wide=True)
    lines = text.splitlines()
    assert [line.split()[-1] for line in lines[1:5]] == ["79", "0", "9", "13"]
    assert "unpaired                 57" in text
    assert "split summaries          31" in text
    assert ("Totals refused: incomplete, 79 of 79 subjects in scope are neither current nor excluded "
            "(missing 9, stale 13, unpaired 57).") in lines
    assert "not-found (resolves in kubescape)" in text
    excluded = render_vulnerability_coverage(_coverage(_state("classes"), "exclusions.yaml"), wide=True)
    assert ("Totals refused: incomplete, 11 of 15 subjects in scope are neither current nor excluded (missing 1, "
            "duplicate 1, misnamed 1, stale 6, split 1, unpaired 1). 1 excluded: legacy image is built from "
            "scratch; kubevuln has no package catalogue to scan (1).") in excluded.splitlines()
    assert "Evidence recorded with the exclusions:" in excluded
    assert "0  Deployment shop/legacy  app        kubevuln log 2026-10-02T01:14Z: 'no packages found'" in excluded


def test_table_has_the_reasons_in_one_column_and_at_80_columns_under_the_rows() -> None:
    from kubectl_kyrec.render.coverage_table import render_vulnerability_coverage

    text = render_vulnerability_coverage(_coverage(_state("classes"), "exclusions.yaml"))
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("STATUS"))
    assert header.split() == ["STATUS", "COVERS", "REASON", "WORKLOAD", "CONTAINER", "SUMMARY"]
    # each axis said once: a split row's STATUS says it, a stale one's REASON adds it to the stale reason
    assert next(line for line in lines if "shop/cache" in line).split()[:2] == ["split", "Deployment"]
    assert "not-rescanned, split" in next(line for line in lines if "shop/queue" in line)
    assert next(line for line in lines if "shop/auth" in line).split()[:5] == [
        "unpaired", "not-found", "(resolves", "in", "kubescape)"]
    # at 80 columns: kubectl's short kind names, the reasons under their rows, no name cut
    narrow = render_vulnerability_coverage(_coverage(_state("classes"), "exclusions.yaml"), width=80)
    assert "..." not in narrow and "shop deploy/legacy" in narrow
    assert "\n    reason: legacy image is built from scratch;" in narrow
    assert "reason: legacy image is built from scratch; kubevuln has no package catalogue to scan" in " ".join(
        narrow.split())
    assert all(len(line) <= 80 for line in narrow.splitlines() if line.startswith("    reason: "))
    wide = render_vulnerability_coverage(_coverage(_state("classes"), "exclusions.yaml"), wide=True)
    assert "INTEGRITY  UNPAIRED" in wide and "Deployment shop/legacy" in wide
    complete = render_vulnerability_coverage(_coverage(_complete_state()))
    assert "Totals from all 2 subjects in scope:" in complete and "refused" not in complete


def test_without_the_manifest_list_pairing_is_undetermined() -> None:
    state = [o for o in _state("classes") if o.get("kind") != "VulnerabilityManifest"]
    doc = _coverage(state).to_json()
    web = next(s for s in doc["subjects"] if s["subject"]["name"] == "web")
    assert (web["pairing"]["paired"], web["pairing"]["reason"]) == (None, "manifests-not-read")
    assert web["pairing"]["ref"]["kind"] == "VulnerabilityManifest"
    assert doc["counts"]["unpairedSummaries"] == 2          # the two stubs have no reference at all
    # web, auth, report and toolbox are fresh and intact, but their pairing is not known: unpaired, not current
    assert (web["status"], web["reason"]) == ("unpaired", "manifests-not-read")
    assert doc["counts"]["unpaired"] == 4 and doc["counts"]["current"] == 0
    assert doc["totals"]["incompleteBy"]["pairing-undetermined"] == 4
