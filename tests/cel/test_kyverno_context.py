"""ObjectsProvider / EmptyProvider / load_context_file: a cluster made of plain objects."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.context import (
    EmptyProvider,
    ObjectsProvider,
    builtin_kind_of,
    builtin_resource_of,
    load_context_file,
    parse_group_version,
)
from kubectl_kyrec.cel.decl import CelFunctionError


def cm(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "7"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"n": 1}}


OBJECTS = [cm("b", "default", {"app": "x"}), cm("a", "default", {"app": "y"}), cm("c", "other", {"app": "x"}),
           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "namespace": "stray"}},
           {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}]


def context(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context", "metadata": {"name": "c"}, "spec": spec}


def test_get_returns_the_object_verbatim_and_none_on_a_miss() -> None:
    provider = ObjectsProvider(OBJECTS)
    got = provider.get_resource("v1", "configmaps", "default", "a")
    assert got == cm("a", "default", {"app": "y"})  # uid and resourceVersion kept, ints stay ints
    assert provider.get_resource("v1", "configmaps", "default", "zz") is None
    assert provider.get_resource("v1", "configmaps", "other", "a") is None
    assert provider.get_resource("apps/v1", "configmaps", "default", "a") is None  # another group/version


def test_get_hands_out_copies() -> None:
    provider = ObjectsProvider(OBJECTS)
    provider.get_resource("v1", "configmaps", "default", "a")["data"]["n"] = 2  # type: ignore[index]
    assert provider.get_resource("v1", "configmaps", "default", "a")["data"]["n"] == 1  # type: ignore[index]


def test_cluster_scoped_objects_ignore_a_stray_namespace() -> None:
    provider = ObjectsProvider(OBJECTS)
    assert provider.get_resource("v1", "namespaces", "", "default") is not None
    assert provider.get_resource("v1", "namespaces", "stray", "default") is None


def test_status_subresource_answers_the_object_and_others_fail() -> None:
    provider = ObjectsProvider(OBJECTS)
    assert provider.get_resource("v1", "configmaps/status", "default", "a") is not None
    with pytest.raises(CelFunctionError, match="subresource 'scale' is not available offline"):
        provider.get_resource("v1", "configmaps/scale", "default", "a")


def test_list_is_a_full_list_object_sorted_by_namespace_and_name() -> None:
    listed = ObjectsProvider(OBJECTS).list_resources("v1", "configmaps", "default", None)
    assert listed["apiVersion"] == "v1"
    assert listed["kind"] == "ConfigMapList"
    assert listed["metadata"] == {}
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]


def test_list_all_namespaces_and_label_selectors() -> None:
    provider = ObjectsProvider(OBJECTS)
    everything = provider.list_resources("v1", "configmaps", "", None)
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everything["items"]] == [
        ("default", "a"), ("default", "b"), ("other", "c")]
    selected = provider.list_resources("v1", "configmaps", "", {"app": "x"})
    assert [i["metadata"]["name"] for i in selected["items"]] == ["b", "c"]
    assert provider.list_resources("v1", "configmaps", "", {"app": "x", "tier": "web"})["items"] == []


def test_list_of_a_known_kind_without_objects_is_empty() -> None:
    assert ObjectsProvider(OBJECTS).list_resources("apps/v1", "deployments", "default", None) == {
        "apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": []}


def test_list_of_an_unknown_resource_or_a_namespaced_cluster_resource_is_not_found() -> None:
    provider = ObjectsProvider(OBJECTS)
    with pytest.raises(CelFunctionError, match="^the server could not find the requested resource$"):
        provider.list_resources("example.com/v1", "gadgets", "", None)
    with pytest.raises(CelFunctionError, match="^the server could not find the requested resource$"):
        provider.list_resources("v1", "namespaces", "default", None)


def test_unknown_kinds_are_skipped_and_reported() -> None:
    provider = ObjectsProvider(OBJECTS)
    assert provider.skipped == [("example.com/v1", "Widget", "w")]


def test_injected_lookups_cover_custom_kinds() -> None:
    def resource_of(api_version: str, kind: str) -> tuple[str, bool] | None:
        return ("widgets", True) if kind == "Widget" else builtin_resource_of(api_version, kind)

    def kind_of(api_version: str, resource: str) -> str | None:
        return "Widget" if resource == "widgets" else builtin_kind_of(api_version, resource)

    provider = ObjectsProvider(OBJECTS, resource_of, kind_of=kind_of)
    assert provider.skipped == []
    assert provider.get_resource("example.com/v1", "widgets", "default", "w") is not None
    assert provider.list_resources("example.com/v1", "widgets", "other", None)["kind"] == "WidgetList"
    assert provider.to_gvr("example.com/v1", "Widget") == {"group": "example.com", "version": "v1",
                                                           "resource": "widgets"}


def test_to_gvr() -> None:
    provider = ObjectsProvider()
    assert provider.to_gvr("apps/v1", "Deployment") == {"group": "apps", "version": "v1", "resource": "deployments"}
    with pytest.raises(CelFunctionError, match='^no matches for kind "Gadget" in version "example.com/v1"$'):
        provider.to_gvr("example.com/v1", "Gadget")


def test_bad_api_version() -> None:
    assert parse_group_version("") == ("", "")
    assert parse_group_version("v1") == ("", "v1")
    assert parse_group_version("apps/v1") == ("apps", "v1")
    with pytest.raises(CelFunctionError, match="^unexpected GroupVersion string: a/b/c$"):
        ObjectsProvider().get_resource("a/b/c", "x", "", "y")


def test_post_needs_a_cluster() -> None:
    with pytest.raises(CelFunctionError, match="needs a cluster"):
        ObjectsProvider().post_resource("v1", "configmaps", "default", {})


def test_context_file_resources_and_images() -> None:
    provider = ObjectsProvider(context_file=context(
        resources=[cm("from-file", "default")],
        images=[{"image": "docker.io/redis:latest", "config": {"created": "2099-05-01T03:15:12-07:00", "n": 2}}]))
    assert provider.get_resource("v1", "configmaps", "default", "from-file") is not None
    # json.Marshal(ImageData) then json.Unmarshal: required fields present, numbers doubles, empty optionals gone
    assert provider.image_metadata("docker.io/redis:latest") == {
        "image": "docker.io/redis:latest", "resolvedImage": "", "registry": "", "repository": "",
        "config": {"created": "2099-05-01T03:15:12-07:00", "n": 2.0}}
    with pytest.raises(CelFunctionError, match="^image data for redis not found in the context$"):
        provider.image_metadata("redis")


def test_global_context_entries_and_projections() -> None:
    provider = ObjectsProvider(context_file=context(globalContext=[
        {"name": "e", "value": {"count": 3}}, {"name": "e", "projection": "count", "value": 3},
        {"name": "only-projected", "projection": "p", "value": "x"}]))
    assert provider.global_context("e", "") == {"count": 3.0}
    assert provider.global_context("e", "count") == 3.0
    assert provider.global_context("e", "missing") == {"count": 3.0}  # falls back to the default projection
    assert provider.global_context("absent", "") is None
    with pytest.raises(CelFunctionError, match='projection "q" not found - available projections: \\[p\\]'):
        provider.global_context("only-projected", "q")


def test_http_stubs() -> None:
    provider = ObjectsProvider(context_file=context(http=[
        {"method": "get", "url": "http://svc/a", "body": {"n": 1}},
        {"method": "POST", "url": "http://svc/b", "status": 201, "body": [1, 2]}]))
    assert provider.http_request("GET", "http://svc/a", None, {}) == {"n": 1.0, "statusCode": 200}
    assert provider.http_request("POST", "http://svc/b", {"x": 1}, {}) == {"body": [1.0, 2.0], "statusCode": 201}
    with pytest.raises(CelFunctionError, match=r'Get "http://svc/c": no HTTP stub found for GET http://svc/c'):
        provider.http_request("GET", "http://svc/c", None, {})


def test_without_stubs_http_needs_the_network() -> None:
    with pytest.raises(CelFunctionError, match=r"^http\.Get: needs network access \(not available offline\)$"):
        ObjectsProvider().http_request("GET", "http://x", None, {})


def test_file_fixtures_go_through_read_file() -> None:
    doc = context(globalContext=[{"name": "e", "valueFile": "v.yaml"}], http=[
        {"method": "GET", "url": "http://x", "bodyFile": "b.json"}])
    files = {"v.yaml": {"a": 1}, "b.json": {"ok": True}}
    provider = ObjectsProvider(context_file=doc, read_file=files.__getitem__)
    assert provider.global_context("e", "") == {"a": 1.0}
    assert provider.http_request("GET", "http://x", None, {}) == {"ok": True, "statusCode": 200}
    with pytest.raises(ValueError, match="needs file access"):
        load_context_file(doc)


@pytest.mark.parametrize(("doc", "message"), [
    ({"apiVersion": "v1", "kind": "ConfigMap"}, "expected apiVersion cli.kyverno.io/v1alpha1"),
    ({"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context"}, "spec is required"),
    (context(images=[{"config": {}}]), "spec.images\\[\\].image is required"),
    (context(resources="x"), "spec.resources must be a list of objects"),
    (context(http=[{"url": "http://x"}]), "spec.http\\[\\] needs method and url"),
])
def test_invalid_context_documents(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_context_file(doc)


def test_empty_provider_is_an_empty_cluster_without_network() -> None:
    provider = EmptyProvider()
    assert provider.get_resource("v1", "pods", "default", "p") is None
    assert provider.list_resources("v1", "pods", "", None)["items"] == []
    assert provider.global_context("anything", "") is None
    with pytest.raises(CelFunctionError, match="needs registry access"):
        provider.image_metadata("nginx")
    with pytest.raises(CelFunctionError, match="needs network access"):
        provider.http_request("POST", "http://x", {}, {})
