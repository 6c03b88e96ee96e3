"""default_object against the Go source of k8s.io/kubernetes v1.36.3 (pkg/apis/*/v*/defaults.go and the
generated zz_generated.defaults.go that says which defaulter runs on which nested type). Each expectation is
read from that source; tests/realapi/test_defaulting.py checks the same port against the real server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_kyrec.k8s.defaulting import DEFAULTED_KINDS, default_object
from tests.shared_inputs import require


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], **spec}}


def deployment(pod_spec: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec}, **spec}}


def test_input_is_not_changed_and_unknown_kinds_come_back_equal() -> None:
    given = pod()
    before = copy.deepcopy(given)
    out = default_object(given)
    assert given == before and out != before
    custom = {"apiVersion": "example.com/v1", "kind": "Pod", "spec": {"containers": [{"name": "c"}]}}
    assert default_object(custom) == custom
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert default_object(cm) == cm                         # SetDefaults_ConfigMap's data: {} is never written
    assert ("v1", "ConfigMap") not in DEFAULTED_KINDS


# ---- core/v1 Service --------------------------------------------------------------------------------------------

def service(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}


def test_service_defaults_type_affinity_ports_and_traffic_policy() -> None:
    out = default_object(service(ports=[{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"},
                                        {"port": 8080, "targetPort": 0}, {"port": 9090, "targetPort": ""}]))
    spec = out["spec"]
    assert spec["type"] == "ClusterIP" and spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec            # a plain ClusterIP is not externally accessible
    assert [(p["protocol"], p["targetPort"]) for p in spec["ports"]] == [
        ("TCP", 80), ("UDP", "dns"), ("TCP", 8080), ("TCP", 9090)]
    for allocated in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        assert allocated not in spec                       # the REST allocator's, not defaulting


def test_service_session_affinity_config() -> None:
    client_ip = default_object(service(sessionAffinity="ClientIP"))["spec"]
    assert client_ip["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    kept = default_object(service(sessionAffinity="ClientIP",
                                  sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}}))["spec"]
    assert kept["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 60}}
    none = default_object(service(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}}))["spec"]
    assert "sessionAffinityConfig" not in none             # dropped when the affinity is None


@pytest.mark.parametrize(("spec", "external", "internal", "allocate"), [
    ({"type": "NodePort"}, "Cluster", "Cluster", None),
    ({"type": "LoadBalancer"}, "Cluster", "Cluster", True),
    ({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "allocateLoadBalancerNodePorts": False},
     "Local", "Cluster", False),
    ({"type": "ClusterIP", "externalIPs": ["1.2.3.4"]}, "Cluster", "Cluster", None),
    ({"type": "ExternalName", "externalName": "x.example.com"}, None, None, None),
])
def test_service_external_defaults_by_type(spec: dict[str, Any], external: str | None, internal: str | None,
                                           allocate: bool | None) -> None:
    out = default_object(service(**spec))["spec"]
    assert out.get("externalTrafficPolicy") == external
    assert out.get("internalTrafficPolicy") == internal
    assert out.get("allocateLoadBalancerNodePorts") == allocate


# ---- core/v1 Pod and pod templates -------------------------------------------------------------------------------

@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"),                                   # no tag and no digest: ParseImageName says latest
    ("nginx:latest", "Always"),
    ("docker.io/library/nginx:latest", "Always"),
    ("localhost:5000/team/app", "Always"),
    ("nginx:1.25", "IfNotPresent"),
    ("ghcr.io/org/app:latest-rc", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),          # a digest without a tag
    ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("Nginx:latest", "IfNotPresent"),                      # does not parse (uppercase repository): no tag
    ("", "IfNotPresent"),
])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    out = default_object(pod(containers=[{"name": "c", "image": image}]))
    assert out["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_explicit_pull_policy_is_kept() -> None:
    out = default_object(pod(containers=[{"name": "c", "image": "nginx", "imagePullPolicy": "Never"}]))
    assert out["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_pod_spec_and_container_defaults() -> None:
    spec = default_object(pod(containers=[{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}],
                                           "env": [{"name": "N", "valueFrom": {"fieldRef": {
                                               "fieldPath": "metadata.name"}}}]}]))["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "dnsPolicy", "terminationGracePeriodSeconds",
                                 "schedulerName", "securityContext", "enableServiceLinks")} == {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler", "securityContext": {}, "enableServiceLinks": True}
    container = spec["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert container["resources"] == {}                    # a struct: the server writes it even when empty
    for absent in ("serviceAccountName", "priority", "tolerations"):
        assert absent not in spec                          # admission plugins' additions, not defaulting


def test_requests_default_to_limits_in_pods_only() -> None:
    containers = [{"name": "c", "image": "nginx:1", "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                                  "requests": {"cpu": "100m"}}}]
    in_pod = default_object(pod(containers=copy.deepcopy(containers)))["spec"]["containers"][0]
    assert in_pod["resources"]["requests"] == {"cpu": "100m", "memory": "1Gi"}
    in_template = default_object(deployment({"containers": copy.deepcopy(containers)}))
    template_spec = in_template["spec"]["template"]["spec"]
    assert template_spec["containers"][0]["resources"]["requests"] == {"cpu": "100m"}
    assert "enableServiceLinks" not in template_spec       # SetDefaults_Pod is not run on templates
    assert template_spec["restartPolicy"] == "Always"      # SetDefaults_PodSpec is


def test_resource_lists_are_rounded_to_milli_and_written_canonically() -> None:
    out = default_object(pod(containers=[{"name": "c", "image": "x:1", "resources": {
        "limits": {"cpu": "1000m", "memory": "1.5Gi", "example.com/gpu": 1},
        "requests": {"cpu": "0.0001", "memory": "0.5"}}}]))
    resources = out["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": "1", "memory": "1536Mi", "example.com/gpu": "1"}
    assert resources["requests"] == {"cpu": "1m", "memory": "500m", "example.com/gpu": "1"}


def test_host_network_gives_container_ports_host_ports() -> None:
    spec = default_object(pod(hostNetwork=True, containers=[
        {"name": "c", "image": "x:1", "ports": [{"containerPort": 8080}, {"containerPort": 9, "hostPort": 90}]}]))
    assert [p.get("hostPort") for p in spec["spec"]["containers"][0]["ports"]] == [8080, 90]


def test_probe_volume_and_lifecycle_defaults() -> None:
    spec = default_object(pod(
        containers=[{"name": "c", "image": "x:1",
                     "livenessProbe": {"httpGet": {"port": 80}},
                     "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5},
                     "lifecycle": {"preStop": {"httpGet": {"port": 80}}}}],
        volumes=[{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}},
                 {"name": "c", "configMap": {"name": "c", "defaultMode": 256}},
                 {"name": "d", "hostPath": {"path": "/x"}},
                 {"name": "e", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                 {"name": "f", "image": {"reference": "quay.io/x/y"}},
                 {"name": "g", "emptyDir": {"sizeLimit": "1024Mi"}}]))["spec"]
    container = spec["containers"][0]
    assert container["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                                          "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                          "failureThreshold": 3}
    assert container["readinessProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert container["readinessProbe"]["periodSeconds"] == 5
    assert container["lifecycle"]["preStop"]["httpGet"]["scheme"] == "HTTP"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["a"]["emptyDir"] == {}
    assert volumes["b"]["secret"]["defaultMode"] == 420
    assert volumes["c"]["configMap"]["defaultMode"] == 256
    assert volumes["d"]["hostPath"]["type"] == ""
    assert volumes["e"]["projected"]["defaultMode"] == 420
    assert volumes["e"]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600
    assert volumes["f"]["image"]["pullPolicy"] == "Always"
    assert volumes["g"]["emptyDir"]["sizeLimit"] == "1Gi"


def test_pod_level_requests_default_from_containers_then_limits() -> None:
    """defaultPodRequests: containers' aggregated requests for cpu/memory, else the pod-level limit."""
    out = default_object(pod(resources={"limits": {"cpu": "2", "memory": "1Gi"}}, containers=[
        {"name": "a", "image": "x:1", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "b", "image": "x:1", "resources": {"requests": {"cpu": "250m"}}}]))
    assert out["spec"]["resources"]["requests"] == {"cpu": "750m", "memory": "1Gi"}
    untouched = default_object(pod(resources={"requests": {"cpu": "1"}}))
    assert untouched["spec"]["resources"] == {"requests": {"cpu": "1"}}    # no pod-level limits: nothing


def test_service_account_alias_is_written_both_ways() -> None:
    assert default_object(pod(serviceAccount="a"))["spec"]["serviceAccountName"] == "a"
    assert default_object(pod(serviceAccountName="b"))["spec"]["serviceAccount"] == "b"


# ---- workloads ---------------------------------------------------------------------------------------------------

def test_deployment_defaults() -> None:
    spec = default_object(deployment({"containers": [{"name": "c", "image": "x:1"}]}))["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                           "maxSurge": "25%"}}
    recreate = default_object(deployment({"containers": []}, strategy={"type": "Recreate"}))["spec"]
    assert recreate["strategy"] == {"type": "Recreate"}


def test_daemon_set_stateful_set_and_replica_set_defaults() -> None:
    ds = default_object({"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"template": {"spec": {}}}})
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10
    sts = default_object({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {
        "template": {"spec": {}}, "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]}})["spec"]
    assert sts["podManagementPolicy"] == "OrderedReady" and sts["replicas"] == 1
    assert sts["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    claim = sts["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert (claim["apiVersion"], claim["kind"]) == ("v1", "PersistentVolumeClaim")
    on_delete = default_object({"apiVersion": "apps/v1", "kind": "StatefulSet",
                                "spec": {"updateStrategy": {"type": "OnDelete"}}})["spec"]
    assert on_delete["updateStrategy"] == {"type": "OnDelete"}
    rs = default_object({"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"template": {"spec": {}}}})
    assert rs["spec"]["replicas"] == 1


def test_job_and_cron_job_defaults() -> None:
    job = default_object({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never"}}}})
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed" and spec["manualSelector"] is False
    assert job["metadata"]["labels"] == {"app": "x"}       # from the template when the Job has none
    assert "selector" not in spec                          # generated by the strategy from the uid
    parallel = default_object({"apiVersion": "batch/v1", "kind": "Job", "spec": {
        "parallelism": 3, "backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}})["spec"]
    assert "completions" not in parallel and parallel["backoffLimit"] == 2**31 - 1
    assert parallel["podReplacementPolicy"] == "Failed"
    assert parallel["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    cron = default_object({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {
        "schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {}}}}}})["spec"]
    assert (cron["concurrencyPolicy"], cron["suspend"], cron["successfulJobsHistoryLimit"],
            cron["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    job_spec = cron["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec                  # SetDefaults_Job does not run on the template
    assert job_spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


# ---- other kinds -------------------------------------------------------------------------------------------------

def test_namespace_label_and_phase() -> None:
    out = default_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert out["status"] == {"phase": "Active"}
    assert "spec" not in out                               # the `kubernetes` finalizer is the strategy's
    unnamed = default_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "t-"}})
    assert "labels" not in unnamed["metadata"]


def test_secret_type_and_string_data() -> None:
    out = default_object({"apiVersion": "v1", "kind": "Secret", "data": {"a": "eA==", "b": "eQ=="},
                          "stringData": {"b": "zz"}})
    assert out["type"] == "Opaque"
    assert out["data"] == {"a": "eA==", "b": "eno="} and "stringData" not in out


def test_network_policy_types_and_port_protocol() -> None:
    ingress_only = default_object({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                   "spec": {"ingress": [{"ports": [{"port": 80}]}]}})["spec"]
    assert ingress_only["policyTypes"] == ["Ingress"] and ingress_only["podSelector"] == {}
    assert ingress_only["ingress"][0]["ports"][0]["protocol"] == "TCP"
    both = default_object({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                           "spec": {"podSelector": {}, "egress": [{}]}})["spec"]
    assert both["policyTypes"] == ["Ingress", "Egress"]


def test_rbac_role_ref_and_subjects() -> None:
    out = default_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                          "roleRef": {"kind": "Role", "name": "r"},
                          "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s"}]})
    assert out["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert out["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert "apiGroup" not in out["subjects"][1]            # "" for a ServiceAccount: not written


def test_hpa_defaults() -> None:
    v2 = default_object({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                         "spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})
    spec = v2["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    assert spec["behavior"]["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}
    assert spec["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                                             "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
    v1 = default_object({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "spec": {}})
    assert v1["spec"] == {"minReplicas": 1, "targetCPUUtilizationPercentage": 80}


def test_webhook_and_admission_policy_defaults() -> None:
    out = default_object({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                          "webhooks": [{"name": "w", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                                        "rules": [{"operations": ["CREATE"]}]}]})
    webhook = out["webhooks"][0]
    assert {k: webhook[k] for k in ("failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector",
                                    "timeoutSeconds", "reinvocationPolicy")} == {
        "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "timeoutSeconds": 10, "reinvocationPolicy": "Never"}
    assert webhook["clientConfig"]["service"]["port"] == 443 and webhook["rules"][0]["scope"] == "*"
    vap = default_object({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                          "spec": {"matchConstraints": {"resourceRules": [{"resources": ["pods"]}]}}})["spec"]
    assert vap["failurePolicy"] == "Fail" and vap["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert vap["matchConstraints"]["resourceRules"][0]["scope"] == "*"


def test_api_service_and_crd_defaults() -> None:
    api = default_object({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                          "spec": {"service": {"name": "m", "namespace": "n"}}})
    assert api["spec"]["service"]["port"] == 443
    crd = default_object({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                          "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                                   "versions": [{"name": "v1", "served": True, "storage": False},
                                                {"name": "v2", "served": True, "storage": True}]}})
    assert crd["spec"]["names"] == {"plural": "widgets", "kind": "Widget", "singular": "widget",
                                    "listKind": "WidgetList"}
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"] == {"storedVersions": ["v2"]}


def test_storage_scheduling_and_volume_kinds() -> None:
    sc = default_object({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "p"})
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    pc = default_object({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5})
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    pv = default_object({"apiVersion": "v1", "kind": "PersistentVolume", "spec": {"capacity": {"storage": "1Gi"},
                                                                                 "rbd": {"image": "i"}}})
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["spec"]["rbd"] == {"image": "i", "pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"}
    lr = default_object({"apiVersion": "v1", "kind": "LimitRange", "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]}})["spec"]["limits"][0]
    assert lr["default"] == {"cpu": "2"} and lr["defaultRequest"] == {"cpu": "2", "memory": "64Mi"}


def test_every_corpus_object_defaults_once_and_other_kinds_stay_as_written() -> None:
    """Over every object of the shared corpus (about 17,700, custom resources included): no error on any
    shape, defaulting twice changes nothing the first pass did not (the server's defaulting is a fixed point),
    and kinds without a defaulter come back equal."""
    from tests.realapi.test_defaulting import CORPUS, corpus_objects
    require(CORPUS, "corpus (objects for the defaulting port)")
    changed = 0
    for source, obj, _ in corpus_objects():
        once = default_object(obj)
        assert default_object(once) == once, source
        if (obj["apiVersion"], obj["kind"]) not in DEFAULTED_KINDS:
            assert once == obj, source
        changed += once != obj
    assert changed > 10_000          # the corpus is mostly Pods and Pod controllers: defaulting reached them
