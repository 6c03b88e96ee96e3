"""The defaults the API server applies to a built-in kind when it decodes a request, before any admission
webhook sees the object: a port of the scheme defaulters of k8s.io/kubernetes v1.36.3.

`default_object(obj)` returns a new object with those defaults; the input is not changed. Kyverno runs as an
admission webhook, so in a cluster it never sees a Service without `spec.type` or a container without
`imagePullPolicy`; kyrec evaluates manifests as written unless it defaults them first.

What runs, for which kind, is what the generated defaulters register (`pkg/apis/<group>/<version>/
zz_generated.defaults.go`, SetObjectDefaults_<Kind>): the hand-written `SetDefaults_*` of `defaults.go`, the
declarative `+default=` values of k8s.io/api, and the same again for nested types. That is why the Pod
template inside a Deployment, DaemonSet, StatefulSet, ReplicaSet, Job, CronJob, ReplicationController or
PodTemplate gets SetDefaults_PodSpec and every container, volume and probe default, but not SetDefaults_Pod
(requests from limits, enableServiceLinks, host ports): those are for Pods only (k8s.pod_defaulting holds
the Pod part, k8s.go_fields the reading of fields as Go decodes them).

Covered (apiVersion, kind):
- v1: Pod, PodTemplate, ReplicationController, Service, Namespace, Secret, Endpoints, Event, LimitRange,
  ResourceQuota, PersistentVolume, PersistentVolumeClaim, Node (status.allocatable)
- apps/v1: Deployment, DaemonSet, StatefulSet, ReplicaSet
- batch/v1: Job, CronJob
- networking.k8s.io/v1: NetworkPolicy, IngressClass
- rbac.authorization.k8s.io/v1: RoleBinding, ClusterRoleBinding (and Role, ClusterRole: `rules: null`)
- autoscaling/v1 and autoscaling/v2: HorizontalPodAutoscaler
- scheduling.k8s.io/v1: PriorityClass; storage.k8s.io/v1: StorageClass, CSIDriver
- admissionregistration.k8s.io/v1: Validating/MutatingWebhookConfiguration, Validating/MutatingAdmissionPolicy
  and their bindings
- apiextensions.k8s.io/v1: CustomResourceDefinition; apiregistration.k8s.io/v1: APIService
Kinds whose group registers no defaulter (ConfigMap's is invisible, see below; ServiceAccount, Ingress,
PodDisruptionBudget, RuntimeClass, CertificateSigningRequest, ...) come back unchanged, as do custom resources
and versions the server does not serve.

Also written, because the server's decode/encode round trip writes them the same way every time and a webhook
sees them (each cited where it is done):
- quantities: every ResourceList the defaulters visit is rounded up to a multiple of 1m
  (SetDefaults_ResourceList) and, like an emptyDir's sizeLimit, written as MarshalJSON writes it (`1000m` ->
  `1`, `0.5` -> `500m`: k8s.quantity.quantity_json);
- conversions: Secret stringData folded into data, the deprecated PodSpec serviceAccount alias,
  autoscaling/v1's default CPU target, StatefulSet claim templates' apiVersion/kind;
- zero values of fields Go writes without omitempty (or structs, which omitempty never drops): a container's
  `resources: {}`, a template's `metadata: {}`, NetworkPolicy `podSelector: {}`, StatefulSet `serviceName: ""`,
  a sysctl's `value: ""`, Event timestamps as null, LimitRange and role `null` lists.
The kinds and shapes of the shared corpus are checked against the real server by
tests/realapi/test_defaulting.py; a zero-value field of another kind or shape may still be missing.

Feature gates are their v1.36 defaults: PodLevelResources on (pod-level requests and hugepage limits),
ImageVolume on (image volumes' pullPolicy), JobPodReplacementPolicy on, MaxUnavailableStatefulSet off (no
rollingUpdate.maxUnavailable), SELinuxMountReadWriteOncePod on and VolumeLimitScaling off (CSIDriver).

Not done here, because it is not defaulting (docs/compatibility.md, "API-server defaulting", lists each):
- what the REST layer allocates or assigns: metadata.uid, creationTimestamp, generation, resourceVersion,
  managedFields; a Service's clusterIP(s), ipFamilies, ipFamilyPolicy, nodePorts, healthCheckNodePort;
- what a strategy's PrepareForCreate sets: status reset, a Namespace's `kubernetes` finalizer, a Job's
  generated selector and controller-uid/job-name template labels, a DaemonSet's
  deprecated.daemonset.template.generation annotation, Pod affinity and topology-spread label selectors
  merged from matchLabelKeys, AppArmor fields synced from annotations;
- what admission plugins add: ServiceAccount (serviceAccountName, token volume), Priority (priority,
  preemptionPolicy), DefaultTolerationSeconds, DefaultStorageClass, DefaultIngressClass, LimitRanger,
  RuntimeClass overhead, PodTopologyLabels;
- the JSON round trip itself: unknown fields dropped, empty omitempty fields dropped (so SetDefaults_ConfigMap's
  `data: {}` never shows), quantities outside ResourceLists left as written.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.k8s.go_fields import Obj, map_at, maps_at, resource_list, set_default, struct_at, unset
from kubectl_kyrec.k8s.json_values import copy_json
from kubectl_kyrec.k8s.pod_defaulting import (
    default_persistent_sources,
    default_pod,
    default_pod_template,
    default_pvc_spec,
)

__all__ = ["default_object", "DEFAULTED_KINDS"]


def default_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `obj` with the defaults the API server (v1.36.3) applies to its kind on decoding."""
    out: Obj = copy_json(dict(obj))
    defaulter = _DEFAULTERS.get((out.get("apiVersion"), out.get("kind")))  # type: ignore[arg-type]
    if defaulter is not None:
        defaulter(out)
    return out


# ---- core/v1 (pkg/apis/core/v1/defaults.go; Pods and pod specs are k8s.pod_defaulting's) ---------------------

def _service(service: Obj) -> None:
    """SetDefaults_Service (plus the ports' `+default="TCP"`)."""
    spec = struct_at(service, "spec")
    if spec is None:
        return
    set_default(spec, "sessionAffinity", "None", "")
    affinity = spec.get("sessionAffinity")
    if affinity == "None":
        spec.pop("sessionAffinityConfig", None)
    elif affinity == "ClientIP":
        client_ip = map_at(map_at(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip is None or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    set_default(spec, "type", "ClusterIP", "")
    kind = spec.get("type")
    for port in maps_at(spec, "ports"):
        set_default(port, "protocol", "TCP", "")
        target = port.get("targetPort")
        if target is None or target == "" or (type(target) is int and target == 0):
            port["targetPort"] = port.get("port", 0)
    external_ips = spec.get("externalIPs")
    if kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and isinstance(external_ips, list)
                                                and external_ips):   # pkg/api/v1/service ExternallyAccessible
        set_default(spec, "externalTrafficPolicy", "Cluster", "")
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        set_default(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        set_default(spec, "allocateLoadBalancerNodePorts", True)
        for ingress in maps_at(map_at(map_at(service, "status"), "loadBalancer"), "ingress"):
            if ingress.get("ip"):
                set_default(ingress, "ipMode", "VIP")


def _namespace(namespace: Obj) -> None:
    """SetDefaults_Namespace (the kubernetes.io/metadata.name label, for a named namespace) and
    SetDefaults_NamespaceStatus."""
    metadata = struct_at(namespace, "metadata")
    name = metadata.get("name") if metadata is not None else None
    if metadata is not None and isinstance(name, str) and name:
        labels = struct_at(metadata, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = name
    set_default(struct_at(namespace, "status"), "phase", "Active", "")


def _secret(secret: Obj) -> None:
    """SetDefaults_Secret; and conversion.go Convert_v1_Secret_To_core_Secret, which writes stringData over
    data (v1 has no way back: the object webhooks see holds only data, base64-encoded)."""
    set_default(secret, "type", "Opaque", "")
    string_data = map_at(secret, "stringData")
    if string_data is not None:
        if string_data and all(isinstance(v, str) for v in string_data.values()):
            data = struct_at(secret, "data")
            for key, value in string_data.items():
                if data is not None:
                    data[key] = base64.b64encode(value.encode()).decode()
        secret.pop("stringData")


def _event(event: Obj) -> None:
    """core/v1 Event has no defaulter, but several fields without omitempty (or structs, which omitempty
    does not drop): the server writes them even when unset, so webhooks see them."""
    struct_at(event, "involvedObject")
    struct_at(event, "source")
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        event.setdefault(key, None)                     # a zero metav1.Time / MicroTime is written as null
    for key in ("reportingComponent", "reportingInstance"):
        set_default(event, key, "")


def _endpoints(endpoints: Obj) -> None:
    for subset in maps_at(endpoints, "subsets"):         # SetDefaults_Endpoints
        for port in maps_at(subset, "ports"):
            set_default(port, "protocol", "TCP", "")


def _limit_range(limit_range: Obj) -> None:
    """SetDefaults_LimitRangeItem: for Container limits, default <- max, defaultRequest <- default <- min."""
    spec = struct_at(limit_range, "spec")
    if spec is not None and "limits" not in spec:
        spec["limits"] = None                           # no omitempty: a LimitRange without limits reads null
    for item in maps_at(spec, "limits"):
        if item.get("type") == "Container":
            default = dict(map_at(item, "default") or {})
            request = dict(map_at(item, "defaultRequest") or {})
            for name, value in (map_at(item, "max") or {}).items():
                default.setdefault(name, copy_json(value))
            for name, value in default.items():
                request.setdefault(name, copy_json(value))
            for name, value in (map_at(item, "min") or {}).items():
                request.setdefault(name, copy_json(value))
            if default:                                 # an empty map would not be written back (omitempty)
                item["default"] = default
            if request:
                item["defaultRequest"] = request
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            resource_list(item, key)


def _resource_quota(quota: Obj) -> None:
    resource_list(map_at(quota, "spec"), "hard")
    status = map_at(quota, "status")
    resource_list(status, "hard")
    resource_list(status, "used")


def _pvc(claim: Obj) -> None:
    """SetDefaults_PersistentVolumeClaim (status.phase Pending) and the spec's."""
    set_default(struct_at(claim, "status"), "phase", "Pending", "")
    default_pvc_spec(struct_at(claim, "spec"))
    status = map_at(claim, "status")
    resource_list(status, "capacity")
    resource_list(status, "allocatedResources")


def _persistent_volume(volume: Obj) -> None:
    """SetDefaults_PersistentVolume and its sources' declarative defaults."""
    set_default(struct_at(volume, "status"), "phase", "Pending", "")
    spec = struct_at(volume, "spec")
    if spec is None:
        return
    set_default(spec, "persistentVolumeReclaimPolicy", "Retain", "")
    set_default(spec, "volumeMode", "Filesystem")
    resource_list(spec, "capacity")
    default_persistent_sources(spec)


def _node(node: Obj) -> None:
    """SetDefaults_NodeStatus: allocatable defaults to capacity."""
    status = map_at(node, "status")
    capacity = status.get("capacity") if status is not None else None
    if status is not None and status.get("allocatable") is None and isinstance(capacity, dict) and capacity:
        status["allocatable"] = copy_json(status["capacity"])
    resource_list(status, "capacity")
    resource_list(status, "allocatable")


def _replication_controller(controller: Obj) -> None:
    """SetDefaults_ReplicationController (selector and labels from the template's labels), replicas 1."""
    spec = struct_at(controller, "spec")
    if spec is None:
        return
    template = map_at(spec, "template")
    labels = map_at(map_at(template, "metadata"), "labels")
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = copy_json(labels)
        metadata = struct_at(controller, "metadata")
        if metadata is not None and not metadata.get("labels"):
            metadata["labels"] = copy_json(labels)
    set_default(spec, "replicas", 1)
    if template is not None:                            # a pointer here, unlike the other workloads' templates
        default_pod_template(spec)


def _pod_template_kind(pod_template: Obj) -> None:
    default_pod_template(pod_template)


# ---- apps/v1 (pkg/apis/apps/v1/defaults.go) --------------------------------------------------------------------

def _deployment(deployment: Obj) -> None:
    """SetDefaults_Deployment."""
    spec = struct_at(deployment, "spec")
    if spec is None:
        return
    set_default(spec, "replicas", 1)
    strategy = struct_at(spec, "strategy")
    if strategy is not None:
        set_default(strategy, "type", "RollingUpdate", "")
        if strategy.get("type") == "RollingUpdate":
            rolling = struct_at(strategy, "rollingUpdate")
            set_default(rolling, "maxUnavailable", "25%")
            set_default(rolling, "maxSurge", "25%")
    set_default(spec, "revisionHistoryLimit", 10)
    set_default(spec, "progressDeadlineSeconds", 600)
    default_pod_template(spec)


def _daemon_set(daemon_set: Obj) -> None:
    """SetDefaults_DaemonSet."""
    spec = struct_at(daemon_set, "spec")
    if spec is None:
        return
    strategy = struct_at(spec, "updateStrategy")
    if strategy is not None:
        set_default(strategy, "type", "RollingUpdate", "")
        if strategy.get("type") == "RollingUpdate":
            rolling = struct_at(strategy, "rollingUpdate")
            set_default(rolling, "maxUnavailable", 1)
            set_default(rolling, "maxSurge", 0)
    set_default(spec, "revisionHistoryLimit", 10)
    default_pod_template(spec)


def _stateful_set(stateful_set: Obj) -> None:
    """SetDefaults_StatefulSet (MaxUnavailableStatefulSet is beta and off in 1.36: no maxUnavailable), and the
    PersistentVolumeClaim defaults of each volumeClaimTemplate."""
    spec = struct_at(stateful_set, "spec")
    if spec is None:
        return
    set_default(spec, "podManagementPolicy", "OrderedReady", "")
    set_default(spec, "serviceName", "")                   # no omitempty: written as "" when unset
    strategy = struct_at(spec, "updateStrategy")
    if strategy is not None:
        if unset(strategy, "type", ""):
            strategy["type"] = "RollingUpdate"
            struct_at(strategy, "rollingUpdate")
        rolling = map_at(strategy, "rollingUpdate")
        if strategy.get("type") == "RollingUpdate" and rolling is not None:
            set_default(rolling, "partition", 0)
    retention = struct_at(spec, "persistentVolumeClaimRetentionPolicy")
    set_default(retention, "whenDeleted", "Retain", "")
    set_default(retention, "whenScaled", "Retain", "")
    set_default(spec, "replicas", 1)
    set_default(spec, "revisionHistoryLimit", 10)
    default_pod_template(spec)
    for claim in maps_at(spec, "volumeClaimTemplates"):
        _pvc(claim)
        # apps/v1 conversion.go Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec (issue 87583)
        claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"


def _replica_set(replica_set: Obj) -> None:
    spec = struct_at(replica_set, "spec")
    set_default(spec, "replicas", 1)                       # SetDefaults_ReplicaSet
    default_pod_template(spec)


# ---- batch/v1 (pkg/apis/batch/v1/defaults.go) ------------------------------------------------------------------

_INT32_MAX = 2**31 - 1


def _pod_failure_policy(job_spec: Obj | None) -> None:
    """SetDefaults_PodFailurePolicyOnPodConditionsPattern: status True."""
    for rule in maps_at(map_at(job_spec, "podFailurePolicy"), "rules"):
        for pattern in maps_at(rule, "onPodConditions"):
            set_default(pattern, "status", "True", "")


def _job(job: Obj) -> None:
    """SetDefaults_Job (JobPodReplacementPolicy is GA in 1.36)."""
    spec = struct_at(job, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    set_default(spec, "parallelism", 1)
    set_default(spec, "backoffLimit", _INT32_MAX if spec.get("backoffLimitPerIndex") is not None else 6)
    labels = map_at(map_at(map_at(spec, "template"), "metadata"), "labels")
    metadata = struct_at(job, "metadata")
    if labels is not None and metadata is not None and not metadata.get("labels"):
        metadata["labels"] = copy_json(labels)
    set_default(spec, "completionMode", "NonIndexed")
    set_default(spec, "suspend", False)
    set_default(spec, "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") is not None
             else "TerminatingOrFailed")
    set_default(spec, "manualSelector", False)
    _pod_failure_policy(spec)
    default_pod_template(spec)


def _cron_job(cron_job: Obj) -> None:
    """SetDefaults_CronJob; the job template gets only the pod-failure pattern and Pod template defaults
    (SetObjectDefaults_CronJob does not run SetDefaults_Job on it)."""
    spec = struct_at(cron_job, "spec")
    if spec is None:
        return
    set_default(spec, "concurrencyPolicy", "Allow", "")
    set_default(spec, "suspend", False)
    set_default(spec, "successfulJobsHistoryLimit", 3)
    set_default(spec, "failedJobsHistoryLimit", 1)
    job_template = struct_at(spec, "jobTemplate")
    if job_template is not None:
        struct_at(job_template, "metadata")               # ObjectMeta: written as {} when empty
    job_spec = struct_at(job_template, "spec") if job_template is not None else None
    _pod_failure_policy(job_spec)
    default_pod_template(job_spec)


# ---- networking, rbac, autoscaling, scheduling, storage ---------------------------------------------------------

def _network_policy(policy: Obj) -> None:
    """SetDefaults_NetworkPolicy (policyTypes) and SetDefaults_NetworkPolicyPort (protocol TCP)."""
    spec = struct_at(policy, "spec")
    if spec is None:
        return
    struct_at(spec, "podSelector")                        # a LabelSelector struct: written as {} when empty
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for direction in ("ingress", "egress"):
        for rule in maps_at(spec, direction):
            for port in maps_at(rule, "ports"):
                set_default(port, "protocol", "TCP")


def _ingress_class(ingress_class: Obj) -> None:
    set_default(map_at(map_at(ingress_class, "spec"), "parameters"), "scope", "Cluster")  # SetDefaults_IngressClass


def _role_binding(binding: Obj) -> None:
    """SetDefaults_(Cluster)RoleBinding and SetDefaults_Subject (a ServiceAccount's group stays "")."""
    set_default(struct_at(binding, "roleRef"), "apiGroup", "rbac.authorization.k8s.io", "")
    for subject in maps_at(binding, "subjects"):
        if unset(subject, "apiGroup", "") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = "rbac.authorization.k8s.io"


def _hpa_v1(hpa: Obj) -> None:
    """autoscaling/v1 SetDefaults_HorizontalPodAutoscaler (minReplicas 1); and conversion.go, which gives an HPA
    without a CPU target or other metrics (the autoscaling.alpha.kubernetes.io/metrics annotation, not
    followed here) the DefaultCPUUtilization metric, written back as targetCPUUtilizationPercentage 80."""
    spec = struct_at(hpa, "spec")
    set_default(spec, "minReplicas", 1)
    annotations = map_at(map_at(hpa, "metadata"), "annotations") or {}
    if "autoscaling.alpha.kubernetes.io/metrics" not in annotations:
        set_default(spec, "targetCPUUtilizationPercentage", 80)


_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scaling_rules(behavior: Obj, key: str, defaults: Obj) -> None:
    """GenerateHPAScaleUp/DownRules: the defaults, overridden by each field the object sets (copyHPAScalingRules)."""
    given = map_at(behavior, key) or {}
    rules = copy_json(defaults)
    for field in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if given.get(field) is not None:
            rules[field] = given[field]
    behavior[key] = rules


def _hpa_v2(hpa: Obj) -> None:
    """autoscaling/v2 SetDefaults_HorizontalPodAutoscaler: minReplicas 1, CPU at 80% when there are no metrics,
    and every scaling rule filled in once a behavior is given."""
    spec = struct_at(hpa, "spec")
    if spec is None:
        return
    set_default(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    behavior = map_at(spec, "behavior")
    if behavior is not None:
        _scaling_rules(behavior, "scaleUp", _SCALE_UP)
        _scaling_rules(behavior, "scaleDown", _SCALE_DOWN)


def _role(role: Obj) -> None:
    """Role and ClusterRole have no defaulter; `rules` has no omitempty, so a role without rules reads null."""
    if "rules" not in role:
        role["rules"] = None


def _priority_class(priority_class: Obj) -> None:
    set_default(priority_class, "preemptionPolicy", "PreemptLowerPriority")   # SetDefaults_PriorityClass


def _storage_class(storage_class: Obj) -> None:
    set_default(storage_class, "reclaimPolicy", "Delete")  # SetDefaults_StorageClass
    set_default(storage_class, "volumeBindingMode", "Immediate")


def _csi_driver(driver: Obj) -> None:
    """SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod on, VolumeLimitScaling off in 1.36)."""
    spec = struct_at(driver, "spec")
    set_default(spec, "attachRequired", True)
    set_default(spec, "podInfoOnMount", False)
    set_default(spec, "storageCapacity", False)
    set_default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if spec is not None and not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    set_default(spec, "requiresRepublish", False)
    set_default(spec, "seLinuxMount", False)


# ---- admissionregistration/v1, apiextensions/v1 ----------------------------------------------------------------

def _rules(rules: list[Obj]) -> None:
    for rule in rules:
        set_default(rule, "scope", "*")                    # SetDefaults_Rule: AllScopes


def _webhooks(configuration: Obj, mutating: bool) -> None:
    """SetDefaults_Validating/MutatingWebhook, SetDefaults_ServiceReference (port 443), SetDefaults_Rule."""
    for webhook in maps_at(configuration, "webhooks"):
        set_default(webhook, "failurePolicy", "Fail")
        set_default(webhook, "matchPolicy", "Equivalent")
        set_default(webhook, "namespaceSelector", {})
        set_default(webhook, "objectSelector", {})
        set_default(webhook, "timeoutSeconds", 10)
        if mutating:
            set_default(webhook, "reinvocationPolicy", "Never")
        set_default(map_at(map_at(webhook, "clientConfig"), "service"), "port", 443)
        _rules(maps_at(webhook, "rules"))


def _match_resources(match: Obj | None) -> None:
    """SetDefaults_MatchResources and the rules under it."""
    if match is None:
        return
    set_default(match, "matchPolicy", "Equivalent")
    set_default(match, "namespaceSelector", {})
    set_default(match, "objectSelector", {})
    _rules(maps_at(match, "resourceRules") + maps_at(match, "excludeResourceRules"))


def _admission_policy(policy: Obj) -> None:
    """SetDefaults_Validating/MutatingAdmissionPolicySpec (failurePolicy Fail) and its match constraints."""
    spec = struct_at(policy, "spec")
    set_default(spec, "failurePolicy", "Fail")
    _match_resources(map_at(spec, "matchConstraints"))


def _admission_binding(binding: Obj) -> None:
    _match_resources(map_at(map_at(binding, "spec"), "matchResources"))


def _crd(crd: Obj) -> None:
    """apiextensions v1 SetDefaults_CustomResourceDefinition(Spec): names, conversion None, storedVersions."""
    spec = struct_at(crd, "spec")
    if spec is None:
        return
    names = struct_at(spec, "names")
    if names is not None:
        given = names.get("kind")
        kind = given if isinstance(given, str) else ""
        set_default(names, "singular", kind.lower(), "")
        if kind:
            set_default(names, "listKind", kind + "List", "")
    set_default(spec, "conversion", {"strategy": "None"})
    webhook = map_at(map_at(spec, "conversion"), "webhook")
    set_default(map_at(map_at(webhook, "clientConfig"), "service"), "port", 443)
    status = struct_at(crd, "status")
    if status is not None and not status.get("storedVersions"):
        stored = [v.get("name") for v in maps_at(spec, "versions") if v.get("storage") is True][:1]
        if stored:
            status["storedVersions"] = stored


def _api_service(api_service: Obj) -> None:
    """kube-aggregator apiregistration/v1 SetDefaults_ServiceReference: port 443."""
    set_default(map_at(map_at(api_service, "spec"), "service"), "port", 443)


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("v1", "Pod"): default_pod,
    ("v1", "PodTemplate"): _pod_template_kind,
    ("v1", "ReplicationController"): _replication_controller,
    ("v1", "Service"): _service,
    ("v1", "Namespace"): _namespace,
    ("v1", "Secret"): _secret,
    ("v1", "Endpoints"): _endpoints,
    ("v1", "Event"): _event,
    ("v1", "LimitRange"): _limit_range,
    ("v1", "ResourceQuota"): _resource_quota,
    ("v1", "PersistentVolume"): _persistent_volume,
    ("v1", "PersistentVolumeClaim"): _pvc,
    ("v1", "Node"): _node,
    ("apps/v1", "Deployment"): _deployment,
    ("apps/v1", "DaemonSet"): _daemon_set,
    ("apps/v1", "StatefulSet"): _stateful_set,
    ("apps/v1", "ReplicaSet"): _replica_set,
    ("batch/v1", "Job"): _job,
    ("batch/v1", "CronJob"): _cron_job,
    ("networking.k8s.io/v1", "NetworkPolicy"): _network_policy,
    ("networking.k8s.io/v1", "IngressClass"): _ingress_class,
    ("rbac.authorization.k8s.io/v1", "Role"): _role,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): _role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _role_binding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _role_binding,
    ("autoscaling/v1", "HorizontalPodAutoscaler"): _hpa_v1,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _hpa_v2,
    ("scheduling.k8s.io/v1", "PriorityClass"): _priority_class,
    ("storage.k8s.io/v1", "StorageClass"): _storage_class,
    ("storage.k8s.io/v1", "CSIDriver"): _csi_driver,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): lambda o: _webhooks(o, False),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): lambda o: _webhooks(o, True),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): _admission_policy,
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"): _admission_policy,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): _admission_binding,
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding"): _admission_binding,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): _crd,
    ("apiregistration.k8s.io/v1", "APIService"): _api_service,
}

# (apiVersion, kind) pairs default_object changes; any other object comes back as a plain copy
DEFAULTED_KINDS: frozenset[tuple[str, str]] = frozenset(_DEFAULTERS)
