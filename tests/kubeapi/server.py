"""A loopback Kubernetes API server double: the subset of the API kyrec uses, over real HTTP on 127.0.0.1,
reached by the unmodified `kubernetes` client through a generated kubeconfig file.

Serves: discovery (legacy /api, /apis, /api/v1, /apis/<g>/<v>, and aggregated discovery
`apidiscovery.k8s.io/v2` when the Accept header asks for it), /version, LIST (labelSelector, fieldSelector on
metadata.name/namespace, limit/continue, remainingItemCount, 410 Expired on a stale continue token), GET,
POST (create), PUT (update), PATCH with `application/apply-patch+yaml` (server-side apply: fieldManager,
force, managedFields per manager in FieldsV1, keyed lists from kyrec's key table, 409 conflicts with
`details.causes[].field`), DELETE (preconditions uid/resourceVersion, 409 on mismatch), `dryRun=All` on every
write. Bearer-token authentication (401), impersonation headers (checked against the `impersonate` verb),
RBAC from a role file (403 with the API server's message), a request log, and injectable faults per path
(status with the matching Status body and Retry-After, delay, connection reset).

Where it deviates from a real API server (on purpose, to stay small):
- No watch, no subresources (status, scale), no DeleteCollection, no strategic-merge/JSON/merge patches
  (415), no protobuf, no table output, no admission, no validation beyond names, apiVersion/kind and the
  apply-patch rules below; no defaulting except the keys of keyed lists (a port's protocol becomes TCP).
  No schemas: a field no schema declares is kept (kube-apiserver drops it from a create or update with a
  warning, and refuses a server-side apply carrying it with a 500; tests/realapi shows both).
- Continue tokens are checked for staleness (`compact()` makes every issued token stale, like etcd
  compaction), but later pages read the current objects, not a snapshot at the token's revision.
- Field ownership follows structured-merge-diff for maps, keyed lists and set lists; every other list is
  atomic (as for any list the OpenAPI schema does not mark). Keyed lists merge in live order with new
  elements appended. A map left empty by pruning is removed. No "before-first-apply" manager is invented
  for objects without managedFields; updates (POST/PUT/seed) own what they added or changed.
- Objects of every served version of a kind share one store and are returned as the version asked for,
  without conversion (a CRD with `conversion: None`).
- Deleting a namespace deletes its objects at once (no Terminating phase, no finalizers, no graceful
  deletion, no garbage collection of dependants).
- An apply that creates its object is authorized as `patch` only (a real API server also asks for
  `create`); docs/rbac.yaml grants both.
- Only the RBAC authorizer; discovery and /version are open to any authenticated user. Impersonating needs
  `impersonate` on `users` / `groups` (resourceNames honoured); impersonated users gain
  `system:authenticated`; groups without a user are a 400, worded as kube-apiserver 1.36 words it. A refused
  impersonation is worded as the legacy check words it (`users "bob" is forbidden: ... cannot impersonate
  resource "users"`); 1.36 with constrained impersonation sometimes answers `forbidden: User "alice" cannot
  impersonate-on:user-info:get path "/api"` instead.
- DELETE answers a Status for every kind (some built-in kinds answer the deleted object).
- uids are deterministic (`00000000-0000-4000-8000-<n>`), resourceVersions one global counter.

Kubescape storage (group spdx.softwarecomposition.kubescape.io), as its aggregated API server behaves: a plain
LIST is served from its metadata rows (no `spec`), a LIST with `resourceVersion=fullSpec` from the stored
payloads. `split[(namespace, name)] = rv` plants a payload ahead of its metadata row: the fullSpec LIST then
serves that object with resourceVersion `rv`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.kubeapi import status as st
from tests.kubeapi.catalogue import Catalogue, ResourceType
from tests.kubeapi.rbac import Rbac
from tests.kubeapi.store import Store

APPLY_PATCH = "application/apply-patch+yaml"


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]              # lower-cased names
    body: bytes
    status: int = 0
    verb: str = ""
    resource: str = ""                   # "deployments.apps", "" for discovery
    header_lines: list[tuple[str, str]] = field(default_factory=list)   # as sent, repeated names kept
    elapsed: float = 0.0                 # seconds the double spent answering (benchmarks subtract it)

    def header_values(self, name: str) -> list[str]:
        return [v for k, v in self.header_lines if k.lower() == name.lower()]

    @property
    def is_write(self) -> bool:
        # a review (SubjectAccessReview, TokenReview) is a POST the API server answers and stores nothing of
        return self.method in ("POST", "PUT", "PATCH", "DELETE") and not self.path.rstrip("/").endswith("reviews")

    @property
    def dry_run(self) -> bool:
        if self.query.get("dryRun") == "All":
            return True
        if self.method == "DELETE" and self.body:
            try:
                return "All" in (json.loads(self.body).get("dryRun") or [])
            except ValueError:
                return False
        return False

    def json_body(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Fault:
    path: str                            # regular expression searched in the URL path
    method: str | None = None
    status: int | None = None
    delay: float = 0.0
    reset: bool = False
    times: int | None = 1                # None: every matching request
    retry_after: int | None = None
    with_continue: bool | None = None    # match only requests that do (True) / do not (False) carry continue
    hits: int = 0

    def matches(self, method: str, path: str, query: Mapping[str, str]) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method and self.method != method:
            return False
        if self.with_continue is not None and bool(query.get("continue")) != self.with_continue:
            return False
        return re.search(self.path, path) is not None


@dataclass
class User:
    name: str
    groups: tuple[str, ...] = ()


@dataclass
class _Target:
    rtype: ResourceType
    version: str
    namespace: str
    name: str | None


KUBESCAPE_STORAGE = "spdx.softwarecomposition.kubescape.io"


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request (a test's interrupted apply, a timeout the test chose) is no error of
    the double's: socketserver would print its traceback to stderr, which pytest shows beside real failures."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ApiServer:
    """Start with `with ApiServer() as api:`; `api.kubeconfig(path)` writes a kubeconfig pointing at it."""

    def __init__(self, *, rbac: Rbac | None = None, aggregated_discovery: bool = True,
                 catalogue: Catalogue | None = None, tls: tuple[str, str] | None = None) -> None:
        self.catalogue = catalogue or Catalogue()
        self.store = Store(self.catalogue)
        self.rbac = rbac
        self.aggregated_discovery = aggregated_discovery
        self.tls = tls                           # (certificate file, key file): serve HTTPS
        self.users: dict[str, User] = {}         # bearer token -> user
        self.faults: list[Fault] = []
        self.split: dict[tuple[str, str], str] = {}   # Kubescape storage: payload resourceVersions ahead
        self.log: list[LoggedRequest] = []
        self._log_lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # a request held by an injected delay wakes when the server stops: its thread must not outlive the
        # test (a thread left running makes later tests decide that forking is unsafe)
        self.stopping = threading.Event()
        self._delayed: set[threading.Thread] = set()

    # ---- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> ApiServer:
        server = self

        class Handler(_Handler):
            api = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if self.tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="kubeapi-double", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        for thread in list(self._delayed):
            thread.join(timeout=5)

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    # ---- configuration -------------------------------------------------------------------------------

    def add_user(self, name: str, token: str, groups: tuple[str, ...] = ()) -> None:
        """Require bearer tokens from now on; `token` authenticates as `name`."""
        self.users[token] = User(name, groups)

    def load_rbac(self, text_or_path: str | Path) -> None:
        text = Path(text_or_path).read_text() if isinstance(text_or_path, Path) else text_or_path
        self.rbac = Rbac.from_yaml(text)

    def inject(self, path: str, **kwargs: Any) -> Fault:
        fault = Fault(path, **kwargs)
        self.faults.append(fault)
        return fault

    def seed(self, *objs: Mapping[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
        return [self.store.seed(obj, **kwargs) for obj in objs]

    def kubeconfig(self, path: Path, *, user: str = "admin", token: str | None = None, context: str = "double",
                   namespace: str | None = None, server: str | None = None) -> Path:
        ctx: dict[str, Any] = {"cluster": "double", "user": user}
        if namespace:
            ctx["namespace"] = namespace
        user_entry: dict[str, Any] = {"token": token} if token else {}
        config = {"apiVersion": "v1", "kind": "Config", "current-context": context,
                  "clusters": [{"name": "double", "cluster": {"server": server or self.url}}],
                  "users": [{"name": user, "user": user_entry}],
                  "contexts": [{"name": context, "context": ctx}]}
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    # ---- the request log -----------------------------------------------------------------------------

    def requests(self, method: str | None = None, path: str | None = None) -> list[LoggedRequest]:
        with self._log_lock:
            return [r for r in self.log if (method is None or r.method == method)
                    and (path is None or re.search(path, r.path))]

    def writes(self, *, include_dry_run: bool = True) -> list[LoggedRequest]:
        return [r for r in self.requests() if r.is_write and (include_dry_run or not r.dry_run)]

    def clear_log(self) -> None:
        with self._log_lock:
            self.log.clear()

    def _record(self, entry: LoggedRequest) -> None:
        with self._log_lock:
            self.log.append(entry)


class _Handler(BaseHTTPRequestHandler):
    api: ApiServer
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY each answer waits ~40 ms for the
    # client's delayed ACK (Nagle), which a real API server does not do
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    # ---- plumbing -----------------------------------------------------------------------------------

    def _handle(self) -> None:
        started = time.perf_counter()
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        entry = LoggedRequest(self.command, parts.path, query, headers, body,
                              header_lines=list(self.headers.items()))
        self.api._record(entry)
        try:
            if self._fault(entry):
                return
            code, payload, extra = self._route(entry)
        except st.ApiError as err:
            code, payload, extra = err.code, err.body, err.headers
        entry.status = code
        self._send(code, payload, extra)
        entry.elapsed = time.perf_counter() - started

    def _fault(self, entry: LoggedRequest) -> bool:
        api = self.api
        fault = next((f for f in api.faults if f.matches(entry.method, entry.path, entry.query)), None)
        if fault is None:
            return False
        fault.hits += 1
        if fault.delay:
            api._delayed.add(threading.current_thread())
            try:
                api.stopping.wait(fault.delay)
            finally:
                api._delayed.discard(threading.current_thread())
        if fault.reset:
            entry.status = -1
            # RST instead of FIN: the client sees "connection reset by peer"
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            self.connection.close()
            return True
        if fault.status is not None:
            err = st.injected(fault.status, fault.retry_after)
            if fault.status == 403:
                err = st.status(403, "forbidden: injected fault", "Forbidden")
            entry.status = err.code
            self._send(err.code, err.body, err.headers)
            return True
        return False

    def _send(self, code: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        headers = dict(headers or {})
        try:
            self.send_response(code)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # ---- authentication and authorization --------------------------------------------------------------

    def _user(self, entry: LoggedRequest) -> User:
        api = self.api
        if not api.users:
            user = User("admin", ("system:masters",))
        else:
            auth = entry.headers.get("authorization", "")
            token = auth[7:] if auth.lower().startswith("bearer ") else ""
            found = api.users.get(token)
            if found is None:
                raise st.unauthorized()
            user = found
        as_user = self.headers.get("Impersonate-User")
        as_groups = tuple(self.headers.get_all("Impersonate-Group") or ())
        if as_groups and not as_user:
            # kube-apiserver 1.36's impersonation filter answers 400 BadRequest, the user info printed with Go's %#v
            groups = ", ".join(f'"{g}"' for g in as_groups)
            raise st.status(400, f'requested &user.DefaultInfo{{Name:"", UID:"", Groups:[]string{{{groups}}}, '
                                 "Extra:map[string][]string(nil)} without impersonating a user name", "BadRequest")
        if as_user:
            self._authorize(user, "impersonate", "", "users", "", as_user or "")
            for g in as_groups:
                self._authorize(user, "impersonate", "", "groups", "", g)
            user = User(as_user or user.name, as_groups + ("system:authenticated",))
        return user

    def _authorize(self, user: User, verb: str, group: str, resource: str, namespace: str, name: str = "") -> None:
        rbac = self.api.rbac
        if rbac is None or "system:masters" in user.groups:
            return
        if not rbac.allows(user.name, user.groups, verb, group, resource, namespace, name):
            raise st.forbidden(user.name, verb, group, resource, namespace, name if verb != "list" else "")

    # ---- routing --------------------------------------------------------------------------------------

    def _route(self, entry: LoggedRequest) -> tuple[int, Any, dict[str, str]]:
        api = self.api
        user = self._user(entry)
        path = entry.path.rstrip("/") or "/"
        cat = api.catalogue
        if entry.method == "GET":
            accept = entry.headers.get("accept", "")
            aggregated = api.aggregated_discovery and "as=APIGroupDiscoveryList" in accept
            if path in ("/api", "/apis"):
                if aggregated:
                    version = "v2beta1" if "v=v2beta1" in accept and "v=v2;" not in accept + ";" else "v2"
                    return self._discovery(cat.aggregated(core=path == "/api", version=version), version)
                return 200, cat.api_versions() if path == "/api" else cat.api_group_list(), {}
            if path == "/version":
                return 200, {"major": "1", "minor": "34", "gitVersion": "v1.34.0-kyrec-double",
                             "platform": "linux/amd64"}, {}
            segs = path.strip("/").split("/")
            if (segs[0] == "api" and len(segs) == 2) or (segs[0] == "apis" and len(segs) == 3):
                group, version = ("", segs[1]) if segs[0] == "api" else (segs[1], segs[2])
                doc = cat.api_resource_list(group, version)
                if doc is None:
                    raise _not_found_path()
                return 200, doc, {}
        target = self._target(path)
        entry.resource = target.rtype.qualified
        return self._resource(entry, user, target)

    @staticmethod
    def _discovery(doc: Any, version: str) -> tuple[int, Any, dict[str, str]]:
        ctype = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        return 200, doc, {"Content-Type": ctype}

    def _target(self, path: str) -> _Target:
        segs = path.strip("/").split("/")
        if segs[0] == "api" and len(segs) >= 3:
            group, version, rest = "", segs[1], segs[2:]
        elif segs[0] == "apis" and len(segs) >= 4:
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise _not_found_path()
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 2:
            raise _not_found_path()      # subresources are not served
        rtype = self.api.catalogue.lookup(group, version, rest[0])
        if rtype is None or (namespace and not rtype.namespaced):
            raise _not_found_path()
        name = rest[1] if len(rest) == 2 else None
        if rtype.namespaced and name is not None and not namespace:
            raise _not_found_path()
        return _Target(rtype, version, namespace, name)

    def _kubescape_rows(self, items: list[dict[str, Any]], *, full: bool) -> None:
        for item in items:
            # the store serves shallow copies: a metadata dict shared with the stored object must not be
            # written, or the payload's resourceVersion leaks into every later plain LIST
            meta = item["metadata"] = dict(item["metadata"])
            if not full:
                item.pop("spec", None)
            elif (rv := self.api.split.get((meta.get("namespace", ""), meta["name"]))) is not None:
                meta["resourceVersion"] = rv

    def _resource(self, entry: LoggedRequest, user: User, t: _Target) -> tuple[int, Any, dict[str, str]]:
        store, rtype, q = self.api.store, t.rtype, entry.query
        method = entry.method
        verb = {"GET": "get" if t.name else ("watch" if q.get("watch") in ("1", "true") else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if t.name else "deletecollection"}[method]
        entry.verb = verb
        self._authorize(user, verb, rtype.group, rtype.resource, t.namespace, t.name or "")
        if verb in ("watch", "deletecollection") or (method == "POST" and t.name):
            raise st.status(405, f"the double does not serve {verb}", "MethodNotAllowed")
        dry_run = _dry_run(q.get("dryRun"))
        if verb == "list":
            limit = int(q.get("limit") or 0)
            listed = store.list(rtype, t.version, t.namespace, label_selector=q.get("labelSelector", ""),
                                field_selector=q.get("fieldSelector", ""), limit=limit,
                                continue_token=q.get("continue", ""))
            if rtype.group == KUBESCAPE_STORAGE:
                self._kubescape_rows(listed["items"], full=q.get("resourceVersion") == "fullSpec")
            return 200, listed, {}
        if verb == "get":
            assert t.name is not None
            return 200, store.get(rtype, t.version, t.namespace, t.name), {}
        manager = q.get("fieldManager") or _manager_from_agent(entry.headers.get("user-agent", ""))
        if verb == "create":
            obj = _json_body(entry.body)
            return 201, store.create(rtype, t.version, t.namespace, obj, manager=manager, dry_run=dry_run), {}
        assert t.name is not None
        if verb == "update":
            obj = _json_body(entry.body)
            return 200, store.update(rtype, t.version, t.namespace, t.name, obj, manager=manager,
                                     dry_run=dry_run), {}
        if verb == "patch":
            ctype = entry.headers.get("content-type", "").split(";")[0].strip()
            if ctype != APPLY_PATCH:
                raise st.status(415, f"the body of the request was in an unknown format - accepted media types "
                                     f"include: {APPLY_PATCH} (the double serves only server-side apply)",
                                "UnsupportedMediaType")
            if not q.get("fieldManager"):
                raise st.status(422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                     'required for apply patch', "Invalid",
                                {"group": "meta.k8s.io", "kind": "PatchOptions",
                                 "causes": [{"reason": "FieldValueRequired",
                                             "message": "Required value: is required for apply patch",
                                             "field": "fieldManager"}]})
            force = q.get("force", "false")
            if force not in ("true", "false"):
                raise st.bad_request(f"invalid force: {force!r}")
            try:
                config = yaml.safe_load(entry.body.decode() or "{}")
            except yaml.YAMLError as exc:
                raise st.bad_request(f"error decoding YAML: {exc}") from None
            code, obj = store.apply(rtype, t.version, t.namespace, t.name, config, manager=q["fieldManager"],
                                    force=force == "true", dry_run=dry_run)
            return code, obj, {}
        options = _json_body(entry.body) if entry.body else {}
        dry_run = dry_run or "All" in (options.get("dryRun") or [])
        return 200, store.delete(rtype, t.version, t.namespace, t.name,
                                 preconditions=options.get("preconditions"), dry_run=dry_run), {}


def _dry_run(value: str | None) -> bool:
    if value in (None, ""):
        return False
    if value != "All":
        raise st.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return True


def _json_body(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body or b"{}")
    except ValueError as exc:
        raise st.bad_request(f"the body of the request was in an unknown format: {exc}") from None
    if not isinstance(value, dict):
        raise st.bad_request("the body of the request was in an unknown format")
    return value


def _manager_from_agent(agent: str) -> str:
    # the API server's default field manager: the user agent up to its first "/"
    return agent.split("/", 1)[0] or "unknown"


def _not_found_path() -> st.ApiError:
    return st.status(404, "the server could not find the requested resource", "NotFound", {})
