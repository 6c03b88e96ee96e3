"""convert: differences that verify could not see while it compared namespace-less resources under namespace
"" (eval keys them under `default`); each is now converted alike or refused by field."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify


def _policy(rule: dict[str, Any], kinds: tuple[str, ...] = ("Pod",)) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": list(kinds)}}]}, **rule}]}}


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def test_a_scalar_pattern_holds_for_every_item_of_a_list() -> None:
    """psp-check-supplemental-groups: `100-200 | 500-600` against supplementalGroups [0] fails (each item is
    checked); the conversion gave an error."""
    original = _policy({"validate": {"message": "m", "pattern": {"spec": {"=(securityContext)": {
        "=(supplementalGroups)": "100-200 | 500-600"}}}}})
    conv = convert_policy(original)
    assert conv.refusals == []
    pods = [_pod("bad", securityContext={"supplementalGroups": [0]}),
            _pod("good", securityContext={"supplementalGroups": [150, 550]})]
    diffs, subjects = verify(original, conv.documents, pods)
    assert subjects > 2 and [d.line() for d in diffs] == []


def test_a_variable_in_a_pattern_value_is_refused() -> None:
    """require-qos-guaranteed: `{{element.resources.requests.cpu}}` was compared as the text itself."""
    conv = convert_policy(_policy({"validate": {"message": "m", "foreach": [{
        "list": "request.object.spec.containers",
        "pattern": {"resources": {"limits": {"cpu": "{{element.resources.requests.cpu}}"}}}}]}}))
    assert conv.documents == []
    assert conv.refusals[0].endswith("a variable or reference in a pattern value "
                                     "('{{element.resources.requests.cpu}}') is not converted")


def test_a_patch_of_an_atomic_map_is_refused() -> None:
    """add-nodeselector: Kubernetes refuses an apply configuration that sets nodeSelector (atomic)."""
    conv = convert_policy(_policy({"mutate": {"patchStrategicMerge": {"spec": {"nodeSelector": {"a": "b"}}}}}))
    assert conv.refusals == ["spec.rules[0].mutate.patchStrategicMerge: sets .spec.nodeSelector of Pod, atomic "
                             "in its schema: an apply configuration may not"]


def test_a_function_that_can_error_inside_foreach_is_refused() -> None:
    """restrict-ingress-wildcard: a rule without host errors first in Kyverno; CEL's all() was false from a
    later element."""
    conv = convert_policy(_policy({"validate": {"message": "m", "foreach": [{
        "list": "request.object.spec.rules", "deny": {"conditions": {"any": [
            {"key": "{{ contains(element.host, '*') }}", "operator": "Equals", "value": True}]}}}]}},
        kinds=("Ingress",)))
    assert conv.documents == []
    assert "a JMESPath function that can error, inside foreach" in conv.refusals[0]


def test_a_variable_whose_key_is_no_identifier_errors_when_missing() -> None:
    """check-ingress-nginx-controller-version-and-annotation-policy: `{{request.object.metadata.annotations."a/b"}}`
    is unresolved when the annotation is missing (the rule errors); the conversion read it as null and passed."""
    original = _policy({"validate": {"message": "m", "deny": {"conditions": {"any": [{
        "key": "{{request.object.metadata.annotations.\"example.com/mode\"}}", "operator": "AnyNotIn",
        "value": ["on", "off"]}]}}}})
    conv = convert_policy(original)
    assert conv.refusals == []
    pods = [{**_pod("on"), "metadata": {"name": "on", "annotations": {"example.com/mode": "on", "x": "y"}}},
            {**_pod("bad"), "metadata": {"name": "bad", "annotations": {"example.com/mode": "maybe"}}}]
    diffs, subjects = verify(original, conv.documents, pods)
    assert subjects > 3 and [d.line() for d in diffs] == []
