"""Rules matching every kind (`kinds: ["*"]`) are refused as Kyverno's policy validation refuses them
(kk: pkg/validation/policy/validate.go validateWildcard), at the kinds field, with Kyverno's text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_kyrec.evaluate.classic.engine import refused_by_kyverno
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify

ANY = {"any": [{"resources": {"kinds": ["*"]}}]}


def _refused(rule: dict[str, Any], background: bool = False) -> str | None:
    doc = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
           "spec": {"background": background, "rules": [{"name": "ok", "match": {"resources": {"kinds": ["Pod"]}},
                                                         "validate": {"deny": {}}}, {"name": "r", **rule}]}}
    refused = refused_by_kyverno(classify(documents_from_text(json.dumps(doc), "p.json")).classic[0])
    return None if refused is None else f"{refused.field} {refused.message}"


METADATA = {"validate": {"pattern": {"metadata": {"labels": {"a": "?*"}}}}}


@pytest.mark.parametrize(("rule", "background", "expected"), [
    ({"match": ANY, **METADATA}, True, "spec.rules[1].match.any[0].kinds ClusterPolicy \"p\": "
     "spec.rules[1].match.any[0].kinds: wildcard policy not allowed in background mode. Set spec.background=false "
     "to disable background mode for this policy rule "),
    ({"match": {"all": [{"resources": {"kinds": ["*", "Pod"]}}]}, **METADATA}, False,
     "spec.rules[1].match.all[0].kinds ClusterPolicy \"p\": spec.rules[1].match.all[0].kinds: "
     "wildcard policy can not deal with more than one kind"),
    ({"match": ANY, "verifyImages": [{"imageReferences": ["*"]}]}, False,
     "spec.rules[1].match.any[0].kinds ClusterPolicy \"p\": spec.rules[1].match.any[0].kinds: "
     "wildcard policy does not support rule type"),
    ({"match": {"resources": {"kinds": ["*"]}}, "validate": {"foreach": [{"list": "x", "deny": {}}]}}, False,
     "spec.rules[1].match.kinds ClusterPolicy \"p\": spec.rules[1].match.kinds: "
     "wildcard policy does not support rule type"),
    ({"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "exclude": ANY,
      "validate": {"anyPattern": [{"metadata": {}}, {"spec": {}}]}}, False,
     "spec.rules[1].exclude.any[0].kinds ClusterPolicy \"p\": spec.rules[1].exclude.any[0].kinds: "
     "policy can only deal with the metadata field of the resource if the rule does not match any kind"),
    # the old list form of deny conditions may read only metadata or request fields
    ({"match": ANY, "validate": {"deny": {"conditions": [{"key": "{{ request.object.spec.x }}",
                                                          "operator": "Equals", "value": 1}]}}}, False,
     "spec.rules[1].match.any[0].kinds ClusterPolicy \"p\": spec.rules[1].match.any[0].kinds: "
     "policy can only deal with the metadata field of the resource if the rule does not match any kind"),
])
def test_refused(rule: dict[str, Any], background: bool, expected: str) -> None:
    assert _refused(rule, background) == expected


@pytest.mark.parametrize("rule", [
    {"match": ANY, **METADATA},
    {"match": ANY, "validate": {"deny": {"conditions": [{"key": "{{ request.operation }}", "operator": "Equals",
                                                         "value": "DELETE"}]}}},
    # any/all conditions are not checked by Kyverno (only the old list form)
    {"match": ANY, "validate": {"deny": {"conditions": {"any": [{"key": "{{ request.object.spec.x }}",
                                                                 "operator": "Equals", "value": 1}]}}}},
    {"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"foreach": [{"list": "x", "deny": {}}]}},
])
def test_accepted(rule: dict[str, Any]) -> None:
    assert _refused(rule) is None
