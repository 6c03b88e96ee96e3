"""kyverno_libraries: what each policy kind is compiled with (docs/semantics/cel-libraries.md#kyvernos-libraries)."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.kyverno_libs import kyverno_libraries

NOW = datetime.datetime(2025, 1, 2, 15, 30, tzinfo=datetime.timezone.utc)
STUBBED = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
           "spec": {"http": [{"method": "GET", "url": "http://x", "body": {"ok": True}}]}}


def env_for(kind: str, namespace: str = "", allow_http: bool = False, provider: Any = None) -> Environment:
    ctx = LibraryContext(NOW, provider or EmptyProvider(), namespace, random.Random(1))
    return Environment(kyverno_libraries(ctx, policy_kind=kind, allow_http_in_namespaced_policies=allow_http),
                       ["object"])


def run(env: Environment, expr: str) -> Any:
    outcome = env.compile(expr).evaluate(env.activation({"object": {}}))
    return outcome.error if outcome.error is not None else outcome.value


EVERY_KIND_HAS = [
    'json.marshal(json.unmarshal("[1]"))', 'yaml.parse("a: 1").a', "time.now()", 'time.toCron(time.now())',
    "math.round(1.25, 1)", 'sha256("a")', 'hash.sha1("a")', 'md5("a")', "random()", 'random.random("[a]")',
    'x509.decode("x")', 'listObjToMap([], [], "k", "v")', 'transform.listObjToMap([], [], "k", "v")',
    'gzip.decompress(gzip.compress("a"))', 'image("nginx").registry()', 'parseImageReference("nginx").tag()',
    'isImage("nginx")', 'globalContext.Get("x")', 'globalContext.get("x", "y")', 'image.GetMetadata("x")',
    'image.getMetadata("x")', 'http.Get("http://x")', 'http.get("http://x")', 'http.Post("http://x", {})',
    'http.Client("")', 'resource.ToGVR("v1", "Pod")', 'resource.toGVR("v1", "Pod")',
]


@pytest.mark.parametrize(("kind", "namespace"), [("ValidatingPolicy", ""), ("NamespacedValidatingPolicy", "ns"),
                                                 ("GeneratingPolicy", ""), ("NamespacedGeneratingPolicy", "ns")])
def test_every_kyverno_policy_kind_gets_the_common_libraries(kind: str, namespace: str) -> None:
    env = env_for(kind, namespace)
    for expr in EVERY_KIND_HAS:
        env.compile(expr)  # raises CompileError when a function is missing


def test_user_library_is_for_validating_policies_only() -> None:
    for kind, namespace in (("ValidatingPolicy", ""), ("NamespacedValidatingPolicy", "ns")):
        assert run(env_for(kind, namespace), 'parseServiceAccount("system:serviceaccount:a:b").Name') == "b"
        assert run(env_for(kind, namespace), 'user.parseServiceAccount("system:serviceaccount:a:b").Namespace') == "a"
    for kind, namespace in (("GeneratingPolicy", ""), ("NamespacedGeneratingPolicy", "ns")):
        with pytest.raises(CompileError):
            env_for(kind, namespace).compile('parseServiceAccount("x")')


def test_validating_admission_policies_get_no_kyverno_library() -> None:
    ctx = LibraryContext(NOW, EmptyProvider())
    assert kyverno_libraries(ctx, policy_kind="ValidatingAdmissionPolicy") == []


def test_namespaced_kinds_get_namespaced_resource_overloads() -> None:
    provider = ObjectsProvider([{"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "c", "namespace": "team"}}])
    env = env_for("NamespacedGeneratingPolicy", "team", provider=provider)
    assert run(env, 'resource.Get("v1", "configmaps", "c").metadata.name') == "c"
    with pytest.raises(CompileError):
        env.compile('resource.Get("v1", "configmaps", "team", "c")')
    cluster = env_for("GeneratingPolicy", provider=provider)
    assert run(cluster, 'resource.Get("v1", "configmaps", "team", "c").metadata.name') == "c"


def test_http_in_namespaced_policies_needs_the_operator_flag() -> None:
    provider = ObjectsProvider(context_file=STUBBED)
    assert str(run(env_for("NamespacedValidatingPolicy", "ns", provider=provider), 'http.Get("http://x")')
               ).endswith("set --allowHTTPInNamespacedPolicies to enable")
    assert run(env_for("NamespacedValidatingPolicy", "ns", allow_http=True, provider=provider),
               'http.Get("http://x").ok') is True
    assert run(env_for("ValidatingPolicy", provider=provider), 'http.Get("http://x").ok') is True


def test_global_context_is_denied_in_namespaced_policies_only() -> None:
    assert run(env_for("ValidatingPolicy"), 'globalContext.Get("x") == null') is True
    assert str(run(env_for("NamespacedGeneratingPolicy", "ns"), 'globalContext.Get("x")')).endswith(
        "not allowed in namespaced policies")


def test_time_now_is_the_context_clock() -> None:
    assert run(env_for("GeneratingPolicy"), "time.now()") == NOW


def test_namespaced_kind_without_a_namespace_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="policy_namespace"):
        kyverno_libraries(LibraryContext(NOW, EmptyProvider()), policy_kind="NamespacedValidatingPolicy")


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="no Kyverno libraries for policy kind 'ClusterPolicy'"):
        kyverno_libraries(LibraryContext(NOW, EmptyProvider()), policy_kind="ClusterPolicy")
