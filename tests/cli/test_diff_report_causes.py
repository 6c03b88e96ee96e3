"""The causes of missing and stale reports (issue 28) through `diff --reports -o json`: the reports
controller's flags from its Deployment, its permissions from the chart's RBAC, the cluster's copy of a policy.
The report state is testdata/coverage-cli's (3 missing, 1 stale, 1 misnamed, 1 orphan), with one piece of
evidence added per test; without it every missing report's cause is the next background scan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

DATA = Path(__file__).resolve().parents[2] / "testdata"
CAUSES = DATA / "diff-causes"
CHART_RBAC = DATA / "diff" / "cause-rbac-generate-crb" / "kyverno-rbac.yaml"


def _causes(*states: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(class, subject name or report name) -> cause of every report change that is not current."""
    args = ["diff", "--now", "2026-11-29T00:00:00Z", "-p", str(DATA / "coverage-cli" / "policy.yaml"), "--state",
            str(DATA / "coverage-cli" / "state.json"), "--reports", "-o", "json"]
    for state in states:
        args += ["--state", str(state)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    return {(c["class"], (c["subject"] or c["object"])["name"]): c["cause"] for c in doc["changes"]
            if c["class"] != "current"}


def _writing(causes: dict[tuple[str, str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: cause for (klass, name), cause in causes.items() if klass in ("missing", "stale")}


def test_without_evidence_the_cause_is_the_next_scan() -> None:
    causes = _causes()
    assert {c["kind"] for c in _writing(causes).values()} == {"rescan"}
    assert causes[("orphan", "11111111-0000-0000-0000-000000000009")]["kind"] == "unknown"


def test_the_reports_controller_s_switches_read_from_its_deployment(tmp_path: Path) -> None:
    deployment = (CAUSES / "reports-controller.yaml").read_text()
    causes = _causes(CAUSES / "reports-controller.yaml")
    writing = _writing(causes)
    assert set(writing) == {"changed", "new", "excluded", "coredns"}
    for cause in writing.values():
        assert cause == {"kind": "controller-flag",
                         "message": "the reports controller runs with --backgroundScan=false: no background scan "
                                    "reports on existing objects",
                         "evidence": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "kyverno",
                                       "name": "kyverno-reports-controller", "uid": "deploy-reports-controller"}]}
    # the controller's switches keep no report from being an orphan, a misnamed one or a duplicate
    assert causes[("orphan", "11111111-0000-0000-0000-000000000009")]["kind"] == "unknown"
    assert causes[("misnamed", "renamed")]["kind"] == "rescan"

    for flag, effect in (("--policyReports=false", "the background scan stores no reports"),
                         ("--aggregateReports=false", "ephemeral reports are never aggregated into policy reports")):
        changed = tmp_path / "deployment.yaml"
        changed.write_text(deployment.replace("--backgroundScan=false", "--backgroundScan=true")
                           .replace(flag.replace("false", "true"), flag))
        messages = {c["message"] for c in _writing(_causes(changed)).values()}
        assert messages == {f"the reports controller runs with {flag}: {effect}"}

    # its defaults said nothing: the Deployment as installed by default is no cause
    default = tmp_path / "default.yaml"
    default.write_text(deployment.replace("--backgroundScan=false", "--backgroundScan=true"))
    assert {c["kind"] for c in _writing(_causes(default)).values()} == {"rescan"}

    # --skipResourceFilters=false: the ConfigMap's filters apply to the scan, and the entry is named
    filters = tmp_path / "filters.yaml"
    filters.write_text(deployment.replace("--backgroundScan=false", "--backgroundScan=true")
                       .replace("--skipResourceFilters=true", "--skipResourceFilters=false") + "---\n" + yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kyverno", "namespace": "kyverno"},
         "data": {"resourceFilters": "[Event,*,*][*/*,kube-system,*]"}}))
    coredns = _writing(_causes(filters))["coredns"]
    assert coredns["message"] == ("the reports controller runs with --skipResourceFilters=false: resourceFilters "
                                  "entry [*/*,kube-system,*] skips Pod kube-system/coredns")


def test_the_reports_controller_without_its_view_binding_may_not_watch_pods(tmp_path: Path) -> None:
    # the chart's reportsController.rbac.createViewRoleBinding: false, and nothing else granting Pods
    chart = yaml.safe_load(CHART_RBAC.read_text())
    chart["items"] = [o for o in chart["items"] if o["metadata"]["name"] != "kyverno:reports-controller:view"]
    state = tmp_path / "rbac.yaml"
    state.write_text(yaml.safe_dump(chart))
    # the reports controller's Deployment (its switches as installed by default) names the account it runs as
    running = tmp_path / "reports-controller.yaml"
    running.write_text((CAUSES / "reports-controller.yaml").read_text().replace("--backgroundScan=false",
                                                                                "--backgroundScan=true"))
    # without it, no RBAC object says Kyverno runs as that account: nothing is said of its permissions
    assert {c["kind"] for c in _writing(_causes(state)).values()} == {"rescan"}
    writing = _writing(_causes(state, running))
    assert {c["kind"] for c in writing.values()} == {"rbac"}
    assert {c["message"] for c in writing.values()} == {
        "Kyverno's reports controller (service account kyverno/kyverno-reports-controller) may not get/list/watch "
        "pods cluster-wide (the state's RBAC objects); grant: apiGroups: [\"\"], resources: [\"pods\"], "
        "verbs: [\"get\", \"list\", \"watch\"]"}
    # with the chart's view binding, `view` (aggregated from system:aggregate-to-view) grants them
    assert {c["kind"] for c in _writing(_causes(CHART_RBAC, running)).values()} == {"rescan"}


def test_the_cluster_s_copy_of_a_policy_with_background_off(tmp_path: Path) -> None:
    writing = _writing(_causes(CAUSES / "cluster-policy-background-off.yaml"))
    assert {c["message"] for c in writing.values()} == {
        "the cluster's policy require-team has spec.evaluation.background.enabled: false: the background scan "
        "skips it"}


def test_coverage_gaps_carry_the_same_causes() -> None:
    args = ["coverage", "--now", "2026-11-29T00:00:00Z", "-p", str(DATA / "coverage-cli" / "policy.yaml"),
            "--state", str(DATA / "coverage-cli" / "state.json"), "--state", str(CAUSES / "reports-controller.yaml")]
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"]).stdout)
    by_status = {(s["status"], s["subject"]["name"]): s["cause"] for s in doc["subjects"]}
    assert by_status[("current", "good")] is None
    flagged = "the reports controller runs with --backgroundScan=false: no background scan reports on existing objects"
    assert {k: c["message"] for k, c in by_status.items() if k[0] in ("missing", "stale")} == {
        ("stale", "changed"): flagged, ("missing", "new"): flagged, ("missing", "excluded"): flagged,
        ("missing", "coredns"): flagged}
    table = CliRunner().invoke(cli, args).stdout.splitlines()
    row = next(i for i, line in enumerate(table) if "Pod shop/new" in line)
    assert table[row + 1] == f"    cause: {flagged}"
    wide = CliRunner().invoke(cli, [*args, "-o", "wide"]).stdout
    assert "CAUSE" in wide and next(line for line in wide.splitlines() if "Pod shop/new" in line).endswith(flagged)
