"""The schema check of policy documents (load/schema): each policy kind's minimal document loads, and each
refusal kind (unknown field, wrong type, unsupported value, missing required field, the CRDs' CEL rules) is
refused naming exactly the field the API server names (tests/load/schema_cases.py; tests/realapi/
test_schema_oracle.py checks the same cases against a real API server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cel.schema_rules import policy_schema_check
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.schema import NO_FIELD, UNKNOWN, SchemaCheck
from kubectl_kyrec.model import Document, Source
from tests.load.schema_cases import EXTRA, VALID, invalid_cases

CHECK = policy_schema_check()


def _problems(obj: dict[str, Any], check: SchemaCheck = CHECK) -> list[Any]:
    return check.problems(Document(obj, Source("p.yaml", 1)))


@pytest.mark.parametrize("key", list(VALID))
def test_each_kinds_minimal_policy_loads(key: str) -> None:
    assert _problems(VALID[key]) == []


@pytest.mark.parametrize(("case", "key", "obj", "path"), invalid_cases(), ids=[c[0] for c in invalid_cases()])
def test_each_refusal_names_the_field(case: str, key: str, obj: dict[str, Any], path: str) -> None:
    problems = _problems(obj)
    assert [p.path for p in problems] == [path]
    text = problems[0].text
    if case.startswith("unknown-"):
        assert problems[0].kind == UNKNOWN
        # the nearest spelling of the kind's own fields (validations, evaluation), when one is near
        assert text.startswith('strict decoding error: unknown field "spec.validation"')
    elif case.startswith("required-"):
        assert text == f"{path}: Required value"
    elif case.startswith("enum-"):
        assert text.startswith(f'{path}: Unsupported value: "') and ": supported values: " in text
    elif case.startswith("type-"):
        assert f"{path} in body must be of type" in text and text.startswith(f"{path}: Invalid value: ")
    else:
        assert text == f"{path}: Invalid value: exactly one of expression or template must be set"


@pytest.mark.parametrize("case", list(EXTRA))
def test_more_of_the_servers_rules(case: str) -> None:
    """Lines as the real API server printed them for the same documents (tests/realapi/test_schema_oracle.py
    sends them again)."""
    obj, lines = EXTRA[case]
    assert [("<nil>: " if p.kind == NO_FIELD else "") + p.text for p in _problems(obj)] == lines


def test_the_api_servers_wording() -> None:
    obj = yaml.safe_load(Path(__file__).with_name("schema_typo.yaml").read_text())
    assert [p.text for p in _problems(obj)] == [
        'spec.failurePolicy: Unsupported value: "Sometimes": supported values: "Ignore", "Fail"',
        'strict decoding error: unknown field "spec.validation"; did you mean "validations"?',
        'spec.variables: Invalid value: "string": spec.variables in body must be of type array: "string"',
    ]


def test_cel_rules_run_only_on_an_otherwise_valid_object() -> None:
    """The API server skips x-kubernetes-validations when anything else is wrong."""
    obj = VALID["GeneratingPolicy"]
    both = {**obj, "spec": {**obj["spec"], "useServerSideApply": "yes",
                            "generate": [{"expression": "x", "template": {"value": "v"}}]}}
    assert [p.path for p in _problems(both)] == ["spec.useServerSideApply"]
    without_rules = {**obj, "spec": {**obj["spec"], "generate": [{"expression": "x", "template": {"value": "v"}}]}}
    assert _problems(without_rules, SchemaCheck()) == []


def test_null_is_no_field_and_a_default_fills_a_required_one() -> None:
    obj = VALID["ValidatingPolicy"]
    nulled = {**obj, "spec": {**obj["spec"], "evaluation": None, "validations": [{"expression": None}]}}
    assert [p.text for p in _problems(nulled)] == ["spec.validations[0].expression: Required value"]


def test_list_type_set_and_map_duplicates() -> None:
    obj = VALID["ValidatingPolicy"]
    dup = {**obj, "spec": {**obj["spec"], "validationActions": ["Deny", "Deny"],
                           "variables": [{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}]}}
    assert [p.text for p in _problems(dup)] == ['spec.validationActions[1]: Duplicate value: "Deny"',
                                                'spec.variables[1]: Duplicate value: {"name":"a"}']


def test_kubernetes_own_kinds_keep_duplicates() -> None:
    """A ValidatingAdmissionPolicy decodes into Go types: its list-map variables may repeat a name."""
    obj = VALID["ValidatingAdmissionPolicy"]
    dup = {**obj, "spec": {**obj["spec"],
                           "variables": [{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}]}}
    assert _problems(dup) == []


@pytest.mark.parametrize("spelling", ["enforce", "Enforce", "audit", "Audit"])
def test_spellings_the_crd_accepts_load(spelling: str) -> None:
    obj = VALID["ClusterPolicy"]
    assert _problems({**obj, "spec": {**obj["spec"], "validationFailureAction": spelling}}) == []


def test_every_problem_of_every_file_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(Path(__file__).with_name("schema_typo.yaml").read_text())
    cp = yaml.safe_dump(VALID["ClusterPolicy"]).replace("pattern:", "patern:")
    (tmp_path / "b.yaml").write_text(cp)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    result = CliRunner().invoke(cli, ["eval", "-p", str(a), "-p", str(b), "-r", str(tmp_path / "pod.yaml")])
    assert result.exit_code == 3, result.output
    patern = cp.splitlines().index(next(line for line in cp.splitlines() if "patern:" in line)) + 1
    assert result.stderr.splitlines() == [
        f'error: {a}:6: ValidatingPolicy "check-labels": spec.failurePolicy: Unsupported value: "Sometimes": '
        'supported values: "Ignore", "Fail"',
        f'error: {a}:13: ValidatingPolicy "check-labels": strict decoding error: unknown field "spec.validation"; '
        'did you mean "validations"?',
        f'error: {a}:15: ValidatingPolicy "check-labels": spec.variables: Invalid value: "string": spec.variables in '
        'body must be of type array: "string"',
        f'error: {b}:{patern}: ClusterPolicy "case": strict decoding error: unknown field '
        '"spec.rules[0].validate.patern"; did you mean "pattern"?',
    ]


def test_a_cel_rule_is_refused_by_eval_and_test(tmp_path: Path) -> None:
    """The commands hand the CEL layer's evaluator to the load path (cel/schema_rules.py)."""
    obj = VALID["GeneratingPolicy"]
    bad = {**obj, "spec": {**obj["spec"], "generate": [{"expression": "x", "template": {"value": "v"}}]}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(bad))
    (tmp_path / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n")
    result = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "p.yaml"), "-r", str(tmp_path / "ns.yaml")])
    assert result.exit_code == 3
    assert "spec.generate[0]: Invalid value: exactly one of expression or template must be set" in result.stderr
    (tmp_path / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\npolicies: [p.yaml]\n"
        "resources: [ns.yaml]\nresults: []\n")
    result = CliRunner().invoke(cli, ["test", str(tmp_path)])
    assert result.exit_code == 3
    item = (tmp_path / "p.yaml").read_text().splitlines().index("  - expression: x") + 1
    assert result.stderr == (f'error: {tmp_path}/p.yaml:{item}: GeneratingPolicy "case": spec.generate[0]: Invalid '
                             "value: exactly one of expression or template must be set\n")


def test_a_policy_among_the_manifests_is_refused_at_its_fields_line(tmp_path: Path) -> None:
    """-r is read without field lines; a file with a refused policy is read again for them."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(yaml.safe_dump(pod) + "---\n" + Path(__file__).with_name("schema_typo.yaml").read_text())
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(VALID["ValidatingPolicy"]))
    result = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "ok.yaml"), "-r", str(mixed)])
    assert result.exit_code == 3
    start = len(yaml.safe_dump(pod).splitlines()) + 1
    assert [line.split(': ValidatingPolicy "')[0] for line in result.stderr.splitlines()] == [
        f"error: {mixed}:{start + n}" for n in (6, 13, 15)]


@pytest.mark.parametrize("command", [["eval", "-r"], ["explain", "-r"], ["diff", "--state"], ["coverage", "--state"]])
def test_every_command_refuses_the_same_policy_with_the_same_lines(tmp_path: Path, command: list[str]) -> None:
    """One load path: the same problems, the same lines, exit 3, whichever command reads the policy."""
    policy = tmp_path / "p.yaml"
    policy.write_text(Path(__file__).with_name("schema_typo.yaml").read_text())
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    result = CliRunner().invoke(cli, [command[0], "-p", str(policy), command[1], str(tmp_path / "pod.yaml")])
    assert result.exit_code == 3
    assert [line for line in result.stderr.splitlines() if line.startswith("error: ")] == [
        f"error: {policy}:{line}: ValidatingPolicy" + text for line, text in (
            (6, ' "check-labels": spec.failurePolicy: Unsupported value: "Sometimes": supported values: "Ignore", '
                '"Fail"'),
            (13, ' "check-labels": strict decoding error: unknown field "spec.validation"; did you mean '
                 '"validations"?'),
            (15, ' "check-labels": spec.variables: Invalid value: "string": spec.variables in body must be of type '
                 'array: "string"'))]


def test_the_structural_rules_no_policy_kind_uses_on_create() -> None:
    """Keywords Kyverno's CRDs carry only under `status` (never checked on create) or not at all, on a schema of
    the test's own: pattern (RE2), date-time, int32, bounds, int-or-string, nullable, maps, preserved fields."""
    from kubectl_kyrec.load.schema import problems

    schema = {"type": "object", "properties": {
        "reason": {"type": "string", "pattern": "^[A-Za-z]+$"},
        "at": {"type": "string", "format": "date-time"},
        "small": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 5},
        "port": {"x-kubernetes-int-or-string": True},
        "maybe": {"type": "string", "nullable": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"known": {"type": "boolean"}}},
        "metadata": {"type": "object"},
    }}
    good = {"reason": "Ready", "at": "2026-12-05T10:00:00Z", "small": 3, "port": "http", "maybe": None,
            "labels": {"a": "b"}, "free": {"known": True, "anything": [1]}, "metadata": {"name": "x"}}
    assert problems(schema, good) == []
    bad = {"reason": "not ready", "at": "yesterday", "small": 2**31, "port": 1.5, "labels": {"a": 1},
           "free": {"known": "yes"}, "metadata": {"name": "x"}}
    assert [p.text for p in problems(schema, bad)] == [
        "reason: Invalid value: \"not ready\": reason in body should match '^[A-Za-z]+$'",
        'at: Invalid value: "yesterday": at in body must be of type date-time: "yesterday"',
        'Invalid value: "": Checked value must be of type integer with format int32 in small',
        "small: Invalid value: 2147483648: small in body should be less than or equal to 5",
        'port: Invalid value: "number": port in body must be of type integer-or-string: "number"',
        'labels.a: Invalid value: "integer": labels.a in body must be of type string: "integer"',
        'free.known: Invalid value: "string": free.known in body must be of type boolean: "string"',
    ]
