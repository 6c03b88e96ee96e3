"""The offline REST mapper: kind <-> resource (plural), scope and subresources, without a cluster.

The built-in table covers the Kubernetes API groups a 1.34 API server serves by default, plus Kyverno's own
kinds and the report kinds it writes. Custom kinds come from CustomResourceDefinitions (`add_crd`); for
anything else `by_kind` returns None, and `guess_plural` is Kubernetes' own (admittedly unsafe) guess.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source, group_version

__all__ = ["KindTable", "ResourceInfo", "builtin_kinds", "guess_plural"]


@dataclass(frozen=True)
class ResourceInfo:
    group: str
    version: str
    kind: str
    resource: str                       # plural, e.g. "deployments"
    namespaced: bool
    subresources: tuple[str, ...] = ()  # e.g. ("scale", "status")
    singular: str = ""                  # CRD spec.names.singular; "" = the kind in lower case
    short_names: tuple[str, ...] = ()   # e.g. ("deploy",), as discovery lists them

    def names(self) -> tuple[str, ...]:
        """Every lower-case name kubectl accepts for this resource: plural, singular, short names."""
        return (self.resource, self.singular or self.kind.lower(), *self.short_names)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


# group (core = ""), versions, kind, plural, N(amespaced) or C(luster), subresources.
# Subresources are those the API server registers; admission rules match them as `pods/exec` and so on.
_BUILTINS = """
core v1 Binding bindings N -
core v1 ComponentStatus componentstatuses C -
core v1 ConfigMap configmaps N -
core v1 Endpoints endpoints N -
core v1 Event events N -
core v1 LimitRange limitranges N -
core v1 Namespace namespaces C finalize,status
core v1 Node nodes C proxy,status
core v1 PersistentVolume persistentvolumes C status
core v1 PersistentVolumeClaim persistentvolumeclaims N status
core v1 Pod pods N attach,binding,ephemeralcontainers,eviction,exec,log,portforward,proxy,resize,status
core v1 PodTemplate podtemplates N -
core v1 ReplicationController replicationcontrollers N scale,status
core v1 ResourceQuota resourcequotas N status
core v1 Secret secrets N -
core v1 Service services N proxy,status
core v1 ServiceAccount serviceaccounts N token
admissionregistration.k8s.io v1 MutatingWebhookConfiguration mutatingwebhookconfigurations C -
admissionregistration.k8s.io v1 ValidatingWebhookConfiguration validatingwebhookconfigurations C -
admissionregistration.k8s.io v1,v1beta1 ValidatingAdmissionPolicy validatingadmissionpolicies C status
admissionregistration.k8s.io v1,v1beta1 ValidatingAdmissionPolicyBinding validatingadmissionpolicybindings C -
admissionregistration.k8s.io v1alpha1,v1beta1 MutatingAdmissionPolicy mutatingadmissionpolicies C -
admissionregistration.k8s.io v1alpha1,v1beta1 MutatingAdmissionPolicyBinding
  mutatingadmissionpolicybindings C -
apiextensions.k8s.io v1 CustomResourceDefinition customresourcedefinitions C status
apiregistration.k8s.io v1 APIService apiservices C status
apps v1 ControllerRevision controllerrevisions N -
apps v1 DaemonSet daemonsets N status
apps v1 Deployment deployments N scale,status
apps v1 ReplicaSet replicasets N scale,status
apps v1 StatefulSet statefulsets N scale,status
authentication.k8s.io v1 SelfSubjectReview selfsubjectreviews C -
authentication.k8s.io v1 TokenReview tokenreviews C -
authorization.k8s.io v1 LocalSubjectAccessReview localsubjectaccessreviews N -
authorization.k8s.io v1 SelfSubjectAccessReview selfsubjectaccessreviews C -
authorization.k8s.io v1 SelfSubjectRulesReview selfsubjectrulesreviews C -
authorization.k8s.io v1 SubjectAccessReview subjectaccessreviews C -
autoscaling v1,v2 HorizontalPodAutoscaler horizontalpodautoscalers N status
batch v1 CronJob cronjobs N status
batch v1 Job jobs N status
certificates.k8s.io v1 CertificateSigningRequest certificatesigningrequests C approval,status
certificates.k8s.io v1beta1 ClusterTrustBundle clustertrustbundles C -
coordination.k8s.io v1 Lease leases N -
coordination.k8s.io v1beta1 LeaseCandidate leasecandidates N -
discovery.k8s.io v1 EndpointSlice endpointslices N -
events.k8s.io v1 Event events N -
flowcontrol.apiserver.k8s.io v1,v1beta3 FlowSchema flowschemas C status
flowcontrol.apiserver.k8s.io v1,v1beta3 PriorityLevelConfiguration prioritylevelconfigurations C status
networking.k8s.io v1 Ingress ingresses N status
networking.k8s.io v1 IngressClass ingressclasses C -
networking.k8s.io v1 IPAddress ipaddresses C -
networking.k8s.io v1 NetworkPolicy networkpolicies N -
networking.k8s.io v1 ServiceCIDR servicecidrs C status
node.k8s.io v1 RuntimeClass runtimeclasses C -
policy v1 PodDisruptionBudget poddisruptionbudgets N status
rbac.authorization.k8s.io v1 ClusterRole clusterroles C -
rbac.authorization.k8s.io v1 ClusterRoleBinding clusterrolebindings C -
rbac.authorization.k8s.io v1 Role roles N -
rbac.authorization.k8s.io v1 RoleBinding rolebindings N -
resource.k8s.io v1,v1beta1,v1beta2 DeviceClass deviceclasses C -
resource.k8s.io v1,v1beta1,v1beta2 ResourceClaim resourceclaims N status
resource.k8s.io v1,v1beta1,v1beta2 ResourceClaimTemplate resourceclaimtemplates N -
resource.k8s.io v1,v1beta1,v1beta2 ResourceSlice resourceslices C -
scheduling.k8s.io v1 PriorityClass priorityclasses C -
storage.k8s.io v1 CSIDriver csidrivers C -
storage.k8s.io v1 CSINode csinodes C -
storage.k8s.io v1 CSIStorageCapacity csistoragecapacities N -
storage.k8s.io v1 StorageClass storageclasses C -
storage.k8s.io v1 VolumeAttachment volumeattachments C status
storage.k8s.io v1,v1beta1 VolumeAttributesClass volumeattributesclasses C -
kyverno.io v1,v2beta1 ClusterPolicy clusterpolicies C status
kyverno.io v1,v2beta1 Policy policies N status
kyverno.io v2,v2beta1,v2alpha1 CleanupPolicy cleanuppolicies N status
kyverno.io v2,v2beta1,v2alpha1 ClusterCleanupPolicy clustercleanuppolicies C status
kyverno.io v2,v2beta1,v2alpha1 PolicyException policyexceptions N -
kyverno.io v2,v1beta1 UpdateRequest updaterequests N status
kyverno.io v2alpha1 GlobalContextEntry globalcontextentries C status
kyverno.io v2,v1alpha2 AdmissionReport admissionreports N -
kyverno.io v2,v1alpha2 ClusterAdmissionReport clusteradmissionreports C -
kyverno.io v2,v1alpha2 BackgroundScanReport backgroundscanreports N -
kyverno.io v2,v1alpha2 ClusterBackgroundScanReport clusterbackgroundscanreports C -
policies.kyverno.io v1,v1beta1,v1alpha1 ValidatingPolicy validatingpolicies C status
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedValidatingPolicy namespacedvalidatingpolicies N status
policies.kyverno.io v1,v1beta1,v1alpha1 GeneratingPolicy generatingpolicies C status
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedGeneratingPolicy namespacedgeneratingpolicies N status
policies.kyverno.io v1,v1beta1,v1alpha1 MutatingPolicy mutatingpolicies C status
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedMutatingPolicy namespacedmutatingpolicies N status
policies.kyverno.io v1,v1beta1,v1alpha1 ImageValidatingPolicy imagevalidatingpolicies C status
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedImageValidatingPolicy
  namespacedimagevalidatingpolicies N status
policies.kyverno.io v1,v1beta1,v1alpha1 DeletingPolicy deletingpolicies C status
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedDeletingPolicy namespaceddeletingpolicies N status
policies.kyverno.io v1,v1beta1,v1alpha1 PolicyException policyexceptions N -
reports.kyverno.io v1 EphemeralReport ephemeralreports N -
reports.kyverno.io v1 ClusterEphemeralReport clusterephemeralreports C -
wgpolicyk8s.io v1alpha2 PolicyReport policyreports N -
wgpolicyk8s.io v1alpha2 ClusterPolicyReport clusterpolicyreports C -
openreports.io v1alpha1 Report reports N -
openreports.io v1alpha1 ClusterReport clusterreports C -
"""


# (group, plural) -> short names, as the API server's discovery documents them (kubectl api-resources)
_SHORT_NAMES = {
    ("", "componentstatuses"): ("cs",), ("", "configmaps"): ("cm",), ("", "endpoints"): ("ep",),
    ("", "events"): ("ev",), ("", "limitranges"): ("limits",), ("", "namespaces"): ("ns",),
    ("", "nodes"): ("no",), ("", "persistentvolumeclaims"): ("pvc",), ("", "persistentvolumes"): ("pv",),
    ("", "pods"): ("po",), ("", "replicationcontrollers"): ("rc",), ("", "resourcequotas"): ("quota",),
    ("", "serviceaccounts"): ("sa",), ("", "services"): ("svc",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("crd", "crds"),
    ("apps", "daemonsets"): ("ds",), ("apps", "deployments"): ("deploy",), ("apps", "replicasets"): ("rs",),
    ("apps", "statefulsets"): ("sts",), ("autoscaling", "horizontalpodautoscalers"): ("hpa",),
    ("batch", "cronjobs"): ("cj",), ("certificates.k8s.io", "certificatesigningrequests"): ("csr",),
    ("events.k8s.io", "events"): ("ev",), ("networking.k8s.io", "ingresses"): ("ing",),
    ("networking.k8s.io", "networkpolicies"): ("netpol",), ("policy", "poddisruptionbudgets"): ("pdb",),
    ("scheduling.k8s.io", "priorityclasses"): ("pc",), ("storage.k8s.io", "storageclasses"): ("sc",),
    ("kyverno.io", "clusterpolicies"): ("cpol",), ("kyverno.io", "policies"): ("pol",),
    ("kyverno.io", "cleanuppolicies"): ("cleanpol",), ("kyverno.io", "clustercleanuppolicies"): ("ccleanpol",),
    ("kyverno.io", "policyexceptions"): ("polex",), ("kyverno.io", "updaterequests"): ("ur",),
    ("kyverno.io", "globalcontextentries"): ("gctxentry",), ("kyverno.io", "admissionreports"): ("admr",),
    ("kyverno.io", "clusteradmissionreports"): ("cadmr",), ("kyverno.io", "backgroundscanreports"): ("bgscanr",),
    ("kyverno.io", "clusterbackgroundscanreports"): ("cbgscanr",),
    ("policies.kyverno.io", "validatingpolicies"): ("vpol",),
    ("policies.kyverno.io", "namespacedvalidatingpolicies"): ("nvpol",),
    ("policies.kyverno.io", "generatingpolicies"): ("gpol",),
    ("policies.kyverno.io", "namespacedgeneratingpolicies"): ("ngpol",),
    ("policies.kyverno.io", "mutatingpolicies"): ("mpol",),
    ("policies.kyverno.io", "imagevalidatingpolicies"): ("ivpol",),
    ("policies.kyverno.io", "deletingpolicies"): ("dpol",),
    ("policies.kyverno.io", "policyexceptions"): ("polex",),
    ("wgpolicyk8s.io", "policyreports"): ("polr",), ("wgpolicyk8s.io", "clusterpolicyreports"): ("cpolr",),
    ("reports.kyverno.io", "ephemeralreports"): ("ephr",),
    ("reports.kyverno.io", "clusterephemeralreports"): ("cephr",),
}


def _parse_builtins() -> list[ResourceInfo]:
    out: list[ResourceInfo] = []
    # A row may be wrapped: an indented line continues the one before it.
    for row in _BUILTINS.replace("\n  ", " ").split("\n"):
        if not row.strip():
            continue
        group, versions, kind, plural, scope, subs = row.split()
        for version in versions.split(","):
            group = "" if group == "core" else group
            out.append(ResourceInfo(group, version, kind, plural, scope == "N",
                                    () if subs == "-" else tuple(subs.split(",")),
                                    short_names=_SHORT_NAMES.get((group, plural), ())))
    return out


_BUILTIN_INFOS = tuple(_parse_builtins())


def guess_plural(kind: str) -> str:
    """Kubernetes' UnsafeGuessKindToResource: lower-case, then `s`->`ses`, `y`->`ies`, else `s`.

    It is wrong for some kinds (a CRD kind `Gateway` would be guessed `gatewaies`), which is why the table
    and CRDs come first and this is only the last resort.
    """
    if not kind:
        return ""
    singular = kind.lower()
    if singular.endswith("endpoints"):
        return singular
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


class KindTable:
    """Lookups between (apiVersion, kind) and (group, version, resource)."""

    def __init__(self, *, builtins: bool = True,
                 crd_hint: str = "give its CustomResourceDefinition with --crd") -> None:
        # how the command that built the table takes CRDs, for messages about an unknown kind
        self.crd_hint = crd_hint
        self._by_kind: dict[tuple[str, str, str], ResourceInfo] = {}
        self._by_resource: dict[tuple[str, str, str], ResourceInfo] = {}
        if builtins:
            for info in _BUILTIN_INFOS:
                self.add(info)

    def add(self, info: ResourceInfo) -> None:
        """Register (or replace) one group/version/kind."""
        old = self._by_kind.pop((info.group, info.version, info.kind), None)
        if old is not None:
            self._by_resource.pop((old.group, old.version, old.resource), None)
        self._by_kind[(info.group, info.version, info.kind)] = info
        self._by_resource[(info.group, info.version, info.resource)] = info

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(list(self._by_kind.values()))

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        group, version = group_version(api_version)
        return self._by_kind.get((group, version, kind))

    def by_resource(self, group: str, version: str, resource: str) -> ResourceInfo | None:
        """The kind served at group/version/resource. `pods/exec` gives the Pod entry when the
        subresource exists."""
        name, _, sub = resource.partition("/")
        info = self._by_resource.get((group, version, name))
        if info is None or (sub and sub not in info.subresources):
            return None
        return info

    def versions_of(self, group: str, kind: str) -> list[ResourceInfo]:
        """Every served version of a group's kind, so that callers can tell an unknown kind from an
        unknown version of a known one."""
        return [i for i in self._by_kind.values() if i.group == group and i.kind == kind]

    def kinds_for_resource(self, group: str, version: str, resource: str) -> list[ResourceInfo]:
        """Entries an admission rule's (apiGroup, apiVersion, resource) can match; each part may be `*`.

        `resource` is read as the API server's rule matcher reads it: `*` is every resource, `*/scale`
        every resource that has a `scale` subresource, and a `*` subresource also matches the resource
        itself, so `pods/*` matches pods and `*/*` everything.
        """
        name, slash, sub = resource.partition("/")
        out: list[ResourceInfo] = []
        for info in self._by_kind.values():
            if group != "*" and info.group != group:
                continue
            if version != "*" and info.version != version:
                continue
            if name != "*" and info.resource != name:
                continue
            if slash and sub != "*" and sub not in info.subresources:
                continue
            out.append(info)
        return out

    def serves_group(self, group: str) -> bool:
        """Whether any kind of this API group is known (built in or from a CRD)."""
        return any(info.group == group for info in self._by_kind.values())

    def resolve(self, name: str) -> list[ResourceInfo]:
        """What `kubectl get NAME` would list: NAME is a kind, plural, singular or short name in any case,
        optionally qualified as `name.group` or `name.version.group` (`pods.` is the core group)."""
        wanted = name.strip().lower()
        resource, dot, rest = wanted.partition(".")
        candidates: list[tuple[str, str | None, str | None]] = [(wanted, None, None)]
        if dot:
            candidates = []
            head, dot2, tail = rest.partition(".")
            if dot2:
                candidates.append((resource, head, tail))        # resource.version.group
            candidates.append((resource, None, rest))            # resource.group
        for res, want_version, want_group in candidates:
            found = [i for i in self._by_kind.values()
                     if res in i.names() and (want_group is None or i.group == want_group)
                     and (want_version is None or i.version == want_version)]
            if found:
                return found
        return []

    def resource_of(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        """(plural, namespaced) of a served kind: what a REST mapper answers (cel.context.ResourceOf)."""
        info = self.by_kind(api_version, kind)
        return (info.resource, info.namespaced) if info is not None else None

    def kind_of(self, api_version: str, resource: str) -> str | None:
        """The kind served at apiVersion/resource (cel.context.KindOf)."""
        group, version = group_version(api_version)
        info = self.by_resource(group, version, resource)
        return info.kind if info is not None else None

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        info = self.by_kind(api_version, kind)
        return None if info is None else info.namespaced

    def add_crd(self, crd: Mapping[str, Any], source: Source | None = None) -> None:
        """Register every served version of an apiextensions.k8s.io/v1 (or v1beta1) CRD.

        A CRD for a group and kind already known replaces all of its versions: the cluster's definition
        is authoritative. Raises InputError for a CRD without group, kind, plural or scope.
        """
        spec = crd.get("spec")
        if not isinstance(spec, Mapping):
            raise InputError("CustomResourceDefinition has no spec", source)
        names_field = spec.get("names")
        names: Mapping[str, Any] = names_field if isinstance(names_field, Mapping) else {}
        group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
        scope = spec.get("scope")
        for field, value in (("spec.group", group), ("spec.names.kind", kind), ("spec.names.plural", plural)):
            if not isinstance(value, str) or not value:
                raise InputError(f"CustomResourceDefinition has no {field}", source)
        if scope not in ("Namespaced", "Cluster"):
            raise InputError(
                f"CustomResourceDefinition spec.scope must be Namespaced or Cluster, not {scope!r}", source)
        assert isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str)
        singular = names.get("singular") if isinstance(names.get("singular"), str) else ""
        short = names.get("shortNames")
        short_names = tuple(str(n).lower() for n in short) if isinstance(short, list) else ()
        infos = [ResourceInfo(group, version, kind, plural, scope == "Namespaced", subs, str(singular).lower(),
                              short_names)
                 for version, subs in _served_versions(spec)]
        for old in self.versions_of(group, kind):
            del self._by_kind[(old.group, old.version, old.kind)]
            self._by_resource.pop((old.group, old.version, old.resource), None)
        for info in infos:
            self.add(info)


@functools.cache
def builtin_kinds() -> KindTable:
    """The table of built-in kinds alone, shared (do not add CRDs to it: build a KindTable for that)."""
    return KindTable()


def _served_versions(spec: Mapping[str, Any]) -> Iterator[tuple[str, tuple[str, ...]]]:
    # v1beta1 CRDs could name one `version` and put `subresources` at the top of the spec.
    top_subs = spec.get("subresources")
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        if isinstance(spec.get("version"), str):
            yield spec["version"], _subresources(top_subs)
        return
    for entry in versions:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        if entry.get("served", True) is False:
            continue
        subs = entry.get("subresources", top_subs)
        yield entry["name"], _subresources(subs)


def _subresources(subs: Any) -> tuple[str, ...]:
    if not isinstance(subs, Mapping):
        return ()
    return tuple(name for name in ("scale", "status") if name in subs)
