"""`convert` of rule `context` entries (issue 38): variable, configMap and apiCall become ValidatingPolicy
variables over `resource.Get` / `resource.List` (docs/convert.md, context entries). Each form is converted and
run through `convert --verify --state`, with the objects it reads in the state and without them: the
original and the conversion must decide every subject and variant alike. What is not converted is refused by
field, and the refusal's text is checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.policy import convert_policy


def _policy(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "ctx", "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"validationFailureAction": "Enforce", "background": True, "rules": list(rules)}}


def _rule(name: str, context: list[dict[str, Any]], validate: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "context": context,
            "validate": {"message": f"{name} says no", **validate}, **extra}


def _pod(name: str, namespace: str, labels: dict[str, str] | None = None,
         images: tuple[str, ...] = ("nginx:1",)) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}


PODS = [_pod("p1", "default", {"svc": "web", "team": "a"}),
        _pod("p2", "locked", {"svc": "db"}, ("nginx:1", "redis:7")),
        _pod("p3", "default", images=("busybox:1",))]

STATE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "locked", "labels": {"exec": "false"}}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
     "data": {"block": "no", "team": "a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty", "namespace": "default"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default",
                                                         "labels": {"tier": "front"}},
     "spec": {"ports": [{"port": 80}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default",
                                                         "labels": {"tier": "back"}},
     "spec": {"ports": [{"port": 5432}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "c1", "namespace": "locked"},
     "spec": {"ports": [{"port": 80}]}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"svc": "web"}}}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "any", "namespace": "locked"},
     "spec": {"minAvailable": 1, "selector": {}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p1", "namespace": "default"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
              "template": {"metadata": {"labels": {"a": "b"}},
                           "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}},
]

# name -> rules; each is verified with the state above (the objects it reads there) and with an empty one
CASES: dict[str, list[dict[str, Any]]] = {
    "configMap read as a key": [_rule("cm", [{"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
                                      {"deny": {"conditions": {"any": [
                                          {"key": "{{ cm.data.block || '' }}", "operator": "Equals", "value": "yes"},
                                          {"key": "{{ request.object.metadata.labels.team || '' }}",
                                           "operator": "Equals", "value": "a"}]}}})],
    "configMap key missing is an error": [_rule("cm", [{"name": "cm", "configMap": {"name": "settings",
                                                                                     "namespace": "default"}}],
                                                {"deny": {"conditions": {"all": [
                                                    {"key": "{{ cm.data.nothere }}", "operator": "Equals",
                                                     "value": "x"}]}}})],
    "configMap without data": [_rule("cm", [{"name": "cm", "configMap": {"name": "empty", "namespace": "default"}}],
                                     {"deny": {"conditions": {"any": [
                                         {"key": "{{ cm.data.block || 'unset' }}", "operator": "Equals",
                                          "value": "unset"}]}}})],
    "configMap in a message": [_rule("cm", [{"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
                                     {"message": "team {{ cm.data.team }} only", "deny": {"conditions": {"any": [
                                         {"key": "{{ request.object.metadata.labels.team || '' }}",
                                          "operator": "NotEquals", "value": "a"}]}}})],
    "apiCall GET of the request's Namespace": [_rule("ns", [{"name": "exec", "apiCall": {
        "urlPath": "/api/v1/namespaces/{{request.namespace}}", "jmesPath": "metadata.labels.exec || ''"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ exec }}", "operator": "Equals", "value": "false"}]}}})],
    "apiCall GET of one object, missing is an error": [_rule("deploy", [{"name": "replicas", "apiCall": {
        "urlPath": "/apis/apps/v1/namespaces/{{ request.namespace }}/deployments/{{ request.object.metadata.name }}",
        "jmesPath": "spec.replicas"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ replicas }}", "operator": "GreaterThan", "value": 1}]}}})],
    "apiCall GET with a default": [_rule("deploy", [{"name": "d", "apiCall": {
        "urlPath": "/apis/apps/v1/namespaces/default/deployments/{{ request.object.metadata.name }}",
        "jmesPath": "spec.replicas", "default": {"none": True}}}],
        {"deny": {"conditions": {"any": [{"key": "{{ d.none || `false` }}", "operator": "Equals",
                                          "value": True}]}}})],
    "apiCall List, a variable with a default": [_rule("svc", [
        {"name": "names", "apiCall": {"urlPath": "/api/v1/namespaces/{{ request.namespace }}/services",
                                      "jmesPath": "items[].metadata.name"}},
        {"name": "wanted", "variable": {"jmesPath": "request.object.metadata.labels.svc", "default": "none"}}],
        {"deny": {"conditions": {"all": [
            {"key": "{{ wanted }}", "operator": "AnyNotIn", "value": "{{ names }}"},
            {"key": "{{ wanted }}", "operator": "NotEquals", "value": "none"}]}}})],
    "apiCall List with a labelSelector and a length": [_rule("svc", [
        {"name": "fronts", "apiCall": {"urlPath": "/api/v1/services?labelSelector=tier%3Dfront",
                                       "jmesPath": "items[] | length(@)"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ fronts }}", "operator": "LessThan", "value": 1}]}}})],
    "apiCall List filtered by a request value": [_rule("svc", [
        {"name": "same", "apiCall": {"urlPath": "/api/v1/namespaces/default/services",
                                     "jmesPath": "items[?metadata.name == '{{ request.object.metadata.name }}'] "
                                                 "| length(@)"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ same }}", "operator": "GreaterThan", "value": 0}]}}})],
    "apiCall List filtered by label_match on the request's labels": [_rule("pdb", [
        {"name": "pdbs", "apiCall": {
            "urlPath": "/apis/policy/v1/namespaces/{{request.namespace}}/poddisruptionbudgets",
            "jmesPath": "items[?label_match(spec.selector.matchLabels, `{{request.object.metadata.labels}}`)] "
                        "| length(@)"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ pdbs }}", "operator": "LessThan", "value": 1}]}}})],
    "preconditions of a rule with context: a missing key is an error": [_rule("pre", [
        {"name": "names", "apiCall": {"urlPath": "/api/v1/namespaces/{{ request.namespace }}/services",
                                      "jmesPath": "items[].metadata.name"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ request.object.metadata.labels.svc }}", "operator": "AnyNotIn",
                                          "value": "{{ names }}"}]}}},
        preconditions={"all": [{"key": "{{ request.object.metadata.labels.team }}", "operator": "Equals",
                                "value": "a"}]})],
    "variable values, one read by another": [_rule("caps", [
        {"name": "allowed", "variable": {"value": ["nginx:1", "redis:7"]}},
        {"name": "images", "variable": {"jmesPath": "request.object.spec.containers[].image"}},
        {"name": "first", "variable": {"value": "{{ images }}", "jmesPath": "[0]"}}],
        {"deny": {"conditions": {"any": [
            {"key": "{{ images }}", "operator": "AnyNotIn", "value": "{{ allowed }}"},
            {"key": "{{ first }}", "operator": "Equals", "value": "redis:7"}]}}})],
    "a variable that is nil is an error": [_rule("nil", [
        {"name": "svc", "variable": {"jmesPath": "request.object.metadata.labels.svc"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ svc }}", "operator": "Equals", "value": "db"}]}}})],
    "a true any() condition before a failing entry: the entry is not read": [_rule("cm", [
        {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
        {"deny": {"conditions": {"any": [
            {"key": "{{ request.object.metadata.namespace }}", "operator": "Equals", "value": "locked"},
            {"key": "{{ cm.data.block }}", "operator": "Equals", "value": "yes"}]}}})],
    "a failing entry before a true any() condition: an error": [_rule("cm", [
        {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
        {"deny": {"conditions": {"any": [
            {"key": "{{ cm.data.block }}", "operator": "Equals", "value": "yes"},
            {"key": "{{ request.object.metadata.namespace }}", "operator": "Equals", "value": "locked"}]}}})],
    "a failing entry in all() after a false any()": [_rule("cm", [
        {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
        {"deny": {"conditions": {
            "any": [{"key": "{{ request.object.metadata.namespace }}", "operator": "Equals", "value": "locked"}],
            "all": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "p1"},
                    {"key": "{{ cm.data.block }}", "operator": "Equals", "value": "no"}]}}})],
    "a List read inside foreach": [_rule("each", [
        {"name": "names", "apiCall": {"urlPath": "/api/v1/namespaces/{{ request.namespace }}/services",
                                      "jmesPath": "items[].metadata.name"}}],
        {"foreach": [{"list": "request.object.spec.containers",
                      "preconditions": {"all": [{"key": "{{ element.image }}", "operator": "Equals",
                                                 "value": "redis:7"}]},
                      "deny": {"conditions": {"any": [{"key": "{{ element.name }}", "operator": "AnyIn",
                                                       "value": "{{ names }}"}]}}}]})],
    "rules reading context are policies of their own": [
        _rule("cm", [{"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
              {"deny": {"conditions": {"any": [{"key": "{{ cm.data.block }}", "operator": "Equals",
                                                "value": "no"}]}}}),
        {"name": "plain", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
         "validate": {"message": "no busybox", "pattern": {"spec": {"containers": [{"image": "!busybox*"}]}}}}],
}


def _files(tmp_path: Path, rules: list[dict[str, Any]], state: list[dict[str, Any]]) -> list[str]:
    policy, resources, state_file = tmp_path / "policy.yaml", tmp_path / "pods.yaml", tmp_path / "state.yaml"
    policy.write_text(yaml.safe_dump(_policy(*rules)))
    resources.write_text(yaml.safe_dump_all(PODS))
    # an empty state still records a listing (what `capture` writes of an empty cluster)
    state_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": state})
                          if state else yaml.safe_dump_all([{"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": "unrelated"}}]))
    return ["convert", "-p", str(policy), "--verify", "-r", str(resources), "--state", str(state_file)]


@pytest.mark.parametrize("with_state", [True, False], ids=["objects in the state", "objects missing"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_context_entries_convert_and_decide_as_the_original(case: str, with_state: bool, tmp_path: Path) -> None:
    conv = convert_policy(_policy(*CASES[case]))
    assert conv.refusals == []
    assert any("variables" in d["spec"] for d in conv.documents)
    result = CliRunner().invoke(cli, _files(tmp_path, CASES[case], STATE if with_state else []))
    assert "0 verdict difference(s)" in result.output, result.output
    assert result.exit_code == 0, result.output


def _verdicts(tmp_path: Path, policy: Path, state: list[dict[str, Any]]) -> dict[str, str]:
    state_file = tmp_path / "state.yaml"
    state_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": state}))
    resources = tmp_path / "pods.yaml"
    resources.write_text(yaml.safe_dump_all(PODS))
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(resources), "--state", str(state_file),
                                      "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    import json
    return {f"{r['subject']['namespace']}/{r['subject']['name']}": r["result"]
            for r in json.loads(result.stdout)["results"]}


def test_the_state_decides_the_conversion(tmp_path: Path) -> None:
    """Not vacuous: the converted policy reads the state (a ConfigMap there or not, a Namespace's label)."""
    out = tmp_path / "converted.yaml"
    first = convert_policy(_policy(*CASES["a failing entry before a true any() condition: an error"]))
    out.write_text(yaml.safe_dump_all(first.documents))
    assert _verdicts(tmp_path, out, STATE) == {"default/p1": "pass", "locked/p2": "fail", "default/p3": "pass"}
    # without the ConfigMap every Pod is an error, also the one whose later condition holds
    assert _verdicts(tmp_path, out, STATE[:2]) == {"default/p1": "error", "locked/p2": "error",
                                                   "default/p3": "error"}
    second = convert_policy(_policy(*CASES["a true any() condition before a failing entry: the entry is not read"]))
    out.write_text(yaml.safe_dump_all(second.documents))
    assert _verdicts(tmp_path, out, STATE[:2]) == {"default/p1": "error", "locked/p2": "fail",
                                                   "default/p3": "error"}


def test_what_the_conversion_writes() -> None:
    conv = convert_policy(_policy(*CASES["apiCall List, a variable with a default"]))
    variables = conv.documents[0]["spec"]["variables"]
    assert [v["name"] for v in variables] == ["names", "wanted"]
    assert variables[0]["expression"].startswith("[resource.List('v1', 'services', string(request.namespace))") \
        or "resource.List('v1', 'services', request.namespace)" in variables[0]["expression"]
    conv = convert_policy(_policy(*CASES["configMap read as a key"]))
    assert "resource.Get('v1', 'configmaps', 'default', 'settings')" in \
        conv.documents[0]["spec"]["variables"][0]["expression"]


REFUSED = {
    "a service call": ({"name": "x", "apiCall": {"service": {"url": "http://svc.ns/x"}, "jmesPath": "a"}},
                       "spec.rules[0].context[0].apiCall.service: calls to a service are not converted"),
    "a POST": ({"name": "x", "apiCall": {"urlPath": "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                         "method": "POST", "data": [{"key": "kind", "value": "X"}]}},
               "spec.rules[0].context[0].apiCall.method: POST calls are not converted"),
    "imageRegistry": ({"name": "x", "imageRegistry": {"reference": "{{ request.object.spec.containers[0].image }}"}},
                      "spec.rules[0].context[0].imageRegistry: image.GetMetadata gives the image's data in another "
                      "shape"),
    "a path segment that is no name": ({"name": "x", "apiCall": {
        "urlPath": "/api/v1/namespaces/{{ request.object.spec.nodeName }}/pods"}},
        "only request names and namespaces are converted in an API path"),
    "a fieldSelector": ({"name": "x", "apiCall": {"urlPath": "/api/v1/pods?fieldSelector=spec.nodeName%3Dn"}},
                        "query parameters other than one literal labelSelector are not converted"),
    "a subresource": ({"name": "x", "apiCall": {"urlPath": "/api/v1/namespaces/default/pods/p/log"}},
                      "subresources and bare API groups are not converted"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_entries_name_the_field_and_why(case: str, tmp_path: Path) -> None:
    entry, text = REFUSED[case]
    src = tmp_path / "p.yaml"
    src.write_text(yaml.safe_dump(_policy(_rule("r", [entry], {"deny": {"conditions": {"any": [
        {"key": "{{ x }}", "operator": "Equals", "value": "y"}]}}}))))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(src), "-o", str(out)])
    assert result.exit_code == 1
    assert "ClusterPolicy 'ctx' not converted: " in result.stderr and text in result.stderr, result.stderr
    assert not (out / "ctx.yaml").exists()


def test_a_configmap_value_compared_by_an_operator_is_refused() -> None:
    """ConfigMap data are strings, which Kyverno's operators read as JSON lists, wildcards, ranges..."""
    conv = convert_policy(_policy(_rule("r", [{"name": "cm", "configMap": {"name": "s", "namespace": "default"}}],
                                        {"deny": {"conditions": {"any": [
                                            {"key": "{{ request.object.metadata.name }}", "operator": "AnyNotIn",
                                             "value": "{{ cm.data.names }}"}]}}})))
    assert conv.refusals == ["spec.rules[0].validate.deny.conditions.any[0].value: a condition's value reads the "
                             "ConfigMap entries ['cm']: a ConfigMap's data are strings, which Kyverno's operators "
                             "read as JSON lists, wildcards, ranges, quantities or durations; not converted"]


def test_an_entry_that_can_fail_is_refused_inside_foreach() -> None:
    conv = convert_policy(_policy(_rule("r", [{"name": "cm", "configMap": {"name": "s", "namespace": "default"}}],
                                        {"foreach": [{"list": "request.object.spec.containers", "deny": {
                                            "conditions": {"any": [{"key": "{{ cm.data.x || '' }}",
                                                                    "operator": "Equals", "value": "y"}]}}}]})))
    assert conv.refusals == ["spec.rules[0].validate.foreach[0]: reads the context entries ['cm'], which can fail, "
                             "inside foreach (Kyverno's first element decides between error and failure, CEL's "
                             "all() does not); not converted"]


def test_preconditions_reading_context_are_refused() -> None:
    conv = convert_policy(_policy(_rule("r", [{"name": "cm", "configMap": {"name": "s", "namespace": "default"}}],
                                        {"deny": {"conditions": {"any": [
                                            {"key": "{{ cm.data.x }}", "operator": "Equals", "value": "y"}]}}},
                                        preconditions={"all": [{"key": "{{ cm.data.on || '' }}",
                                                                "operator": "Equals", "value": "true"}]})))
    assert len(conv.refusals) == 1
    assert conv.refusals[0].startswith("spec.rules[0].preconditions: reads the context entries ['cm']: "
                                       "preconditions become matchConditions")


def test_a_namespace_absent_from_the_state_is_the_active_one_in_the_resource_library() -> None:
    """As the classic loader reads it (eval's provider), so both sides of --verify see one cluster; a Kyverno
    CLI test's fake client (the default) has only what it is given."""
    from kubectl_kyrec.cel.context import ObjectsProvider

    found = ObjectsProvider([], implicit_namespaces=True).get_resource("v1", "namespaces", "", "team-a")
    assert found is not None and found["status"] == {"phase": "Active"}
    assert found["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ObjectsProvider([]).get_resource("v1", "namespaces", "", "team-a") is None
    assert ObjectsProvider([], implicit_namespaces=True).get_resource("v1", "configmaps", "team-a", "x") is None


def test_a_context_name_that_is_no_cel_name_is_refused() -> None:
    conv = convert_policy(_policy(_rule("r", [{"name": "in", "variable": {"value": "x"}}], {"deny": {
        "conditions": {"any": [{"key": "{{ request.name }}", "operator": "Equals", "value": "y"}]}}})))
    assert conv.refusals == ["spec.rules[0].context[0].name: 'in' is not a name a CEL variable can have; not "
                             "converted"]
