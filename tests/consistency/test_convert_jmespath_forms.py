"""`convert`: the JMESPath functions keys, values, to_array and regex_match (convert/jmes.py), each as CEL
that answers as Kyverno's go-jmespath does and errors where it errors; proven with --verify's comparison on
crafted Pods (missing fields, nulls, wrong types) and their variants. What stays refused names the construct."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.convert import jmes
from kubectl_kyrec.convert.cel_text import Unconvertible
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify


def _policy(conditions: dict[str, Any], preconditions: dict[str, Any] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                            "validate": {"message": "no", "deny": {"conditions": conditions}}}
    if preconditions:
        rule["preconditions"] = preconditions
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"validationFailureAction": "Enforce", "background": False, "rules": [rule]}}


def _pod(name: str, spec: Any, annotations: Any = None, labels: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


PODS = [
    _pod("plain", {"containers": [{"name": "a", "image": "nginx", "command": ["sh", "-c", "jcmd 1"]}]},
         {"alias": "x;", "b": "y"}, {"app": "a"}),
    _pod("no-meta-maps", {"containers": [{"name": "a", "image": "nginx", "command": [7, "x"]}]}),
    _pod("null-annotations", {"containers": [{"name": "a", "image": "n", "command": [16777216, -3]}]}, None),
    _pod("odd-types", {"containers": [{"name": "a", "image": "n", "command": [True, "7"]}], "hostNetwork": True},
         {"n": 1, "alias": "z ; "}, {"app": "b"}),
    _pod("nested", {"containers": [{"name": "jcmd", "image": "jcmd"}], "nodeSelector": {"k": "v"},
                    "volumes": [{"name": "v", "emptyDir": {}}]}, {"x": "alias;"}),
]
PODS[2]["metadata"]["annotations"] = None      # the key is there, its value null
PODS[3]["spec"]["containers"][0]["securityContext"] = "not a map"

CASES = {
    "keys of a map, compared as a set": {"any": [
        {"key": "{{ request.object.metadata.keys(@) }}", "operator": "AnyIn", "value": ["labels"]}]},
    "keys | length": {"any": [
        {"key": "{{ request.object.spec.nodeSelector.keys(@) | length(@) }}", "operator": "GreaterThan", "value": 0}]},
    "keys of a missing or non-map value (an error in both)": {"any": [
        {"key": "{{ request.object.spec.containers[0].securityContext.keys(@) || `[]` }}", "operator": "AnyIn",
         "value": ["privileged"]}]},
    "values, projected through regex_match": {"any": [
        {"key": "{{ request.object.metadata.annotations.values(@) | [?regex_match('\\s*alias\\s*.*;', @)] }}",
         "operator": "AnyIn", "value": ["x;"]}]},
    "regex_match on strings, integers and other types": {"any": [
        {"key": "{{ request.object.spec.containers[].command[].regex_match('\\bjcmd\\b|^7$', @) }}",
         "operator": "AnyIn", "value": [True]}]},
    "to_array of a list and of a scalar": {"any": [
        {"key": "{{ contains(to_array(request.object.spec.containers[].name), 'jcmd') }}", "operator": "Equals",
         "value": True},
        {"key": "{{ contains(to_array(request.object.metadata.name), 'plain') }}", "operator": "Equals",
         "value": True}]},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_converted_function_decides_as_the_original(case: str) -> None:
    original = _policy(CASES[case])
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, subjects = verify(original, conv.documents, PODS)
    assert [d.line() for d in diffs if d.verdict] == []
    assert subjects > len(PODS)


def test_a_function_in_preconditions_decides_as_the_original() -> None:
    original = _policy({"any": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "x"}]},
                       {"all": [{"key": "{{ request.object.metadata.labels.keys(@) || `[]` }}",
                                 "operator": "AnyIn", "value": ["app"]}]})
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, _ = verify(original, conv.documents, PODS)
    assert [d.line() for d in diffs if d.verdict] == []


@pytest.mark.parametrize(("expression", "cel"), [
    ("request.object.spec.keys(@)", "(type(j2) == map ? j2.map(j1, j1) : dyn(int(["),
    ("request.object.spec.values(@)", "(type(j2) == map ? j2.map(j1, j2[j1]) : dyn(int(["),
    ("to_array(request.object.metadata.name)", "(type(j1) == list ? j1 : [j1])"),
    ("regex_match('^a', request.object.metadata.name)", "(type(j1) == string ? j1.matches('^a') : type(j1) == int"),
])
def test_function_cel_text(expression: str, cel: str) -> None:
    assert cel in jmes.translate(expression, "f")


@pytest.mark.parametrize(("expression", "named"), [
    ("request.object.spec.volumes[].keys(@)[]", "keys can error on the left of a flatten"),
    ("request.object.metadata.annotations.keys(@)[?contains(@, 'a')]", "keys can error on the left of a flatten"),
    ("sort(request.object.spec.x)", "sort has no exact CEL counterpart"),
    ("keys(request.object.spec, request.object.metadata)", "keys takes 1 argument"),
])
def test_still_refused_names_the_construct(expression: str, named: str) -> None:
    with pytest.raises(Unconvertible, match=named.replace("[", r"\[")):
        jmes.translate(expression, "f")


def test_regex_match_is_a_named_substitute_and_keys_in_foreach_refused() -> None:
    original = _policy(CASES["regex_match on strings, integers and other types"])
    conv = convert_policy(original)
    assert conv.substitutes == [jmes.REGEX_MATCH_DIFFERENCE]
    # the named difference, and only it: Kyverno matches 2^24+1 and 2.5 as float32 text, the conversion errors
    pods = [_pod("big", {"containers": [{"name": "a", "image": "n", "command": [16777217]}]}),
            _pod("fraction", {"containers": [{"name": "a", "image": "n", "command": [2.5]}]})]
    diffs, _ = verify(original, conv.documents, pods)
    assert {(d.subject, d.original, d.converted) for d in diffs if d.verdict and "(as given)" in d.line()} == {
        ("Pod/default/big", "pass", "error"), ("Pod/default/fraction", "pass", "error")}
    foreach = _policy({})
    foreach["spec"]["rules"][0]["validate"] = {"message": "no", "foreach": [{
        "list": "request.object.spec.containers",
        "deny": {"conditions": {"any": [{"key": "{{ element.keys(@) }}", "operator": "AnyIn", "value": ["x"]}]}}}]}
    assert "a JMESPath function that can error, inside foreach" in convert_policy(foreach).refusals[0]


def test_an_error_go_jmespath_swallows_is_refused_not_converted_to_an_error() -> None:
    """`rules[?resources.contains(@, 'secrets')].verbs[]`: contains errors on `resources: null`, the flatten
    turns that into null (the rule passes); a CEL conversion errors there. The conversion before this check
    said `error` where Kyverno said `pass` on such a Role: now the policy is refused, naming the construct."""
    original = _policy({"any": [{"key": "get", "operator": "AnyIn",
                                 "value": "{{ request.object.rules[?resources.contains(@,'secrets')].verbs[] }}"}]})
    original["spec"]["rules"][0]["match"] = {"any": [{"resources": {"kinds": ["Role"]}}]}
    refusals = convert_policy(original).refusals
    assert len(refusals) == 1 and "contains can error on the left of a flatten" in refusals[0]


def test_equals_a_list_value_compares_as_dyn() -> None:
    """`{{ request.operation || 'BACKGROUND' }}` Equals `[DELETE]`: a string against a list, which cel-go's
    checker refuses (`no matching overload for '_==_' applied to '(string, list(string))'`, Kyverno's CLI on
    the converted openshift/check-routes); written `dyn(key) == [...]`, false at run time as in Kyverno."""
    original = _policy({"any": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "x"}]},
                       {"all": [{"key": "{{ request.operation || 'BACKGROUND' }}", "operator": "NotEquals",
                                 "value": ["DELETE"]}]})
    conv = convert_policy(original)
    assert conv.refusals == []
    assert "!(dyn([request.operation].map(" in str(conv.documents[0]["spec"]["matchConditions"])
    diffs, _ = verify(original, conv.documents, PODS)
    assert [d.line() for d in diffs if d.verdict] == []
