"""All Kubernetes CEL libraries in one environment, on the kind of expressions Kyverno policies hold."""

import copy
from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-7d4b9",
        "namespace": "shop",
        "labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/version": "v1.24"},
        "annotations": {"example.com/callback": "https://hooks.example.com:8443/notify?team=shop&team=ops"},
    },
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/shop/web:1.24.3",
                "resources": {"limits": {"memory": "512Mi", "cpu": "500m"},
                              "requests": {"memory": "256Mi", "cpu": "250m"}},
                "ports": [{"containerPort": 8080}, {"containerPort": 8443}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "FEATURE_X", "value": "on"}],
            },
            {
                "name": "sidecar",
                "image": "registry.example.com/tools/proxy:2.0.0-rc.1",
                "resources": {"limits": {"memory": "0.25Gi", "cpu": "0.1"},
                              "requests": {"memory": "128Mi", "cpu": "100m"}},
                "ports": [{"containerPort": 15001}],
                "env": [],
            },
        ],
        "hostAliases": [{"ip": "10.20.0.15", "hostnames": ["db.internal"]}],
    },
}

ENV = Environment(kubernetes_libraries(), ["object"])


def evaluate(expr: str, obj: object = POD):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


CASES = [
    ("quantity(object.spec.containers[0].resources.limits.memory).isLessThan(quantity('1Gi'))", True),
    ("object.spec.containers.all(c, quantity(c.resources.requests.cpu).compareTo(quantity('100m')) >= 0)",
     True),
    ("object.spec.containers.all(c, quantity(c.resources.requests.memory)"
     ".isLessThan(quantity(c.resources.limits.memory)) || "
     "quantity(c.resources.requests.memory) == quantity(c.resources.limits.memory))", True),
    # 0.25Gi and 256Mi are the same quantity
    ("quantity(object.spec.containers[1].resources.limits.memory) == quantity('256Mi')", True),
    ("object.spec.containers.map(c, quantity(c.resources.limits.memory).asInteger()).sum()", 805306368),
    ("object.spec.containers.map(c, quantity(c.resources.limits.cpu)).all(q, sign(q) == 1)", True),
    ("quantity(object.spec.containers[1].resources.limits.cpu).add(quantity('400m')) == quantity('0.5')",
     True),
    ("object.spec.containers.map(c, c.image.find('[0-9]+\\\\.[0-9]+\\\\.[0-9]+(-[0-9A-Za-z.]+)?$'))",
     ["1.24.3", "2.0.0-rc.1"]),
    ("object.spec.containers.all(c, isSemver(c.image.find('[^:]+$')))", True),
    ("object.spec.containers.exists(c, semver(c.image.find('[^:]+$')).isLessThan(semver('2.0.0')))", True),
    ("semver(object.metadata.labels['app.kubernetes.io/version'], true).isGreaterThan(semver('1.20.0'))",
     True),
    ("object.spec.hostAliases.all(h, isIP(h.ip) && !ip(h.ip).isLoopback())", True),
    ("object.spec.hostAliases.all(h, cidr('10.20.0.0/16').containsIP(h.ip))", True),
    ("url(object.metadata.annotations['example.com/callback']).getScheme() == 'https'", True),
    ("url(object.metadata.annotations['example.com/callback']).getPort()", "8443"),
    ("url(object.metadata.annotations['example.com/callback']).getQuery()['team']", ["shop", "ops"]),
    ("object.spec.containers[0].ports.map(p, p.containerPort).isSorted()", True),
    ("object.spec.containers[0].ports.map(p, p.containerPort).max()", 8443),
    ("object.spec.containers.map(c, c.name).indexOf('sidecar')", 1),
    ("object.spec.containers[0].env.map(e, e.name).all(n, n.findAll('[a-z]').size() == 0)", True),
    ("'memory limit ' + string(quantity(object.spec.containers[0].resources.limits.memory).asInteger())",
     "memory limit 536870912"),
]


@pytest.mark.parametrize(("expr", "expected"), CASES)
def test_policy_expressions_on_a_pod(expr: str, expected: object) -> None:
    outcome = evaluate(expr)
    assert outcome.error is None, outcome.error
    assert outcome.value == expected


def test_a_pod_that_violates_the_memory_rule() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "2Gi"
    rule = "object.spec.containers.all(c, quantity(c.resources.limits.memory).isLessThan(quantity('1Gi')))"
    assert evaluate(rule).value is True
    assert evaluate(rule, pod).value is False


def test_a_malformed_quantity_in_the_resource_is_an_evaluation_error() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "512K"
    rule = "quantity(object.spec.containers[0].resources.limits.memory).isLessThan(quantity('1Gi'))"
    outcome = evaluate(rule, pod)
    assert outcome.error == "unable to parse quantity's suffix"


def test_guarding_with_is_quantity_avoids_the_error() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "lots"
    outcome = evaluate("object.spec.containers.all(c, isQuantity(c.resources.limits.memory))", pod)
    assert outcome.value is False


def test_shared_member_names_do_not_mix_types() -> None:
    outcome = evaluate("quantity('1').compareTo(semver('1.0.0'))")
    assert outcome.error == "no such overload"
    assert evaluate("string(cidr('10.20.0.0/16').ip())").value == "10.20.0.0"


@pytest.mark.parametrize(("expr", "expected"), [
    ("string(42)", "42"),
    ("string(object.metadata.name)", "web-7d4b9"),
    ("object.metadata.name.indexOf('-')", 3),
    ("object.metadata.name.lastIndexOf('9')", 8),
    ("math.least([3, 1, 2])", 1),
])
def test_builtins_sharing_names_with_kubernetes_functions_still_work(expr: str, expected: object) -> None:
    # string(), indexOf() and lastIndexOf() gained map/list overloads; the existing ones must still win.
    outcome = evaluate(expr)
    assert outcome.error is None
    assert outcome.value == expected
