"""resource.Get/List/Post/ToGVR through CEL: cluster and namespaced overloads, camelCase, errors."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.context import ObjectsProvider
from kubectl_kyrec.cel.decl import CelFunctionError
from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.kyverno_resource import resource_library

OBJECTS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default", "labels": {"x": "1"}},
     "data": {"k": "v"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "other", "labels": {"x": "1"}}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, "data": {}},
]


def run(expr: str, namespace: str = "", provider: Any = None, **variables: Any) -> Any:
    env = Environment([resource_library(provider or ObjectsProvider(OBJECTS), namespace)], ["object", *variables])
    outcome = env.compile(expr).evaluate(env.activation({"object": {}, **variables}))
    return outcome.error if outcome.error is not None else outcome.value


@pytest.mark.parametrize("spelling", ["Get", "get"])
def test_get_and_null_on_miss(spelling: str) -> None:
    assert run(f'resource.{spelling}("v1", "configmaps", "default", "a").data.k') == "v"
    assert run(f'resource.{spelling}("v1", "configmaps", "default", "nope") == null') is True


@pytest.mark.parametrize("spelling", ["List", "list"])
def test_list_shape_namespaces_and_labels(spelling: str) -> None:
    assert run(f'resource.{spelling}("v1", "configmaps", "default").kind') == "ConfigMapList"
    assert run(f'resource.{spelling}("v1", "configmaps", "").items.map(i, i.metadata.name)') == ["a", "b"]
    assert run(f'resource.{spelling}("v1", "configmaps", "", {{"x": "1"}}).items.size()') == 2
    assert run(f'resource.{spelling}("v1", "configmaps", "default", {{"x": "2"}}).items') == []


@pytest.mark.parametrize("spelling", ["ToGVR", "toGVR"])
def test_gvr_overloads(spelling: str) -> None:
    gvr = f'resource.{spelling}("v1", "ConfigMap")'
    assert run(f"resource.get({gvr}, \"default\", \"a\").metadata.name") == "a"
    assert run(f"resource.List({gvr}, \"\").items.size()") == 2
    assert run(f"resource.List({gvr}, \"\", {{\"x\": \"1\"}}).items.size()") == 2


def test_gvr_from_a_variable_dispatches_at_runtime() -> None:
    # as in Kyverno's conformance test: variables.gvr = resource.ToGVR("v1", "Pod")
    assert run('resource.get(gvr, "default", "a").data.k',
               gvr={"@type": "schema.GroupVersionResource", "group": "", "version": "v1",
                    "resource": "configmaps"}) == "v"


def test_gvr_value() -> None:
    assert run('resource.ToGVR("apps/v1", "Deployment")') == {
        "@type": "schema.GroupVersionResource", "group": "apps", "version": "v1", "resource": "deployments"}


def test_namespaced_policy_overloads_use_the_policy_namespace() -> None:
    assert run('resource.Get("v1", "configmaps", "a").data.k', namespace="default") == "v"
    assert run('resource.get("v1", "configmaps", "b") == null', namespace="default") is True
    assert run('resource.List("v1", "configmaps").items.map(i, i.metadata.name)', namespace="other") == ["b"]
    assert run('resource.list("v1", "configmaps", {"x": "1"}).items.size()', namespace="default") == 1
    assert run('resource.get(resource.toGVR("v1", "Secret"), "s").metadata.name', namespace="default") == "s"
    assert run('resource.List(resource.ToGVR("v1", "ConfigMap"), {"x": "1"}).items.size()', namespace="other") == 1


def test_namespaced_policies_cannot_name_a_namespace() -> None:
    with pytest.raises(CompileError):
        Environment([resource_library(ObjectsProvider(OBJECTS), "default")], []).compile(
            'resource.Get("v1", "configmaps", "other", "b")')


def test_cluster_policies_must_name_a_namespace() -> None:
    with pytest.raises(CompileError):
        Environment([resource_library(ObjectsProvider(OBJECTS))], []).compile('resource.Get("v1", "configmaps", "a")')


def test_errors_carry_kyverno_prefixes() -> None:
    assert run('resource.List("v1", "gadgets", "")') == \
        "failed to list resource: the server could not find the requested resource"
    assert run('resource.Get("a/b/c", "x", "", "y")') == "failed to get resource: unexpected GroupVersion string: a/b/c"
    assert run('resource.ToGVR("v1", "Gadget")') == \
        'failed to map kind to resource: no matches for kind "Gadget" in version "v1"'
    assert run('resource.Post("v1", "configmaps", {"metadata": {"name": "n"}})') == \
        "failed to create resource: resource.Post needs a cluster (not available offline)"


class _Recorder(ObjectsProvider):
    def __init__(self) -> None:
        super().__init__()
        self.posted: list[tuple[str, str, str, dict[str, Any]]] = []

    def post_resource(self, api_version: str, resource: str, namespace: str,
                      data: dict[str, Any]) -> dict[str, Any]:
        self.posted.append((api_version, resource, namespace, data))
        return {"status": {"allowed": True}}


def test_post_passes_namespace_and_data_to_the_provider() -> None:
    recorder = _Recorder()
    assert run('resource.Post("authorization.k8s.io/v1", "subjectaccessreviews", {"spec": {"user": "u"}})'
               ".status.allowed", provider=recorder) is True
    assert run('resource.post("v1", "configmaps", "ns", {"a": 1})', provider=recorder) == {"status": {"allowed": True}}
    assert run('resource.Post("v1", "configmaps", {"a": 1})', namespace="mine", provider=recorder)
    assert recorder.posted == [("authorization.k8s.io/v1", "subjectaccessreviews", "", {"spec": {"user": "u"}}),
                               ("v1", "configmaps", "ns", {"a": 1}), ("v1", "configmaps", "mine", {"a": 1})]


class _Forbidden(ObjectsProvider):
    def get_resource(self, api_version: str, resource: str, namespace: str,
                     name: str) -> dict[str, Any] | None:
        raise CelFunctionError('secrets "s" is forbidden')


def test_provider_errors_are_wrapped() -> None:
    assert run('resource.Get("v1", "secrets", "default", "s")', provider=_Forbidden()) == \
        'failed to get resource: secrets "s" is forbidden'


def test_gvr_overload_rejects_other_maps() -> None:
    assert run('resource.Get({"resource": "x"}, "default", "a")') == "no such overload"
