"""Kyverno's policy validation of classic variables (kk: pkg/validation/policy/validate.go ValidateVariables,
hasInvalidVariables with the mock context of pkg/engine/context/mock_context.go, validateElementInForEach):
what it refuses, with its text and the field, and what it lets through."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.classic.variable_checks import variable_problems
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify

MATCH = {"any": [{"resources": {"kinds": ["Pod"]}}]}


def _problems(rule: dict[str, Any], background: bool = True) -> list[tuple[str | None, str]]:
    doc = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
           "spec": {"background": background, "rules": [{"name": "r", "match": MATCH, **rule}]}}
    policy = classify(documents_from_text(json.dumps(doc), "p.json")).classic[0]
    return [(e.field, e.message) for e in variable_problems(policy)]


def _deny(key: str) -> dict[str, Any]:
    return {"validate": {"message": "m", "deny": {"conditions": {"any": [{"key": key, "operator": "Equals",
                                                                          "value": "x"}]}}}}


def test_a_jmespath_syntax_error_is_refused_at_its_field() -> None:
    [(field, message)] = _problems(_deny("{{ request.object.metadata.labels.[?? }}"))
    assert field == "spec.rules[0].validate.deny.conditions.any[0].key"
    assert message.startswith(
        'ClusterPolicy "p": spec.rules[0].validate.deny.conditions.any[0].key: policy contains invalid variables: '
        "variable substitution failed for rule r: failed to resolve request.object.metadata.labels.[?? at path "
        "/validate/deny/conditions/any/0/key: invalid JMESPath query request.object.metadata.labels.[??: "
        "SyntaxError: ")
    assert "\n" not in message


def test_a_variable_nothing_declares_is_refused_with_the_allowed_patterns() -> None:
    rule = {"context": [{"name": "cm", "configMap": {"name": "c", "namespace": "n"}},
                        {"name": "v", "variable": {"value": "{{ request.object.metadata.name }}"}}],
            "validate": {"message": "{{ v }} {{ cm.data.a }}",
                         "pattern": {"metadata": {"labels": {"app.kubernetes.io/name": "{{ other.x }}"}}}}}
    [(field, message)] = _problems(rule)
    # a map key with dots is bracketed, as Kubernetes writes field paths
    assert field == "spec.rules[0].validate.pattern.metadata.labels[app.kubernetes.io/name]"
    assert message.endswith(
        'variable other.x must match regex "request\\.|element|elementIndex|@|images|images\\.|image\\.|'
        '([a-z_0-9]+\\()[^{}]" or patterns [cm.data cm.metadata cm.data.* cm.metadata.* v*]')


@pytest.mark.parametrize("variable", [
    "{{ request.object.metadata.name }}", "{{ images.containers }}", "{{ to_upper('a') }}",
    "{{ request.object.spec.containers[?name == 'x'] | length(@) }}",
    "{{ request.object.metadata.labels.\"app.kubernetes.io/name\" || '' }}",
    # go-jmespath's Compile only parses: an unknown function fails when evaluated, not here
    "{{ no_such_function(request.object) }}",
])
def test_what_kyverno_provides_is_allowed(variable: str) -> None:
    assert _problems(_deny(variable)) == []


def test_foreach_context_and_element_are_allowed_inside_a_foreach() -> None:
    rule = {"validate": {"foreach": [{"list": "request.object.spec.containers",
                                      "context": [{"name": "img", "variable": {"value": "{{ element.image }}"}}],
                                      "deny": {"conditions": {"any": [{"key": "{{ img }}", "operator": "Equals",
                                                                       "value": "{{ element.name }}"}]}}}]}}
    assert _problems(rule) == []


def test_element_outside_a_foreach_is_refused() -> None:
    rule = {"validate": {"message": "{{ element.name }}", "pattern": {"metadata": {"name": "?*"}}}}
    assert _problems(rule) == [("spec.rules[0].validate.message", 'ClusterPolicy "p": spec.rules[0].validate.message: '
                                "variable 'element.name' present outside of foreach at path /validate/message")]


def test_variables_in_match_or_exclude_are_refused() -> None:
    rule = {"exclude": {"any": [{"resources": {"names": ["{{ request.object.metadata.name }}"]}}]},
            "validate": {"message": "m", "pattern": {"metadata": {"name": "?*"}}}}
    assert _problems(rule) == [("spec.rules[0].exclude", 'ClusterPolicy "p": spec.rules[0].exclude: policy contains '
                                'invalid variables: rule "r" should not have variables in exclude section')]


def test_service_account_variables_need_background_off() -> None:
    # the background regex leaves serviceAccountName out (containsUserVariables refuses it first in a run)
    assert _problems(_deny("{{ serviceAccountName }}"), background=False) == []
    assert _problems(_deny("{{ serviceAccountName }}"), background=True)


def test_target_variables_only_in_a_mutate_existing_rule() -> None:
    patch = {"metadata": {"labels": {"owner": "{{ target.metadata.name }}"}}}
    targets = {"mutate": {"targets": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n"}],
                          "patchStrategicMerge": patch}}
    assert _problems(targets) == []
    assert _problems({"mutate": {"patchStrategicMerge": patch}})
    # a target's own name may not read target.
    bad = {"mutate": {"targets": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "{{ target.x }}"}],
                      "patchStrategicMerge": patch}}
    [(field, message)] = _problems(bad)
    assert field == "spec.rules[0].mutate.targets[0].name"
    assert "invalid variables defined at mutate.targets[0]" in message


def test_eval_refuses_the_policy_instead_of_an_error_per_resource(tmp_path: Any) -> None:
    # issue 33 item 6: the policy gave an `error` result for every Pod and exit 1
    policy = tmp_path / "p.yaml"
    policy.write_text("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: bad\nspec:\n  rules:\n"
                      "  - name: r\n    match:\n      any:\n      - resources:\n          kinds: [Pod]\n"
                      "    validate:\n      message: m\n      deny:\n        conditions:\n          any:\n"
                      "          - key: \"{{ request.object.metadata.labels.[?? }}\"\n            operator: Equals\n"
                      "            value: x\n")
    pods = tmp_path / "pods.yaml"
    pods.write_text("\n---\n".join(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: d}}\n"
                                   "spec: {containers: [{name: c, image: i}]}" for i in range(3)))
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(pods)])
    assert result.exit_code == 3
    assert result.stderr.startswith(f'error: {policy}:17: ClusterPolicy "bad": '
                                    "spec.rules[0].validate.deny.conditions.any[0].key: policy contains invalid")
    assert len(result.stderr.splitlines()) == 1
    assert result.stdout == "No results: 1 error(s), reported on standard error.\n"
