"""A ClusterPolicy and a ValidatingPolicy of one name (a move to the CEL kinds half done) are two policies in
every output: the table's counts, JUnit suites (with their own files), SARIF rules (with their own help) and
GitHub annotations. The ClusterPolicy keeps its bare name; the other reads `ValidatingPolicy/NAME`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.policy.policies import policy_labels, split_policy_label
from tests.ci.findings_support import sarif_errors

CLASSIC = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
    - name: check-team
      match:
        any:
          - resources:
              kinds: [Pod]
      validate:
        message: "label team is required"
        pattern:
          metadata:
            labels:
              team: "?*"
"""
CEL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: require-team
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["pods"]
  validations:
    - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
      message: label team is required
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  containers:
    - name: c
      image: nginx
"""


def _eval(tmp_path: Path, *args: str) -> str:
    (tmp_path / "policies").mkdir(exist_ok=True)
    (tmp_path / "policies" / "classic.yaml").write_text(CLASSIC)
    (tmp_path / "policies" / "cel.yaml").write_text(CEL)
    (tmp_path / "pod.yaml").write_text(POD)
    result = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policies"), "-r", str(tmp_path / "pod.yaml"),
                                      *args])
    assert result.exit_code == 1, result.output
    return result.stdout


def test_labels_only_where_names_collide() -> None:
    labels = policy_labels([("kyverno", "a"), ("KyvernoValidatingPolicy", "a"), ("ValidatingAdmissionPolicy", "a"),
                            ("KyvernoValidatingPolicy", "b"), ("kyverno", "ns/c"),
                            ("KyvernoValidatingPolicy", "ns/c")])
    assert labels == {("KyvernoValidatingPolicy", "a"): "ValidatingPolicy/a",
                      ("ValidatingAdmissionPolicy", "a"): "ValidatingAdmissionPolicy/a",
                      ("KyvernoValidatingPolicy", "ns/c"): "NamespacedValidatingPolicy/ns/c"}
    for (source, name), label in labels.items():
        assert split_policy_label(source, label)[1] == name
    assert split_policy_label("kyverno", "a") == ("ClusterPolicy", "a")
    assert split_policy_label("kyverno", "ns/c") == ("Policy", "ns/c")


def test_table_counts_two_policies(tmp_path: Path) -> None:
    out = _eval(tmp_path, "-o", "table")
    counts = out.split("\n\n")[1].splitlines()
    assert [line.split()[0] for line in counts[1:]] == ["ValidatingPolicy/require-team", "require-team"]


def test_junit_two_suites_each_with_its_file(tmp_path: Path) -> None:
    root = ET.fromstring(_eval(tmp_path, "-o", "junit"))
    suites = {s.get("name"): s.get("file") for s in root.iter("testsuite")}
    assert suites == {"ValidatingPolicy/require-team": str(tmp_path / "policies" / "cel.yaml"),
                      "require-team": str(tmp_path / "policies" / "classic.yaml")}


def test_sarif_two_rules_with_their_own_help(tmp_path: Path) -> None:
    doc = json.loads(_eval(tmp_path, "-o", "sarif"))
    assert sarif_errors(doc) == []
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == {"ValidatingPolicy/require-team", "require-team"}
    cel, classic = rules["ValidatingPolicy/require-team"], rules["require-team"]
    assert cel["shortDescription"]["text"] == "ValidatingPolicy require-team"
    assert classic["shortDescription"]["text"] == "ClusterPolicy require-team"
    assert cel["helpUri"].endswith("/validating-policy/") and classic["helpUri"].endswith("/cluster-policy/")
    assert "cel.yaml" in cel["help"]["text"] and "classic.yaml" in classic["help"]["text"]
    levels = {r["ruleId"]: r["level"] for r in doc["runs"][0]["results"]}
    # the ValidatingPolicy is Audit-only: a warning; the Enforce ClusterPolicy an error
    assert levels == {"ValidatingPolicy/require-team": "warning", "require-team": "error"}
    fingerprints = {r["partialFingerprints"]["kyrecFinding/v1"] for r in doc["runs"][0]["results"]}
    assert len(fingerprints) == 2


def test_github_titles_name_each(tmp_path: Path) -> None:
    lines = _eval(tmp_path, "-o", "github").splitlines()
    assert lines[0].startswith("::error ") and "title=require-team%3A Pod shop/web" in lines[0]
    assert lines[1].startswith("::warning ") and "title=ValidatingPolicy/require-team%3A Pod shop/web" in lines[1]
