"""Autogen v1 for classic policies (kk: pkg/autogen/v1 autogen.go, rule.go and their tests)."""

from __future__ import annotations

import json

import pytest

from kubectl_kyrec.classic.autogen import can_autogen, compute_rules
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.classic import ClassicPolicy
from kubectl_kyrec.load.policy.policies import classify


def policy(rules: list[dict], annotations: dict[str, str] | None = None) -> ClassicPolicy:
    doc = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
           "metadata": {"name": "p", **({"annotations": annotations} if annotations else {})},
           "spec": {"rules": rules}}
    return classify(documents_from_text(json.dumps(doc), "p.json")).classic[0]


PATTERN = {"pattern": {"metadata": {"labels": {"foo": "bar"}}}, "message": "testpolicy"}


# Kyverno's Test_CanAutoGen cases (rules given a validate where the originals have no rule type)
@pytest.mark.parametrize(("rule", "expected"), [
    ({"match": {"resources": {"kinds": ["Namespace"], "name": "*"}}}, False),
    ({"match": {"resources": {"kinds": ["Pod"], "selector": {"matchLabels": {"foo": "bar"}}}}}, False),
    ({"match": {"resources": {"kinds": ["Pod"]}}, "exclude": {"resources": {"name": "test"}}}, False),
    ({"match": {"resources": {"kinds": ["Pod"]}}, "exclude": {"resources": {"names": ["test"]}}}, False),
    ({"match": {"resources": {"kinds": ["Pod", "Deployment"]}}}, False),
    ({"match": {"resources": {"kinds": ["Pod"]}}, "exclude": {"resources": {"kinds": ["Pod", "Deployment"]}}},
     False),
    ({"match": {"resources": {"kinds": ["Pod"]}}}, True),
    ({"match": {"resources": {"kinds": ["Pod"]}}, "exclude": {"resources": {"kinds": ["Pod"],
                                                                              "namespaces": ["test"]}}}, True),
    ({"match": {"resources": {"kinds": ["Pod"], "annotations": {}}}}, False),
    # needed only when a kind is literally Pod or a controller
    ({"match": {"resources": {"kinds": ["v1/Pod"]}}}, False),
])
def test_can_autogen(rule: dict, expected: bool) -> None:
    assert can_autogen(policy([{"name": "r", **rule, "validate": PATTERN}])) is expected


def test_generate_rule_disables_autogen_for_the_policy() -> None:
    p = policy([{"name": "r", "match": {"resources": {"kinds": ["Pod"]}}, "validate": PATTERN},
                {"name": "g", "match": {"resources": {"kinds": ["Namespace"]}},
                 "generate": {"kind": "ConfigMap", "name": "x", "data": {}}}])
    assert not can_autogen(p)
    assert [r.name for r in compute_rules(p, "Deployment")] == ["r", "g"]


def test_pattern_is_wrapped_and_kinds_replaced() -> None:
    p = policy([{"name": "check", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": PATTERN}])
    assert [r.name for r in compute_rules(p, "Pod")] == ["check"]
    rules = compute_rules(p, "Deployment")
    assert [r.name for r in rules] == ["check", "autogen-check"]
    gen = rules[1].raw
    assert gen["match"] == {"any": [{"resources": {"kinds": ["apps/v1/Deployment"]}}]}
    assert gen["validate"] == {"message": "testpolicy",
                               "pattern": {"spec": {"template": {"metadata": {"labels": {"foo": "bar"}}}}}}
    cron = compute_rules(p, "CronJob")
    assert [r.name for r in cron] == ["check", "autogen-cronjob-check"]
    assert cron[1].raw["match"] == {"any": [{"resources": {"kinds": ["batch/v1/CronJob"]}}]}
    assert cron[1].raw["validate"]["pattern"] == {
        "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"foo": "bar"}}}}}}}


def test_variables_are_rewritten_byte_for_byte() -> None:
    deny = {"message": "{{request.object.metadata.name}}",
            "deny": {"conditions": {"any": [{"key": "{{ request.object.spec.hostNetwork }}",
                                             "operator": "Equals", "value": True}]}}}
    p = policy([{"name": "d", "match": {"resources": {"kinds": ["Pod"]}}, "validate": deny}])
    gen = compute_rules(p, "StatefulSet")[1].raw
    assert gen["match"] == {"resources": {"kinds": ["apps/v1/StatefulSet"]}}
    assert gen["validate"]["message"] == "{{request.object.spec.template.metadata.name}}"
    assert gen["validate"]["deny"]["conditions"]["any"][0]["key"] == \
        "{{ request.object.spec.template.spec.hostNetwork }}"
    cron = compute_rules(p, "CronJob")[1].raw
    assert cron["validate"]["deny"]["conditions"]["any"][0]["key"] == \
        "{{ request.object.spec.jobTemplate.spec.template.spec.hostNetwork }}"


def test_annotation_selects_controllers() -> None:
    rule = {"name": "check", "match": {"resources": {"kinds": ["Pod"]}}, "validate": PATTERN}
    p = policy([rule], {"pod-policies.kyverno.io/autogen-controllers": "Deployment"})
    assert [r.name for r in compute_rules(p, "Deployment")] == ["check", "autogen-check"]
    assert [r.name for r in compute_rules(p, "CronJob")] == ["check"]
    p = policy([rule], {"pod-policies.kyverno.io/autogen-controllers": "none"})
    assert [r.name for r in compute_rules(p, "Deployment")] == ["check"]


def test_long_names_are_cut_to_63() -> None:
    name = "x" * 60
    p = policy([{"name": name, "match": {"resources": {"kinds": ["Pod"]}}, "validate": PATTERN}])
    assert compute_rules(p, "CronJob")[1].name == ("autogen-cronjob-" + name)[:63]


def test_verify_images_cronjob_rule_as_kyverno_test_computes_it() -> None:
    # kk Test_ComputeRules: computeRules(policy, "CronJob") keeps the rule and adds only the CronJob one
    p = classify(documents_from_text("""\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: check-image}
spec:
  rules:
    - name: check-image
      match: {resources: {kinds: [Pod]}}
      verifyImages:
      - imageReferences: ["*"]
""", "p.yaml")).classic[0]
    rules = compute_rules(p, "CronJob")
    assert [r.name for r in rules] == ["check-image", "autogen-cronjob-check-image"]
    assert rules[1].raw["match"] == {"resources": {"kinds": ["batch/v1/CronJob"]}}
    assert rules[1].raw["verifyImages"] == [{"imageReferences": ["*"]}]


def test_cel_rules_rewrite_object_references() -> None:
    cel = {"cel": {"expressions": [{"expression": "object.spec.containers.all(c, true)"}]}}
    p = policy([{"name": "c", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": cel}])
    gen = compute_rules(p, "Deployment")[1].raw
    assert gen["validate"]["cel"]["expressions"][0]["expression"] == \
        "object.spec.template.spec.containers.all(c, true)"


def _messages(validate: dict) -> tuple[str, str]:
    p = policy([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": validate}])
    deployment = {r.name: r for r in compute_rules(p, "Deployment")}["autogen-r"]
    cronjob = {r.name: r for r in compute_rules(p, "CronJob")}["autogen-cronjob-r"]
    return deployment.raw["validate"]["message"], cronjob.raw["validate"]["message"]


# kk: variables.FindAndShiftReferences as generateRule calls it (pivot per rule type; the CronJob rule is
# made from the controller rule, so its shift lands in front of the first one)
def test_pattern_message_references_are_shifted() -> None:
    message = "image $(./../../pattern/spec/containers/0/image) twice $(./../../pattern/spec/containers/0/image)."
    assert _messages({"message": message, "pattern": {"spec": {"containers": [{"image": "*"}]}}}) == (
        "image $(./../../pattern/spec/template/spec/containers/0/image) twice "
        "$(./../../pattern/spec/template/spec/containers/0/image).",
        "image $(./../../pattern/spec/jobTemplate/spec/template/spec/template/spec/containers/0/image) twice "
        "$(./../../pattern/spec/jobTemplate/spec/template/spec/template/spec/containers/0/image).")


def test_escaped_and_pivotless_references_stay() -> None:
    message = r"keep \$(./../../pattern/x) and $(IMAGE)"
    assert _messages({"message": message, "pattern": {"spec": {}}}) == (message, message)


def test_deny_and_foreach_pivots() -> None:
    deny = {"message": "see $(./../deny/conditions) not $(./../pattern/x)", "deny": {}}
    assert _messages(deny)[0] == "see $(./../deny/spec/template/conditions) not $(./../pattern/x)"
    # foreach rules shift with the pivot "pattern", as generateRule passes it
    foreach = {"message": "at $(./../pattern/x)", "foreach": [{"list": "request.object.spec.containers",
                                                                  "deny": {}}]}
    assert _messages(foreach)[0] == "at $(./../pattern/spec/template/x)"


def test_any_pattern_pivot_keeps_the_first_index_for_the_whole_message() -> None:
    # the pivot becomes anyPattern/1 at the first reference and stays so: the second (anyPattern/0) is
    # not found, its "index" read from the wrong offset, and it is left as written
    message = "$(./../../anyPattern/1/spec/x) and $(./../../anyPattern/0/spec/y)"
    assert _messages({"message": message, "anyPattern": [{"spec": {}}, {"spec": {}}]})[0] == (
        "$(./../../anyPattern/1/spec/template/spec/x) and $(./../../anyPattern/0/spec/y)")
