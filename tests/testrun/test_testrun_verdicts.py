"""`kyrec test` verdicts (issue 27): Kyverno's CLI decides by default, `--strict` as a cluster would; a warning
names each row the two decide differently and each vacuous row, which `--strict` fails."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASES = Path(__file__).resolve().parents[2] / "testdata" / "testrun"

POLICIES = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  background: true
  rules:
  - name: check-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    preconditions:
      all:
      - {key: "{{ request.object.metadata.labels.skip || '' }}", operator: NotEquals, value: "yes"}
    validate:
      failureAction: Enforce
      message: a team label is required
      pattern: {metadata: {labels: {team: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: deployments-only}
spec:
  background: true
  rules:
  - name: check-replicas
    match: {any: [{resources: {kinds: [Deployment]}}]}
    validate:
      failureAction: Enforce
      message: two replicas at least
      pattern: {spec: {replicas: ">=2"}}
"""
RESOURCES = """apiVersion: v1
kind: Pod
metadata: {name: good, namespace: apps, labels: {team: a}}
spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: skipped, namespace: apps, labels: {skip: "yes"}}
spec: {containers: [{name: c, image: nginx}]}
"""
# one row per vacuous kind, after one that checks what it says
RESULTS = {
    "checked": "{policy: require-team, rule: check-team, kind: Pod, resources: [good], result: pass}",
    "fail-met-by-skip": "{policy: require-team, rule: check-team, kind: Pod, resources: [skipped], result: fail}",
    "missing-rule": "{policy: require-team, rule: no-such-rule, kind: Pod, resources: [good], result: pass}",
    "missing-resource": "{policy: require-team, rule: check-team, kind: Pod, resources: [good, ghost], result: pass}",
    "matched-nothing": "{policy: deployments-only, rule: check-replicas, kind: Pod, resources: [good], result: fail}",
}


def suite(tmp_path: Path, *kinds: str) -> Path:
    (tmp_path / "policies.yaml").write_text(POLICIES)
    (tmp_path / "resources.yaml").write_text(RESOURCES)
    results = "\n".join(f"- {RESULTS[k]}" for k in kinds)
    (tmp_path / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: vacuous}\n"
        f"policies: [policies.yaml]\nresources: [resources.yaml]\nresults:\n{results}\n")
    return tmp_path


def run(path: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["test", str(path), "-o", "json", *flags])
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_a_row_that_checks_what_it_says_has_no_warning(tmp_path: Path) -> None:
    for flags in ((), ("--strict",)):
        code, doc, stderr = run(suite(tmp_path, "checked"), *flags)
        assert (code, doc["summary"]["passed"], doc["warnings"]) == (0, 1, [])
        assert "warning" not in stderr


@pytest.mark.parametrize("kind", ["fail-met-by-skip", "missing-rule", "missing-resource", "matched-nothing"])
def test_a_vacuous_row_warns_by_default_and_fails_with_strict(tmp_path: Path, kind: str) -> None:
    path = suite(tmp_path, "checked", kind)
    code, doc, stderr = run(path)
    assert code == 0 and doc["mode"] == "kyverno" and doc["summary"]["failed"] == 0
    assert [w["reason"] for w in doc["warnings"]] == [kind]
    warning = doc["warnings"][0]
    assert warning["location"]["line"] == 8      # the results entry, after the `checked` one
    assert f": {kind}: " in stderr and stderr.count("warning: ") == 1
    code, doc, stderr = run(path, "--strict")
    assert code == 1 and doc["mode"] == "strict"
    vacuous = [r for r in doc["rows"] if (r["location"]["line"], r["resource"]) == (8, warning["resource"])]
    assert [r["status"] for r in vacuous] == ["fail"]
    assert [w["reason"] for w in doc["warnings"]] == [kind] and f": {kind}: " in stderr


def test_a_cluster_difference_warns_in_both_modes() -> None:
    # a ValidatingAdmissionPolicy whose rule lists no operations: the CLI ignores its matchConstraints
    # when it has a binding, a cluster's matcher matches nothing with it
    for flags, code in (((), 0), (("--strict",), 1)):
        exit_code, doc, stderr = run(CASES / "vap-bindings", *flags)
        assert exit_code == code
        difference = [w for w in doc["warnings"] if w["policy"] == "ns-name-no-ops"]
        assert [w["reason"] for w in difference] == ["cluster-difference"]
        assert difference[0]["message"].startswith("Kyverno's CLI: pass (ok); in a cluster: fail (not-matched: ")
        assert "ns-name-no-ops Namespace team-a: cluster-difference: " in stderr


def test_junit_names_policy_and_rule_and_says_expected_and_got(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["test", str(suite(tmp_path, "checked", "fail-met-by-skip")), "--strict",
                                      "-o", "junit"])
    root = ET.fromstring(result.stdout.split("\n", 1)[1])
    cases = {c.get("name"): c.find("failure") for c in root.iter("testcase")}
    assert set(cases) == {"require-team/check-team Pod apps/good", "require-team/check-team Pod apps/skipped"}
    failure = cases["require-team/check-team Pod apps/skipped"]
    assert failure is not None and "expected fail, got skip (result-mismatch)" in str(failure.get("message"))
    assert cases["require-team/check-team Pod apps/good"] is None


def test_compat_kyverno_is_the_default_under_its_old_name(tmp_path: Path) -> None:
    path = suite(tmp_path, "checked", "matched-nothing")
    code, doc, stderr = run(path, "--compat", "kyverno")
    assert (code, doc["mode"]) == (0, "kyverno") and doc["rows"] == run(path)[1]["rows"]
    assert [line for line in stderr.splitlines() if line.startswith("notice:")] == [
        "notice: --compat kyverno is deprecated: Kyverno's CLI verdict is the default"]
    both = CliRunner().invoke(cli, ["test", str(path), "--strict", "--compat", "kyverno"])
    assert both.exit_code == 2 and "contradict" in both.stderr


REGISTRY_POLICY = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: base-image}
spec:
  background: true
  rules:
  - name: needs-base
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Enforce
      message: the image must name its base
      foreach:
      - list: request.object.spec.containers
        context:
        - name: imageData
          imageRegistry: {reference: "{{ element.image }}"}
        - name: sources
          variable: {jmesPath: "imageData.configData.config.Labels.base || ''", default: ""}
        deny:
          conditions:
            all:
            - {key: "{{ sources }}", operator: Equals, value: ""}
"""


def test_an_image_registry_entry_is_absent_in_the_cli_and_needs_a_registry_in_a_cluster(tmp_path: Path) -> None:
    # Kyverno's CLI runs without registry access unless --registry: the entry is absent, the default stands
    # in and the rule fails; a cluster reads the registry, which kyrec offline cannot: undetermined
    # (needs-registry), as `eval` says, and the row's warning says so even though both modes fail it
    (tmp_path / "policies.yaml").write_text(REGISTRY_POLICY)
    (tmp_path / "resources.yaml").write_text(RESOURCES)
    (tmp_path / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: registry}\n"
        "policies: [policies.yaml]\nresources: [resources.yaml]\nresults:\n"
        "- {policy: base-image, rule: needs-base, kind: Pod, resources: [good], result: pass}\n")
    code, doc, _ = run(tmp_path)
    assert code == 1 and [r["actual"] for r in doc["rows"]] == ["fail"]
    [warning] = doc["warnings"]
    assert warning["reason"] == "cluster-difference"
    assert warning["message"].startswith("Kyverno's CLI: fail (result-mismatch: validation failure: ")
    assert "; in a cluster: fail (result-mismatch: needs-registry: context entry 'imageData' reads an image " \
           "registry (imageRegistry), which kyrec reads only with --registry)" in warning["message"]
    code, doc, _ = run(tmp_path, "--strict")
    assert code == 1 and [r["actual"] for r in doc["rows"]] == ["undetermined"]
    assert doc["rows"][0]["message"].startswith("needs-registry: ")
    evaluated = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policies.yaml"), "-r",
                                         str(tmp_path / "resources.yaml"), "-o", "json"])
    results = json.loads(evaluated.stdout)["results"]
    assert {(r["result"], r["message"].split(":")[0]) for r in results} == {("undetermined", "needs-registry")}
