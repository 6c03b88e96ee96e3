"""SARIF 2.1.0 output: valid against the official schema, with what code scanning needs."""

from __future__ import annotations

import io
import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.model import Ref
from kubectl_kyrec.render import github, sarif
from tests.ci.findings_support import ROOT, finding, sarif_errors

EXAMPLES = ROOT / "testdata" / "examples"


def test_schema_rejects_what_it_should() -> None:
    # the validator is live: a document missing `version`, or with a bad level, fails
    assert sarif_errors({"runs": []})
    doc = sarif.sarif_document([finding()])
    doc["runs"][0]["results"][0]["level"] = "fatal"
    assert any("fatal" in e for e in sarif_errors(doc))


def test_eval_sarif_is_valid_and_complete() -> None:
    out = CliRunner().invoke(cli, ["eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources"),
                                   "-o", "sarif"]).stdout
    doc = json.loads(out)
    assert sarif_errors(doc) == []
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["limit-memory", "require-owner-label"]
    for rule in rules:
        assert rule["helpUri"].startswith("https://")
        assert rule["help"]["text"] and rule["fullDescription"]["text"]
    for result in doc["runs"][0]["results"]:
        # require-owner-label is Audit-only: Kyverno admits the Pod, so a warning, as `-o github` says
        assert result["level"] == ("warning" if result["ruleId"] == "require-owner-label" else "error")
        assert len(result["partialFingerprints"]["kyrecFinding/v1"]) == 32
    short = {r["id"]: r["shortDescription"]["text"] for r in rules}
    assert short == {"limit-memory": "ValidatingPolicy limit-memory",
                     "require-owner-label": "ValidatingPolicy require-owner-label"}


def test_rule_carries_category_severity_and_help() -> None:
    doc = sarif.sarif_document([finding()])
    rule = doc["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["properties"]["category"] == "Best Practices"
    assert rule["properties"]["severity"] == "medium"
    assert rule["properties"]["security-severity"] == "5.5"
    assert "policies/require-labels.yaml:1" in rule["help"]["text"]
    assert rule["helpUri"] == "https://kyverno.io/docs/policy-types/validating-policy/"


def test_levels_follow_the_result() -> None:
    doc = sarif.sarif_document([finding("a", outcome="fail"), finding("b", outcome="warn"),
                                finding("c", outcome="error"), finding("d", outcome="pass"),
                                finding("e", outcome="skip")])
    assert sarif_errors(doc) == []
    levels = {r["properties"]["subject"]["name"]: r["level"] for r in doc["runs"][0]["results"]}
    assert levels == {"a": "error", "b": "warning", "c": "error"}


def test_levels_agree_with_github() -> None:
    # an Audit-only (or Warn-only) failure is admitted by Kyverno: a warning in SARIF and in `-o github`
    findings = [finding("a", actions=("Audit",)), finding("b", actions=("Warn",)), finding("c", actions=("Deny",)),
                finding("d", actions=("Audit", "Warn")), finding("e", actions=()), finding("f", outcome="warn"),
                finding("g", outcome="error", actions=("Audit",))]
    results = sarif.sarif_document(findings)["runs"][0]["results"]
    sarif_levels = {r["properties"]["subject"]["name"]: r["level"] for r in results}
    github_levels = {f.subject.name: github.level_of(f) for f in findings if f.subject is not None}
    assert sarif_levels == github_levels == {"a": "warning", "b": "warning", "c": "error", "d": "warning",
                                             "e": "error", "f": "warning", "g": "error"}


def test_fingerprints_survive_line_moves_and_differ_by_subject() -> None:
    first = sarif.sarif_document([finding("web", line=3)])["runs"][0]["results"][0]["partialFingerprints"]
    moved = sarif.sarif_document([finding("web", line=40)])["runs"][0]["results"][0]["partialFingerprints"]
    other = sarif.sarif_document([finding("api", line=3)])["runs"][0]["results"][0]["partialFingerprints"]
    assert first == moved
    assert first != other


def test_sarif_root_makes_paths_relative(tmp_path: Path) -> None:
    repo = tmp_path / "my repo"
    manifest = repo / "deploy" / "web app.yaml"
    doc = sarif.sarif_document([finding(file=str(manifest))], root=str(repo))
    assert sarif_errors(doc) == []
    artifact = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "deploy/web%20app.yaml", "uriBaseId": "%SRCROOT%"}
    base = doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/my%20repo/")
    outside = sarif.sarif_document([finding(file="/elsewhere/x.yaml")], root=str(repo))
    uri = outside["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": "file:///elsewhere/x.yaml"}


def test_cluster_objects_get_a_logical_location() -> None:
    doc = sarif.sarif_document([finding(file=None)])
    assert sarif_errors(doc) == []
    location = doc["runs"][0]["results"][0]["locations"][0]
    assert "physicalLocation" not in location
    assert location["logicalLocations"] == [{"name": "web", "fullyQualifiedName": "apps/v1/Deployment/shop/web",
                                             "kind": "object", "decoratedName": "Deployment shop/web"}]


def test_findings_without_policy_get_a_rule_per_kind() -> None:
    gap = finding(policy="", command="coverage", message_class="missing", message="report missing")
    doc = sarif.sarif_document([gap])
    assert sarif_errors(doc) == []
    rule = doc["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["id"] == "kyrec/coverage/missing" and rule["helpUri"].startswith("https://")


def test_baseline_state_when_a_baseline_was_used() -> None:
    doc = sarif.sarif_document([finding("a"), finding("b", baselined=True)], baseline_used=True)
    assert sarif_errors(doc) == []
    states = {r["properties"]["subject"]["name"]: r["baselineState"] for r in doc["runs"][0]["results"]}
    assert states == {"a": "new", "b": "unchanged"}


def test_subject_with_odd_characters_stays_valid() -> None:
    f = finding(message="bad: \"quotes\" and \n newline")._replace(subject=Ref("v1", "ConfigMap", "", "a b", "u"))
    assert sarif_errors(sarif.sarif_document([f])) == []


def test_streamed_document_is_the_standard_librarys_text() -> None:
    # write() encodes result by result (orjson where it gives the same bytes); the text must be what
    # json.dump of the whole document writes, also for characters orjson writes differently
    findings = [finding("web"), finding("api", outcome="pass"),
                finding("caf\u00e9", message="d\u00e9j\u00e0 \x7f \x01"),
                finding("db", outcome="undetermined"), finding("x", policy="", command="coverage",
                                                            message_class="missing"),
                finding("big", message="surrogate \udc80")]
    for kwargs in ({}, {"root": "/repo"}, {"baseline_used": True}):
        for chosen in (findings, findings[1:2], []):
            expected = json.dumps(sarif.sarif_document(chosen, **kwargs), indent=2) + "\n"  # type: ignore[arg-type]
            assert sarif.render(chosen, **kwargs) == expected  # type: ignore[arg-type]
            # in chunks of two: chunks with and without characters orjson writes differently
            out = io.StringIO()
            sarif.write(chosen, out, chunk=2, **kwargs)  # type: ignore[arg-type]
            assert out.getvalue() == expected
