import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.kinds import KindTable, ResourceInfo, guess_plural
from kubectl_kyrec.model import Source


@pytest.fixture(scope="module")
def table() -> KindTable:
    return KindTable()


@pytest.mark.parametrize(("api_version", "kind", "resource", "namespaced"), [
    ("v1", "Pod", "pods", True),
    ("v1", "Namespace", "namespaces", False),
    ("v1", "Endpoints", "endpoints", True),
    ("v1", "Node", "nodes", False),
    ("v1", "PersistentVolume", "persistentvolumes", False),
    ("apps/v1", "Deployment", "deployments", True),
    ("batch/v1", "CronJob", "cronjobs", True),
    ("networking.k8s.io/v1", "Ingress", "ingresses", True),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True),
    ("networking.k8s.io/v1", "IngressClass", "ingressclasses", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    ("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses", False),
    ("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", True),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding",
     "validatingadmissionpolicybindings", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False),
    ("coordination.k8s.io/v1", "Lease", "leases", True),
    ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True),
    ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False),
    ("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", False),
    ("certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", False),
    ("events.k8s.io/v1", "Event", "events", True),
    ("policies.kyverno.io/v1", "ValidatingPolicy", "validatingpolicies", False),
    ("policies.kyverno.io/v1alpha1", "NamespacedValidatingPolicy", "namespacedvalidatingpolicies", True),
    ("policies.kyverno.io/v1", "GeneratingPolicy", "generatingpolicies", False),
    ("policies.kyverno.io/v1beta1", "NamespacedGeneratingPolicy", "namespacedgeneratingpolicies", True),
    ("policies.kyverno.io/v1", "PolicyException", "policyexceptions", True),
    ("kyverno.io/v1", "ClusterPolicy", "clusterpolicies", False),
    ("kyverno.io/v1", "Policy", "policies", True),
    ("kyverno.io/v2", "UpdateRequest", "updaterequests", True),
    ("kyverno.io/v2", "PolicyException", "policyexceptions", True),
    ("wgpolicyk8s.io/v1alpha2", "PolicyReport", "policyreports", True),
    ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport", "clusterpolicyreports", False),
    ("openreports.io/v1alpha1", "Report", "reports", True),
    ("openreports.io/v1alpha1", "ClusterReport", "clusterreports", False),
    ("reports.kyverno.io/v1", "EphemeralReport", "ephemeralreports", True),
    ("reports.kyverno.io/v1", "ClusterEphemeralReport", "clusterephemeralreports", False),
])
def test_builtin_kinds(table: KindTable, api_version: str, kind: str, resource: str,
                       namespaced: bool) -> None:
    info = table.by_kind(api_version, kind)
    assert info is not None
    assert (info.api_version, info.kind, info.resource) == (api_version, kind, resource)
    assert info.namespaced is namespaced
    assert table.is_namespaced(api_version, kind) is namespaced
    assert table.by_resource(info.group, info.version, resource) == info


def test_subresources_that_admission_rules_match(table: KindTable) -> None:
    def subs(api_version: str, kind: str) -> set[str]:
        info = table.by_kind(api_version, kind)
        assert info is not None
        return set(info.subresources)

    assert subs("v1", "Pod") >= {"status", "exec", "log", "attach", "portforward", "ephemeralcontainers",
                                 "binding", "eviction", "proxy"}
    for kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        assert subs("apps/v1", kind) == {"scale", "status"}
    assert subs("apps/v1", "DaemonSet") == {"status"}
    assert subs("v1", "Service") == {"proxy", "status"}
    assert subs("v1", "Node") == {"proxy", "status"}
    assert subs("v1", "Namespace") == {"finalize", "status"}
    assert subs("v1", "ConfigMap") == set()


def test_unknown_kinds_and_versions(table: KindTable) -> None:
    assert table.by_kind("example.com/v1", "Widget") is None
    assert table.is_namespaced("example.com/v1", "Widget") is None
    assert table.by_kind("apps/v1beta2", "Deployment") is None
    assert [i.version for i in table.versions_of("apps", "Deployment")] == ["v1"]
    assert table.by_kind("v1", "pod") is None   # kinds are case-sensitive


def test_by_resource_with_a_subresource(table: KindTable) -> None:
    pod = table.by_kind("v1", "Pod")
    assert table.by_resource("", "v1", "pods/exec") == pod
    assert table.by_resource("", "v1", "pods/scale") is None
    assert table.by_resource("apps", "v1", "pods") is None


def test_kinds_for_resource_with_wildcards(table: KindTable) -> None:
    hpas = table.kinds_for_resource("autoscaling", "*", "horizontalpodautoscalers")
    assert sorted(i.version for i in hpas) == ["v1", "v2"]
    scaled = {(i.group, i.kind) for i in table.kinds_for_resource("*", "*", "*/scale")}
    assert scaled == {("", "ReplicationController"), ("apps", "Deployment"), ("apps", "ReplicaSet"),
                      ("apps", "StatefulSet")}
    apps = {i.kind for i in table.kinds_for_resource("apps", "v1", "*")}
    assert apps == {"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"}
    assert [i.kind for i in table.kinds_for_resource("", "v1", "pods/*")] == ["Pod"]
    # a `*` subresource matches the resource itself too, as in the API server's rule matcher
    assert [i.kind for i in table.kinds_for_resource("", "v1", "configmaps/*")] == ["ConfigMap"]
    assert table.kinds_for_resource("", "v1", "configmaps/status") == []
    assert len(table.kinds_for_resource("*", "*", "*/*")) == len(list(table))


def test_builtin_table_is_consistent(table: KindTable) -> None:
    infos = list(table)
    assert len(infos) > 100
    by_gvr: dict[tuple[str, str, str], ResourceInfo] = {}
    for info in infos:
        assert info.resource == info.resource.lower()
        assert (info.group, info.version, info.resource) not in by_gvr, info
        by_gvr[(info.group, info.version, info.resource)] = info


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gateways.gateway.networking.k8s.io"},
    "spec": {
        "group": "gateway.networking.k8s.io", "scope": "Namespaced",
        "names": {"kind": "Gateway", "plural": "gateways", "singular": "gateway", "listKind": "GatewayList"},
        "versions": [
            {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}},
            {"name": "v1beta1", "served": True, "storage": False,
             "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas"}}},
            {"name": "v1alpha2", "served": False, "storage": False},
        ],
    },
}


def test_add_crd_registers_every_served_version() -> None:
    table = KindTable()
    assert table.by_kind("gateway.networking.k8s.io/v1", "Gateway") is None
    table.add_crd(CRD)
    v1 = table.by_kind("gateway.networking.k8s.io/v1", "Gateway")
    assert v1 == ResourceInfo("gateway.networking.k8s.io", "v1", "Gateway", "gateways", True, ("status",),
                              "gateway")
    beta = table.by_kind("gateway.networking.k8s.io/v1beta1", "Gateway")
    assert beta is not None and beta.subresources == ("scale", "status")
    assert table.by_kind("gateway.networking.k8s.io/v1alpha2", "Gateway") is None
    assert table.by_resource("gateway.networking.k8s.io", "v1", "gateways") == v1
    # the CRD's plural, not Kubernetes' guess
    assert guess_plural("Gateway") == "gatewaies"


def test_a_crd_replaces_the_builtin_versions_of_its_kind() -> None:
    table = KindTable()
    table.add_crd({"spec": {"group": "kyverno.io", "scope": "Cluster",
                            "names": {"kind": "ClusterPolicy", "plural": "clusterpolicies"},
                            "versions": [{"name": "v1", "served": True}]}})
    assert [i.version for i in table.versions_of("kyverno.io", "ClusterPolicy")] == ["v1"]
    assert table.by_kind("kyverno.io/v2beta1", "ClusterPolicy") is None


def test_add_v1beta1_crd() -> None:
    table = KindTable(builtins=False)
    table.add_crd({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
                   "spec": {"group": "example.com", "version": "v1", "scope": "Cluster",
                            "names": {"kind": "Widget", "plural": "widgets"},
                            "subresources": {"status": {}}}})
    assert table.by_kind("example.com/v1", "Widget") == ResourceInfo("example.com", "v1", "Widget", "widgets",
                                                                     False, ("status",))
    assert list(table) == [table.by_kind("example.com/v1", "Widget")]


@pytest.mark.parametrize(("spec", "message"), [
    ({"scope": "Namespaced", "names": {"kind": "W", "plural": "ws"}},
     "CustomResourceDefinition has no spec.group"),
    ({"group": "g", "scope": "Namespaced", "names": {"plural": "ws"}},
     "CustomResourceDefinition has no spec.names.kind"),
    ({"group": "g", "scope": "Namespaced", "names": {"kind": "W"}},
     "CustomResourceDefinition has no spec.names.plural"),
    ({"group": "g", "scope": "Global", "names": {"kind": "W", "plural": "ws"}},
     "CustomResourceDefinition spec.scope must be Namespaced or Cluster, not 'Global'"),
])
def test_invalid_crds(spec: dict, message: str) -> None:
    with pytest.raises(InputError) as info:
        KindTable().add_crd({"spec": spec}, Source("crds.yaml", 7))
    assert str(info.value) == f"crds.yaml:7: {message}"


@pytest.mark.parametrize(("kind", "plural"), [
    ("Pod", "pods"), ("Ingress", "ingresses"), ("NetworkPolicy", "networkpolicies"),
    ("Endpoints", "endpoints"), ("Class", "classes"), ("Widget", "widgets"), ("", ""),
    ("FooEndpoints", "fooendpoints"),
])
def test_guess_plural(kind: str, plural: str) -> None:
    assert guess_plural(kind) == plural
