"""validate.podSecurity: PSA's checks per version, Kyverno's exemptions, messages and report properties.

Expected texts are written from the code (PSA policy/check_*.go in Kyverno's fork, kk pkg/pss/evaluate.go,
handlers/validation/validate_pss.go, pkg/utils/report/results.go); the three taken from Kyverno's own
conformance reports say so.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.classic.podsecurity import PssException, evaluate
from kubectl_kyrec.classic.pss_checks import evaluate_pod, parse_version
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import run_files

PREFIX = "Validation rule 'r' failed. It violates PodSecurity "


def _pod(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p", "annotations": annotations or {}}, "spec": spec}


def _ids(level: str, version: str, pod: dict[str, Any]) -> list[str]:
    return [f.id for f in evaluate_pod(level, parse_version(version), pod["metadata"], pod["spec"])]


_RESTRICTED_OK = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                  "containers": [{"name": "c", "image": "nginx",
                                  "securityContext": {"allowPrivilegeEscalation": False,
                                                      "capabilities": {"drop": ["ALL"]}}}]}


def test_restricted_plain_pod_message_and_properties() -> None:
    out = evaluate("r", {"level": "restricted", "version": "latest"},
                   _pod({"containers": [{"name": "c", "image": "nginx"}]}))
    assert out.response.status == "fail"
    assert out.response.message == PREFIX + '"restricted:latest": ' + "".join([
        "(Forbidden reason: allowPrivilegeEscalation != false, field error list: "
        "[spec.containers[0].securityContext.allowPrivilegeEscalation: Required value])",
        "(Forbidden reason: unrestricted capabilities, field error list: "
        "[spec.containers[0].securityContext.capabilities.drop: Required value])",
        "(Forbidden reason: runAsNonRoot != true, field error list: "
        "[spec.containers[0].securityContext.runAsNonRoot: Required value])",
        "(Forbidden reason: seccompProfile, field error list: "
        "[spec.containers[0].securityContext.seccompProfile.type: Required value])"])
    assert out.properties["standard"] == "restricted" and out.properties["version"] == "latest"
    assert out.properties["controls"] == \
        "allowPrivilegeEscalation,capabilities_restricted,runAsNonRoot,seccompProfile_restricted"
    controls = json.loads(out.properties["controlsJSON"])
    assert controls[0] == {"ID": "allowPrivilegeEscalation", "Name": "Privilege Escalation",
                           "Images": ["docker.io/nginx:latest"]}
    assert [c["Name"] for c in controls] == ["Privilege Escalation", "Capabilities", "Running as Non-root",
                                             "Seccomp"]


def test_pass_has_no_properties_and_version_is_written_as_given() -> None:
    out = evaluate("r", {"level": "restricted"}, _pod(_RESTRICTED_OK))
    assert (out.response.status, out.response.message, out.properties) == \
        ("pass", "Validation rule 'r' passed.", {})
    failed = evaluate("r", {"level": "baseline"}, _pod({"hostPID": True, "containers": []}))
    # no version: Kyverno evaluates latest but prints the empty field
    assert failed.response.message == PREFIX + '"baseline:": (Forbidden reason: host namespaces, field error ' \
                                               "list: [spec.hostPID is forbidden, forbidden values found: true])"
    assert failed.properties["version"] == ""


def test_forbidden_values_formats() -> None:
    pod = _pod({"hostNetwork": True, "volumes": [{"name": "v", "hostPath": {"path": "/etc"}}],
                "containers": [{"name": "c", "image": "nginx", "ports": [{"hostPort": 8080}, {"hostPort": 80}],
                                "securityContext": {"capabilities": {"add": ["SYS_TIME", "NET_ADMIN"]},
                                                    "procMount": "Unmasked"}}]})
    out = evaluate("r", {"level": "baseline", "version": "latest"}, pod)
    assert out.response.message == PREFIX + '"baseline:latest": ' + "".join([
        "(Forbidden reason: non-default capabilities, field error list: [spec.containers[0].securityContext."
        "capabilities.add is forbidden, forbidden values found: [NET_ADMIN SYS_TIME]])",
        "(Forbidden reason: host namespaces, field error list: [spec.hostNetwork is forbidden, forbidden values "
        "found: true])",
        "(Forbidden reason: hostPath volumes, field error list: [spec.volumes[0].hostPath is forbidden, forbidden "
        "values found: /etc])",
        "(Forbidden reason: hostPort, field error list: [spec.containers[0].ports[0].hostPort is forbidden, "
        "forbidden values found: 8080, spec.containers[0].ports[1].hostPort is forbidden, forbidden values found: "
        "80])",
        "(Forbidden reason: procMount, field error list: [spec.containers[0].securityContext.procMount is "
        "forbidden, forbidden values found: Unmasked])"])
    # images only where the detail names containers before "must": hostPort's detail has no "must"
    controls = json.loads(out.properties["controlsJSON"])
    assert [(c["ID"], c["Images"]) for c in controls] == [
        ("capabilities_baseline", ["docker.io/nginx:latest"]), ("hostNamespaces", None),
        ("hostPathVolumes", None), ("hostPorts", None), ("procMount", ["docker.io/nginx:latest"])]


def test_restricted_volume_without_value_prints_plain_forbidden() -> None:
    pod = _pod({**_RESTRICTED_OK, "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}},
                                             {"name": "i", "image": {"reference": "x"}}]})
    out = evaluate("r", {"level": "restricted", "version": "latest"}, pod)
    assert out.response.message == PREFIX + '"restricted:latest": (Forbidden reason: restricted volume types, ' \
                                            "field error list: [spec.volumes[0].nfs: Forbidden])"


@pytest.mark.parametrize(("version", "failing"), [("v1.31", ["sysctls"]), ("v1.32", []), ("latest", [])])
def test_sysctls_per_version(version: str, failing: list[str]) -> None:
    pod = _pod({"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}]}, "containers": []})
    assert _ids("baseline", version, pod) == failing


@pytest.mark.parametrize(("version", "failing"), [("v1.30", ["seLinuxOptions"]), ("v1.31", [])])
def test_selinux_engine_type_from_1_31(version: str, failing: list[str]) -> None:
    pod = _pod({"containers": [{"name": "c", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}]})
    assert _ids("baseline", version, pod) == failing


def test_seccomp_annotations_before_1_19_fields_after() -> None:
    pod = _pod({"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "c"}]},
               {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"})
    old = evaluate("r", {"level": "baseline", "version": "v1.18"}, pod)
    assert old.response.message == PREFIX + '"baseline:v1.18": (Forbidden reason: seccompProfile, field error ' \
        "list: [spec.template.metadata.annotations[seccomp.security.alpha.kubernetes.io/pod] is forbidden, " \
        "forbidden values found: unconfined])"
    new = evaluate("r", {"level": "baseline", "version": "v1.19"}, pod)
    assert "spec.securityContext.seccompProfile.type is forbidden, forbidden values found: Unconfined" in \
        new.response.message


def test_windows_pods_from_1_25_and_checks_older_than_the_version_still_run() -> None:
    pod = _pod({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True},
                "containers": [{"name": "c", "livenessProbe": {"httpGet": {"host": "evil", "port": 80}}}]})
    assert _ids("restricted", "v1.25", pod) == ["hostProbesAndHostLifecycle"]
    # before 1.25 windows pods are not exempted; Kyverno runs a check's first variant even for a version older
    # than it (hostProbesAndHostLifecycle is 1.34+, runAsUser 1.23+)
    assert _ids("restricted", "v1.0", pod) == ["allowPrivilegeEscalation", "capabilities_restricted",
                                               "hostProbesAndHostLifecycle", "seccompProfile_restricted"]
    out = evaluate("r", {"level": "baseline", "version": "v1.0"}, pod)
    assert out.response.message == PREFIX + '"baseline:v1.0": (Forbidden reason: probe or lifecycle host, ' \
                                            "field error list: [])"
    assert json.loads(out.properties["controlsJSON"]) == [{"ID": "hostProbesAndHostLifecycle", "Name": "",
                                                           "Images": None}]


def test_privileged_level_runs_every_check_and_bad_versions_are_errors() -> None:
    assert "runAsNonRoot" in _ids("privileged", "latest", _pod({"containers": [{"name": "c"}]}))
    out = evaluate("r", {"level": "baseline", "version": "v2.0"}, _pod({"containers": []}))
    assert (out.response.status, out.response.message) == \
        ("error", 'failed to parse pod security api version: must be "latest" or "v1.x"')


def test_other_kinds_are_an_error() -> None:
    out = evaluate("r", {"level": "baseline"}, {"kind": "ConfigMap", "metadata": {"name": "x"}})
    assert (out.response.status, out.response.message) == \
        ("error", "Error while getting new resource: could not find correct resource type")


def test_controllers_rename_fields_and_cronjob_reads_the_job_template_metadata() -> None:
    template = _pod({"containers": [{"name": "inspector", "image": "nginx"}]},
                    {"container.apparmor.security.beta.kubernetes.io/inspector": "unconfined"})
    deploy = {"kind": "Deployment", "spec": {"template": template}}
    out = evaluate("r", {"level": "baseline", "version": "latest"}, deploy)
    # Kyverno replaces every "spec" in a field, the one inside the container's name too
    assert out.response.message == PREFIX + '"baseline:latest": (Forbidden reason: forbidden AppArmor profile, ' \
        "field error list: [spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/" \
        "inspec.template.spector] is forbidden, forbidden values found: unconfined])"
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": template}}}}
    assert evaluate("r", {"level": "baseline"}, cron).response.status == "pass"
    cron["spec"]["jobTemplate"]["metadata"] = {"annotations": template["metadata"]["annotations"]}
    template["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    message = evaluate("r", {"level": "baseline"}, cron).response.message
    assert "spec.jobTemplate.spec.template.spec.containers[0].securityContext.privileged is forbidden" in message
    assert "forbidden AppArmor profile" in message


# -- exemptions -------------------------------------------------------------------------------------------

_CAPS = _pod({"containers": [{"name": "a", "image": "nginx:1",
                              "securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_TIME"]}}},
                             {"name": "b", "image": "redis:7",
                              "securityContext": {"capabilities": {"add": ["SYS_TIME"]}}}]})
_FIELD = "spec.containers[*].securityContext.capabilities.add"


@pytest.mark.parametrize(("exclude", "status"), [
    ({"controlName": "Capabilities", "images": ["*"]}, "pass"),
    ({"controlName": "Capabilities", "images": ["nginx*"]}, "fail"),
    ({"controlName": "Capabilities", "images": ["*"], "restrictedField": _FIELD, "values": ["NET_ADMIN"]}, "fail"),
    ({"controlName": "Capabilities", "images": ["*"], "restrictedField": _FIELD, "values": ["NET_ADMIN", "SYS_*"]},
     "pass"),
    ({"controlName": "Capabilities", "images": ["*"],
      "restrictedField": _FIELD.replace("containers", "initContainers")}, "fail"),
    ({"controlName": "Host Ports", "images": ["*"]}, "fail"),
])
def test_container_level_exclusions(exclude: dict[str, Any], status: str) -> None:
    assert evaluate("r", {"level": "baseline", "exclude": [exclude]}, _CAPS).response.status == status


def test_container_exclusion_keeps_the_other_containers_errors() -> None:
    out = evaluate("r", {"level": "baseline", "version": "latest", "exclude": [
        {"controlName": "Capabilities", "images": ["redis*"], "restrictedField": _FIELD, "values": ["SYS_TIME"]}]},
        _CAPS)
    assert out.response.message == PREFIX + '"baseline:latest": (Forbidden reason: non-default capabilities, ' \
        "field error list: [spec.containers[0].securityContext.capabilities.add is forbidden, forbidden values " \
        "found: [NET_ADMIN SYS_TIME]])"
    # the detail still names both containers, so both images are listed (as in Kyverno's reports)
    assert json.loads(out.properties["controlsJSON"])[0]["Images"] == ["docker.io/nginx:1", "docker.io/redis:7"]


def test_pod_level_exclusion_by_field_and_value() -> None:
    pod = _pod({"hostNetwork": True, "hostPID": True, "containers": []})
    spec = {"level": "baseline", "version": "latest",
            "exclude": [{"controlName": "Host Namespaces", "restrictedField": "spec.hostNetwork", "values": ["true"]}]}
    out = evaluate("r", spec, pod)
    assert out.response.message == PREFIX + '"baseline:latest": (Forbidden reason: host namespaces, field error ' \
                                            "list: [spec.hostPID is forbidden, forbidden values found: true])"
    spec["exclude"][0]["values"] = ["false"]
    assert "spec.hostNetwork is forbidden" in evaluate("r", spec, pod).response.message


def test_removal_order_is_go_remove() -> None:
    # the removed error's place is taken by the last one
    pod = _pod({"securityContext": {"sysctls": [{"name": n} for n in ("kernel.a", "kernel.b", "kernel.c")]},
                "containers": []})
    out = evaluate("r", {"level": "baseline", "version": "latest", "exclude": [
        {"controlName": "Sysctls", "restrictedField": "spec.securityContext.sysctls[*].name",
         "values": ["kernel.a"]}]}, pod)
    assert out.response.message == PREFIX + '"baseline:latest": (Forbidden reason: forbidden sysctls, field ' \
        "error list: [spec.securityContext.sysctls[2].name is forbidden, forbidden values found: kernel.c, " \
        "spec.securityContext.sysctls[1].name is forbidden, forbidden values found: kernel.b])"


def test_pod_level_exclusion_of_a_container_field_removes_one_error() -> None:
    # Kyverno checks a stand-in pod whose containers are one empty "fake": its one error (indexes read as `*`)
    # removes one matching error of the real pod, whichever container that is
    container = {"name": "a", "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
    spec = {"level": "restricted", "exclude": [{"controlName": "Running as Non-root"}]}
    base = {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
    assert evaluate("r", spec, _pod({**base, "containers": [container]})).response.status == "pass"
    out = evaluate("r", spec, _pod({**base, "containers": [container, {**container, "name": "b"}]}))
    assert out.response.message.endswith("(Forbidden reason: runAsNonRoot != true, field error list: "
                                         "[spec.containers[1].securityContext.runAsNonRoot: Required value])")


_POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pss}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: LEVEL
        exclude:
        - EXCLUDE
"""


@pytest.mark.parametrize(("level", "exclude", "message"), [
    ("restricted", "{controlName: Capabilities}", "spec.rules[0].validate.podSecurity.exclude[0].controlName: "
     "Invalid value: 'Capabilities': exclude.images must be specified for the container level control"),
    ("restricted", "{controlName: Sysctls, images: [nginx]}", "exclude.images must not be specified for the pod "
     "level control"),
    ("restricted", "{controlName: Sysctls, restrictedField: 'spec.securityContext.sysctls[*].name'}",
     "exclude[0].values: Forbidden: values is required"),
    ("restricted", "{controlName: Sysctls, values: [a]}", "exclude[0].restrictedField: Forbidden: restrictedField "
     "is required"),
    ("baseline", "{controlName: Running as Non-root}", "Invalid control name defined at the given level"),
])
def test_kyverno_refuses_bad_exclusions(level: str, exclude: str, message: str) -> None:
    text = _POLICY.replace("LEVEL", level).replace("EXCLUDE", exclude)
    with pytest.raises(InputError) as info:
        classify(documents_from_text(text, "p.yaml")).raise_errors()
    assert message in str(info.value)
    # the same entry in a PolicyException is refused too, the level check aside
    if level == "restricted":
        exception = ("apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata: {name: e, namespace: n}\nspec:\n"
                     "  exceptions: [{policyName: pss, ruleNames: [r]}]\n"
                     "  match: {any: [{resources: {kinds: [Pod]}}]}\n"
                     f"  podSecurity:\n  - {exclude}\n")
        with pytest.raises(InputError, match=r"spec\.podSecurity\[0\]"):
            classify(documents_from_text(exception, "e.yaml")).raise_errors()
    assert classify(documents_from_text(_POLICY.replace("LEVEL", "restricted").replace(
        "EXCLUDE", "{controlName: Capabilities, images: ['*']}"), "p.yaml")).raise_errors().classic


def test_exceptions() -> None:
    spec = {"level": "baseline", "version": "latest"}
    plain = PssException("ns/plain", "plain", ())
    out = evaluate("r", spec, _CAPS, [plain])
    assert (out.response.status, out.response.message, out.properties) == \
        ("skip", "rule is skipped due to policy exception ns/plain", {"exceptions": "plain"})
    some = PssException("ns/a", "a", ({"controlName": "Capabilities", "images": ["nginx*"]},))
    rest = PssException("ns/b", "b", ({"controlName": "Capabilities", "images": ["redis*"]},))
    partial = evaluate("r", spec, _CAPS, [some])
    assert partial.response.status == "fail" and "exceptions" not in partial.properties
    both = evaluate("r", spec, _CAPS, [some, rest])
    assert (both.response.status, both.response.message, both.properties) == \
        ("skip", "rule is skipped due to policy exceptions ns/a, ns/b", {"exceptions": "a,b"})
    # a pod that passes passes, whatever exceptions matched
    assert evaluate("r", spec, _pod({"containers": []}), [some]).response.status == "pass"


def test_cli_update_value_makes_an_existing_violation() -> None:
    suite = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "podsecurity-suite" / "kyverno-test.yaml"
    for mode in Mode:
        runs, load_errors = run_files([str(suite)], now=datetime.datetime(2026, 8, 1, tzinfo=datetime.UTC),
                                      mode=mode)
        assert load_errors == [] and runs[0].errors == []
        assert [(r.resource, r.actual, r.passed) for r in runs[0].rows] == \
            [("app/old", "skip", True), ("app/new", "fail", True)], mode


def test_rules_sharing_a_pods_checks_do_not_see_each_others_exemptions_or_renames() -> None:
    # one memo, as for the rules of one subject: the first rule exempts Capabilities and renames the fields
    # for the Deployment; the second, with the same level and version, still reports them as PSA gives them
    deployment = {"kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    memo: dict[Any, Any] = {}
    spec = {"level": "restricted", "version": "latest"}
    exempting = evaluate("r", {**spec, "exclude": [{"controlName": "Capabilities", "images": ["nginx"]}]},
                         deployment, memo=memo)
    plain = evaluate("r", spec, deployment, memo=memo)
    alone = evaluate("r", spec, deployment)
    assert len(memo) == 1
    assert "capabilities" not in exempting.response.message
    assert plain == alone
    assert "spec.template.spec.containers[0].securityContext.capabilities.drop: Required value" in \
        plain.response.message and "spec.template.spec.template" not in plain.response.message
