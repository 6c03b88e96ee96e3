"""What the double serves: resource types, and the discovery documents built from them.

Written independently of kyrec's own kind table (kubectl_kyrec/load/run_inputs/kinds.py) so that a mistake there is
not mirrored here. Built-in kinds are "typed": a real API server drops apiVersion and kind from the items
of their LISTs; custom resources (CRD-served) keep them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# group (core = "") | versions (first = preferred) | Kind | plural | N or C | status subresource | CRD?
_TABLE = """
core v1 Namespace namespaces C status -
core v1 ConfigMap configmaps N - -
core v1 Secret secrets N - -
core v1 Service services N status -
core v1 ServiceAccount serviceaccounts N - -
core v1 Pod pods N status -
core v1 LimitRange limitranges N - -
core v1 ResourceQuota resourcequotas N status -
core v1 PersistentVolumeClaim persistentvolumeclaims N status -
core v1 Node nodes C status -
apps v1 Deployment deployments N status -
apps v1 StatefulSet statefulsets N status -
apps v1 DaemonSet daemonsets N status -
apps v1 ReplicaSet replicasets N status -
batch v1 Job jobs N status -
batch v1 CronJob cronjobs N status -
networking.k8s.io v1 NetworkPolicy networkpolicies N - -
networking.k8s.io v1 Ingress ingresses N status -
rbac.authorization.k8s.io v1 Role roles N - -
rbac.authorization.k8s.io v1 RoleBinding rolebindings N - -
rbac.authorization.k8s.io v1 ClusterRole clusterroles C - -
rbac.authorization.k8s.io v1 ClusterRoleBinding clusterrolebindings C - -
admissionregistration.k8s.io v1 ValidatingAdmissionPolicy validatingadmissionpolicies C status -
admissionregistration.k8s.io v1 ValidatingAdmissionPolicyBinding validatingadmissionpolicybindings C - -
admissionregistration.k8s.io v1 MutatingAdmissionPolicy mutatingadmissionpolicies C - -
admissionregistration.k8s.io v1 MutatingAdmissionPolicyBinding mutatingadmissionpolicybindings C - -
apiextensions.k8s.io v1 CustomResourceDefinition customresourcedefinitions C status -
policies.kyverno.io v1,v1beta1,v1alpha1 ValidatingPolicy validatingpolicies C status crd
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedValidatingPolicy namespacedvalidatingpolicies N status crd
policies.kyverno.io v1,v1beta1,v1alpha1 GeneratingPolicy generatingpolicies C status crd
policies.kyverno.io v1,v1beta1,v1alpha1 NamespacedGeneratingPolicy namespacedgeneratingpolicies N status crd
policies.kyverno.io v1,v1beta1,v1alpha1 DeletingPolicy deletingpolicies C status crd
policies.kyverno.io v1,v1beta1 NamespacedDeletingPolicy namespaceddeletingpolicies N status crd
policies.kyverno.io v1,v1beta1,v1alpha1 MutatingPolicy mutatingpolicies C status crd
policies.kyverno.io v1,v1beta1 NamespacedMutatingPolicy namespacedmutatingpolicies N status crd
policies.kyverno.io v1,v1beta1,v1alpha1 PolicyException policyexceptions N - crd
kyverno.io v1 ClusterPolicy clusterpolicies C status crd
kyverno.io v1 Policy policies N status crd
kyverno.io v2 PolicyException policyexceptions N - crd
reports.kyverno.io v1 EphemeralReport ephemeralreports N - crd
reports.kyverno.io v1 ClusterEphemeralReport clusterephemeralreports C - crd
wgpolicyk8s.io v1alpha2 PolicyReport policyreports N - crd
wgpolicyk8s.io v1alpha2 ClusterPolicyReport clusterpolicyreports C - crd
openreports.io v1alpha1 Report reports N - crd
openreports.io v1alpha1 ClusterReport clusterreports C - crd
"""


# (group, plural) -> shortNames, as kube-apiserver 1.36 and Kyverno's CRDs list them in discovery (read from
# the real server of tests/realapi; kubectl and kyrec accept them as resource names)
SHORT_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "configmaps"): ("cm",), ("", "limitranges"): ("limits",), ("", "namespaces"): ("ns",),
    ("", "nodes"): ("no",), ("", "persistentvolumeclaims"): ("pvc",), ("", "pods"): ("po",),
    ("", "resourcequotas"): ("quota",), ("", "serviceaccounts"): ("sa",), ("", "services"): ("svc",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("crd", "crds"), ("apps", "daemonsets"): ("ds",),
    ("apps", "deployments"): ("deploy",), ("apps", "replicasets"): ("rs",), ("apps", "statefulsets"): ("sts",),
    ("batch", "cronjobs"): ("cj",), ("kyverno.io", "clusterpolicies"): ("cpol",), ("kyverno.io", "policies"): ("pol",),
    ("kyverno.io", "policyexceptions"): ("polex",), ("networking.k8s.io", "ingresses"): ("ing",),
    ("networking.k8s.io", "networkpolicies"): ("netpol",), ("policies.kyverno.io", "generatingpolicies"): ("gpol",),
    ("policies.kyverno.io", "namespacedgeneratingpolicies"): ("ngpol",),
    ("policies.kyverno.io", "deletingpolicies"): ("dpol",), ("policies.kyverno.io", "mutatingpolicies"): ("mpol",),
    ("policies.kyverno.io", "namespacedmutatingpolicies"): ("nmpol",),
    ("policies.kyverno.io", "namespaceddeletingpolicies"): ("ndpol",),
    ("policies.kyverno.io", "namespacedvalidatingpolicies"): ("nvpol",),
    ("policies.kyverno.io", "validatingpolicies"): ("vpol",),
    ("reports.kyverno.io", "clusterephemeralreports"): ("cephr",),
    ("reports.kyverno.io", "ephemeralreports"): ("ephr",),
    ("wgpolicyk8s.io", "clusterpolicyreports"): ("cpolr",), ("wgpolicyk8s.io", "policyreports"): ("polr",),
}


@dataclass(frozen=True)
class ResourceType:
    group: str
    versions: tuple[str, ...]          # served; the first is the preferred version
    kind: str
    resource: str                      # plural
    namespaced: bool
    status_subresource: bool = False
    crd: bool = False
    verbs: tuple[str, ...] = ALL_VERBS

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """`configmaps`, `deployments.apps`: how Status messages name a resource."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def short_names(self) -> tuple[str, ...]:
        return SHORT_NAMES.get((self.group, self.resource), ())

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def etcd_prefix(self) -> str:
        # built-in resources live under /registry/<resource>, custom resources under /registry/<group>/<resource>
        return f"/registry/{self.group}/{self.resource}" if self.crd else f"/registry/{self.resource}"


def default_types() -> list[ResourceType]:
    # a create-only kind, as a real server has several (tokenreviews, subjectaccessreviews, bindings)
    out = [ResourceType("authentication.k8s.io", ("v1",), "TokenReview", "tokenreviews", False, verbs=("create",))]
    for row in _TABLE.strip().splitlines():
        group, versions, kind, plural, scope, status, crd = row.split()
        out.append(ResourceType("" if group == "core" else group, tuple(versions.split(",")), kind, plural,
                                scope == "N", status != "-", crd == "crd"))
    return out


@dataclass
class Catalogue:
    types: list[ResourceType] = field(default_factory=default_types)

    def add(self, rtype: ResourceType) -> None:
        self.types = [t for t in self.types if (t.group, t.resource) != (rtype.group, rtype.resource)]
        self.types.append(rtype)

    def lookup(self, group: str, version: str, resource: str) -> ResourceType | None:
        for t in self.types:
            if t.group == group and t.resource == resource and version in t.versions:
                return t
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for t in self.types:
            if t.group == group and t.kind == kind and version in t.versions:
                return t
        return None

    def groups(self) -> list[tuple[str, list[str]]]:
        """(group, versions in preferred order) for every non-core group, in first-seen order."""
        seen: dict[str, list[str]] = {}
        for t in self.types:
            if not t.group:
                continue
            versions = seen.setdefault(t.group, [])
            for v in t.versions:
                if v not in versions:
                    versions.append(v)
        return list(seen.items())

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types if t.group == group and version in t.versions]

    # ---- discovery documents ---------------------------------------------------------------------------

    def api_versions(self) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}

    def api_group_list(self) -> dict[str, Any]:
        groups = []
        for group, versions in self.groups():
            gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            groups.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        types = self.in_group_version(group, version)
        if not types:
            return None
        resources: list[dict[str, Any]] = []
        for t in types:
            entry = {"name": t.resource, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind,
                     "verbs": list(t.verbs)}
            if t.short_names:
                entry["shortNames"] = list(t.short_names)
            resources.append(entry)
            if t.status_subresource:
                resources.append({"name": f"{t.resource}/status", "singularName": "", "namespaced": t.namespaced,
                                  "kind": t.kind, "verbs": ["get", "patch", "update"]})
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}

    def aggregated(self, core: bool, version: str = "v2") -> dict[str, Any]:
        """The APIGroupDiscoveryList of /api (core) or /apis (every other group)."""
        items = []
        groups = [("", ["v1"])] if core else self.groups()
        for group, versions in groups:
            entries = []
            for v in versions:
                entries.append({"version": v, "resources": [self._aggregated_resource(t, v)
                                                            for t in self.in_group_version(group, v)],
                                "freshness": "Current"})
            meta: dict[str, Any] = {"creationTimestamp": None}
            if group:
                meta["name"] = group
            items.append({"metadata": meta, "versions": entries})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
                "metadata": {}, "items": items}

    @staticmethod
    def _aggregated_resource(t: ResourceType, version: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "resource": t.resource,
            "responseKind": {"group": t.group, "version": version, "kind": t.kind},
            "scope": "Namespaced" if t.namespaced else "Cluster",
            "singularResource": t.singular,
            "verbs": list(t.verbs),
        }
        if t.short_names:
            out["shortNames"] = list(t.short_names)
        if t.status_subresource:
            out["subresources"] = [{"subresource": "status",
                                    "responseKind": {"group": t.group, "version": version, "kind": t.kind},
                                    "verbs": ["get", "patch", "update"]}]
        return out


def crd_type(group: str, versions: Iterable[str], kind: str, plural: str, namespaced: bool) -> ResourceType:
    return ResourceType(group, tuple(versions), kind, plural, namespaced, crd=True)
