"""Classic results in the expected reports (kk: pkg/utils/report/results.go ToPolicyReportResult)."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.expect.report_scope import policy_versions
from kubectl_kyrec.expect.reports import expected_reports
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)

POLICIES = """\
apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: two-rules
  namespace: app
  resourceVersion: "42"
  annotations:
    policies.kyverno.io/scored: "false"
spec:
  rules:
  - name: replicas
    match: {any: [{resources: {kinds: [Deployment]}}]}
    validate:
      cel:
        expressions: [{expression: "object.spec.replicas < 3", message: too many}]
  - name: labelled
    match: {any: [{resources: {kinds: [Deployment]}}]}
    validate:
      cel:
        expressions: [{expression: "has(object.metadata.labels)"}]
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: admission-only, resourceVersion: "7"}
spec:
  background: false
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Deployment]}}]}
    validate:
      cel:
        expressions: [{expression: "true"}]
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app, uid: 11111111-2222-3333-4444-555555555555, labels: {a: b}}
spec: {replicas: 5, template: {spec: {containers: [{name: c, image: nginx}]}}}
"""


def test_one_result_per_rule_named_ns_name_scored_false_is_warn() -> None:
    policies = classify(documents_from_text(POLICIES, "p.yaml"))
    outcome = run_eval(policies, documents_from_text(DEPLOYMENT, "r.yaml"), [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW))
    assert sorted((r.policy, r.rule, r.result) for r in outcome.results) == [
        ("admission-only", "r", "pass"), ("app/two-rules", "labelled", "pass"), ("app/two-rules", "replicas", "warn")]
    [report] = expected_reports(outcome.pairs, outcome.now, outcome.report_api)
    assert report["metadata"]["name"] == "11111111-2222-3333-4444-555555555555"
    # background: false policies are admission-only: not in the report
    results = {(e["policy"], e["rule"]): e for e in report["results"]}
    assert sorted(results) == [("app/two-rules", "labelled"), ("app/two-rules", "replicas")]
    assert results[("app/two-rules", "replicas")]["source"] == "kyverno"
    assert results[("app/two-rules", "replicas")]["message"] == "too many"
    assert results[("app/two-rules", "replicas")]["scored"] is False
    assert results[("app/two-rules", "labelled")]["properties"] == {"process": "background scan"}
    assert report["summary"] == {"pass": 1, "fail": 0, "warn": 1, "error": 0, "skip": 0}
    # the scan labels reports with the policy's resourceVersion; background: false policies are not scanned
    assert policy_versions(policies, []) == {"pol.kyverno.io/two-rules": "42"}


def test_diff_reports_round_trip_and_a_missing_rule_result(tmp_path: Any) -> None:
    """`eval -o reports` output put back into the state is current; dropping one rule's result is stale."""
    import json

    import yaml
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    policy = tmp_path / "p.yaml"
    policy.write_text(POLICIES)
    state = tmp_path / "state.yaml"
    state.write_text(DEPLOYMENT)
    now = ["--now", "2026-11-29T00:00:00Z"]
    made = CliRunner().invoke(cli, ["eval", "-p", str(policy), "--state", str(state), "-o", "reports", *now])
    reports = [d for d in yaml.safe_load_all(made.stdout) if d]
    assert len(reports) == 1 and len(reports[0]["results"]) == 2
    state.write_text(DEPLOYMENT + "---\n" + yaml.safe_dump(reports[0]))
    args = ["diff", "--reports", "-p", str(policy), "--state", str(state), "-o", "json", *now]
    result = CliRunner().invoke(cli, args)
    assert json.loads(result.stdout)["summary"]["report"]["current"] == 1, result.stdout
    reports[0]["results"] = [r for r in reports[0]["results"] if r["rule"] != "labelled"]
    state.write_text(DEPLOYMENT + "---\n" + yaml.safe_dump(reports[0]))
    result = CliRunner().invoke(cli, args)
    changes = [c for c in json.loads(result.stdout)["changes"] if c["domain"] == "report"]
    assert [(c["class"], c["reason"]) for c in changes] == [("stale", "result-missing")]
    assert result.exit_code == 1
