"""A label selector with an invalid key or value is an error, as apimachinery's LabelSelectorAsSelector
makes it (NewRequirement validates every key and value), never a selector that quietly matches or not.

Each case picks a selector that, taken literally, would match (DoesNotExist / NotIn of a key no object
can carry), so an unvalidated selector shows up as a match instead of the error.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.classic.match import RequestFacts, rule_matches
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.request import RequestInfo
from kubectl_kyrec.k8s.labels import SelectorError, from_label_selector
from kubectl_kyrec.load.policy.vocabulary import MatchResources

BAD_KEY = {"matchExpressions": [{"key": "bad key!", "operator": "DoesNotExist"}]}
BAD_VALUE = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["not a label value!"]}]}
BAD_MATCH_LABEL_VALUE = {"matchLabels": {"app": "-dash-"}}
GOOD = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["other"]}]}

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team", "labels": {"app": "web"}}}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"env": "dev"}}}


def test_key_error_words_as_apimachinery() -> None:
    with pytest.raises(SelectorError) as caught:
        from_label_selector(BAD_KEY)
    assert str(caught.value) == (
        'key: Invalid value: "bad key!": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', '
        "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
        "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def test_value_error_words_as_apimachinery() -> None:
    with pytest.raises(SelectorError) as caught:
        from_label_selector(BAD_MATCH_LABEL_VALUE)
    assert str(caught.value) == (
        'values[0][app]: Invalid value: "-dash-": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def test_several_problems_are_one_aggregate() -> None:
    selector = {"matchExpressions": [{"key": "a/b/c", "operator": "In", "values": ["ok", "no way"]}]}
    with pytest.raises(SelectorError) as caught:
        from_label_selector(selector)
    text = str(caught.value)
    assert text.startswith('[key: Invalid value: "a/b/c": a qualified name must consist')
    assert ', values[1][a/b/c]: Invalid value: "no way": a valid label' in text and text.endswith("]")


def _request() -> RequestInfo:
    return RequestInfo(obj=POD, old_obj=None, group="", version="v1", kind="Pod", resource="pods",
                       subresource="", namespace="team", name="p", operation="CREATE", namespaced=True)


@pytest.mark.parametrize("selector", [BAD_KEY, BAD_VALUE, BAD_MATCH_LABEL_VALUE])
@pytest.mark.parametrize("which", ["object_selector", "namespace_selector"])
def test_policy_selector_with_invalid_key_or_value_is_a_match_error(which: str, selector: Any) -> None:
    constraints = MatchResources(**{which: selector})
    with pytest.raises(MatchError, match="Invalid value"):
        matches_constraints(constraints, _request(), NAMESPACE)


@pytest.mark.parametrize("which", ["object_selector", "namespace_selector"])
def test_valid_selector_still_matches(which: str) -> None:
    assert matches_constraints(MatchResources(**{which: GOOD}), _request(), NAMESPACE) is True


def _facts() -> RequestFacts:
    return RequestFacts(obj=POD, group="", version="v1", kind="Pod", subresource="", operation="CREATE",
                        namespace_labels={"env": "dev"})


@pytest.mark.parametrize("field", ["selector", "namespaceSelector"])
@pytest.mark.parametrize("selector", [BAD_KEY, BAD_VALUE])
def test_classic_match_with_invalid_selector_does_not_match(field: str, selector: Any) -> None:
    # kk: the block's LabelSelectorAsSelector error is one of its errors, so the rule does not apply
    match = {"any": [{"resources": {"kinds": ["Pod"], field: selector}}]}
    assert rule_matches(match, None, _facts()) is False
    assert rule_matches({"any": [{"resources": {"kinds": ["Pod"], field: GOOD}}]}, None, _facts()) is True


@pytest.mark.parametrize("field", ["selector", "namespaceSelector"])
@pytest.mark.parametrize("selector", [BAD_KEY, BAD_VALUE])
def test_classic_exclude_with_invalid_selector_excludes_nothing(field: str, selector: Any) -> None:
    # an exclude block with an error is not a block that excludes: the rule still applies
    match = {"any": [{"resources": {"kinds": ["Pod"]}}]}
    exclude = {"any": [{"resources": {"kinds": ["Pod"], field: selector}}]}
    assert rule_matches(match, exclude, _facts()) is True
    assert rule_matches(match, {"any": [{"resources": {"kinds": ["Pod"], field: GOOD}}]}, _facts()) is False
