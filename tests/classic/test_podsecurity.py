"""validate.podSecurity: the Pod Security Standards checks and Kyverno's exclude-by-control/image."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.classic.podsecurity import evaluate, findings


def _pod(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p", "annotations": annotations or {}}, "spec": spec}


_RESTRICTED_OK = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                  "containers": [{"name": "c", "image": "nginx",
                                  "securityContext": {"allowPrivilegeEscalation": False,
                                                      "capabilities": {"drop": ["ALL"]}}}]}


def test_baseline_passes_a_plain_pod_and_restricted_does_not() -> None:
    pod = _pod({"containers": [{"name": "c", "image": "nginx"}]})
    assert findings(pod, "baseline") == []
    controls = {f.control for f in findings(pod, "restricted")}
    assert controls == {"Privilege Escalation", "Running as Non-root", "Seccomp", "Capabilities"}


def test_baseline_controls() -> None:
    pod = _pod({"hostNetwork": True, "volumes": [{"name": "v", "hostPath": {"path": "/"}}],
                "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 80}],
                                "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]},
                                                    "procMount": "Unmasked"}}]},
               {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"})
    assert {f.control for f in findings(pod, "baseline")} == {
        "Host Namespaces", "HostPath Volumes", "AppArmor", "Privileged Containers", "Capabilities",
        "Host Ports", "/proc Mount Type"}


def test_restricted_ok_pod_passes_with_kyverno_message() -> None:
    response = evaluate("r", {"level": "restricted", "version": "latest"}, _pod(_RESTRICTED_OK))
    assert response is not None and response.status == "pass"
    assert response.message == "Validation rule 'r' passed."


def test_exclude_by_control_and_image() -> None:
    pod = _pod({"containers": [{"name": "c", "image": "nginx",
                                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]})
    spec: dict[str, Any] = {"level": "baseline", "version": "latest"}
    failed = evaluate("r", spec, pod)
    assert failed is not None and failed.status == "fail"
    assert failed.message.startswith("Validation rule 'r' failed. It violates PodSecurity \"baseline:latest\"")
    other = evaluate("r", {**spec, "exclude": [{"controlName": "Capabilities", "images": ["redis*"]}]}, pod)
    assert other is not None and other.status == "fail"
    excluded = evaluate("r", {**spec, "exclude": [{"controlName": "Capabilities", "images": ["ngi*"]}]}, pod)
    assert excluded is not None and excluded.status == "pass"


def test_controllers_use_their_pod_template_and_other_kinds_give_no_result() -> None:
    deploy = {"kind": "Deployment", "spec": {"template": _pod({"hostPID": True, "containers": []})}}
    response = evaluate("r", {"level": "baseline"}, deploy)
    assert response is not None and response.status == "fail"
    assert evaluate("r", {"level": "baseline"}, {"kind": "ConfigMap", "data": {}}) is None
