"""MutatingAdmissionPolicy: the API server's way (bindings required, Go map order) and Kyverno's CLI's way
(a policy without binding applies; each binding mutates the resource as the policy found it)."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.admission_chain import ORDER_DEPENDENT
from kubectl_kyrec.evaluate.mutating_admission.engine import mutating_admission_engine
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.model import Document, Ref, Source, Subject

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}
GROUP = "admissionregistration.k8s.io/v1alpha1"


def _map(name: str, expression: str) -> Document:
    return Document({"apiVersion": GROUP, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name},
                     "spec": {"matchConstraints": {"resourceRules": [{
                         "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                         "resources": ["configmaps"]}]},
                         "mutations": [{"patchType": "ApplyConfiguration",
                                        "applyConfiguration": {"expression": expression}}]}},
                    Source(f"{name}.yaml", 1))


def _binding(name: str, policy: str, param: str = "") -> Document:
    spec: dict[str, Any] = {"policyName": policy}
    if param:
        spec["paramRef"] = {"name": param, "namespace": "default"}
    return Document({"apiVersion": GROUP, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name},
                     "spec": spec}, Source(f"{name}.yaml", 1))


def _param(name: str, value: str) -> Document:
    return Document({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
                     "data": {"v": value}}, Source(f"{name}.yaml", 1))


def _ctx() -> SubjectContext:
    request = build_request(CM, resource="configmaps", namespaced=True)
    return SubjectContext(Subject(CM, Ref("v1", "ConfigMap", "default", "cm", "u"), None, "configmaps", True),
                          request, None)


def _engine(*docs: Document, params: tuple[Document, ...] = (), in_cli: bool = False) -> Any:
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    engine, errors = mutating_admission_engine(classify(docs), envs, params=params, in_cli=in_cli)
    assert not errors
    return engine


LABEL = 'Object{metadata: Object.metadata{labels: {"x": "%s"}}}'


def test_in_a_cluster_only_bound_policies_run_and_their_order_is_not_fixed() -> None:
    docs = (_map("a", LABEL % "a"), _map("b", LABEL % "b"), _map("unbound", LABEL % "u"),
            _binding("ba", "a"), _binding("bb", "b"))
    step = _engine(*docs).mutate(_ctx())
    assert step.obj["metadata"]["labels"] == {"x": "b"}
    assert {(r.policy, r.result) for r in step.results} == {("a", "pass"), ("b", "pass")}
    assert len(step.undetermined) == 1 and step.undetermined[0].startswith(ORDER_DEPENDENT)
    assert "a, b" in step.undetermined[0]


def test_in_the_cli_each_binding_mutates_the_resource_as_the_policy_found_it() -> None:
    policy = _map("p", 'Object{metadata: Object.metadata{labels: {params.data.v: "yes"}}}')
    step = _engine(policy, _binding("one", "p", "p1"), _binding("two", "p", "p2"),
                   params=(_param("p1", "first"), _param("p2", "second")), in_cli=True).mutate(_ctx())
    # the last binding's response, computed from the original object: no label of the first binding
    assert step.obj["metadata"]["labels"] == {"second": "yes"}
    assert [(r.result, r.message, r.binding) for r in step.results] == [
        ("pass", "mutation is successfully applied", "two")]


def test_in_the_cli_a_policy_without_binding_applies_when_it_matches() -> None:
    step = _engine(_map("u", LABEL % "u"), in_cli=True).mutate(_ctx())
    assert step.obj["metadata"]["labels"] == {"x": "u"} and [r.rule for r in step.results] == ["u"]
