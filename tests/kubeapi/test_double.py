"""The API server double answers with Kubernetes' wire shapes, proven through the unmodified `kubernetes`
client over HTTP (typed APIs where the client's models must accept the answer, raw JSON elsewhere)."""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.kubeapi.server import ApiServer

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config  # noqa: E402

APPLY = "application/apply-patch+yaml"


@pytest.fixture()
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        server.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        yield server


def _client(api: ApiServer, tmp_path: Path, **kwargs: Any) -> Any:
    path = api.kubeconfig(tmp_path / "kubeconfig", **kwargs)
    configuration = client.Configuration()
    configuration.retries = False     # urllib3 would otherwise retry 429s and resets behind the test's back
    return config.new_client_from_config(str(path), persist_config=False, client_configuration=configuration)


def _raw(c: Any, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """One request through the client's REST layer; (status, headers, decoded JSON)."""
    url = c.configuration.host + path
    if query:
        from urllib.parse import urlencode
        url += "?" + urlencode(query)
    hdrs = {"Accept": "application/json", **(headers or {})}
    if body is not None and "Content-Type" not in hdrs:
        hdrs["Content-Type"] = "application/json"
    for setting in c.configuration.auth_settings().values():
        if setting["in"] == "header" and setting["value"]:
            hdrs[setting["key"]] = setting["value"]
    resp = c.rest_client.request(method, url, headers=hdrs, body=body)
    data = resp.read()
    return resp.status, dict(resp.headers), json.loads(data) if data else None


def _cm(name: str, ns: str = "default", labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


# ---- discovery -------------------------------------------------------------------------------------------

def test_legacy_discovery_parses_in_the_typed_client(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    assert client.CoreApi(c).get_api_versions().versions == ["v1"]
    groups = {g.name: g for g in client.ApisApi(c).get_api_versions().groups}
    assert groups["policies.kyverno.io"].preferred_version.group_version == "policies.kyverno.io/v1"
    resources = {r.name: r for r in client.AppsV1Api(c).get_api_resources().resources}
    assert resources["deployments"].namespaced and resources["deployments"].kind == "Deployment"
    assert "list" in resources["deployments"].verbs and "deployments/status" in resources


def test_aggregated_discovery_when_asked_for(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    code, headers, doc = _raw(c, "GET", "/apis", headers={"Accept": accept})
    assert code == 200
    assert headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert doc["kind"] == "APIGroupDiscoveryList"
    apps = next(i for i in doc["items"] if i["metadata"].get("name") == "apps")
    deploy = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["responseKind"]["kind"] == "Deployment"
    # a client that does not ask gets the legacy document
    code, headers, doc = _raw(c, "GET", "/apis")
    assert doc["kind"] == "APIGroupList" and headers["Content-Type"] == "application/json"


# ---- LIST --------------------------------------------------------------------------------------------------

def test_list_pages_with_limit_and_continue(api: ApiServer, tmp_path: Path) -> None:
    api.seed(*[_cm(f"cm-{i}", k="v") for i in range(7)])
    c = _client(api, tmp_path)
    _, _, page1 = _raw(c, "GET", "/api/v1/namespaces/default/configmaps", query={"limit": 3})
    assert page1["kind"] == "ConfigMapList" and page1["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in page1["items"]] == ["cm-0", "cm-1", "cm-2"]
    assert page1["metadata"]["remainingItemCount"] == 4
    # built-in kinds: items carry neither apiVersion nor kind in a LIST
    assert "kind" not in page1["items"][0] and "apiVersion" not in page1["items"][0]
    _, _, page2 = _raw(c, "GET", "/api/v1/namespaces/default/configmaps",
                       query={"limit": 3, "continue": page1["metadata"]["continue"]})
    _, _, page3 = _raw(c, "GET", "/api/v1/namespaces/default/configmaps",
                       query={"limit": 3, "continue": page2["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in page2["items"] + page3["items"]] == [f"cm-{i}" for i in range(3, 7)]
    assert "continue" not in page3["metadata"] and "remainingItemCount" not in page3["metadata"]
    # the typed client reads the same list
    typed = client.CoreV1Api(c).list_namespaced_config_map("default", limit=3)
    assert typed.metadata._continue and len(typed.items) == 3


def test_custom_resource_items_keep_apiversion_and_kind(api: ApiServer, tmp_path: Path) -> None:
    api.seed({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
              "metadata": {"name": "r", "namespace": "default"}, "results": []})
    c = _client(api, tmp_path)
    _, _, doc = _raw(c, "GET", "/apis/wgpolicyk8s.io/v1alpha2/policyreports")
    assert doc["kind"] == "PolicyReportList"
    assert doc["items"][0]["kind"] == "PolicyReport" and doc["items"][0]["apiVersion"] == "wgpolicyk8s.io/v1alpha2"


def test_label_selectors(api: ApiServer, tmp_path: Path) -> None:
    api.seed(_cm("a", labels={"app.kubernetes.io/managed-by": "kyverno", "tier": "x"}),
             _cm("b", labels={"app.kubernetes.io/managed-by": "helm"}), _cm("c"))
    c = _client(api, tmp_path)

    def names(selector: str) -> list[str]:
        _, _, doc = _raw(c, "GET", "/api/v1/configmaps", query={"labelSelector": selector})
        return [i["metadata"]["name"] for i in doc["items"]]

    assert names("app.kubernetes.io/managed-by=kyverno") == ["a"]
    assert names("app.kubernetes.io/managed-by in (kyverno,helm)") == ["a", "b"]
    assert names("!tier") == ["b", "c"]
    assert names("app.kubernetes.io/managed-by!=kyverno") == ["b", "c"]
    assert names("app.kubernetes.io/managed-by,tier") == ["a"]
    code, _, doc = _raw(c, "GET", "/api/v1/configmaps", query={"labelSelector": "a b c"})
    assert code == 400 and doc["reason"] == "BadRequest"


def test_stale_continue_token_is_410_expired(api: ApiServer, tmp_path: Path) -> None:
    api.seed(*[_cm(f"cm-{i}") for i in range(4)])
    c = _client(api, tmp_path)
    _, _, page1 = _raw(c, "GET", "/api/v1/configmaps", query={"limit": 2})
    api.store.compact()
    code, _, status = _raw(c, "GET", "/api/v1/configmaps",
                           query={"limit": 2, "continue": page1["metadata"]["continue"]})
    assert code == 410
    assert status["kind"] == "Status" and status["reason"] == "Expired" and status["code"] == 410
    assert status["message"].startswith("The provided continue parameter is too old to display a consistent list "
                                        "result. You can start a new list without the continue parameter")
    assert status["metadata"]["continue"]        # the inconsistent-continue hint
    # a fresh list works again
    code, _, _ = _raw(c, "GET", "/api/v1/configmaps", query={"limit": 2})
    assert code == 200


def test_get_and_not_found(api: ApiServer, tmp_path: Path) -> None:
    api.seed(_cm("a", k="v"))
    c = _client(api, tmp_path)
    code, _, obj = _raw(c, "GET", "/api/v1/namespaces/default/configmaps/a")
    assert code == 200 and obj["kind"] == "ConfigMap" and obj["metadata"]["resourceVersion"]
    code, _, status = _raw(c, "GET", "/apis/apps/v1/namespaces/default/deployments/nope")
    assert code == 404
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": 'deployments.apps "nope" not found', "reason": "NotFound",
                      "details": {"name": "nope", "group": "apps", "kind": "deployments"}, "code": 404}


# ---- server-side apply ---------------------------------------------------------------------------------------

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default",
                                                                      "labels": {"app": "web"}},
          "spec": {"replicas": 1, "template": {"spec": {"containers": [
              {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}}


def test_apply_creates_with_managed_fields_per_manager(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    code, _, obj = _raw(c, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", body=DEPLOY,
                        query={"fieldManager": "kyverno-generate", "force": "true"}, headers={"Content-Type": APPLY})
    assert code == 201
    assert obj["metadata"]["uid"] and obj["metadata"]["generation"] == 1
    [entry] = obj["metadata"]["managedFields"]
    assert entry["manager"] == "kyverno-generate" and entry["operation"] == "Apply"
    assert entry["fieldsType"] == "FieldsV1" and entry["apiVersion"] == "apps/v1"
    container = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert container["."] == {} and container["f:image"] == {}
    # the port key carries the server-defaulted protocol, as the object does
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in container["f:ports"]
    assert obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"
    assert entry["fieldsV1"]["f:metadata"] == {"f:labels": {"f:app": {}}}
    # a second identical apply is a no-op: same resourceVersion
    code, _, again = _raw(c, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", body=DEPLOY,
                          query={"fieldManager": "kyverno-generate", "force": "true"}, headers={"Content-Type": APPLY})
    assert code == 200 and again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_apply_conflict_names_manager_and_field(api: ApiServer, tmp_path: Path) -> None:
    api.seed(_cm("a", k="v", other="o"), manager="kubectl-edit")
    c = _client(api, tmp_path)
    body = _cm("a", k="changed")
    code, _, status = _raw(c, "PATCH", "/api/v1/namespaces/default/configmaps/a", body=body,
                           query={"fieldManager": "kyrec"}, headers={"Content-Type": APPLY})
    assert code == 409
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.k'
    assert status["reason"] == "Conflict"
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                            "message": 'conflict with "kubectl-edit" using v1', "field": ".data.k"}]
    # the same value is shared ownership, not a conflict
    code, _, obj = _raw(c, "PATCH", "/api/v1/namespaces/default/configmaps/a", body=_cm("a", k="v"),
                        query={"fieldManager": "kyrec"}, headers={"Content-Type": APPLY})
    assert code == 200
    # force takes the field over: kubectl-edit no longer owns .data.k
    code, _, obj = _raw(c, "PATCH", "/api/v1/namespaces/default/configmaps/a", body=body,
                        query={"fieldManager": "kyrec", "force": "true"}, headers={"Content-Type": APPLY})
    assert code == 200 and obj["data"] == {"k": "changed", "other": "o"}
    owners = {m["manager"]: m["fieldsV1"] for m in obj["metadata"]["managedFields"]}
    assert "f:k" not in owners["kubectl-edit"]["f:data"] and owners["kyrec"]["f:data"] == {"f:k": {}}


def test_several_conflicts_are_grouped_by_manager(api: ApiServer, tmp_path: Path) -> None:
    api.seed(_cm("a", x="1", y="2"), manager="b-editor")
    api.store.mutate("v1", "ConfigMap", "default", "a", lambda o: o["data"].update(z="3"), manager="a-editor")
    c = _client(api, tmp_path)
    code, _, status = _raw(c, "PATCH", "/api/v1/namespaces/default/configmaps/a", body=_cm("a", x="9", y="9", z="9"),
                           query={"fieldManager": "kyrec"}, headers={"Content-Type": APPLY})
    assert code == 409
    assert status["message"] == ('Apply failed with 3 conflicts: conflicts with "a-editor" using v1:\n- .data.z\n'
                                 'conflicts with "b-editor" using v1:\n- .data.x\n- .data.y')
    assert [c["field"] for c in status["details"]["causes"]] == [".data.z", ".data.x", ".data.y"]


def test_apply_removes_what_the_manager_stopped_setting_unless_shared(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    path = "/api/v1/namespaces/default/configmaps/a"
    q = {"fieldManager": "kyverno-generate", "force": "true"}
    _raw(c, "PATCH", path, body=_cm("a", keep="1", drop="2", shared="3"), query=q, headers={"Content-Type": APPLY})
    _raw(c, "PATCH", path, body=_cm("a", shared="3"), query={"fieldManager": "other"},
         headers={"Content-Type": APPLY})
    code, _, obj = _raw(c, "PATCH", path, body=_cm("a", keep="1"), query=q, headers={"Content-Type": APPLY})
    assert code == 200 and obj["data"] == {"keep": "1", "shared": "3"}


def test_apply_rules_on_the_request(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    path = "/api/v1/namespaces/default/configmaps/a"
    code, _, status = _raw(c, "PATCH", path, body=_cm("a"), headers={"Content-Type": APPLY})
    assert code == 422 and status["details"]["causes"][0]["field"] == "fieldManager"
    code, _, status = _raw(c, "PATCH", path, body=_cm("b"), query={"fieldManager": "m"},
                           headers={"Content-Type": APPLY})
    assert code == 400 and "does not match the name on the URL" in status["message"]
    code, _, status = _raw(c, "PATCH", path, body={"data": {"x": "1"}}, query={"fieldManager": "m"},
                           headers={"Content-Type": "application/merge-patch+json"})
    assert code == 415


def test_dry_run_changes_nothing(api: ApiServer, tmp_path: Path) -> None:
    [seeded] = api.seed(_cm("a", k="v"))
    c = _client(api, tmp_path)
    path = "/api/v1/namespaces/default/configmaps/a"
    code, _, obj = _raw(c, "PATCH", path, body=_cm("a", k="w"), headers={"Content-Type": APPLY},
                        query={"fieldManager": "m", "force": "true", "dryRun": "All"})
    assert code == 200 and obj["data"] == {"k": "w"}
    code, _, _ = _raw(c, "DELETE", path, body={"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]})
    assert code == 200
    _, _, live = _raw(c, "GET", path)
    assert live["data"] == {"k": "v"} and live["metadata"]["resourceVersion"] == seeded["metadata"]["resourceVersion"]
    assert all(r.dry_run for r in api.writes())


# ---- DELETE ----------------------------------------------------------------------------------------------------

def test_delete_preconditions(api: ApiServer, tmp_path: Path) -> None:
    [obj] = api.seed(_cm("a"))
    c = _client(api, tmp_path)
    path = "/api/v1/namespaces/default/configmaps/a"
    uid, rv = obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]
    code, _, status = _raw(c, "DELETE", path, body={"preconditions": {"uid": "other", "resourceVersion": rv}})
    assert code == 409 and status["reason"] == "Conflict"
    # as kube-apiserver 1.36 words it (checked against it in tests/realapi/test_real_only.py)
    assert status["message"] == (
        'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (other) does not match the '
        f"UID in record ({uid}). The object might have been deleted and then recreated")
    assert status["details"] == {"name": "a", "kind": "ConfigMap"}
    code, _, status = _raw(c, "DELETE", path, body={"preconditions": {"uid": uid, "resourceVersion": "1"}})
    assert code == 409 and status["message"] == (
        'Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition (1) does not '
        f"match the ResourceVersion in record ({rv}). The object might have been modified")
    code, _, status = _raw(c, "DELETE", path, body={"preconditions": {"uid": uid, "resourceVersion": rv}})
    assert code == 200 and status["status"] == "Success" and status["details"]["uid"] == uid
    code, _, _ = _raw(c, "GET", path)
    assert code == 404


def test_namespace_precondition_message_has_no_storage_wrapper(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    code, _, status = _raw(c, "DELETE", "/api/v1/namespaces/default", body={"preconditions": {"uid": "x"}})
    assert code == 409
    assert status["message"].startswith('Operation cannot be fulfilled on namespaces "default": Precondition '
                                        "failed: UID in precondition: x, UID in object meta: ")


# ---- authentication, RBAC, impersonation ----------------------------------------------------------------

ROLES = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
- apiGroups: [""]
  resources: [users]
  verbs: [impersonate]
  resourceNames: [bob]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-reads}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: User, name: alice}]
"""


def test_rbac_401_403_and_impersonation(api: ApiServer, tmp_path: Path) -> None:
    api.add_user("alice", "alice-token")
    api.load_rbac(ROLES)
    c = _client(api, tmp_path, user="alice", token="alice-token")
    assert _raw(c, "GET", "/api/v1/configmaps")[0] == 200
    assert _raw(c, "GET", "/apis")[0] == 200            # discovery is open to authenticated users
    code, _, status = _raw(c, "PATCH", "/api/v1/namespaces/default/configmaps/a", body=_cm("a"),
                           query={"fieldManager": "m"}, headers={"Content-Type": APPLY})
    assert code == 403
    assert status["message"] == ('configmaps "a" is forbidden: User "alice" cannot patch resource "configmaps" in '
                                 'API group "" in the namespace "default"')
    assert status["details"] == {"name": "a", "kind": "configmaps"}
    code, _, status = _raw(c, "GET", "/apis/apps/v1/deployments")
    assert status["message"] == ('deployments.apps is forbidden: User "alice" cannot list resource "deployments" in '
                                 'API group "apps" at the cluster scope')
    code, _, status = _raw(c, "GET", "/api/v1/configmaps", headers={"Impersonate-User": "carol"})
    assert code == 403 and 'cannot impersonate resource "users"' in status["message"]
    code, _, status = _raw(c, "GET", "/api/v1/configmaps", headers={"Impersonate-User": "bob"})
    assert code == 403 and 'User "bob" cannot list' in status["message"]
    code, _, status = _raw(c, "GET", "/api/v1/configmaps", headers={"Impersonate-Group": "devs"})
    assert (code, status["reason"]) == (400, "BadRequest")         # as kube-apiserver 1.36 answers
    assert status["message"] == ('requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"devs"}, '
                                 "Extra:map[string][]string(nil)} without impersonating a user name")
    bad = _client(api, tmp_path, user="mallory", token="wrong")
    code, _, status = _raw(bad, "GET", "/api/v1/configmaps")
    assert code == 401 and status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


# ---- faults and the request log ---------------------------------------------------------------------------

def test_429_with_retry_after(api: ApiServer, tmp_path: Path) -> None:
    api.inject(r"/configmaps$", status=429, retry_after=2)
    c = _client(api, tmp_path)
    code, headers, status = _raw(c, "GET", "/api/v1/configmaps")
    assert code == 429 and headers["Retry-After"] == "2"
    assert status["reason"] == "TooManyRequests" and status["details"] == {"retryAfterSeconds": 2}
    assert _raw(c, "GET", "/api/v1/configmaps")[0] == 200     # the fault fired once


def test_reset_and_delay(api: ApiServer, tmp_path: Path) -> None:
    import urllib3

    c = _client(api, tmp_path)
    api.inject(r"/configmaps$", reset=True)
    with pytest.raises((urllib3.exceptions.ProtocolError, urllib3.exceptions.HTTPError)):
        _raw(c, "GET", "/api/v1/configmaps")
    api.inject(r"/secrets$", delay=1.0)
    url = c.configuration.host + "/api/v1/secrets"
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        c.rest_client.request("GET", url, headers={"Accept": "application/json"}, _request_timeout=(1, 0.2))


def test_request_log_records_every_request(api: ApiServer, tmp_path: Path) -> None:
    c = _client(api, tmp_path)
    api.clear_log()
    _raw(c, "GET", "/api/v1/configmaps", query={"limit": 10, "labelSelector": "a=b"})
    _raw(c, "PATCH", "/api/v1/namespaces/default/configmaps/a", body=_cm("a"), headers={"Content-Type": APPLY},
         query={"fieldManager": "m"})
    [get, patch] = api.requests()
    assert (get.method, get.verb, get.resource, get.query) == ("GET", "list", "configmaps",
                                                                {"limit": "10", "labelSelector": "a=b"})
    assert patch.headers["content-type"] == APPLY and patch.status == 201 and patch.is_write
    assert patch.json_body()["metadata"]["name"] == "a"


def test_a_client_that_hangs_up_prints_no_traceback(api: ApiServer, capfd: pytest.CaptureFixture[str]) -> None:
    """A reset from the client side (an interrupted apply, a client timeout) is not the double's error: no
    socketserver traceback on stderr among the test's own output; the double goes on answering."""
    where = urlsplit(api.url)
    for _ in range(3):
        sock = socket.create_connection((where.hostname, where.port))
        sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")    # headers never finished
        # linger 0: close() sends a reset, not a FIN, so the handler's read fails with ConnectionResetError
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    time.sleep(0.3)     # the handler threads meet the resets
    assert "Traceback" not in capfd.readouterr().err
    with socket.create_connection((where.hostname, where.port)) as sock:
        sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert sock.recv(64).startswith(b"HTTP/1.")
