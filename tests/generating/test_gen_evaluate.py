"""GeneratingPolicy evaluation, end to end through the CEL engine (docs/semantics/generating.md)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.load.policy.policies import parse_exception
from tests.generating.gen_support import CORPUS, docs, evaluate, only
from tests.shared_inputs import present

HEAD = """apiVersion: policies.kyverno.io/v1
kind: {kind}
metadata:
  name: p
  {meta}
spec:
  {evaluation}
  matchConstraints:
    resourceRules:
    - apiGroups: ["{group}"]
      apiVersions: [v1]
      operations: [{operations}]
      resources: [{resources}]
"""


def policy(body: str, *, kind: str = "GeneratingPolicy", meta: str = "", evaluation: str = "",
           group: str = "", operations: str = "CREATE, UPDATE", resources: str = "namespaces") -> str:
    return HEAD.format(kind=kind, meta=meta, evaluation=evaluation, group=group, operations=operations,
                       resources=resources) + body


CM = '{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": "cm"}), "data": dyn({"k": "v"})}'
NS = docs("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  uid: ns-uid\n  labels: {tier: gold}\n")


def names(outcome_objects: tuple[dict, ...]) -> list[tuple[str, str, str]]:
    return [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in outcome_objects]


@pytest.mark.parametrize("call", [f"generator.Apply(object.metadata.name, [{CM}])",
                                  f"generator.apply(object.metadata.name, [{CM}])"])
def test_pascal_and_camel_case(call: str) -> None:
    out = only(evaluate(docs(policy(f"  generate:\n  - expression: '{call}'\n")), NS))
    assert out.status is TriggerStatus.GENERATED
    assert names(out.objects) == [("ConfigMap", "team-a", "cm")]
    assert out.objects[0]["metadata"]["labels"]["generate.kyverno.io/trigger-uid"] == "ns-uid"
    assert out.result.result == "pass" and out.result.message == "policy evaluated successfully"
    assert out.result.properties["generated-resources"] == "/v1, Kind=ConfigMap Name=cm Namespace=team-a"


def test_namespaced_one_argument_form() -> None:
    text = policy(f"  generate:\n  - expression: 'generator.apply([{CM}])'\n", kind="NamespacedGeneratingPolicy",
                  meta="namespace: apps", group="apps", resources="deployments")
    deploy = docs("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: apps, uid: d1}\n")
    out = only(evaluate(docs(text), deploy))
    assert names(out.objects) == [("ConfigMap", "apps", "cm")]
    labels = out.objects[0]["metadata"]["labels"]
    assert (labels["generate.kyverno.io/trigger-kind"], labels["generate.kyverno.io/trigger-group"],
            labels["generate.kyverno.io/trigger-namespace"]) == ("Deployment", "apps", "apps")
    other = docs("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: other, uid: d2}\n")
    assert not evaluate(docs(text), other).outcomes


def test_cluster_policy_cannot_use_the_namespaced_form() -> None:
    outcome = evaluate(docs(policy(f"  generate:\n  - expression: 'generator.apply([{CM}])'\n")), NS)
    assert not outcome.outcomes and len(outcome.errors) == 1
    assert "spec.generate[0].expression" in outcome.errors[0].message


@present(CORPUS / "kyverno-conformance", "conformance NamespacedGeneratingPolicy cross-namespace-denied")
def test_conformance_cross_namespace_denied() -> None:
    path = CORPUS / "kyverno-conformance/namespaced-generating-policies/data/cross-namespace-denied/policy.yaml"
    # the namespaced library has no two-argument apply: the policy does not compile (rejected at admission)
    outcome = evaluate(docs(path.read_text(), str(path)), [])
    assert len(outcome.errors) == 1 and "spec.generate[0].expression" in outcome.errors[0].message


def test_entries_run_in_order_and_a_rewrite_keeps_the_last_content() -> None:
    second = CM.replace('"v"', '"w"')
    text = policy(f"  generate:\n  - expression: 'generator.apply(object.metadata.name, [{CM}])'\n"
                  f"  - expression: 'generator.apply(object.metadata.name, [{second}])'\n"
                  "  - template:\n      value: |\n        apiVersion: v1\n        kind: Secret\n"
                  "        metadata: {name: s, namespace: team-a}\n")
    out = only(evaluate(docs(text), NS))
    assert names(out.objects) == [("ConfigMap", "team-a", "cm"), ("Secret", "team-a", "s")]
    assert out.objects[0]["data"] == {"k": "w"}


def test_match_conditions() -> None:
    body = f"  generate:\n  - expression: 'generator.apply(object.metadata.name, [{CM}])'\n"
    false = policy("  matchConditions:\n  - {name: c, expression: \"object.metadata.labels.tier == 'silver'\"}\n"
                   + body)
    assert only(evaluate(docs(false), NS)).status is TriggerStatus.SKIPPED
    broken = policy("  matchConditions:\n  - {name: c, expression: \"object.metadata.labels.nope == 'x'\"}\n" + body)
    out = only(evaluate(docs(broken), NS))
    assert out.status is TriggerStatus.ERROR and out.message == "failed to evaluate policy: no such key: nope"
    assert out.result.result == "error"


def test_match_constraints_select_triggers() -> None:
    text = policy(f"  generate:\n  - expression: 'generator.apply(object.metadata.namespace, [{CM}])'\n",
                  resources="configmaps")
    assert not evaluate(docs(text), NS).outcomes
    cm = docs("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, namespace: team-a, uid: c}\n")
    assert only(evaluate(docs(text), cm)).status is TriggerStatus.GENERATED


def test_expression_error_and_template_error() -> None:
    text = policy("  generate:\n  - expression: 'generator.apply(object.metadata.name, [object.spec.nope])'\n")
    out = only(evaluate(docs(text), NS))
    assert out.status is TriggerStatus.ERROR and out.message == "failed to evaluate policy: no such key: spec"
    tpl = policy("  generate:\n  - template:\n      interpolate: cel\n      value: |\n        apiVersion: v1\n"
                 "        kind: ConfigMap\n        metadata:\n          name: (( object.nope ))\n")
    out = only(evaluate(docs(tpl), NS))
    assert out.message == ('failed to evaluate policy: failed to render generation template: document 1: field '
                           '"metadata": field "name": failed to evaluate placeholder "object.nope": no such key: '
                           'nope')


def test_template_namespaces_and_variables() -> None:
    text = policy("  variables:\n  - {name: ns, expression: object.metadata.name}\n"
                  "  generate:\n  - template:\n      interpolate: cel\n      value: |\n"
                  "        apiVersion: v1\n        kind: ConfigMap\n        metadata:\n"
                  "          name: (( variables.ns ))-config\n          namespace: (( variables.ns ))\n"
                  "        ---\n        apiVersion: rbac.authorization.k8s.io/v1\n        kind: ClusterRole\n"
                  "        metadata: {name: (( variables.ns ))-role}\n")
    out = only(evaluate(docs(text), NS))
    assert names(out.objects) == [("ConfigMap", "team-a", "team-a-config"), ("ClusterRole", "", "team-a-role")]


def test_namespaced_template_defaults_and_denies_namespaces() -> None:
    deploy = docs("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: apps, uid: d1}\n")
    body = ("  generate:\n  - template:\n      value: |\n        apiVersion: v1\n        kind: ConfigMap\n"
            "        metadata: {{name: c{ns}}}\n")
    ok = policy(body.format(ns=""), kind="NamespacedGeneratingPolicy", meta="namespace: apps", group="apps",
                resources="deployments")
    assert names(only(evaluate(docs(ok), deploy)).objects) == [("ConfigMap", "apps", "c")]
    denied = policy(body.format(ns=", namespace: kube-system"), kind="NamespacedGeneratingPolicy",
                    meta="namespace: apps", group="apps", resources="deployments")
    out = only(evaluate(docs(denied), deploy))
    assert out.status is TriggerStatus.ERROR
    assert "cross-namespace generation denied: a policy in namespace 'apps' cannot generate resources into " \
           "namespace 'kube-system'" in out.message


SOURCES = docs("""apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Secret, metadata: {name: a, namespace: default, uid: sa, resourceVersion: "1",
   labels: {copy: "yes"}}, data: {x: eA==}}
- {apiVersion: v1, kind: Secret, metadata: {name: b, namespace: default, uid: sb, resourceVersion: "2"}}
- {apiVersion: v1, kind: Secret, metadata: {name: c, namespace: other, uid: sc, resourceVersion: "3",
   labels: {copy: "yes"}}}
""")


def test_clone_with_resource_get() -> None:
    text = policy('  generate:\n  - expression: \'generator.apply(object.metadata.name, '
                  '[resource.Get("v1", "secrets", "default", "a")])\'\n')
    out = only(evaluate(docs(text), NS, [*SOURCES, *NS]))
    assert names(out.objects) == [("Secret", "team-a", "a")]
    assert out.objects[0]["metadata"]["labels"]["generate.kyverno.io/source-uid"] == "sa"
    assert out.objects[0]["data"] == {"x": "eA=="}


def test_clone_of_a_missing_source_is_an_error() -> None:
    text = policy('  generate:\n  - expression: \'generator.apply(object.metadata.name, '
                  '[resource.get("v1", "secrets", "default", "gone")])\'\n')
    out = only(evaluate(docs(text), NS, [*SOURCES, *NS]))
    assert out.status is TriggerStatus.ERROR and "failed to generate resources" in out.message


@pytest.mark.parametrize("args, expected", [
    ('"default"', ["a", "b"]),
    ('"default", {"copy": "yes"}', ["a"]),
    ('"", {"copy": "yes"}', ["a", "c"]),
])
def test_clone_with_resource_list(args: str, expected: list[str]) -> None:
    text = policy(f"  generate:\n  - expression: 'generator.apply(object.metadata.name, "
                  f"[resource.List(\"v1\", \"secrets\", {args})])'\n")
    out = only(evaluate(docs(text), NS, [*SOURCES, *NS]))
    assert [o["metadata"]["name"] for o in out.objects] == expected
    assert {o["metadata"]["namespace"] for o in out.objects} == {"team-a"}


def test_needs_request_user_info() -> None:
    text = policy("  variables:\n  - {name: user, expression: request.userInfo.username}\n"
                  "  generate:\n  - expression: >-\n      generator.apply(object.metadata.name, "
                  '[{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": '
                  'variables.user})}])\n')
    assert only(evaluate(docs(text), NS)).status is TriggerStatus.NEEDS_REQUEST
    out = only(evaluate(docs(text), NS, user_info={"username": "alice"}))
    assert names(out.objects) == [("ConfigMap", "team-a", "alice")]


def test_match_conditions_on_user_info_need_the_request_too() -> None:
    text = policy("  matchConditions:\n  - {name: u, expression: \"request.?userInfo.username.orValue('') != "
                  "'admin'\"}\n  generate:\n  - expression: 'true'\n")
    out = only(evaluate(docs(text), NS))
    assert out.status is TriggerStatus.NEEDS_REQUEST and "matchConditions" in out.message


EXCEPTION = """apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {{name: ex, namespace: default}}
spec:
  policyRefs: [{{name: p, kind: GeneratingPolicy}}]
  matchConditions: [{{name: m, expression: "object.metadata.name == 'team-a'"}}]
  {extra}
"""


def test_exception_exempts_fully() -> None:
    text = policy(f"  generate:\n  - expression: 'generator.apply(object.metadata.name, [{CM}])'\n")
    exc = parse_exception(docs(EXCEPTION.format(extra=""))[0])
    out = only(evaluate(docs(text), NS, exceptions=[exc]))
    assert out.status is TriggerStatus.EXEMPT and not out.objects
    assert out.result.rule == "exception" and out.result.result == "skip"
    assert out.message == "rule is skipped due to policy exception: default/ex"


def test_partial_exception_feeds_the_exceptions_variable() -> None:
    text = policy("  generate:\n  - expression: >-\n      generator.apply(object.metadata.name, "
                  '[{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": "cm"}), '
                  '"data": dyn({"allowed": exceptions.allowedValues.join(",")})}])\n')
    exc = parse_exception(docs(EXCEPTION.format(extra="allowedValues: [a, b]"))[0])
    out = only(evaluate(docs(text), NS, exceptions=[exc]))
    assert out.objects[0]["data"] == {"allowed": "a,b"}


def test_update_only_policy_is_evaluated_as_an_update() -> None:
    text = policy(f"  generate:\n  - expression: 'generator.apply(object.metadata.name, [{CM}])'\n",
                  operations="UPDATE")
    out = only(evaluate(docs(text), NS))
    assert out.status is TriggerStatus.GENERATED and out.operation == "UPDATE"


def test_generate_existing_decides_what_is_owed() -> None:
    body = f"  generate:\n  - expression: 'generator.apply(object.metadata.name, [{CM}])'\n"
    created = "  creationTimestamp: '2026-01-01T00:00:00Z'\n"
    pol = policy(body, meta="creationTimestamp: '2026-06-01T00:00:00Z'")
    old_ns = docs("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  uid: ns-uid\n" + created)
    # a trigger in the state created before the policy is owed nothing
    assert only(evaluate(docs(pol), old_ns, old_ns)).owed is False
    # ... unless generateExisting is on
    existing = policy(body, meta="creationTimestamp: '2026-06-01T00:00:00Z'",
                      evaluation="evaluation: {generateExisting: {enabled: true}}")
    assert only(evaluate(docs(existing), old_ns, old_ns)).owed is True
    # a trigger not in the state is new: owed
    assert only(evaluate(docs(pol), old_ns, [])).owed is True


def test_audit_annotations_become_properties() -> None:
    text = policy("  auditAnnotations:\n  - {key: team, valueExpression: object.metadata.labels.tier}\n"
                  "  generate:\n  - expression: 'true'\n")
    out = only(evaluate(docs(text), NS))
    assert out.result.properties["team"] == "gold" and "generated-resources" not in out.result.properties


def test_only_the_namespaces_of_namespaced_triggers_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """namespaceObject is a namespaced trigger's Namespace as the state holds it (labels included); the state's
    other Namespaces (3,000 live ones, triggers themselves, before apply's first write) are not built."""
    from kubectl_kyrec.evaluate.generating import engine

    body = ("  generate:\n  - expression: >-\n      generator.apply(object.metadata.namespace, [{\"apiVersion\": "
            "dyn(\"v1\"), \"kind\": dyn(\"ConfigMap\"), \"metadata\": dyn({\"name\": \"cm\"}), \"data\": "
            "dyn({\"tier\": namespaceObject.metadata.labels.tier, \"named\": "
            "namespaceObject.metadata.labels[\"kubernetes.io/metadata.name\"]})}])\n")
    built: list[set[str]] = []
    whole = engine.namespace_objects

    def recorded(*args: Any, **kwargs: Any) -> dict[str, Any]:
        namespaces = whole(*args, **kwargs)
        built.append(set(namespaces))
        return namespaces

    monkeypatch.setattr(engine, "namespace_objects", recorded)
    other = docs("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b, uid: b, labels: {tier: silver}}\n")
    cm = docs("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, namespace: team-a, uid: c}\n")
    out = evaluate(docs(policy(body, resources="configmaps")), [*cm, *NS, *other], [*NS, *other])
    assert only(out).objects[0]["data"] == {"tier": "gold", "named": "team-a"}
    assert built == [{"team-a"}]
