"""`convert` (issue 38): conditions decide as Kyverno's evaluate.go does, or are refused by field.

- A rule's preconditions that read a key the resource lacks are the rule's error (kk: pkg/engine/variables/
  evaluate.go Evaluate: the substitution's NotFound; validate_resource.go "failed to evaluate preconditions"),
  reached in order; before, the conversion read the key as null (a verdict where Kyverno errs).
- In a foreach, an element's error is passed over unless it is the list's last (validateElements), which CEL's
  all() cannot say: preconditions and deny conditions that read a key an element can lack are refused.
- Equals/NotEquals with a `{{ }}` value (Kyverno reads a string value as a wildcard, a duration, a quantity)
  and in-operators whose `{{ }}` value can be a string (read as a JSON list or a range) are refused; before,
  they compared plainly.
- `any: []` is false (evaluateAnyAllConditions starts an `any` that is there false); before, true.
Each is proven with --verify's comparison (run/convert.py verify) against kyrec's classic engine."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import _verdicts, variants, verify


def _policy(validate: dict[str, Any], preconditions: Any = None, failure_policy: str = "") -> dict[str, Any]:
    rule: dict[str, Any] = {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                            "validate": {"message": "no", **validate}}
    if preconditions is not None:
        rule["preconditions"] = preconditions
    spec: dict[str, Any] = {"validationFailureAction": "Enforce", "background": True, "rules": [rule]}
    if failure_policy:
        spec["failurePolicy"] = failure_policy
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": spec}


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


HOST_NETWORK = {"pattern": {"spec": {"=(hostNetwork)": False}}}
PODS = [_pod("bare", hostNetwork=True), _pod("named", hostname="y", hostNetwork=True),
        _pod("x", hostname="x", hostNetwork=True), _pod("fine", hostname="y")]


def _refusal(policy: dict[str, Any]) -> str:
    conv = convert_policy(policy)
    assert conv.documents == [], conv.documents
    return "; ".join(conv.refusals)


def test_a_precondition_reading_a_missing_key_is_the_rules_error() -> None:
    policy = _policy(HOST_NETWORK, {"all": [{"key": "{{ request.object.spec.hostname }}", "operator": "NotEquals",
                                             "value": "x"}]})
    conv = convert_policy(policy)
    assert conv.refusals == []
    diffs, count = verify(policy, conv.documents, PODS)
    assert count > len(PODS) and [d.line() for d in diffs] == []
    # the Pod without `hostname` is an error on both sides (before: the conversion failed it)
    with_key = _verdicts(conv.documents, [PODS[0]], "/tmp", "converted")
    assert with_key[("Pod", "default", "bare")][0] == "error"


def test_preconditions_in_order_an_error_after_a_false_condition_is_not_reached() -> None:
    # `any`: the first true decides; the `all` ones are read whatever the `any` ones gave
    pre = {"any": [{"key": "{{ request.object.spec.hostNetwork }}", "operator": "Equals", "value": True},
                   {"key": "{{ request.object.spec.hostname }}", "operator": "Equals", "value": "y"}]}
    policy = _policy(HOST_NETWORK, pre)
    conv = convert_policy(policy)
    assert conv.refusals == []
    diffs, _ = verify(policy, conv.documents, PODS)
    assert [d.line() for d in diffs] == []


def test_a_precondition_that_can_error_under_failure_policy_ignore_is_refused() -> None:
    pre = {"all": [{"key": "{{ request.object.spec.hostname }}", "operator": "NotEquals", "value": "x"}]}
    assert "spec.rules[0].preconditions: reads a key the resource can lack" in _refusal(
        _policy(HOST_NETWORK, pre, "Ignore"))
    # with a default the key cannot be missing: converted
    safe = {"all": [{"key": "{{ request.object.spec.hostname || '' }}", "operator": "NotEquals", "value": "x"}]}
    conv = convert_policy(_policy(HOST_NETWORK, safe, "Ignore"))
    assert conv.refusals == [] and conv.documents


@pytest.mark.parametrize("where", ["preconditions", "deny"])
def test_foreach_conditions_reading_a_key_an_element_can_lack_are_refused(where: str) -> None:
    probe = {"key": "{{ element.securityContext.privileged }}", "operator": "Equals", "value": True}
    entry: dict[str, Any] = {"list": "request.object.spec.containers",
                             "deny": {"conditions": {"any": [{"key": "{{ element.image || '' }}", "operator": "Equals",
                                                              "value": "bad"}]}}}
    if where == "preconditions":
        entry["preconditions"] = {"all": [probe]}
        field = "foreach[0].preconditions"
    else:
        entry["deny"]["conditions"]["any"].insert(0, probe)
        field = "foreach[0].deny.conditions"
    assert f"spec.rules[0].validate.{field}: reads a key an element can lack" in _refusal(
        _policy({"foreach": [entry]}))
    # with a default: converted, and it decides as the original
    probe["key"] = "{{ element.securityContext.privileged || `false` }}"
    policy = _policy({"foreach": [entry]})
    conv = convert_policy(policy)
    assert conv.refusals == []
    pods = [_pod("two", containers=[{"name": "a", "image": "bad", "securityContext": {"privileged": True}},
                                    {"name": "b", "image": "good"}])]
    diffs, _ = verify(policy, conv.documents, pods)
    assert [d.line() for d in diffs] == []


@pytest.mark.parametrize("op", ["Equals", "NotEquals"])
def test_equals_with_a_variable_value_is_refused(op: str) -> None:
    deny = {"deny": {"conditions": {"any": [{"key": "{{ request.object.spec.hostname }}", "operator": op,
                                             "value": "{{ request.object.metadata.name }}"}]}}}
    assert "deny.conditions.any[0].value: a value from a variable" in _refusal(_policy(deny))


def test_an_in_operator_value_that_can_be_a_string_is_refused_a_projection_converts() -> None:
    deny = {"deny": {"conditions": {"any": [{"key": "{{ request.object.metadata.name }}", "operator": "AnyIn",
                                             "value": "{{ request.object.metadata.annotations.allowed }}"}]}}}
    assert "deny.conditions.any[0].value: a value from a variable that can be a string" in _refusal(_policy(deny))
    deny["deny"]["conditions"]["any"][0]["value"] = "{{ request.object.spec.hostname || `[]` }}"
    assert "a value from a variable that can be a string" in _refusal(_policy(deny))
    # a projection, a list-valued function, `||` of two lists: never a string
    for value in ("{{ request.object.spec.containers[].name }}", "{{ request.object.metadata.keys(@) }}",
                  "{{ request.object.spec.containers[].image || `[]` }}"):
        deny["deny"]["conditions"]["any"][0]["value"] = value
        policy = _policy(deny)
        conv = convert_policy(policy)
        assert conv.refusals == [] and conv.substitutes == [], value
        diffs, _ = verify(policy, conv.documents, [_pod("c"), _pod("name"), _pod("nginx")])
        assert [d.line() for d in diffs] == [], value


@pytest.mark.parametrize("where", ["deny", "preconditions"])
def test_an_empty_any_is_false(where: str) -> None:
    empty = {"any": [], "all": [{"key": "{{ request.object.metadata.namespace }}", "operator": "Equals",
                                 "value": "default"}]}
    policy = (_policy({"deny": {"conditions": empty}}) if where == "deny"
              else _policy({"deny": {"conditions": {"all": [{"key": "a", "operator": "Equals", "value": "a"}]}}},
                           empty))
    conv = convert_policy(policy)
    assert conv.refusals == []
    diffs, count = verify(policy, conv.documents, PODS)
    assert count and [d.line() for d in diffs] == []
    # neither denies nor applies: every Pod passes (the deny) or skips (the preconditions) on both sides
    assert {v for v, _ in _verdicts(conv.documents, PODS, "/tmp", "converted").values()} <= {"pass"}


def test_a_wildcard_variant_shows_a_plain_comparison_where_kyverno_reads_a_wildcard() -> None:
    """--verify varies each string leaf to a wildcard that matches the original (`ngin*`) after the other
    variants: a conversion comparing a `{{ }}` value plainly (what the converter wrote before) differs there."""
    pod = _pod("w")
    pod["metadata"]["labels"] = {"image": "nginx"}
    made = dict(variants(pod))
    assert "wildcard spec.containers.0.image" in made
    assert made["wildcard spec.containers.0.image"]["spec"]["containers"][0]["image"] == "ngin*"
    policy = _policy({"deny": {"conditions": {"any": [{"key": "{{ request.object.metadata.labels.image }}",
                                                       "operator": "NotEquals",
                                                       "value": "{{ request.object.spec.containers[0].image }}"}]}}})
    plain = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "p"},
             "spec": {"validationActions": ["Deny"], "autogen": {"podControllers": {"controllers": []}},
                      "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                              "operations": ["CREATE", "UPDATE"],
                                                              "resources": ["pods"]}]},
                      "validations": [{"message": "no", "expression": (
                          "!(object.metadata.labels.image != object.spec.containers[0].image)")}]}}
    diffs, _ = verify(policy, [plain], [pod])
    assert [d.variant for d in diffs if d.verdict] == ["wildcard spec.containers.0.image"]


CONFIG_MAPS = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "default"},
                "data": data} for n, data in (("on", {"flag": "on"}), ("without", {"other": "x"}))]
FLAG = {"all": [{"key": "{{ request.object.data.flag }}", "operator": "Equals", "value": "on"}]}


def _rule_policy(rule: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "g"},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                                "preconditions": FLAG, **rule}]}}


def test_a_generate_rules_precondition_reading_a_missing_key_is_its_error() -> None:
    # before: the GeneratingPolicy generated nothing on `without` (status none), the classic rule erred
    policy = _rule_policy({"generate": {"apiVersion": "v1", "kind": "Secret", "name": "s", "synchronize": False,
                                        "namespace": "{{ request.object.metadata.namespace }}",
                                        "data": {"stringData": {"a": "b"}}}})
    conv = convert_policy(policy)
    assert conv.refusals == []
    diffs, count = verify(policy, conv.documents, CONFIG_MAPS)
    assert count and [d.line() for d in diffs] == []


def test_a_mutate_rules_precondition_that_can_error_is_refused() -> None:
    # the classic rule's error leaves the admitted object unknown; the MutatingPolicy admitted it unmutated
    policy = _rule_policy({"mutate": {"patchStrategicMerge": {"metadata": {"labels": {"team": "a"}}}}})
    assert "spec.rules[0].preconditions: reads a key the resource can lack" in _refusal(policy)
    policy["spec"]["rules"][0]["preconditions"] = {"all": [{"key": "{{ request.object.data.flag || '' }}",
                                                           "operator": "Equals", "value": "on"}]}
    conv = convert_policy(policy)
    assert conv.refusals == []
    diffs, _ = verify(policy, conv.documents, CONFIG_MAPS)
    assert [d.line() for d in diffs] == []
