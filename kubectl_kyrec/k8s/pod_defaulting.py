"""The Pod defaults of k8s.io/kubernetes v1.36.3 (pkg/apis/core/v1/defaults.go), nested as
zz_generated.defaults.go nests them: `default_pod_spec` is what every PodSpec gets (SetDefaults_PodSpec and
the container, volume, probe and resource-list defaults under it), `default_pod` adds SetDefaults_Pod, which
only Pods get. Used by k8s.defaulting for Pods and for the Pod templates of workloads."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from kubectl_kyrec.k8s.go_fields import (
    Obj,
    map_at,
    maps_at,
    quantity_field,
    quantity_text,
    requirements,
    resource_list,
    set_default,
    struct_at,
    unset,
)
from kubectl_kyrec.k8s.image_reference import parse_normalized_named
from kubectl_kyrec.k8s.json_values import copy_json
from kubectl_kyrec.k8s.quantity import QuantityError, format_of, format_quantity, parse_quantity

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
    set_default(action, "path", "/", "")
    set_default(action, "scheme", "HTTP", "")


def _probe(probe: Obj | None) -> None:
    """SetDefaults_Probe, then its handler's defaults (HTTPGet; GRPC's `+default=""` service)."""
    if probe is None:
        return
    set_default(probe, "timeoutSeconds", 1, 0)
    set_default(probe, "periodSeconds", 10, 0)
    set_default(probe, "successThreshold", 1, 0)
    set_default(probe, "failureThreshold", 3, 0)
    _http_get(map_at(probe, "httpGet"))
    set_default(map_at(probe, "grpc"), "service", "")


def _field_ref(ref: Obj | None) -> None:
    """SetDefaults_ObjectFieldSelector."""
    set_default(ref, "apiVersion", "v1", "")


def _resource_field_ref(ref: Obj | None) -> None:
    """A resourceFieldRef's divisor is a Quantity value (not a pointer): written as "0" when unset."""
    set_default(ref, "divisor", "0")
    quantity_field(ref, "divisor")


def _downward_items(items: list[Obj]) -> None:
    for item in items:
        _field_ref(map_at(item, "fieldRef"))
        _resource_field_ref(map_at(item, "resourceFieldRef"))


def _container(container: Obj) -> None:
    """SetDefaults_Container (and EphemeralContainer), the ports' `+default="TCP"` protocol, env sources,
    resource lists, probes and lifecycle hooks."""
    if unset(container, "imagePullPolicy", ""):
        container["imagePullPolicy"] = _pull_policy(container.get("image"))
    set_default(container, "terminationMessagePath", "/dev/termination-log", "")
    set_default(container, "terminationMessagePolicy", "File", "")
    for port in maps_at(container, "ports"):
        set_default(port, "protocol", "TCP", "")
    for env in maps_at(container, "env"):
        source = map_at(env, "valueFrom")
        _field_ref(map_at(source, "fieldRef"))
        _resource_field_ref(map_at(source, "resourceFieldRef"))
        set_default(map_at(source, "fileKeyRef"), "optional", False)
    struct_at(container, "resources")                     # a struct field: written as {} when empty
    requirements(container)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(map_at(container, probe))
    lifecycle = map_at(container, "lifecycle")
    for hook in ("postStart", "preStop"):
        _http_get(map_at(map_at(lifecycle, hook), "httpGet"))


# k8s.io/api core/v1 VolumeSource: SetDefaults_Volume makes a volume naming none of them an emptyDir
_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image")
_FILE_MODE = 0o644      # Secret/ConfigMap/DownwardAPI/ProjectedVolumeSourceDefaultMode: 420


def default_persistent_sources(source: Obj) -> None:
    """The declarative defaults of the volume sources a PersistentVolume shares with a Pod volume."""
    set_default(map_at(source, "hostPath"), "type", "")              # SetDefaults_HostPathVolumeSource: HostPathUnset
    rbd = map_at(source, "rbd")
    set_default(rbd, "pool", "rbd", "")
    set_default(rbd, "user", "admin", "")
    set_default(rbd, "keyring", "/etc/ceph/keyring", "")
    set_default(map_at(source, "iscsi"), "iscsiInterface", "default", "")
    azure = map_at(source, "azureDisk")
    set_default(azure, "cachingMode", "ReadWrite")
    set_default(azure, "fsType", "ext4")
    set_default(azure, "readOnly", False)
    set_default(azure, "kind", "Shared")
    scale_io = map_at(source, "scaleIO")
    set_default(scale_io, "storageMode", "ThinProvisioned", "")
    set_default(scale_io, "fsType", "xfs", "")


def _volume(volume: Obj) -> None:
    """SetDefaults_Volume and the defaulters of each volume source."""
    if all(volume.get(source) is None for source in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    image = map_at(volume, "image")
    if image is not None and unset(image, "pullPolicy", ""):    # ImageVolume: GA, locked on in 1.36
        image["pullPolicy"] = _pull_policy(image.get("reference"))
    default_persistent_sources(volume)
    set_default(map_at(volume, "secret"), "defaultMode", _FILE_MODE)
    set_default(map_at(volume, "configMap"), "defaultMode", _FILE_MODE)
    downward = map_at(volume, "downwardAPI")
    set_default(downward, "defaultMode", _FILE_MODE)
    _downward_items(maps_at(downward, "items"))
    projected = map_at(volume, "projected")
    set_default(projected, "defaultMode", _FILE_MODE)
    for source in maps_at(projected, "sources"):
        _downward_items(maps_at(map_at(source, "downwardAPI"), "items"))
        set_default(map_at(source, "serviceAccountToken"), "expirationSeconds", 3600)  # ServiceAccountTokenProjection
    quantity_field(map_at(volume, "emptyDir"), "sizeLimit")
    claim = map_at(map_at(volume, "ephemeral"), "volumeClaimTemplate")
    if claim is not None:
        struct_at(claim, "metadata")                      # ObjectMeta: written as {} when empty
        default_pvc_spec(map_at(claim, "spec"))


def default_pod_spec(spec: Obj | None) -> None:
    """SetDefaults_PodSpec and everything nested under a PodSpec (the body of SetObjectDefaults_PodTemplate)."""
    if spec is None:
        return
    set_default(spec, "dnsPolicy", "ClusterFirst", "")
    set_default(spec, "restartPolicy", "Always", "")
    set_default(spec, "securityContext", {})
    for sysctl in maps_at(map_at(spec, "securityContext"), "sysctls"):
        set_default(sysctl, "value", "")                   # no omitempty: written as "" when unset
    set_default(spec, "terminationGracePeriodSeconds", 30)
    set_default(spec, "schedulerName", "default-scheduler", "")
    for volume in maps_at(spec, "volumes"):
        _volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in maps_at(spec, key):
            _container(container)
    resource_list(spec, "overhead")
    requirements(spec)
    # conversion.go Convert_v1_PodSpec_To_core_PodSpec reads the deprecated serviceAccount when
    # serviceAccountName is empty, and Convert_core_PodSpec_To_v1_PodSpec writes the name back to both
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(account, str) and account:
        spec["serviceAccountName"] = spec["serviceAccount"] = account


def default_pod_template(parent: Obj | None, key: str = "template") -> None:
    """A PodTemplateSpec field (a value struct in every workload but ReplicationController)."""
    template = struct_at(parent, key) if parent is not None else None
    if template is not None:
        struct_at(template, "metadata")                   # ObjectMeta, a struct: written as {} when empty
        default_pod_spec(struct_at(template, "spec"))


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
    for name, value in (map_at(map_at(container, "resources"), which) or {}).items():
        text = quantity_text(value)
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
    for container in maps_at(spec, "containers"):
        _add(total, _read_list(container, which))
    sidecars: dict[str, _Sum] = {}
    init_max: dict[str, _Sum] = {}
    for container in maps_at(spec, "initContainers"):
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
    resources = map_at(spec, "resources")
    if resources is None:
        return
    limits = dict(map_at(resources, "limits") or {})
    requests = map_at(resources, "requests") or {}
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
            pod_requests[name] = copy_json(value)
    if pod_requests:
        resources["requests"] = pod_requests


def default_pod(pod: Obj) -> None:
    """SetObjectDefaults_Pod: SetDefaults_Pod, then SetDefaults_PodSpec and the nested defaults."""
    spec = struct_at(pod, "spec")
    if spec is None:
        return
    for key in ("containers", "initContainers"):
        for container in maps_at(spec, key):
            resources = map_at(container, "resources")
            limits = map_at(resources, "limits")
            if resources is not None and limits:        # requests default to limits, per resource
                requests = struct_at(resources, "requests")
                for name, value in limits.items():
                    if requests is not None and name not in requests:
                        requests[name] = copy_json(value)
    _pod_level_resources(spec)
    set_default(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:                 # defaultHostNetworkPorts
        for key in ("containers", "initContainers"):
            for container in maps_at(spec, key):
                for port in maps_at(container, "ports"):
                    if unset(port, "hostPort", 0) and port.get("containerPort"):
                        port["hostPort"] = port["containerPort"]
    default_pod_spec(spec)



def default_pvc_spec(spec: Obj | None) -> None:
    """SetDefaults_PersistentVolumeClaimSpec and its resource lists."""
    if spec is not None:
        set_default(spec, "volumeMode", "Filesystem")
        requirements(spec)
