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
(requests from limits, enableServiceLinks, host ports): those are for Pods only.

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
- apiextensions.k8s.io/v1: CustomResourceDefinition
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
import contextlib
import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.k8s.image_reference import parse_normalized_named
from kubectl_kyrec.k8s.quantity import QuantityError, format_of, format_quantity, parse_quantity, quantity_json

Obj = dict[str, Any]

__all__ = ["default_object", "DEFAULTED_KINDS"]


def default_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `obj` with the defaults the API server (v1.36.3) applies to its kind on decoding."""
    out: Obj = copy.deepcopy(dict(obj))
    defaulter = _DEFAULTERS.get((out.get("apiVersion"), out.get("kind")))  # type: ignore[arg-type]
    if defaulter is not None:
        defaulter(out)
    return out


# ---- reading JSON as Go decodes it -----------------------------------------------------------------------
# A pointer field is unset when absent or null; a value field also when it holds its type's zero ("", 0).

def _dict(parent: Any, key: str) -> Obj | None:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def _dicts(parent: Any, key: str) -> list[Obj]:
    value = parent.get(key) if isinstance(parent, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _struct(parent: Obj, key: str) -> Obj | None:
    """A struct field Go has even when the JSON lacks it (a value field, or a pointer the defaulter allocates)."""
    if parent.get(key) is None:
        parent[key] = {}
    return _dict(parent, key)


def _unset(d: Obj, key: str, zero: Any = None) -> bool:
    value = d.get(key)
    return value is None or (zero is not None and type(value) is type(zero) and value == zero)


def _default(d: Obj | None, key: str, value: Any, zero: Any = None) -> None:
    if d is not None and _unset(d, key, zero):
        d[key] = copy.deepcopy(value)


# ---- quantities ----------------------------------------------------------------------------------------------

def _quantity_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)            # UnmarshalJSON parses a JSON number's own text
    return None


def _quantity(parent: Obj | None, key: str, *, round_to_milli: bool = False) -> None:
    if parent is None or key not in parent:
        return
    text = _quantity_text(parent[key])
    if text is not None:
        with contextlib.suppress(QuantityError):    # the server refuses the object: nothing to default
            parent[key] = quantity_json(text, round_to_milli=round_to_milli)


def _resource_list(parent: Obj | None, key: str) -> None:
    """core/v1 defaults.go SetDefaults_ResourceList: each quantity rounded up to milli scale."""
    resources = _dict(parent, key)
    for name in list(resources or ()):
        _quantity(resources, name, round_to_milli=True)


def _requirements(parent: Obj | None, key: str = "resources") -> None:
    resources = _dict(parent, key)
    _resource_list(resources, "limits")
    _resource_list(resources, "requests")


# ---- core/v1: pod specs (pkg/apis/core/v1/defaults.go; the nesting of zz_generated.defaults.go) -------------

def _pull_policy(image: Any) -> str:
    """SetDefaults_Container: Always for the tag `latest` (also implied when there is neither tag nor digest,
    pkg/util/parsers.ParseImageName), IfNotPresent otherwise, including for a reference that does not parse."""
    try:
        _, _, tag, digest = parse_normalized_named(image if isinstance(image, str) else "")
    except ValueError:
        return "IfNotPresent"
    return "Always" if tag == "latest" or not (tag or digest) else "IfNotPresent"


def _http_get(action: Obj | None) -> None:
    """SetDefaults_HTTPGetAction."""
    _default(action, "path", "/", "")
    _default(action, "scheme", "HTTP", "")


def _probe(probe: Obj | None) -> None:
    """SetDefaults_Probe, then its handler's defaults (HTTPGet; GRPC's `+default=""` service)."""
    if probe is None:
        return
    _default(probe, "timeoutSeconds", 1, 0)
    _default(probe, "periodSeconds", 10, 0)
    _default(probe, "successThreshold", 1, 0)
    _default(probe, "failureThreshold", 3, 0)
    _http_get(_dict(probe, "httpGet"))
    _default(_dict(probe, "grpc"), "service", "")


def _field_ref(ref: Obj | None) -> None:
    """SetDefaults_ObjectFieldSelector."""
    _default(ref, "apiVersion", "v1", "")


def _resource_field_ref(ref: Obj | None) -> None:
    """A resourceFieldRef's divisor is a Quantity value (not a pointer): written as "0" when unset."""
    _default(ref, "divisor", "0")
    _quantity(ref, "divisor")


def _downward_items(items: list[Obj]) -> None:
    for item in items:
        _field_ref(_dict(item, "fieldRef"))
        _resource_field_ref(_dict(item, "resourceFieldRef"))


def _container(container: Obj) -> None:
    """SetDefaults_Container (and EphemeralContainer), the ports' `+default="TCP"` protocol, env sources,
    resource lists, probes and lifecycle hooks."""
    if _unset(container, "imagePullPolicy", ""):
        container["imagePullPolicy"] = _pull_policy(container.get("image"))
    _default(container, "terminationMessagePath", "/dev/termination-log", "")
    _default(container, "terminationMessagePolicy", "File", "")
    for port in _dicts(container, "ports"):
        _default(port, "protocol", "TCP", "")
    for env in _dicts(container, "env"):
        source = _dict(env, "valueFrom")
        _field_ref(_dict(source, "fieldRef"))
        _resource_field_ref(_dict(source, "resourceFieldRef"))
        _default(_dict(source, "fileKeyRef"), "optional", False)
    _struct(container, "resources")                     # a struct field: written as {} when empty
    _requirements(container)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(_dict(container, probe))
    lifecycle = _dict(container, "lifecycle")
    for hook in ("postStart", "preStop"):
        _http_get(_dict(_dict(lifecycle, hook), "httpGet"))


# k8s.io/api core/v1 VolumeSource: SetDefaults_Volume makes a volume naming none of them an emptyDir
_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image")
_FILE_MODE = 0o644      # Secret/ConfigMap/DownwardAPI/ProjectedVolumeSourceDefaultMode: 420


def _persistent_sources(source: Obj) -> None:
    """The declarative defaults of the volume sources a PersistentVolume shares with a Pod volume."""
    _default(_dict(source, "hostPath"), "type", "")              # SetDefaults_HostPathVolumeSource: HostPathUnset
    rbd = _dict(source, "rbd")
    _default(rbd, "pool", "rbd", "")
    _default(rbd, "user", "admin", "")
    _default(rbd, "keyring", "/etc/ceph/keyring", "")
    _default(_dict(source, "iscsi"), "iscsiInterface", "default", "")
    azure = _dict(source, "azureDisk")
    _default(azure, "cachingMode", "ReadWrite")
    _default(azure, "fsType", "ext4")
    _default(azure, "readOnly", False)
    _default(azure, "kind", "Shared")
    scale_io = _dict(source, "scaleIO")
    _default(scale_io, "storageMode", "ThinProvisioned", "")
    _default(scale_io, "fsType", "xfs", "")


def _volume(volume: Obj) -> None:
    """SetDefaults_Volume and the defaulters of each volume source."""
    if all(volume.get(source) is None for source in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    image = _dict(volume, "image")
    if image is not None and _unset(image, "pullPolicy", ""):    # ImageVolume: GA, locked on in 1.36
        image["pullPolicy"] = _pull_policy(image.get("reference"))
    _persistent_sources(volume)
    _default(_dict(volume, "secret"), "defaultMode", _FILE_MODE)
    _default(_dict(volume, "configMap"), "defaultMode", _FILE_MODE)
    downward = _dict(volume, "downwardAPI")
    _default(downward, "defaultMode", _FILE_MODE)
    _downward_items(_dicts(downward, "items"))
    projected = _dict(volume, "projected")
    _default(projected, "defaultMode", _FILE_MODE)
    for source in _dicts(projected, "sources"):
        _downward_items(_dicts(_dict(source, "downwardAPI"), "items"))
        _default(_dict(source, "serviceAccountToken"), "expirationSeconds", 3600)  # ServiceAccountTokenProjection
    _quantity(_dict(volume, "emptyDir"), "sizeLimit")
    claim = _dict(_dict(volume, "ephemeral"), "volumeClaimTemplate")
    if claim is not None:
        _struct(claim, "metadata")                      # ObjectMeta: written as {} when empty
        _pvc_spec(_dict(claim, "spec"))


def _pod_spec(spec: Obj | None) -> None:
    """SetDefaults_PodSpec and everything nested under a PodSpec (the body of SetObjectDefaults_PodTemplate)."""
    if spec is None:
        return
    _default(spec, "dnsPolicy", "ClusterFirst", "")
    _default(spec, "restartPolicy", "Always", "")
    _default(spec, "securityContext", {})
    for sysctl in _dicts(_dict(spec, "securityContext"), "sysctls"):
        _default(sysctl, "value", "")                   # no omitempty: written as "" when unset
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default(spec, "schedulerName", "default-scheduler", "")
    for volume in _dicts(spec, "volumes"):
        _volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(spec, key):
            _container(container)
    _resource_list(spec, "overhead")
    _requirements(spec)
    # conversion.go Convert_v1_PodSpec_To_core_PodSpec reads the deprecated serviceAccount when
    # serviceAccountName is empty, and Convert_core_PodSpec_To_v1_PodSpec writes the name back to both
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(account, str) and account:
        spec["serviceAccountName"] = spec["serviceAccount"] = account


def _pod_template(parent: Obj | None, key: str = "template") -> None:
    """A PodTemplateSpec field (a value struct in every workload but ReplicationController)."""
    template = _struct(parent, key) if parent is not None else None
    if template is not None:
        _struct(template, "metadata")                   # ObjectMeta, a struct: written as {} when empty
        _pod_spec(_struct(template, "spec"))


# ---- core/v1: Pod (SetDefaults_Pod) ---------------------------------------------------------------------------

_SUPPORTED_POD_LEVEL = ("cpu", "memory")          # component-helpers resource.IsSupportedPodLevelResource
_HUGEPAGES = "hugepages-"


def _supported_pod_level(name: str) -> bool:
    return name in _SUPPORTED_POD_LEVEL or name.startswith(_HUGEPAGES)


class _Sum:
    """A resource.Quantity being summed: the format stays the first addend's (Quantity.Add)."""

    def __init__(self, text: str) -> None:
        self.text, self.value, self.format = text, parse_quantity(text), format_of(text)
        self.summed = False

    def add(self, other: _Sum) -> None:
        self.value += other.value
        self.summed = True

    def out(self) -> str:
        return format_quantity(self.value, self.format) if self.summed else self.text


def _read_list(container: Obj, which: str) -> dict[str, _Sum]:
    out: dict[str, _Sum] = {}
    for name, value in (_dict(_dict(container, "resources"), which) or {}).items():
        text = _quantity_text(value)
        if text is not None:
            with contextlib.suppress(QuantityError):
                out[name] = _Sum(text)
    return out


def _add(total: dict[str, _Sum], more: dict[str, _Sum]) -> None:
    for name, quantity in more.items():
        if name in total:
            total[name].add(quantity)
        else:
            total[name] = copy.copy(quantity)


def _max(total: dict[str, _Sum], more: dict[str, _Sum]) -> None:
    for name, quantity in more.items():
        if name not in total or quantity.value > total[name].value:
            total[name] = copy.copy(quantity)


def _aggregate(spec: Obj, which: str) -> dict[str, _Sum]:
    """component-helpers resource.AggregateContainerRequests/Limits (no status): the sum of the containers and
    sidecars, or the largest init-container step (itself plus the sidecars started before it) when larger."""
    total: dict[str, _Sum] = {}
    for container in _dicts(spec, "containers"):
        _add(total, _read_list(container, which))
    sidecars: dict[str, _Sum] = {}
    init_max: dict[str, _Sum] = {}
    for container in _dicts(spec, "initContainers"):
        own = _read_list(container, which)
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            step = sidecars
        else:
            step = {}
            _add(step, own)
            _add(step, sidecars)
        _max(init_max, step)
    _max(total, init_max)
    return total


def _pod_level_resources(spec: Obj) -> None:
    """defaultHugePagePodLimits then defaultPodRequests (PodLevelResources: beta, on by default in 1.36)."""
    resources = _dict(spec, "resources")
    if resources is None:
        return
    limits = dict(_dict(resources, "limits") or {})
    requests = _dict(resources, "requests") or {}
    if limits or requests:
        added = False
        for name, total in _aggregate(spec, "limits").items():
            if name.startswith(_HUGEPAGES) and name not in requests and name not in limits:
                limits[name], added = total.out(), True
        if added:
            resources["limits"] = limits
    if not limits:
        return
    pod_requests = dict(requests)
    for name, total in _aggregate(spec, "requests").items():
        if name in _SUPPORTED_POD_LEVEL and name not in pod_requests:   # overcommittable: not hugepages
            pod_requests[name] = total.out()
    for name, value in limits.items():
        if _supported_pod_level(name) and name not in pod_requests:
            pod_requests[name] = copy.deepcopy(value)
    if pod_requests:
        resources["requests"] = pod_requests


def _pod(pod: Obj) -> None:
    """SetObjectDefaults_Pod: SetDefaults_Pod, then SetDefaults_PodSpec and the nested defaults."""
    spec = _struct(pod, "spec")
    if spec is None:
        return
    for key in ("containers", "initContainers"):
        for container in _dicts(spec, key):
            resources = _dict(container, "resources")
            limits = _dict(resources, "limits")
            if resources is not None and limits:        # requests default to limits, per resource
                requests = _struct(resources, "requests")
                for name, value in limits.items():
                    if requests is not None and name not in requests:
                        requests[name] = copy.deepcopy(value)
    _pod_level_resources(spec)
    _default(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:                 # defaultHostNetworkPorts
        for key in ("containers", "initContainers"):
            for container in _dicts(spec, key):
                for port in _dicts(container, "ports"):
                    if _unset(port, "hostPort", 0) and port.get("containerPort"):
                        port["hostPort"] = port["containerPort"]
    _pod_spec(spec)


# ---- core/v1: other kinds --------------------------------------------------------------------------------------

def _service(service: Obj) -> None:
    """SetDefaults_Service (plus the ports' `+default="TCP"`)."""
    spec = _struct(service, "spec")
    if spec is None:
        return
    _default(spec, "sessionAffinity", "None", "")
    affinity = spec.get("sessionAffinity")
    if affinity == "None":
        spec.pop("sessionAffinityConfig", None)
    elif affinity == "ClientIP":
        client_ip = _dict(_dict(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip is None or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    _default(spec, "type", "ClusterIP", "")
    kind = spec.get("type")
    for port in _dicts(spec, "ports"):
        _default(port, "protocol", "TCP", "")
        target = port.get("targetPort")
        if target is None or target == "" or (type(target) is int and target == 0):
            port["targetPort"] = port.get("port", 0)
    external_ips = spec.get("externalIPs")
    if kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and isinstance(external_ips, list)
                                                and external_ips):   # pkg/api/v1/service ExternallyAccessible
        _default(spec, "externalTrafficPolicy", "Cluster", "")
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        _default(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)
        for ingress in _dicts(_dict(_dict(service, "status"), "loadBalancer"), "ingress"):
            if ingress.get("ip"):
                _default(ingress, "ipMode", "VIP")


def _namespace(namespace: Obj) -> None:
    """SetDefaults_Namespace (the kubernetes.io/metadata.name label, for a named namespace) and
    SetDefaults_NamespaceStatus."""
    metadata = _struct(namespace, "metadata")
    name = metadata.get("name") if metadata is not None else None
    if metadata is not None and isinstance(name, str) and name:
        labels = _struct(metadata, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = name
    _default(_struct(namespace, "status"), "phase", "Active", "")


def _secret(secret: Obj) -> None:
    """SetDefaults_Secret; and conversion.go Convert_v1_Secret_To_core_Secret, which writes stringData over
    data (v1 has no way back: the object webhooks see holds only data, base64-encoded)."""
    _default(secret, "type", "Opaque", "")
    string_data = _dict(secret, "stringData")
    if string_data is not None:
        if string_data and all(isinstance(v, str) for v in string_data.values()):
            data = _struct(secret, "data")
            for key, value in string_data.items():
                if data is not None:
                    data[key] = base64.b64encode(value.encode()).decode()
        secret.pop("stringData")


def _event(event: Obj) -> None:
    """core/v1 Event has no defaulter, but several fields without omitempty (or structs, which omitempty
    does not drop): the server writes them even when unset, so webhooks see them."""
    _struct(event, "involvedObject")
    _struct(event, "source")
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        event.setdefault(key, None)                     # a zero metav1.Time / MicroTime is written as null
    for key in ("reportingComponent", "reportingInstance"):
        _default(event, key, "")


def _endpoints(endpoints: Obj) -> None:
    for subset in _dicts(endpoints, "subsets"):         # SetDefaults_Endpoints
        for port in _dicts(subset, "ports"):
            _default(port, "protocol", "TCP", "")


def _limit_range(limit_range: Obj) -> None:
    """SetDefaults_LimitRangeItem: for Container limits, default <- max, defaultRequest <- default <- min."""
    spec = _struct(limit_range, "spec")
    if spec is not None and "limits" not in spec:
        spec["limits"] = None                           # no omitempty: a LimitRange without limits reads null
    for item in _dicts(spec, "limits"):
        if item.get("type") == "Container":
            default = dict(_dict(item, "default") or {})
            request = dict(_dict(item, "defaultRequest") or {})
            for name, value in (_dict(item, "max") or {}).items():
                default.setdefault(name, copy.deepcopy(value))
            for name, value in default.items():
                request.setdefault(name, copy.deepcopy(value))
            for name, value in (_dict(item, "min") or {}).items():
                request.setdefault(name, copy.deepcopy(value))
            if default:                                 # an empty map would not be written back (omitempty)
                item["default"] = default
            if request:
                item["defaultRequest"] = request
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            _resource_list(item, key)


def _resource_quota(quota: Obj) -> None:
    _resource_list(_dict(quota, "spec"), "hard")
    status = _dict(quota, "status")
    _resource_list(status, "hard")
    _resource_list(status, "used")


def _pvc_spec(spec: Obj | None) -> None:
    """SetDefaults_PersistentVolumeClaimSpec and its resource lists."""
    if spec is not None:
        _default(spec, "volumeMode", "Filesystem")
        _requirements(spec)


def _pvc(claim: Obj) -> None:
    """SetDefaults_PersistentVolumeClaim (status.phase Pending) and the spec's."""
    _default(_struct(claim, "status"), "phase", "Pending", "")
    _pvc_spec(_struct(claim, "spec"))
    status = _dict(claim, "status")
    _resource_list(status, "capacity")
    _resource_list(status, "allocatedResources")


def _persistent_volume(volume: Obj) -> None:
    """SetDefaults_PersistentVolume and its sources' declarative defaults."""
    _default(_struct(volume, "status"), "phase", "Pending", "")
    spec = _struct(volume, "spec")
    if spec is None:
        return
    _default(spec, "persistentVolumeReclaimPolicy", "Retain", "")
    _default(spec, "volumeMode", "Filesystem")
    _resource_list(spec, "capacity")
    _persistent_sources(spec)


def _node(node: Obj) -> None:
    """SetDefaults_NodeStatus: allocatable defaults to capacity."""
    status = _dict(node, "status")
    if status is not None and status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = copy.deepcopy(status["capacity"])
    _resource_list(status, "capacity")
    _resource_list(status, "allocatable")


def _replication_controller(controller: Obj) -> None:
    """SetDefaults_ReplicationController (selector and labels from the template's labels), replicas 1."""
    spec = _struct(controller, "spec")
    if spec is None:
        return
    template = _dict(spec, "template")
    labels = _dict(_dict(template, "metadata"), "labels")
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = copy.deepcopy(labels)
        metadata = _struct(controller, "metadata")
        if metadata is not None and not metadata.get("labels"):
            metadata["labels"] = copy.deepcopy(labels)
    _default(spec, "replicas", 1)
    if template is not None:
        _pod_spec(_struct(template, "spec"))


def _pod_template_kind(pod_template: Obj) -> None:
    _pod_template(pod_template)


# ---- apps/v1 (pkg/apis/apps/v1/defaults.go) --------------------------------------------------------------------

def _deployment(deployment: Obj) -> None:
    """SetDefaults_Deployment."""
    spec = _struct(deployment, "spec")
    if spec is None:
        return
    _default(spec, "replicas", 1)
    strategy = _struct(spec, "strategy")
    if strategy is not None:
        _default(strategy, "type", "RollingUpdate", "")
        if strategy.get("type") == "RollingUpdate":
            rolling = _struct(strategy, "rollingUpdate")
            _default(rolling, "maxUnavailable", "25%")
            _default(rolling, "maxSurge", "25%")
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    _pod_template(spec)


def _daemon_set(daemon_set: Obj) -> None:
    """SetDefaults_DaemonSet."""
    spec = _struct(daemon_set, "spec")
    if spec is None:
        return
    strategy = _struct(spec, "updateStrategy")
    if strategy is not None:
        _default(strategy, "type", "RollingUpdate", "")
        if strategy.get("type") == "RollingUpdate":
            rolling = _struct(strategy, "rollingUpdate")
            _default(rolling, "maxUnavailable", 1)
            _default(rolling, "maxSurge", 0)
    _default(spec, "revisionHistoryLimit", 10)
    _pod_template(spec)


def _stateful_set(stateful_set: Obj) -> None:
    """SetDefaults_StatefulSet (MaxUnavailableStatefulSet is beta and off in 1.36: no maxUnavailable), and the
    PersistentVolumeClaim defaults of each volumeClaimTemplate."""
    spec = _struct(stateful_set, "spec")
    if spec is None:
        return
    _default(spec, "podManagementPolicy", "OrderedReady", "")
    _default(spec, "serviceName", "")                   # no omitempty: written as "" when unset
    strategy = _struct(spec, "updateStrategy")
    if strategy is not None:
        if _unset(strategy, "type", ""):
            strategy["type"] = "RollingUpdate"
            _struct(strategy, "rollingUpdate")
        rolling = _dict(strategy, "rollingUpdate")
        if strategy.get("type") == "RollingUpdate" and rolling is not None:
            _default(rolling, "partition", 0)
    retention = _struct(spec, "persistentVolumeClaimRetentionPolicy")
    _default(retention, "whenDeleted", "Retain", "")
    _default(retention, "whenScaled", "Retain", "")
    _default(spec, "replicas", 1)
    _default(spec, "revisionHistoryLimit", 10)
    _pod_template(spec)
    for claim in _dicts(spec, "volumeClaimTemplates"):
        _pvc(claim)
        # apps/v1 conversion.go Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec (issue 87583)
        claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"


def _replica_set(replica_set: Obj) -> None:
    spec = _struct(replica_set, "spec")
    _default(spec, "replicas", 1)                       # SetDefaults_ReplicaSet
    _pod_template(spec)


# ---- batch/v1 (pkg/apis/batch/v1/defaults.go) ------------------------------------------------------------------

_INT32_MAX = 2**31 - 1


def _pod_failure_policy(job_spec: Obj | None) -> None:
    """SetDefaults_PodFailurePolicyOnPodConditionsPattern: status True."""
    for rule in _dicts(_dict(job_spec, "podFailurePolicy"), "rules"):
        for pattern in _dicts(rule, "onPodConditions"):
            _default(pattern, "status", "True", "")


def _job(job: Obj) -> None:
    """SetDefaults_Job (JobPodReplacementPolicy is GA in 1.36)."""
    spec = _struct(job, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _default(spec, "parallelism", 1)
    _default(spec, "backoffLimit", _INT32_MAX if spec.get("backoffLimitPerIndex") is not None else 6)
    labels = _dict(_dict(_dict(spec, "template"), "metadata"), "labels")
    metadata = _struct(job, "metadata")
    if labels is not None and metadata is not None and not metadata.get("labels"):
        metadata["labels"] = copy.deepcopy(labels)
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    _default(spec, "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") is not None
             else "TerminatingOrFailed")
    _default(spec, "manualSelector", False)
    _pod_failure_policy(spec)
    _pod_template(spec)


def _cron_job(cron_job: Obj) -> None:
    """SetDefaults_CronJob; the job template gets only the pod-failure pattern and Pod template defaults
    (SetObjectDefaults_CronJob does not run SetDefaults_Job on it)."""
    spec = _struct(cron_job, "spec")
    if spec is None:
        return
    _default(spec, "concurrencyPolicy", "Allow", "")
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    job_template = _struct(spec, "jobTemplate")
    if job_template is not None:
        _struct(job_template, "metadata")               # ObjectMeta: written as {} when empty
    job_spec = _struct(job_template, "spec") if job_template is not None else None
    _pod_failure_policy(job_spec)
    _pod_template(job_spec)


# ---- networking, rbac, autoscaling, scheduling, storage ---------------------------------------------------------

def _network_policy(policy: Obj) -> None:
    """SetDefaults_NetworkPolicy (policyTypes) and SetDefaults_NetworkPolicyPort (protocol TCP)."""
    spec = _struct(policy, "spec")
    if spec is None:
        return
    _struct(spec, "podSelector")                        # a LabelSelector struct: written as {} when empty
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec, direction):
            for port in _dicts(rule, "ports"):
                _default(port, "protocol", "TCP")


def _ingress_class(ingress_class: Obj) -> None:
    _default(_dict(_dict(ingress_class, "spec"), "parameters"), "scope", "Cluster")  # SetDefaults_IngressClass


def _role_binding(binding: Obj) -> None:
    """SetDefaults_(Cluster)RoleBinding and SetDefaults_Subject (a ServiceAccount's group stays "")."""
    _default(_struct(binding, "roleRef"), "apiGroup", "rbac.authorization.k8s.io", "")
    for subject in _dicts(binding, "subjects"):
        if _unset(subject, "apiGroup", "") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = "rbac.authorization.k8s.io"


def _hpa_v1(hpa: Obj) -> None:
    """autoscaling/v1 SetDefaults_HorizontalPodAutoscaler (minReplicas 1); and conversion.go, which gives an HPA
    without a CPU target or other metrics (the autoscaling.alpha.kubernetes.io/metrics annotation, not
    followed here) the DefaultCPUUtilization metric, written back as targetCPUUtilizationPercentage 80."""
    spec = _struct(hpa, "spec")
    _default(spec, "minReplicas", 1)
    annotations = _dict(_dict(hpa, "metadata"), "annotations") or {}
    if "autoscaling.alpha.kubernetes.io/metrics" not in annotations:
        _default(spec, "targetCPUUtilizationPercentage", 80)


_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scaling_rules(behavior: Obj, key: str, defaults: Obj) -> None:
    """GenerateHPAScaleUp/DownRules: the defaults, overridden by each field the object sets (copyHPAScalingRules)."""
    given = _dict(behavior, key) or {}
    rules = copy.deepcopy(defaults)
    for field in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if given.get(field) is not None:
            rules[field] = given[field]
    behavior[key] = rules


def _hpa_v2(hpa: Obj) -> None:
    """autoscaling/v2 SetDefaults_HorizontalPodAutoscaler: minReplicas 1, CPU at 80% when there are no metrics,
    and every scaling rule filled in once a behavior is given."""
    spec = _struct(hpa, "spec")
    if spec is None:
        return
    _default(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    behavior = _dict(spec, "behavior")
    if behavior is not None:
        _scaling_rules(behavior, "scaleUp", _SCALE_UP)
        _scaling_rules(behavior, "scaleDown", _SCALE_DOWN)


def _role(role: Obj) -> None:
    """Role and ClusterRole have no defaulter; `rules` has no omitempty, so a role without rules reads null."""
    if "rules" not in role:
        role["rules"] = None


def _priority_class(priority_class: Obj) -> None:
    _default(priority_class, "preemptionPolicy", "PreemptLowerPriority")   # SetDefaults_PriorityClass


def _storage_class(storage_class: Obj) -> None:
    _default(storage_class, "reclaimPolicy", "Delete")  # SetDefaults_StorageClass
    _default(storage_class, "volumeBindingMode", "Immediate")


def _csi_driver(driver: Obj) -> None:
    """SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod on, VolumeLimitScaling off in 1.36)."""
    spec = _struct(driver, "spec")
    _default(spec, "attachRequired", True)
    _default(spec, "podInfoOnMount", False)
    _default(spec, "storageCapacity", False)
    _default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if spec is not None and not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    _default(spec, "requiresRepublish", False)
    _default(spec, "seLinuxMount", False)


# ---- admissionregistration/v1, apiextensions/v1 ----------------------------------------------------------------

def _rules(rules: list[Obj]) -> None:
    for rule in rules:
        _default(rule, "scope", "*")                    # SetDefaults_Rule: AllScopes


def _webhooks(configuration: Obj, mutating: bool) -> None:
    """SetDefaults_Validating/MutatingWebhook, SetDefaults_ServiceReference (port 443), SetDefaults_Rule."""
    for webhook in _dicts(configuration, "webhooks"):
        _default(webhook, "failurePolicy", "Fail")
        _default(webhook, "matchPolicy", "Equivalent")
        _default(webhook, "namespaceSelector", {})
        _default(webhook, "objectSelector", {})
        _default(webhook, "timeoutSeconds", 10)
        if mutating:
            _default(webhook, "reinvocationPolicy", "Never")
        _default(_dict(_dict(webhook, "clientConfig"), "service"), "port", 443)
        _rules(_dicts(webhook, "rules"))


def _match_resources(match: Obj | None) -> None:
    """SetDefaults_MatchResources and the rules under it."""
    if match is None:
        return
    _default(match, "matchPolicy", "Equivalent")
    _default(match, "namespaceSelector", {})
    _default(match, "objectSelector", {})
    _rules(_dicts(match, "resourceRules") + _dicts(match, "excludeResourceRules"))


def _admission_policy(policy: Obj) -> None:
    """SetDefaults_Validating/MutatingAdmissionPolicySpec (failurePolicy Fail) and its match constraints."""
    spec = _struct(policy, "spec")
    _default(spec, "failurePolicy", "Fail")
    _match_resources(_dict(spec, "matchConstraints"))


def _admission_binding(binding: Obj) -> None:
    _match_resources(_dict(_dict(binding, "spec"), "matchResources"))


def _crd(crd: Obj) -> None:
    """apiextensions v1 SetDefaults_CustomResourceDefinition(Spec): names, conversion None, storedVersions."""
    spec = _struct(crd, "spec")
    if spec is None:
        return
    names = _struct(spec, "names")
    if names is not None:
        given = names.get("kind")
        kind = given if isinstance(given, str) else ""
        _default(names, "singular", kind.lower(), "")
        if kind:
            _default(names, "listKind", kind + "List", "")
    _default(spec, "conversion", {"strategy": "None"})
    webhook = _dict(_dict(spec, "conversion"), "webhook")
    _default(_dict(_dict(webhook, "clientConfig"), "service"), "port", 443)
    status = _struct(crd, "status")
    if status is not None and not status.get("storedVersions"):
        stored = [v.get("name") for v in _dicts(spec, "versions") if v.get("storage") is True][:1]
        if stored:
            status["storedVersions"] = stored


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("v1", "Pod"): _pod,
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
}

# (apiVersion, kind) pairs default_object changes; any other object comes back as a plain copy
DEFAULTED_KINDS: frozenset[tuple[str, str]] = frozenset(_DEFAULTERS)
