"""Discovery (aggregated, legacy, cached per context) and paginated LISTs against the double."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubectl_kyrec.cluster.client import KubeClient
from kubectl_kyrec.cluster.discovery import CACHE_TTL_SECONDS, discover
from kubectl_kyrec.cluster.lister import ListRequest, list_all, list_many
from tests.kubeapi.server import ApiServer


def _cm(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "data": {"k": name}}


def test_aggregated_discovery_is_two_requests(api: ApiServer, kube: KubeClient) -> None:
    found = discover(kube)
    assert found.requests == 2 and [r.path for r in api.requests()] == ["/api", "/apis"]
    deploy = found.find("apps/v1", "Deployment")
    assert deploy is not None and deploy.resource == "deployments" and deploy.namespaced
    assert "status" in deploy.subresources
    ns = found.find("v1", "Namespace")
    assert ns is not None and not ns.namespaced
    gpol = found.preferred_for("policies.kyverno.io", "GeneratingPolicy")
    assert gpol is not None and gpol.version == "v1"
    assert found.kind_table().by_kind("wgpolicyk8s.io/v1alpha2", "PolicyReport") is not None
    review = found.find("authentication.k8s.io/v1", "TokenReview")
    assert review is not None and not found.listable(review) and found.listable(deploy)


def test_legacy_discovery_on_older_servers(api: ApiServer, kube: KubeClient) -> None:
    aggregated = discover(kube)
    api.aggregated_discovery = False
    api.clear_log()
    legacy = discover(kube)
    assert set(legacy.resources) == set(aggregated.resources)
    assert dict(legacy.preferred) == dict(aggregated.preferred)
    assert legacy.unlistable == aggregated.unlistable == {("authentication.k8s.io", "tokenreviews")}
    group_versions = sum(len(v) for _, v in api.catalogue.groups()) + 1
    assert legacy.requests == 2 + group_versions


def test_discovery_cache_per_context_with_expiry(api: ApiServer, kube: KubeClient, tmp_path: Path) -> None:
    clock = [1000.0]
    first = discover(kube, cache_dir=tmp_path, now=lambda: clock[0])
    api.clear_log()
    again = discover(kube, cache_dir=tmp_path, now=lambda: clock[0] + 60)
    assert again.from_cache and again.requests == 0 and api.requests() == []
    assert set(again.resources) == set(first.resources) and again.unlistable == first.unlistable
    expired = discover(kube, cache_dir=tmp_path, now=lambda: clock[0] + CACHE_TTL_SECONDS + 1)
    assert not expired.from_cache and expired.requests == 2


def test_list_pages_and_fills_apiversion_and_kind(api: ApiServer, kube: KubeClient) -> None:
    api.seed(*[_cm(f"cm-{i}") for i in range(7)])
    info = discover(kube).find("v1", "ConfigMap")
    assert info is not None
    api.clear_log()
    outcome = list_all(kube, ListRequest(info), page_size=3)
    assert outcome.ok and outcome.pages == 3
    assert [o["metadata"]["name"] for o in outcome.items] == [f"cm-{i}" for i in range(7)]
    assert all(o["apiVersion"] == "v1" and o["kind"] == "ConfigMap" for o in outcome.items)
    assert list(outcome.items[0]) [:3] == ["apiVersion", "kind", "metadata"]
    lists = api.requests("GET")
    assert [r.query.get("limit") for r in lists] == ["3", "3", "3"]
    assert "continue" not in lists[0].query and all(r.query.get("continue") for r in lists[1:])


def test_label_selector_and_namespace_scope(api: ApiServer, kube: KubeClient) -> None:
    api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    api.seed(_cm("a", **{"app.kubernetes.io/managed-by": "kyverno"}), _cm("b"),
             _cm("c", "team", **{"app.kubernetes.io/managed-by": "kyverno"}))
    info = discover(kube).find("v1", "ConfigMap")
    assert info is not None
    owned = list_all(kube, ListRequest(info, label_selector="app.kubernetes.io/managed-by=kyverno"))
    assert [o["metadata"]["name"] for o in owned.items] == ["a", "c"]
    team = list_all(kube, ListRequest(info, namespace="team"))
    assert [o["metadata"]["name"] for o in team.items] == ["c"]
    assert api.requests("GET")[-1].path == "/api/v1/namespaces/team/configmaps"


def test_410_on_continue_restarts_the_list_once(api: ApiServer, kube: KubeClient) -> None:
    api.seed(*[_cm(f"cm-{i}") for i in range(5)])
    info = discover(kube).find("v1", "ConfigMap")
    assert info is not None
    api.inject("/configmaps$", status=410, with_continue=True, times=1)
    outcome = list_all(kube, ListRequest(info), page_size=2)
    assert outcome.ok and outcome.restarts == 1
    assert [o["metadata"]["name"] for o in outcome.items] == [f"cm-{i}" for i in range(5)]
    api.inject("/configmaps$", status=410, with_continue=True, times=2)
    again = list_all(kube, ListRequest(info), page_size=2)
    assert not again.ok and "expired again after a restart (410)" in (again.error or "")


def test_real_compaction_between_pages(api: ApiServer, kube: KubeClient) -> None:
    api.seed(*[_cm(f"cm-{i}") for i in range(4)])
    info = discover(kube).find("v1", "ConfigMap")
    assert info is not None
    seen = []

    def compact_once(message: str) -> None:
        seen.append(message)
        if len(seen) == 1:
            api.store.compact()       # etcd compacted the revision of the first page

    outcome = list_all(kube, ListRequest(info), page_size=2, progress=compact_once)
    assert outcome.ok and outcome.restarts == 1 and len(outcome.items) == 4
    assert [r.status for r in api.requests("GET", "configmaps")] == [200, 410, 200, 200]


def test_403_makes_one_type_unreadable_and_the_rest_is_read(api: ApiServer, kube: KubeClient) -> None:
    api.seed(_cm("a"))
    found = discover(kube)
    api.inject("/deployments$", status=403, times=None)
    cm, deploy = found.find("v1", "ConfigMap"), found.find("apps/v1", "Deployment")
    assert cm is not None and deploy is not None
    api.inject("/secrets$", status=500, times=None)
    secret = found.find("v1", "Secret")
    assert secret is not None
    outcomes = list_many(kube, [ListRequest(deploy), ListRequest(secret), ListRequest(cm)])
    assert outcomes[0].forbidden and outcomes[0].error and outcomes[0].error.startswith(
        "forbidden: cannot list deployments.apps cluster-wide")
    assert not outcomes[1].forbidden and "list secrets: 500" in (outcomes[1].error or "")
    assert outcomes[2].ok and len(outcomes[2].items) == 1


def test_progress_reports_counts(api: ApiServer, kube: KubeClient) -> None:
    api.seed(*[_cm(f"cm-{i}") for i in range(3)])
    info = discover(kube).find("v1", "ConfigMap")
    assert info is not None
    lines: list[str] = []
    list_all(kube, ListRequest(info), page_size=2, progress=lines.append)
    assert lines == ["listing configmaps: 2, 1 to go", "listing configmaps: 3"]


def test_lists_run_several_at_once_and_come_back_in_the_order_asked(api: ApiServer, kube: KubeClient) -> None:
    # apply's reading waited on ~90 lists one after the other: now up to READS_IN_FLIGHT are under way at
    # once, each list's pages still one after the other, the outcomes in the order asked
    from kubectl_kyrec.cluster.lister import READS_IN_FLIGHT

    api.seed(*[_cm(f"cm-{i}") for i in range(5)])
    found = discover(kube)
    kinds = [found.find(v, k) for v, k in (("v1", "ConfigMap"), ("v1", "Secret"), ("apps/v1", "Deployment"),
                                           ("v1", "Service"), ("v1", "Pod"), ("apps/v1", "StatefulSet"))]
    assert all(kinds) and READS_IN_FLIGHT >= 4
    # the first list is slow: the others finish before it, and it still comes back first
    api.inject("/configmaps$", delay=0.6, with_continue=False)
    for plural in ("secrets", "deployments", "services", "pods", "statefulsets"):
        api.inject(f"/{plural}$", delay=0.3)
    outcomes = list_many(kube, [ListRequest(info) for info in kinds if info is not None], page_size=2)
    assert [o.request.info.kind for o in outcomes] == ["ConfigMap", "Secret", "Deployment", "Service", "Pod",
                                                       "StatefulSet"]
    assert [len(o.items) for o in outcomes] == [5, 0, 0, 0, 0, 0] and outcomes[0].pages == 3
    # the double logs a request as it arrives: the other lists were asked while the ConfigMaps' first page was
    # still on its way (one after the other, its three pages would come first)
    lists = [r.path.rsplit("/", 1)[1] for r in api.requests("GET") if r.path.rsplit("/", 1)[1] in
             ("configmaps", "secrets", "deployments", "services", "pods", "statefulsets")]
    second_page = [i for i, p in enumerate(lists) if p == "configmaps"][1]
    assert {"secrets", "deployments", "services"} <= set(lists[:second_page]), lists


def test_a_list_error_that_ends_the_run_is_raised_from_the_lists_at_once(api: ApiServer,
                                                                         kube: KubeClient) -> None:
    import pytest

    from kubectl_kyrec.errors import ClusterError

    found = discover(kube)
    kinds = [found.find("v1", k) for k in ("ConfigMap", "Secret", "Service", "Pod")]
    api.inject("/secrets$", status=401)
    with pytest.raises(ClusterError, match="rejected the credentials"):
        list_many(kube, [ListRequest(info) for info in kinds if info is not None])
