"""The client against the API server double: retries, one-line errors, impersonation, timeouts."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kubectl_kyrec.cluster.client import KubeClient, RetriesExhausted, connect
from kubectl_kyrec.cluster.connection import ConnectionOptions
from kubectl_kyrec.errors import ClusterError, ExitCode
from tests.kubeapi.server import ApiServer


def test_raw_json_request(api: ApiServer, kube: KubeClient) -> None:
    doc = kube.get_json("/api/v1/namespaces")
    assert doc["kind"] == "NamespaceList" and doc["items"][0]["metadata"]["name"] == "default"
    [req] = api.requests()
    assert req.headers["accept"] == "application/json" and req.headers["user-agent"].startswith("kubectl-kyrec/")


def test_a_token_kubeconfig_reads_the_environment_for_a_proxy_once_not_per_request(
        api: ApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubeconfig loader's token refresh assigns the same host before every request, and kubernetes' host
    setter then read every environment variable for a proxy (a third of apply's CPU per write,
    bench/apply_write_cpu.py); the connection pool took its proxy when it was built. The token is still
    sent on every request (refreshed through the same hook: test_the_kubeconfigs_refresh_hook_...)."""
    from kubernetes.client import configuration

    api.add_user("alice", "tok")
    path = api.kubeconfig(tmp_path / "k", user="alice", token="tok")
    kube = connect(ConnectionOptions(kubeconfig=str(path)))
    read = configuration.getproxies
    looked: list[int] = []
    monkeypatch.setattr(configuration, "getproxies", lambda: looked.append(1) or read())
    for _ in range(3):
        assert kube.request("GET", "/api/v1/namespaces").ok
    assert looked == []
    assert [r.headers["authorization"] for r in api.requests()] == ["Bearer tok"] * 3


def test_the_kubeconfigs_refresh_hook_is_asked_once_a_second_not_before_every_request(
        api: ApiServer, tmp_path: Path) -> None:
    """The kubeconfig loader's refresh hook renews a token five minutes before it expires and re-assigns seven
    configuration fields each time it is asked: asked per request it was a tenth of a write's calls
    (bench/apply_write_cpu.py). It is asked once per AUTH_REUSE_SECONDS; every request carries the token, and
    a token the hook renews is sent from the next request after that."""
    from kubectl_kyrec.cluster import client as client_module

    api.add_user("alice", "tok")
    api.add_user("alice", "renewed")
    path = api.kubeconfig(tmp_path / "k", user="alice", token="tok")
    kube = connect(ConnectionOptions(kubeconfig=str(path)))
    configuration = kube.transport._api_client.configuration  # type: ignore[attr-defined]
    settings = configuration.auth_settings
    asked: list[int] = []

    def counted() -> object:        # the hook re-installs itself when it runs: the call above it is counted
        asked.append(1)
        return settings()

    configuration.auth_settings = counted
    clock = [100.0]
    kube.transport.clock = lambda: clock[0]  # type: ignore[attr-defined]
    for _ in range(5):
        assert kube.request("GET", "/api/v1/namespaces").ok
    assert len(asked) == 1
    # the hook renews the token (as an exec plugin's would): sent once the second has passed
    configuration.refresh_api_key_hook = lambda conf: conf.api_key.update(BearerToken="Bearer renewed")
    clock[0] += 0.5
    assert kube.request("GET", "/api/v1/namespaces").ok
    clock[0] += client_module.AUTH_REUSE_SECONDS
    assert kube.request("GET", "/api/v1/namespaces").ok
    assert kube.request("PATCH", "/api/v1/namespaces/default/configmaps/cm", body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}},
        query={"fieldManager": "m"}, content_type="application/apply-patch+yaml").status == 201
    assert [r.headers["authorization"] for r in api.requests()] == ["Bearer tok"] * 6 + ["Bearer renewed"] * 2


def test_requests_go_on_the_servers_connection_pool_without_the_pool_managers_per_request_lookup(
        api: ApiServer, kube: KubeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool manager's request() parsed the URL, looked its pool up and copied the headers again for every
    request (a tenth of a write's calls, bench/apply_write_cpu.py): requests go on the server's pool, taken from
    the manager once. A pool the manager has since evicted and closed is given up for the manager's own path."""
    import urllib3

    manager = kube.transport._pool  # type: ignore[attr-defined]
    chosen: list[str] = []
    real = urllib3.PoolManager.request

    def counted(self: object, method: str, url: str, **kwargs: object) -> object:
        chosen.append(url)
        return real(self, method, url, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(urllib3.PoolManager, "request", counted)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}
    for _ in range(3):
        assert kube.request("PATCH", "/api/v1/namespaces/default/configmaps/cm", body=body,
                            query={"fieldManager": "m", "force": "true"},
                            content_type="application/apply-patch+yaml").status in (200, 201)
    assert kube.get_json("/api/v1/namespaces/default/configmaps/cm")["metadata"]["name"] == "cm"
    assert chosen == []
    patches = api.requests("PATCH")
    assert len(patches) == 3 and {(r.query.get("fieldManager"), r.query.get("force")) for r in patches} == \
        {("m", "true")}
    assert {r.headers["content-type"] for r in patches} == {"application/apply-patch+yaml"}
    # the query strings are encoded once per set of parameters; one that cannot be a cache key is encoded as is
    assert kube.request("GET", "/api/v1/namespaces", query={"limit": 5, "continue": "", "x": ["a", "b"]}).ok
    assert api.requests()[-1].query.get("limit") == "5" and "continue" not in api.requests()[-1].query
    # a manager that evicts the pool closes it (urllib3 1.26 does; 2.x drops it unclosed)
    manager.connection_from_url(api.url).close()
    manager.clear()
    assert kube.request("GET", "/api/v1/namespaces").ok
    assert kube.request("GET", "/api/v1/namespaces").ok
    assert chosen == [api.url.rstrip("/") + "/api/v1/namespaces"] * 2


def test_a_server_url_urllib3_cannot_parse_is_a_one_line_error_at_the_first_request(tmp_path: Path) -> None:
    """The server's pool is taken when the client is made: a URL it cannot parse (a port out of range) is
    still the one-line `cannot reach` error of the first request, not a traceback from connect()."""
    path = tmp_path / "k"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                    "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:99999'}}]\n"
                    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n")
    kube = connect(ConnectionOptions(kubeconfig=str(path)))
    with pytest.raises(ClusterError, match=r"^cannot reach the cluster at http://127.0.0.1:99999 \(context \"c\"\)"):
        kube.request("GET", "/api")


def test_requests_go_on_the_kubeconfigs_pool_without_the_kubernetes_rest_layer(
        api: ApiServer, kube: KubeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubernetes package's REST layer re-decided per request what kyrec decides once (the body's encoding by
    content type, a Timeout object, which answers raise): about a sixth of a write's CPU (bench/apply_write_cpu.py).
    Requests are sent on the pool it built from the kubeconfig (its TLS and proxy settings), the body as JSON,
    every header as given, and a non-2xx answer comes back as an answer whatever the package's version."""
    from kubernetes.client import rest

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the kubernetes REST layer was called")

    monkeypatch.setattr(rest.RESTClientObject, "request", refused)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
            "data": {"k": "\u00e9"}}
    sent = kube.request("PATCH", "/api/v1/namespaces/default/configmaps/cm", body=body,
                        query={"fieldManager": "kyverno-generate", "force": "true"},
                        content_type="application/apply-patch+yaml", category="apply")
    assert sent.status == 201 and sent.json()["data"] == {"k": "\u00e9"}
    [req] = api.requests("PATCH")
    assert req.headers["content-type"] == "application/apply-patch+yaml"
    missing = kube.request("GET", "/api/v1/namespaces/default/configmaps/none")
    assert missing.status == 404 and missing.header("content-type") == "application/json"


def test_401_names_context_and_user(api: ApiServer, tmp_path: Path) -> None:
    api.add_user("alice", "good")
    path = api.kubeconfig(tmp_path / "k", user="alice", token="stale", context="prod")
    kube = connect(ConnectionOptions(kubeconfig=str(path)), sleep=lambda s: None)
    with pytest.raises(ClusterError) as err:
        kube.get_json("/api/v1/namespaces")
    assert err.value.exit_code == ExitCode.CLUSTER
    assert str(err.value).startswith('the cluster rejected the credentials of user "alice" (context "prod"): '
                                     "401 Unauthorized")
    assert len(api.requests()) == 1          # never retried


def test_429_waits_for_retry_after(api: ApiServer, kube: KubeClient) -> None:
    api.inject("/namespaces$", status=429, retry_after=7, times=2)
    assert kube.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
    assert kube.sleeps == [7.0, 7.0]  # type: ignore[attr-defined]
    assert [r.status for r in api.requests()] == [429, 429, 200]


def test_5xx_and_resets_retry_with_bounded_backoff(api: ApiServer, kube: KubeClient) -> None:
    api.inject("/namespaces$", status=500, times=1)
    api.inject("/namespaces$", reset=True, times=1)
    assert kube.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
    assert kube.sleeps == [0.2, 0.4]  # type: ignore[attr-defined]
    api.inject("/configmaps$", reset=True, times=None)
    with pytest.raises(RetriesExhausted, match="connection reset .*gave up after 5 attempts"):
        kube.get_json("/api/v1/configmaps")
    assert len(api.requests("GET", "/configmaps$")) == 5
    assert max(kube.sleeps) <= 3.0  # type: ignore[attr-defined]


def test_a_body_cut_short_is_a_reset_retried_for_reads(api: ApiServer, tmp_path: Path) -> None:
    """An answer whose body ends before its Content-Length (the server went away mid-body) is a connection
    reset like one before the headers: a read is retried, then fails that one read; before, urllib3's own
    exception escaped the client (reading the body was outside its error mapping)."""
    import threading

    served: list[int] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    # the server thread ends with the test: a thread left running would make the fork-based tests that run
    # after this one skip (tests/evaluate/test_fan_out.py forks only with no other thread in the process)
    stop = threading.Event()
    listener.settimeout(0.05)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                served.append(1)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                             b'{"kind": "NamespaceList", ')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        path = api.kubeconfig(tmp_path / "k", server=f"http://127.0.0.1:{listener.getsockname()[1]}")
        sleeps: list[float] = []
        kube = connect(ConnectionOptions(kubeconfig=str(path)), sleep=sleeps.append)
        with pytest.raises(RetriesExhausted, match="GET /api/v1/namespaces: connection reset .*gave up after 5"):
            kube.get_json("/api/v1/namespaces")
        assert len(served) == 5 and sleeps == [0.2, 0.4, 0.8, 1.6]
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
    assert not thread.is_alive()


def test_writes_are_not_retried_on_5xx(api: ApiServer, kube: KubeClient) -> None:
    api.inject("/configmaps/a$", status=500, times=None)
    response = kube.request("PATCH", "/api/v1/namespaces/default/configmaps/a", body={}, query={"fieldManager": "m"},
                            content_type="application/apply-patch+yaml")
    assert response.status == 500 and len(api.requests("PATCH")) == 1


def test_read_timeout(api: ApiServer, kubeconfig: Path) -> None:
    api.inject("/namespaces$", delay=0.5, times=None)
    kube = connect(ConnectionOptions(kubeconfig=str(kubeconfig), request_timeout=0.1), sleep=lambda s: None)
    with pytest.raises(RetriesExhausted) as raised:
        kube.get_json("/api/v1/namespaces")
    # the transport's detail is the same words: said once
    assert str(raised.value) == "GET /api/v1/namespaces: timed out; gave up after 5 attempts"


def test_unreachable_server_is_one_line_and_exit_5(api: ApiServer, tmp_path: Path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()          # nothing listens there now
    path = api.kubeconfig(tmp_path / "k", server=f"http://127.0.0.1:{port}", context="gone")
    kube = connect(ConnectionOptions(kubeconfig=str(path)), sleep=lambda s: None)
    with pytest.raises(ClusterError) as err:
        kube.get_json("/api/v1/namespaces")
    message = str(err.value)
    assert message.startswith(f'cannot reach the cluster at http://127.0.0.1:{port} (context "gone"): ')
    assert "\n" not in message and "--state" in message
    assert err.value.exit_code == ExitCode.CLUSTER


def test_impersonation_headers(api: ApiServer, kubeconfig: Path) -> None:
    kube = connect(ConnectionOptions(kubeconfig=str(kubeconfig), as_user="bob", as_groups=("g1", "g2")))
    kube.get_json("/api/v1/namespaces")
    [req] = api.requests()
    assert req.headers["impersonate-user"] == "bob"
    # two header lines, not one comma-joined value: the API server would read "g1,g2" as one group
    assert req.header_values("Impersonate-Group") == ["g1", "g2"]


def test_forbidden_names_verb_resource_and_who(api: ApiServer, tmp_path: Path) -> None:
    api.add_user("alice", "tok")
    api.load_rbac("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: none}\nrules: []\n")
    path = api.kubeconfig(tmp_path / "k", user="alice", token="tok", context="ctx")
    kube = connect(ConnectionOptions(kubeconfig=str(path)))
    response = kube.request("GET", "/apis/apps/v1/deployments")
    err = kube.fail(response, "list", "deployments.apps", "", "/apis/apps/v1/deployments")
    # the authorizer's sentence parsed into the rule that would grant the request (it says nothing more)
    assert str(err) == ('forbidden: cannot list deployments.apps cluster-wide as user "alice" of context "ctx"; '
                        'grant: apiGroups: ["apps"], resources: ["deployments"], verbs: ["list"]')


def test_tls_failure_is_one_line_and_exit_5(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=double",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    with ApiServer(tls=(str(cert), str(key))) as api:
        # the kubeconfig names no CA: the server's self-signed certificate cannot be verified
        path = api.kubeconfig(tmp_path / "k", context="secure")
        url = api.url
        kube = connect(ConnectionOptions(kubeconfig=str(path), request_timeout=5), sleep=lambda s: None)
        with pytest.raises(ClusterError) as err:
            kube.get_json("/api/v1/namespaces")
    message = str(err.value)
    assert url.startswith("https://")
    assert message.startswith(f'TLS failure talking to {url} (context "secure"): ')
    assert "\n" not in message and "CERTIFICATE_VERIFY_FAILED" in message
    assert err.value.exit_code == ExitCode.CLUSTER


@pytest.mark.parametrize("body", [
    {"kind": "NamespaceList", "metadata": {"resourceVersion": "9"},
     "items": [{"metadata": {"name": f"team-{i}", "labels": {"a": "\ud800"}}, "n": 1.0, "big": 10 ** 15 + i,
                "spec": {"finalizers": ["kubernetes"], "x": None}} for i in range(4)]},
    {"kind": "ConfigMap", "data": {"k": "\u00e9"}, "metadata": {"name": "c", "metadata": None}},
    [1, 2.0, {"items": [3]}],
    "text",
])
@pytest.mark.parametrize("indent", [None, 2])
def test_an_answer_is_decoded_whole_to_the_value_a_state_file_of_it_gives(
        body: object, indent: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer's value is a state file's (Go's numbers and strings), but nothing locates it: a LIST is not
    walked item by item for the lines of its items, nor an object key by key (json_stream's `lines=False`)."""
    import json

    from kubectl_kyrec.cluster.client import Response
    from kubectl_kyrec.load import json_stream

    text = json.dumps(body, indent=indent) + "\n" + json.dumps({"second": 1})
    located = next(json_stream.iter_json_documents(text, "answer"))[0]

    def walked(*args: object) -> None:
        raise AssertionError("walked to locate")

    monkeypatch.setattr(json_stream, "_decode", walked)
    assert Response(200, {}, text.encode()).json() == located


@pytest.mark.parametrize("text", ['{"a": 1e999}', '{"a": [1,}', '\n\n{"items": [NaN]}'])
def test_an_answer_that_is_not_json_fails_as_a_state_file_of_it_does(text: str) -> None:
    from kubectl_kyrec.cluster.client import Response
    from kubectl_kyrec.errors import KyrecError
    from kubectl_kyrec.load import json_stream

    with pytest.raises(KyrecError) as located:
        next(json_stream.iter_json_documents(text, "answer"))
    with pytest.raises(KyrecError) as answered:
        Response(200, {}, text.encode()).json("answer")
    assert (str(answered.value), str(answered.value.source)) == (str(located.value), str(located.value.source))


def test_an_answers_objects_share_their_keys_and_short_values() -> None:
    """A LIST's items hold one copy of each key and short string (load/json_stream._decoder): a live read of
    100,000 objects keeps them all."""
    import json

    from kubectl_kyrec.cluster.client import Response

    items = [{"metadata": {"name": f"team-{i}", "labels": {"tier": "gold"}}, "status": {"phase": "Active"},
              "long": "x" * 65 + str(i % 2)} for i in range(3)]
    for indent in (None, 1):
        first, second, third = Response(200, {}, json.dumps({"items": items}, indent=indent).encode()).json()["items"]
        assert first == items[0] and third["long"] == items[2]["long"]
        assert next(iter(first["metadata"]["labels"])) is next(iter(second["metadata"]["labels"]))
        assert first["status"]["phase"] is second["status"]["phase"]
        assert first["metadata"]["labels"]["tier"] is third["metadata"]["labels"]["tier"]
        assert first["long"] is not third["long"]      # longer than _SHARED_MAX: each its own
