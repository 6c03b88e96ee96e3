"""The `kyrec/v1` machine output contract (docs/output.md), held by exact keys: one snapshot per document kind.

Each test runs the command on fixtures that exercise every optional key and compares the set of key
paths in its JSON with the snapshot below. A renamed, dropped or added key fails here, so the contract
changes only on purpose (and docs/output.md with it). YAML is the same data (checked once per kind).

Paths: `a.b` nests, `a[]` is every element of a list, `changes[report]` the elements whose `domain` is
`report`. Kubernetes objects carried whole (generated downstreams, PolicyReports, result properties,
exclusion matches) are user data: their keys are not the contract, so the snapshot stops at them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "testdata"
NOW = ["--now", "2026-11-29T00:00:00Z"]

# subtrees that are user or Kubernetes data, not kyrec's keys
OPAQUE = {"downstreams[].object", "admission[].object", "admission[].mutations[].patch", "mutateExisting[].patch",
          "reports", "results[].properties", "unusedExclusions[].match"}
# maps keyed by a name or a vocabulary value (policy names, class names): keys collapse to `<key>` or are
# checked as vocabulary, not as field names
KEYED_BY_NAME = {"perPolicy"}
VOCABULARY = {"summary.downstream", "summary.report", "summary.deletion", "impact.summary.downstream",
              "impact.summary.result", "impact.summary.admission",
              "outOfScope", "totals.incompleteBy"}
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def key_paths(value: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            name = "<key>" if prefix in KEYED_BY_NAME else key
            path = f"{prefix}.{name}" if prefix else name
            out.add(path)
            if path not in OPAQUE:
                out |= key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            tag = f"[{item['domain']}]" if isinstance(item, dict) and "domain" in item else "[]"
            out |= key_paths(item, prefix + tag)
    return out


def invoke(*args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    as_json = CliRunner().invoke(cli, [*args, "-o", "json"])
    as_yaml = CliRunner().invoke(cli, [*args, "-o", "yaml"])
    assert as_json.stdout, as_json.stderr
    return json.loads(as_json.stdout), yaml.safe_load(as_yaml.stdout)


def field_names(paths: set[str]) -> list[str]:
    """Every key that names a field of the contract (not vocabulary, not a name)."""
    names = []
    for path in paths:
        parent, _, last = path.rpartition(".")
        if re.sub(r"\[[a-z]*\]", "", parent) in VOCABULARY or last == "<key>":
            continue
        names.append(re.sub(r"\[[a-z]*\]$", "", last))
    return names


REF = ["apiVersion", "kind", "name", "namespace", "uid"]
LOCATION = ["file", "line"]


def _ref(prefix: str, synthetic: bool = False) -> list[str]:
    return [prefix, *(f"{prefix}.{k}" for k in [*REF, *(["uidSynthetic"] if synthetic else [])])]


def _loc(prefix: str) -> list[str]:
    return [prefix, *(f"{prefix}.{k}" for k in LOCATION)]


ENVELOPE = ["apiVersion", "kind", "kyrecVersion", "errors", "notices", "summary"]
ERRORS = ["errors[].message", *_loc("errors[].location")]
# an *error* that is a read which failed (errors.FailedRead): the read and how it ended, after message/location
FAILED_READ_ERROR = ["errors[].read", "errors[].status",
                     *(f"errors[].read.{k}" for k in ("verb", "apiVersion", "kind", "resource", "namespace",
                                                      "recorded")),
                     *(f"errors[].status.{k}" for k in ("code", "reason"))]
RESULT_KEYS = ["category", "message", "policy", "properties", "result", "rule", "scored", "severity", "source",
               "validationActions"]

EVAL_RESULT = sorted({
    *ENVELOPE, *ERRORS, "results", "admission", "downstreams", "reports",
    *(f"results[].{k}" for k in RESULT_KEYS), *_ref("results[].subject", synthetic=True),
    *_loc("results[].location"), *_loc("results[].policyLocation"),
    "downstreams[].policy", "downstreams[].object", *_ref("downstreams[].trigger"),
    *(f"summary.{k}" for k in ("pass", "fail", "warn", "error", "skip", "undetermined", "failedReads")),
})

IMPACT = sorted({
    "impact", "impact.downstreams", "impact.results", "impact.summary", "impact.exitOn", "impact.introduced",
    *(f"impact.downstreams[downstream].{k}" for k in ("change", "diff", "domain", "note", "policy")),
    *_ref("impact.downstreams[downstream].trigger"), *_ref("impact.downstreams[downstream].object", True),
    *(f"impact.results[result].{k}" for k in ("after", "before", "change", "domain", "message", "policy",
                                               "rule")),
    *_ref("impact.results[result].subject"), *_loc("impact.results[result].location"),
    *_loc("impact.results[result].policyLocation"),
    *_loc("impact.downstreams[downstream].location"), *_loc("impact.downstreams[downstream].policyLocation"),
    "impact.summary.downstream", "impact.summary.result", "impact.admission", "impact.summary.admission",
    *(f"impact.summary.admission.{k}" for k in ("admitted", "mutated-differently", "rejected")),
    *(f"impact.summary.downstream.{k}" for k in ("appear", "change", "disappear", "orphaned", "undetermined")),
    *(f"impact.summary.result.{k}" for k in ("changed", "fail-to-pass", "gone", "new", "pass-to-fail")),
})

CHANGE_KEYS = ["class", "diff", "domain", "enforced", "fields", "policy", "reason", "subject", "trigger"]
DIFF_RESULT = sorted({
    *ENVELOPE, "changes",
    *(f"changes[downstream].{k}" for k in [*CHANGE_KEYS, "message"]),
    *_ref("changes[downstream].trigger"), *_ref("changes[downstream].object"),
    *(f"changes[report].{k}" for k in [*CHANGE_KEYS, "inScope", "message", "nextScan", "nextScanReason",
                                        "oldestEphemeralAgeSeconds"]),
    *_ref("changes[report].subject"), *_ref("changes[report].object"),
    # why a change is not in-sync/current (issue 28); `evidence` a list of refs
    *(f"changes[{domain}].{k}" for domain in ("downstream", "report")
      for k in ("cause", "cause.kind", "cause.message", "cause.evidence")),
    "summary.downstream", "summary.report", "summary.deletion", "summary.failedReads",
    *(f"summary.downstream.{k}" for k in ("conflict", "drifted", "in-sync", "missing", "orphan", "undetermined")),
    *(f"summary.deletion.{k}" for k in ("scheduled-deletion", "undetermined")),
    *(f"summary.report.{k}" for k in ("current", "duplicate", "misnamed", "missing", "orphan", "stale",
                                      "undetermined")),
})

# the scheduled deletions of DeletingPolicies (issue 26): a change domain of its own, in DiffResult beside the
# downstreams when a run has DeletingPolicies
DIFF_DELETIONS = sorted({
    *(f"changes[deletion].{k}" for k in [*CHANGE_KEYS, "message", "cause", "cause.kind", "cause.message",
                                         "cause.evidence", "schedule", "nextRun", "due", "propagationPolicy"]),
    *_ref("changes[deletion].object"),
})

# what totals are made of, both producers: the current subjects, of how many, complete, excluded by reason
DERIVED_FROM = ["subjects", "of", "complete", "excluded", "excludedFor", "excludedFor[].reason",
                "excludedFor[].subjects"]

COVERAGE_RESULT = sorted({
    "apiVersion", "kind", "kyrecVersion", "counts", "errors",
    *(f"counts.{k}" for k in ("inScope", "current", "missing", "stale", "duplicate", "misnamed", "excluded",
                              "orphan", "split", "unpaired", "failedReads")),
    "subjects", "subjects[].status", "subjects[].reason", "subjects[].excludedBy", "subjects[].gap",
    "subjects[].evidence", *_ref("subjects[].subject"), *_ref("subjects[].report"),
    # why a gap is one (issue 28), as a diff change's cause
    *(f"subjects[].{k}" for k in ("cause", "cause.kind", "cause.message", "cause.evidence")),
    "totals", *(f"totals.{k}" for k in ("pass", "fail", "warn", "error", "skip")),
    "perPolicy", "perPolicy.<key>", *(f"perPolicy.<key>.{k}" for k in ("pass", "fail", "warn", "error", "skip")),
    "derivedFrom", *(f"derivedFrom.{k}" for k in DERIVED_FROM),
    "unusedExclusions", "unusedExclusions[].index", "unusedExclusions[].match", "unusedExclusions[].reason",
    *_loc("unusedExclusions[].location"),
    "reportAPI", "filteredSubjects", "orphans", *(f"orphans[].{k}" for k in REF),
})

# `coverage --producer kubescape` on the classes golden state (every class, reason and optional key)
COVERAGE_RESULT_KUBESCAPE = sorted({
    "apiVersion", "kind", "kyrecVersion", "producer", "counts", "errors",
    *(f"counts.{k}" for k in ("inScope", "current", "missing", "stale", "duplicate", "misnamed", "excluded",
                              "orphan", "split", "unpaired", "splitSummaries", "unpairedSummaries",
                              "splitUndetermined", "failedReads")),
    "subjects", *(f"subjects[].{k}" for k in ("status", "reason", "integrity", "imageIds", "excludedBy", "gap",
                                                "evidence")),
    *_ref("subjects[].subject"), "subjects[].subject.container", *_ref("subjects[].report"),
    "subjects[].observed", *(f"subjects[].observed.{k}" for k in ("imageId", "timestamp", "status")),
    "subjects[].pairing", *(f"subjects[].pairing.{k}" for k in ("paired", "reason", "resolvesIn")),
    *_ref("subjects[].pairing.ref"),
    "totals", *(f"totals.{k}" for k in ("critical", "high", "relevant", "complete", "incompleteSubjects",
                                        "incompleteBy", "derivedFrom", "partial")),
    *(f"totals.derivedFrom.{k}" for k in DERIVED_FROM),
    *(f"totals.incompleteBy.{k}" for k in ("missing", "stale", "split", "unpaired", "duplicate", "misnamed")),
    *(f"totals.partial.{k}" for k in ("critical", "high", "relevant", "subjects")),
    "totals.partial.relevant.critical", "totals.partial.relevant.high",
    "derivedFrom", *(f"derivedFrom.{k}" for k in DERIVED_FROM),
    "unusedExclusions", "unusedExclusions[].index", "unusedExclusions[].match", "unusedExclusions[].reason",
    *_loc("unusedExclusions[].location"),
    "orphans", *(f"orphans[].{k}" for k in [*REF, "reason"]),
    "split", *(f"split[].{k}" for k in REF), "ignoredSummaries", *(f"ignoredSummaries[].{k}" for k in REF),
    "outOfScope", *(f"outOfScope.{k}" for k in ("completed-pod", "ephemeral-container", "init-container",
                                                "not-running", "unscanned-namespace")),
    "reads", "reads.metadata", "reads.payload", "reads.manifests",
    "scan", "scan.period", "scan.grace", "scan.source",
})

# the `baseline` key of eval, diff and coverage documents, only with --baseline
BASELINE_ENTRY = ["class", "command", "location", "message", "policy", "rule", "subject"]
BASELINE = sorted({
    "baseline", "baseline.file", "baseline.summary", "baseline.baselined", "baseline.fixed",
    *(f"baseline.summary.{k}" for k in ("baselined", "new", "fixed")),
    *(f"baseline.baselined[].{k}" for k in BASELINE_ENTRY), *(f"baseline.fixed[].{k}" for k in BASELINE_ENTRY),
})

TEST_RESULT = sorted({
    *ENVELOPE, *ERRORS, "mode", "allowNotEvaluated", "rows",
    *(f"rows[].{k}" for k in ("actual", "diff", "expected", "file", "kind", "message", "policy", "reason",
                              "resource", "rule", "status", "test")),
    *_loc("rows[].location"),
    # issue 27: rows the two modes decide differently, and vacuous rows
    "warnings", *(f"warnings[].{k}" for k in ("kind", "message", "policy", "reason", "resource", "rule")),
    *_loc("warnings[].location"),
    *(f"summary.{k}" for k in ("passed", "failed", "errors", "notEvaluated")),
})


LINT_RESULT = sorted({
    "apiVersion", "kind", "kyrecVersion", "notices", "summary",
    *(f"summary.{k}" for k in ("policies", "errors", "warnings")),
    "problems", *(f"problems[].{k}" for k in ("file", "line", "field", "severity", "message")),
})


# a GeneratingPolicy whose CEL does not compile: one entry in errors[], and the run goes on
BROKEN_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: broken
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [namespaces]
  generate:
  - expression: "generator.apply(object.metadata.name, [1 +])"
"""


def _eval_args(*extra: str) -> list[str]:
    return ["eval", *NOW, "-p", str(DATA / "examples" / "policies"),
            "-p", str(DATA / "diff" / "needs-request" / "policy.yaml"),
            "-p", str(DATA / "diff" / "secret-drift-masked" / "policy.yaml"),
            "--state", str(DATA / "examples" / "resources"),
            "--state", str(DATA / "diff" / "needs-request" / "state.yaml"),
            "--state", str(DATA / "diff" / "secret-drift-masked" / "state.yaml"), *extra]


def _check(doc: dict[str, Any], as_yaml: dict[str, Any], kind: str, want: list[str]) -> None:
    assert doc["apiVersion"] == "kyrec/v1" and doc["kind"] == kind
    got = key_paths(doc)
    assert sorted(got) == want
    assert key_paths(as_yaml) == got
    assert [n for n in field_names(got) if not CAMEL.match(n)] == []


def test_eval_result_keys(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN_POLICY)
    doc, as_yaml = invoke(*_eval_args("-p", str(broken)))
    assert doc["errors"], "the fixture must exercise errors[]"
    assert any(r["result"] == "undetermined" for r in doc["results"])
    _check(doc, as_yaml, "EvalResult", EVAL_RESULT)


def test_eval_result_with_impact_keys() -> None:
    doc, as_yaml = invoke(*_eval_args("--base-policy", str(DATA / "examples" / "policies")))
    assert doc["impact"]["downstreams"] and doc["impact"]["results"]
    want = [p for p in EVAL_RESULT if not p.startswith("errors[]")]
    _check(doc, as_yaml, "EvalResult", sorted([*want, *IMPACT]))


def test_eval_result_admission_keys() -> None:
    case = DATA / "admission" / "impact"
    doc, as_yaml = invoke("eval", *NOW, "-p", str(case / "head.yaml"), "-r", str(case / "pods.yaml"),
                          "--base-policy", str(case / "base.yaml"))
    assert doc["admission"] and doc["impact"]["admission"]
    got = key_paths(doc)
    assert sorted(p for p in got if p.startswith(("admission", "impact.admission"))) == sorted({
        "admission", *(f"admission[].{k}" for k in ("defaulted", "mutations", "object", "operation", "subject",
                                                     "undetermined", "location")),
        *_ref("admission[].subject", synthetic=True), *_loc("admission[].location"),
        "impact.admission", *(f"impact.admission[admission].{k}" for k in ("change", "deniedBy", "diff", "domain",
                                                                           "operation", "subject", "location")),
        *_ref("impact.admission[admission].subject", synthetic=True), *_loc("impact.admission[admission].location"),
    })
    assert key_paths(as_yaml) == got
    assert [n for n in field_names(got) if not CAMEL.match(n)] == []


MUTATE_EXISTING = sorted({
    "mutateExisting", *(f"mutateExisting[].{k}" for k in ("policy", "kind", "rule", "trigger", "location", "target",
                                                           "result", "message", "patch")),
    *_ref("mutateExisting[].trigger", synthetic=True), *_loc("mutateExisting[].location"),
    *(f"mutateExisting[].target.{k}" for k in ("apiVersion", "kind", "namespace", "name")),
})


def test_eval_result_mutate_existing_keys(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "stamp"},
        "spec": {"rules": [{"name": "stamp", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                            "mutate": {"targets": [{"apiVersion": "v1", "kind": "Secret", "namespace": "shop"}],
                                       "patchStrategicMerge": {"metadata": {"labels": {"stamped": "yes"}}}}}]}}))
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: shop}\n")
    (tmp_path / "state.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop", "uid": "u1"}}]}))
    doc, as_yaml = invoke("eval", *NOW, "-p", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "cm.yaml"),
                          "--state", str(tmp_path / "state.yaml"))
    got = key_paths(doc)
    assert sorted(p for p in got if p.startswith("mutateExisting")) == MUTATE_EXISTING
    assert key_paths(as_yaml) == got
    assert [n for n in field_names(got) if not CAMEL.match(n)] == []


def test_explain_result_keys() -> None:
    examples = DATA / "examples"
    doc, as_yaml = invoke("explain", *NOW, "-p", str(examples / "policies"), "-p", str(examples / "admission"),
                          "-r", str(examples / "resources"), "pod/batch", "-n", "shop")
    assert doc["kind"] == "ExplainResult" and doc["explanations"][0]["policyKind"] == "Admission"
    got = key_paths(doc)
    tree = {p for p in got if p.startswith("explanations[].tree.")}
    assert sorted(got - tree) == sorted({
        *(k for k in ENVELOPE if k != "summary"), "explanations",
        *(f"explanations[].{k}" for k in ("policy", "policyKind", "subject", "tree", "results")),
        *_ref("explanations[].subject", synthetic=True),
        *(f"explanations[].results[].{k}" for k in ("rule", "result", "message"))})
    # a tree's nodes nest: every key below `tree` is a node's
    assert {p.rpartition(".")[2] for p in tree} - {"tree"} <= {"name", "outcome", "detail", "children[]", "children"}
    assert key_paths(as_yaml) == got


def test_diff_result_keys() -> None:
    doc, as_yaml = invoke("diff", "--now", "2026-11-29T00:00:00Z",
                          "-p", str(DATA / "coverage-cli" / "policy.yaml"),
                          "-p", str(DATA / "diff" / "secret-drift-masked" / "policy.yaml"),
                          "--state", str(DATA / "coverage-cli" / "state.json"),
                          "--state", str(DATA / "diff" / "secret-drift-masked" / "state.yaml"))
    assert {c["domain"] for c in doc["changes"]} == {"downstream", "report"}
    _check(doc, as_yaml, "DiffResult", DIFF_RESULT)


def test_diff_result_deletion_keys() -> None:
    case = DATA / "deleting"
    doc, as_yaml = invoke("diff", "--now", "2026-09-01T12:00:00Z", "-p", str(case / "policies.yaml"),
                          "--state", str(case / "state.yaml"))
    classes = {c["class"] for c in doc["changes"] if c["domain"] == "deletion"}
    assert classes == {"scheduled-deletion", "undetermined"}
    got = key_paths(doc)
    assert sorted(p for p in got if p.startswith("changes[deletion]")) == DIFF_DELETIONS
    # the state records a LIST that failed when it was captured: one of the undetermined deletions
    assert {p for p in got if not p.startswith("changes[deletion]")} <= {*DIFF_RESULT, *ERRORS, *FAILED_READ_ERROR}
    assert key_paths(as_yaml) == got
    assert [n for n in field_names(got) if not CAMEL.match(n)] == []


def test_coverage_result_keys() -> None:
    case = DATA / "coverage-cli"
    doc, as_yaml = invoke("coverage", *NOW, "-p", str(case / "policy.yaml"), "--state", str(case / "state.json"),
                          "--exclusions", str(case / "exclusions.yaml"))
    _check(doc, as_yaml, "CoverageResult", COVERAGE_RESULT)


def test_coverage_result_kubescape_keys() -> None:
    case = DATA / "kubescape" / "classes"
    doc, as_yaml = invoke("coverage", "--producer", "kubescape", "--now", "2026-10-02T15:30:00Z",
                          "--state", str(case / "state.json"), "--exclusions", str(case / "exclusions.yaml"))
    _check(doc, as_yaml, "CoverageResult", COVERAGE_RESULT_KUBESCAPE)


def test_baseline_keys(tmp_path: Path) -> None:
    """Eval, diff and coverage with --baseline: a baseline that accepts some findings and names one entry
    no longer found, so both lists have elements."""
    case = DATA / "coverage-cli"
    stale = {"command": "", "policy": "gone-policy", "rule": "", "subject": "/Pod/shop/gone", "class": "fail",
             "message": "", "location": ""}
    runs = {"eval": (_eval_args(), "EvalResult", EVAL_RESULT),
            "diff": (["diff", *NOW, "-p", str(case / "policy.yaml"), "--state", str(case / "state.json")],
                     "DiffResult", DIFF_RESULT),
            "coverage": (["coverage", *NOW, "-p", str(case / "policy.yaml"), "--state", str(case / "state.json"),
                          "--exclusions", str(case / "exclusions.yaml")], "CoverageResult", COVERAGE_RESULT)}
    for command, (args, kind, keys) in runs.items():
        path = tmp_path / f"{command}.json"
        CliRunner().invoke(cli, [*args, "--write-baseline", str(path)])
        written = json.loads(path.read_text())
        written["entries"].append({**stale, "command": command})
        path.write_text(json.dumps(written))
        doc, as_yaml = invoke(*args, "--baseline", str(path))
        assert doc["baseline"]["baselined"] and doc["baseline"]["fixed"], command
        got = sorted(p for p in key_paths(doc) if p.startswith("baseline"))
        assert got == BASELINE, command
        rest = {p for p in key_paths(doc) if not p.startswith("baseline")}
        assert rest <= set(keys), command
        assert key_paths(as_yaml) == key_paths(doc)
        assert doc["kind"] == kind


# a capture that recorded a failed LIST of Pods: every document of a run on it carries the read in `errors`
FAILED_CAPTURE = {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {
    "kyrec.io/listed": json.dumps([{"apiVersion": "v1", "kind": "Namespace", "namespace": ""}]),
    "kyrec.io/unreadable": json.dumps([{"apiVersion": "v1", "kind": "Pod", "namespace": "", "verb": "list",
                                       "resource": "pods", "status": 403, "reason": "Forbidden",
                                       "message": "forbidden: cannot list pods cluster-wide"}])}},
    "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "uid": "u-1"}}]}


@pytest.mark.parametrize("command, kind", [("eval", "EvalResult"), ("diff", "DiffResult"),
                                           ("coverage", "CoverageResult"), ("explain", "ExplainResult")])
def test_failed_read_error_keys(tmp_path: Path, command: str, kind: str) -> None:
    state = tmp_path / "capture.json"
    state.write_text(json.dumps(FAILED_CAPTURE))
    doc, as_yaml = invoke(command, *NOW, "-p", str(DATA / "examples" / "policies"), "--state", str(state))
    assert doc["kind"] == kind
    errors = {p for p in key_paths(doc) if p.startswith("errors[]")}
    # a read has no file: its location is null
    assert sorted(errors) == sorted({"errors[].message", "errors[].location", *FAILED_READ_ERROR}), command
    [entry] = doc["errors"]
    assert entry["read"] == {"verb": "list", "apiVersion": "v1", "kind": "Pod", "resource": "pods",
                             "namespace": "", "recorded": True}
    assert entry["status"] == {"code": 403, "reason": "Forbidden"}
    counted = doc.get("counts" if kind == "CoverageResult" else "summary")
    if counted is not None:
        assert counted["failedReads"] == 1
    assert key_paths(as_yaml) == key_paths(doc)


def test_test_result_keys() -> None:
    doc, as_yaml = invoke("test", str(DATA / "testrun"))
    _check(doc, as_yaml, "TestResult", TEST_RESULT)


def test_lint_result_keys() -> None:
    doc, as_yaml = invoke("lint", str(ROOT / "tests" / "load" / "schema_typo.yaml"))
    _check(doc, as_yaml, "LintResult", LINT_RESULT)


@pytest.mark.parametrize("value, paths", [
    ({"a": {"b": 1}, "c": [{"d": 1}, {"e": 2}]}, {"a", "a.b", "c", "c[].d", "c[].e"}),
    ({"changes": [{"domain": "report", "x": 1}]}, {"changes", "changes[report].domain", "changes[report].x"}),
    ({"reports": [{"kind": "PolicyReport"}]}, {"reports"}),
    ({"perPolicy": {"my-policy": {"pass": 1}}}, {"perPolicy", "perPolicy.<key>", "perPolicy.<key>.pass"}),
])
def test_key_paths(value: dict[str, Any], paths: set[str]) -> None:
    assert key_paths(value) == paths


def test_docs_name_every_key_of_the_contract() -> None:
    # docs/output.md is the contract's prose: every key of every snapshot is written there as `key`
    text = (ROOT / "docs" / "output.md").read_text()
    keys = {re.sub(r"\[[a-z]*\]$", "", p.rpartition(".")[2])
            for p in [*EVAL_RESULT, *IMPACT, *MUTATE_EXISTING, *DIFF_RESULT, *DIFF_DELETIONS, *COVERAGE_RESULT,
                      *COVERAGE_RESULT_KUBESCAPE, *TEST_RESULT, *BASELINE, *FAILED_READ_ERROR, *LINT_RESULT]}
    keys.discard("<key>")
    assert sorted(k for k in keys if f"`{k}`" not in text) == []
