"""convert: kyverno-test.yaml suites of converted ClusterPolicies are written for the conversions
(convert/suite.py, run/convert.py), so that `kubectl kyrec test` runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.shared_inputs import SHARED, present, shared

POD_RULE = {"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}}
POLICY = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}, "spec": {
    "validationFailureAction": "Enforce",
    "rules": [
        {"name": "labels", **POD_RULE,
         "validate": {"message": "team", "pattern": {"metadata": {"labels": {"team": "?*"}}}}},
        {"name": "image", **POD_RULE,
         "validate": {"message": "tag", "pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}},
        {"name": "ns", "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["prod"]}}]},
         "validate": {"message": "prod", "pattern": {"metadata": {"labels": {"prod": "yes"}}}}},
        {"name": "pre", **POD_RULE, "preconditions": {"all": [{"key": "{{request.object.metadata.name}}",
                                                              "operator": "Equals", "value": "special"}]},
         "validate": {"message": "special", "pattern": {"metadata": {"labels": {"special": "yes"}}}}},
    ]}}


def _pod(name: str, labels: dict[str, str], image: str = "nginx:1", namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": image}]}}


RESOURCES = [_pod("good", {"team": "a"}), _pod("latest", {"team": "a"}, "nginx:latest"), _pod("nolabel", {}),
             _pod("special", {"team": "a"})]
SUITE = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "t"},
         "policies": ["../policy.yaml"], "resources": ["resources.yaml"], "results": [
             {"policy": "p", "rule": "labels", "kind": "Pod", "resources": ["good", "latest"], "result": "pass"},
             {"policy": "p", "rule": "image", "kind": "Pod", "resources": ["good"], "result": "pass"},
             {"policy": "p", "rule": "image", "kind": "Pod", "resources": ["latest"], "result": "fail"},
             {"policy": "p", "rule": "labels", "kind": "Pod", "resources": ["nolabel"], "result": "fail"},
             {"policy": "p", "rule": "pre", "kind": "Pod", "resources": ["good"], "result": "skip"},
             {"policy": "p", "rule": "pre", "kind": "Pod", "resources": ["special"], "result": "fail"}]}


def _layout(tmp_path: Path, suite: dict[str, Any]) -> Path:
    src = tmp_path / "src"
    (src / ".kyverno-test").mkdir(parents=True)
    (src / "policy.yaml").write_text(yaml.safe_dump(POLICY))
    (src / ".kyverno-test" / "resources.yaml").write_text(yaml.safe_dump_all(RESOURCES))
    (src / ".kyverno-test" / "kyverno-test.yaml").write_text(yaml.safe_dump(suite))
    return src


def test_suite_is_written_for_the_conversions_and_runs(tmp_path: Path) -> None:
    """Rules that share one ValidatingPolicy answer once per resource: `good` passes where every rule of
    it has a row saying pass; `latest` fails (one rule's row says fail); `nolabel` fails; rules split off
    (`ns`: another match; `pre`: preconditions) keep their rows under `<policy>-<rule>`, `skip` from a
    precondition stays skip. The original suite passes too."""
    src = _layout(tmp_path, SUITE)
    assert CliRunner().invoke(cli, ["test", str(src)]).exit_code == 0
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    written = out / ".kyverno-test" / "kyverno-test.yaml"
    assert f"test suite written: {written}" in result.output
    suite = yaml.safe_load(written.read_text())
    assert suite["policies"] == ["../p.yaml"]      # one file, the policies p-labels, p-ns and p-pre
    assert suite["resources"] == ["../../src/.kyverno-test/resources.yaml"]
    rows = [(r["policy"], r["resources"], r["result"]) for r in suite["results"]]
    assert rows == [("p-labels", ["good"], "pass"), ("p-labels", ["latest"], "fail"), ("p-labels", ["nolabel"], "fail"),
                    ("p-pre", ["good"], "skip"), ("p-pre", ["special"], "fail")]
    assert all(r["isValidatingPolicy"] is True and "rule" not in r for r in suite["results"])
    ran = CliRunner().invoke(cli, ["test", str(out)])
    assert ran.exit_code == 0, ran.output
    assert "5 passed, 0 failed" in ran.output


def test_a_resource_the_suite_says_too_little_about_gets_no_row(tmp_path: Path) -> None:
    """`good` has a pass row for `labels` only: the shared policy's `image` rule is not stated, so no row
    can say what the policy answers; it is left out and named as a difference."""
    suite = {**SUITE, "results": [SUITE["results"][0], SUITE["results"][2]]}
    src = _layout(tmp_path, suite)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 0
    assert "difference: " in result.output and "Pod good: no row for p-labels" in result.output
    text = (out / ".kyverno-test" / "kyverno-test.yaml").read_text()
    assert "# difference: Pod good: no row for p-labels (the suite says nothing about rules ['image']" in text
    assert [(r["resources"], r["result"]) for r in yaml.safe_load(text)["results"]] == [(["latest"], "fail")]


@pytest.mark.parametrize(("change", "refusal"), [
    ({"exceptions": ["exception.yaml"]}, "exceptions: classic PolicyExceptions do not apply"),
    ({"results": [{**SUITE["results"][0], "rule": "nope"}]}, "results[0].rule: 'p' has no rule 'nope'"),
    ({"values": {"policies": [{"name": "p", "rules": [{"name": "labels", "values": {"x": 1}}]}]}},
     "values.policies: values given per classic policy and rule"),
])
def test_a_suite_that_cannot_be_converted_is_refused_by_field(tmp_path: Path, change: dict[str, Any],
                                                             refusal: str) -> None:
    src = _layout(tmp_path, {**SUITE, **change})
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 1
    assert f"test suite not converted: {src / '.kyverno-test' / 'kyverno-test.yaml'}: {refusal}" in result.stderr
    assert not (out / ".kyverno-test").exists()


def test_policies_of_one_name_leave_their_suites_unconverted(tmp_path: Path) -> None:
    """Two directories with a policy `p` write one DIR/p.yaml; a suite could test the other one."""
    for name in ("a", "b"):
        _layout(tmp_path / name, SUITE)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path), "-o", str(out)])
    assert result.exit_code == 1
    assert result.stderr.count("policies[0]: ../policy.yaml: not every policy in it was converted") == 2


@present(shared("corpus"), "convert: corpus suites")
@pytest.mark.parametrize("directory", ["best-practices/add-ns-quota", "other/restrict-node-selection",
                                       "other/require-non-root-groups"])
def test_corpus_suites_run_converted(directory: str, tmp_path: Path) -> None:
    """Suites whose policies convert: every row of the converted suite passes (rules merged into one policy
    answer once per resource; split generate rules keep their rows)."""
    src = SHARED / "corpus" / "kyverno-policies-legacy" / directory
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output + result.stderr
    ran = CliRunner().invoke(cli, ["test", str(tmp_path)])
    assert ran.exit_code == 0, ran.output
    assert " 0 failed" in ran.output
