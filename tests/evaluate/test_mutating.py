"""MutatingPolicy engine: results as Kyverno's mpol engine gives them, mutations in order, and an order
Kyverno's webhook does not fix reported as ORDER_DEPENDENT rather than guessed."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.admission_chain import ORDER_DEPENDENT
from kubectl_kyrec.evaluate.mutating.engine import mutating_engine
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.model import Document, Ref, Source, Subject

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "dev"},
       "spec": {"containers": [{"name": "c", "image": "docker.io/nginx"}]}}


def _policy(name: str, mutations: list[dict[str, Any]], **spec: Any) -> Document:
    obj = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
           "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                            "operations": ["CREATE"], "resources": ["pods"]}]},
                    "mutations": mutations, **spec}}
    return Document(obj, Source(f"{name}.yaml", 1))


def _apply(expression: str) -> dict[str, Any]:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def _label(key: str, value: str) -> dict[str, Any]:
    return _apply(f'Object{{metadata: Object.metadata{{labels: {{"{key}": "{value}"}}}}}}')


def _ctx(obj: dict[str, Any] = POD) -> SubjectContext:
    ref = Ref("v1", "Pod", "dev", "p", "uid")
    request = build_request(obj, resource="pods", namespaced=True)
    return SubjectContext(Subject(obj, ref, None, "pods", True), request, None)


def _engine(*docs: Document, fixed_order: bool = False) -> Any:
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    engine, errors = mutating_engine(classify(docs), envs, NOW, fixed_order=fixed_order)
    assert not errors
    return engine


def test_mutations_apply_in_order_each_on_the_previous_output() -> None:
    doc = _policy("p", [_label("a", "1"),
                        _apply('Object{metadata: Object.metadata{labels: {"b": object.metadata.labels["a"] + "2"}}}'),
                        {"patchType": "JSONPatch", "jsonPatch": {"expression":
                         '[JSONPatch{op: "replace", path: "/spec/containers/0/image", value: "nginx"}]'}}])
    step = _engine(doc).mutate(_ctx())
    assert step.obj["metadata"]["labels"] == {"a": "1", "b": "12"}
    assert step.obj["spec"]["containers"][0]["image"] == "nginx"
    assert [(r.result, r.message) for r in step.results] == [("pass", "success")]
    assert [m.policy for m in step.mutations] == ["p"] and not step.undetermined
    assert POD["metadata"].get("labels") is None


def test_false_match_conditions_skip_and_an_error_is_reported() -> None:
    skip = _policy("s", [_label("a", "1")], matchConditions=[{"name": "n", "expression": "false"}])
    bad = _policy("e", [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                   '[JSONPatch{op: "replace", path: "/nope/x", value: 1}]'}}])
    step = _engine(skip, bad).mutate(_ctx())
    assert [(r.policy, r.result, r.rule) for r in step.results] == [("s", "skip", ""), ("e", "error", "evaluation")]
    assert step.results[1].message.startswith("failed to evaluate policy: JSON Patch:")
    assert step.obj == POD and not step.mutations


def test_policies_whose_order_changes_the_object_are_order_dependent() -> None:
    first, second = _policy("one", [_label("x", "a")]), _policy("two", [_label("x", "b")])
    step = _engine(first, second).mutate(_ctx())
    assert step.obj["metadata"]["labels"] == {"x": "b"}
    assert len(step.undetermined) == 1 and step.undetermined[0].startswith(ORDER_DEPENDENT)
    assert "one, two" in step.undetermined[0]
    # the CLI's load order is fixed: no doubt there
    assert not _engine(first, second, fixed_order=True).mutate(_ctx()).undetermined


def test_policies_that_commute_are_not_order_dependent() -> None:
    step = _engine(_policy("one", [_label("x", "a")]), _policy("two", [_label("y", "b")])).mutate(_ctx())
    assert step.obj["metadata"]["labels"] == {"x": "a", "y": "b"} and not step.undetermined


def test_a_matching_exception_skips_the_policy() -> None:
    exc = Document({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
                    "metadata": {"name": "x", "namespace": "dev"},
                    "spec": {"policyRefs": [{"name": "p", "kind": "MutatingPolicy"}],
                             "matchConditions": [{"name": "n", "expression": "object.metadata.namespace == 'dev'"}]}},
                   Source("exc.yaml", 1))
    step = _engine(_policy("p", [_label("a", "1")]), exc).mutate(_ctx())
    assert [(r.result, r.rule, r.message) for r in step.results] == [
        ("skip", "exception", "rule is skipped due to policy exception: dev/x")]
    assert step.obj == POD


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "dev"},
              "spec": {"template": {"metadata": {"labels": {"app": "x"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _deployment_ctx() -> SubjectContext:
    ref = Ref("apps/v1", "Deployment", "dev", "d", "uid")
    request = build_request(DEPLOYMENT, resource="deployments", namespaced=True)
    return SubjectContext(Subject(DEPLOYMENT, ref, None, "deployments", True), request, None)


def test_autogen_applies_a_pod_policy_to_the_template_of_a_controller() -> None:
    doc = _policy("sc", [_apply("Object{spec: Object.spec{securityContext: "
                                "Object.spec.securityContext{runAsNonRoot: true}}}")],
                  matchConditions=[{"name": "n", "expression": "size(object.spec.containers) > 0"}])
    step = _engine(doc).mutate(_deployment_ctx())
    assert step.obj["spec"]["template"]["spec"]["securityContext"] == {"runAsNonRoot": True}
    assert [(r.policy, r.result) for r in step.results] == [("sc", "pass")]


def test_autogen_leaves_object_metadata_literals_as_kyverno_does_which_fails_the_type_check() -> None:
    # convertPodToTemplateExpression rewrites `Object.metadata.labels` but not `Object.metadata{`: the
    # wrapped literal's type names no longer match their path (Kyverno v1.17.2 answers the same error)
    step = _engine(_policy("lbl", [_label("team", "a")])).mutate(_deployment_ctx())
    assert [r.result for r in step.results] == ["error"]
    assert 'unexpected type name "Object.metadata", expected "Object.spec.template.metadata"' in step.results[0].message
    assert step.obj == DEPLOYMENT


def test_in_admission_an_error_beside_applied_patches_is_not_claimed_as_admitted() -> None:
    # Kyverno's webhook answers a call with an error without any patch (handler.go admissionResponse)
    bad = _policy("e", [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                   '[JSONPatch{op: "replace", path: "/nope/x", value: 1}]'}}])
    step = _engine(_policy("ok", [_label("a", "1")]), bad).mutate(_ctx())
    assert [u.split(":")[0] for u in step.undetermined] == ["webhook-error"]
    assert not _engine(_policy("ok", [_label("a", "1")]), bad, fixed_order=True).mutate(_ctx()).undetermined


def test_autogen_copies_keep_the_namespace_selector() -> None:
    """The pod-controller copies of a MutatingPolicy take their matchConstraints as every CEL kind's copies
    do (evaluate/autogen.py): the namespaceSelector stays on them (Kyverno #16476), and an objectSelector
    still stops autogen."""
    from kubectl_kyrec.evaluate.mutating.engine import autogen_variants

    selector = {"matchLabels": {"team": "a"}}
    doc = _policy("p", [_label("x", "y")])
    doc.obj["spec"]["matchConstraints"]["namespaceSelector"] = selector
    (policy,) = classify([doc]).mutating
    copies = autogen_variants(policy)
    assert [sorted(r for rule in c.match_constraints.resource_rules for r in rule.resources) for c in copies] == [
        ["cronjobs"], ["daemonsets", "deployments", "jobs", "replicasets", "statefulsets"]]
    assert all(c.match_constraints.namespace_selector == selector for c in copies)
    doc.obj["spec"]["matchConstraints"]["objectSelector"] = selector
    (policy,) = classify([doc]).mutating
    assert autogen_variants(policy) == []
