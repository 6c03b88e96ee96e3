"""convert --verify (issue 38): the variants it compares on are objects Kyverno could decide. A keyed list's
item without the key the API server's validation requires (a container without `name`, a Service port without
`port`) is refused by the real kube-apiserver's validation of the object, which runs before validating admission
webhooks: Kyverno never validates it, what its mutating webhook makes of it is refused in turn (unless a
mutation adds the key: not examined), and no stored object is one: run/convert.py `variants` does not make it
(k8s/list_keys.py required_item_key) and counts it as refused by the API server. The 9 differences the corpus
run showed before (`require-cpu-limits`, `add-runtimeclassname`, `add-labels`) were all on such variants."""

from __future__ import annotations

import copy
from typing import Any

from kubectl_kyrec.run.convert import _apply, variants
from tests.realapi.fixture import RealServer, plural_path


def _pod(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "full", "namespace": namespace},
            "spec": {
                "initContainers": [{"name": "init", "image": "busybox:1"}],
                "containers": [{"name": "app", "image": "nginx:1",
                                "ports": [{"containerPort": 80}],
                                "env": [{"name": "A", "value": "1"}],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": "data", "emptyDir": {}}],
                "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a.example"]}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule"}]}}


def _deployment(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}


def _service(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": namespace},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}


PLURALS = {"Pod": ("v1", "pods"), "Deployment": ("apps/v1", "deployments"), "Service": ("v1", "services")}


def _refused(resource: dict[str, Any]) -> list[str]:
    refused: list[str] = []
    made = [label for label, _ in variants(resource, refused)]
    assert not set(made) & set(refused)
    return refused


def test_variants_do_not_lack_a_required_list_key() -> None:
    """Each container's name, port's containerPort, env's name, ... is never removed; other leaves of the same
    items are, and so are the keys the API server does not require (imagePullSecrets' name) or defaults
    (a port's protocol)."""
    pod = _pod("default")
    pod["spec"]["imagePullSecrets"] = [{"name": "pull"}]
    refused = _refused(pod)
    assert sorted(refused) == sorted([
        "removed spec.initContainers.0.name", "removed spec.containers.0.name",
        "removed spec.containers.0.ports.0.containerPort", "removed spec.containers.0.env.0.name",
        "removed spec.containers.0.volumeMounts.0.mountPath", "removed spec.volumes.0.name",
        "removed spec.hostAliases.0.ip", "removed spec.topologySpreadConstraints.0.topologyKey",
        "removed spec.topologySpreadConstraints.0.whenUnsatisfiable"])
    made = [label for label, _ in variants(pod)]
    assert "removed spec.containers.0.image" in made
    assert "removed spec.containers.0.volumeMounts.0.name" in made
    assert "removed spec.imagePullSecrets.0.name" in made
    assert "changed spec.containers.0.name" in made
    assert _refused(_deployment("default")) == ["removed spec.template.spec.containers.0.name"]
    assert _refused(_service("default")) == ["removed spec.ports.0.port"]
    service = _service("default")
    assert "removed spec.ports.0.protocol" in [label for label, _ in variants(service)]


def test_the_real_api_server_refuses_every_variant_not_made(realapi: RealServer) -> None:
    """A server-side dry-run create of each object: as given it is stored (201), with the key removed it is
    refused (422) with the field named by the object's validation: Kyverno's validating webhook never sees it."""
    namespace = realapi.namespace("variants")
    checked = 0
    for make in (_pod, _deployment, _service):
        resource = make(namespace)
        api_version, plural = PLURALS[resource["kind"]]
        path = plural_path(api_version, plural, namespace)
        answer = realapi.kube.request("POST", path, resource, query={"dryRun": "All"})
        assert answer.status == 201, (resource["kind"], answer)
        for label in _refused(resource):
            steps = tuple(label.removeprefix("removed ").split("."))
            other = copy.deepcopy(resource)
            _apply(other, steps, None, remove=True)
            answer = realapi.kube.request("POST", path, other, query={"dryRun": "All"})
            assert answer.status == 422, (label, answer)
            field = "".join(f"[{s}]" if s.isdigit() else f".{s}" for s in steps).lstrip(".")
            message = answer.json()["message"]
            # the refusal names the removed key (`Required value`, or its zero value invalid: an IP, an enum, a
            # port `0`)
            assert f"{field}: " in message, (label, message)
            checked += 1
    assert checked == 11
