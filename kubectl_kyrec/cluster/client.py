"""The one HTTP client kyrec has: raw JSON requests to the Kubernetes API with bounded retries and one-line
errors.

The `kubernetes` package is used for what it does well and kyrec should not redo: kubeconfig loading (exec
plugins, OIDC, client certificates, several files merged), TLS and the HTTP call itself. Its model classes
are not used: bodies come back as bytes and are decoded with the same fast JSON path as state files. It is
imported only by `connect()`, so offline runs and `--help` never load it.

Retry rules (docs/architecture.md#reading-a-live-cluster), per request; a write is retried only where the
server did nothing:
- 429: wait for Retry-After (capped) and try again, for reads and writes alike (the server did nothing);
- 5xx, connection resets and read timeouts: reads only, bounded exponential backoff, then the caller fails
  that one resource type;
- unreachable, TLS failures, 401 and a 403 refusing the impersonation itself: no retry; one line naming
  the server or the context and user.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode

from kubectl_kyrec import __version__
from kubectl_kyrec.cluster.connection import ConnectionOptions, ResolvedConfig, or_offline, resolve
from kubectl_kyrec.errors import ClusterError, KyrecError
from kubectl_kyrec.load.json_stream import iter_json_documents

JSON = "application/json"
# the most requests one client has in flight at once (`apply --concurrency`, cluster/writer.py)
MAX_IN_FLIGHT = 64
APPLY_PATCH = "application/apply-patch+yaml"
# how long the kubeconfig's auth headers are reused before its refresh hook is asked again (_KubernetesTransport)
AUTH_REUSE_SECONDS = 1.0


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    data: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status <= 299

    def header(self, name: str) -> str | None:
        lower = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lower), None)

    def json(self, what: str = "response") -> Any:
        """The body, decoded as state files are (json module, Go's number rules), without the lines a state
        file's objects are located by (no answer is ever shown at a line)."""
        try:
            text = self.data.decode("utf-8")
            return next(iter_json_documents(text, what, lines=False))[0] if text.strip() else None
        except (UnicodeDecodeError, StopIteration) as exc:
            raise ClusterError(f"{what}: the server answered with something that is not JSON ({exc})") from None

    def status_message(self) -> str:
        """The `message` of a Status body, else the start of the body, else the HTTP code."""
        try:
            body = self.json()
        except KyrecError:  # an undecodable error body falls back to its text
            body = None
        if isinstance(body, Mapping) and body.get("message"):
            return str(body["message"])
        text = self.data.decode("utf-8", "replace").strip()
        return text.splitlines()[0][:200] if text else f"HTTP {self.status}"

    def status_reason(self) -> str:
        """The `reason` of a Status body (`Forbidden`, `NotFound`, `InternalError`), else ""."""
        try:
            body = self.json()
        except KyrecError:  # an undecodable error body has no reason to give
            return ""
        return str(body.get("reason") or "") if isinstance(body, Mapping) else ""


def _encode_query(items: tuple[tuple[str, Any], ...]) -> str:
    """`?k=v&...` of the parameters that have a value, "" if none."""
    params = {k: v for k, v in items if v not in (None, "")}
    return "?" + urlencode(params) if params else ""


# a write's few parameters are the same for every object of a plan, so each set is encoded once (bounded: a
# LIST's continue tokens come and go)
_query_string = functools.lru_cache(maxsize=256)(_encode_query)


# how the RBAC authorizer words a denial (apiserver's responsewriters.forbiddenMessage)
_RBAC_DENIAL = re.compile(r'cannot (\S+) resource "([^"]+)" in API group "([^"]*)"')


class TransportError(Exception):
    """The request got no HTTP answer. `kind`: unreachable | tls | timeout | reset."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class Transport(Protocol):
    base_url: str

    def send(self, method: str, url: str, headers: Mapping[str, str], body: Any,
             timeout: float | None) -> Response: ...

    def auth_headers(self) -> dict[str, str]: ...


class StatusError(ClusterError):
    """A final non-2xx answer, with the Status message; `status` is the HTTP code."""

    def __init__(self, message: str, status: int, response: Response | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.response = response


class ForbiddenError(StatusError):
    """403 on one request: the caller records what could not be read and goes on."""


class RetriesExhausted(ClusterError):
    """Timeouts or resets on every try of one read: that read fails, the run goes on."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5               # tries in all for one request
    base_delay: float = 0.2         # seconds, doubled each retry
    max_delay: float = 3.0
    max_retry_after: float = 30.0   # a Retry-After above this is shortened to it


@dataclass
class KubeClient:
    """Requests against one cluster as one user. `counts` tallies requests by category (`discovery`,
    `list`, `get`, `apply`, `create`, `delete`) so that runs can report what they cost."""

    transport: Transport
    config: ResolvedConfig
    options: ConnectionOptions = field(default_factory=ConnectionOptions)
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Callable[[float], None] = time.sleep
    counts: Counter[str] = field(default_factory=Counter)
    _counting: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # (accept, content type) -> (the auth headers they were built with, the headers): `_headers`
    _built: dict[tuple[str, str | None], tuple[Mapping[str, str], Any]] = field(
        default_factory=dict, repr=False, compare=False)

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str | None = None, accept: str = JSON, category: str = "") -> Response:
        """One API request with the retry rules above; any HTTP answer is returned (the caller maps non-2xx
        codes with `fail`), except 401, which ends the run."""
        url = self.transport.base_url.rstrip("/") + path
        if query:
            items = tuple(query.items())
            try:
                url += _query_string(items)
            except TypeError:       # a value that cannot be a cache key (a list): encoded as it is
                url += _encode_query(items)
        read = method == "GET"
        delay = self.policy.base_delay
        attempt = 0
        while True:
            attempt += 1
            headers = self._headers(accept, content_type)
            with self._counting:        # apply's writers share one client (cluster/writer.py)
                self.counts[category or method.lower()] += 1
            try:
                response = self.transport.send(method, url, headers, body, self.options.request_timeout)
            except TransportError as exc:
                if exc.kind in ("unreachable", "tls"):
                    raise self._connection_error(exc) from None
                if not read or attempt >= self.policy.attempts:
                    what = "timed out" if exc.kind == "timeout" else "connection reset"
                    detail = "" if exc.detail in what else f" ({exc.detail})"
                    raise RetriesExhausted(f"{method} {path}: {what}{detail}; gave up after {attempt} "
                                       f"attempt{'s' if attempt > 1 else ''}") from None
                self.sleep(delay)
                delay = min(delay * 2, self.policy.max_delay)
                continue
            if response.status == 401:
                raise ClusterError(
                    f'the cluster rejected the credentials of user "{self.config.user}" (context '
                    f'"{self.config.context}"): 401 {response.status_message()}; log in again or pick another '
                    f"context with --context")
            if response.status == 403 and (self.options.as_user or self.options.as_groups) and \
                    "cannot impersonate" in response.status_message():
                # the impersonation itself is refused: every request would be, so the run ends here
                # rather than reporting each type as unreadable
                raise ClusterError(f'cannot impersonate with --as/--as-group as user "{self.config.user}" '
                                   f'(context "{self.config.context}"): 403 {response.status_message()}')
            if response.status == 429 and attempt < self.policy.attempts:
                self.sleep(self._retry_after(response, delay))
                delay = min(delay * 2, self.policy.max_delay)
                continue
            if read and response.status >= 500 and attempt < self.policy.attempts:
                self.sleep(self._retry_after(response, delay) if response.header("Retry-After") else delay)
                delay = min(delay * 2, self.policy.max_delay)
                continue
            return response

    def _headers(self, accept: str, content_type: str | None) -> Any:
        """The request's headers: built once per (accept, content type) and the transport's current auth
        headers, and shared by the requests that follow (urllib3 reads them, never changes them)."""
        auth = self.transport.auth_headers()
        key = (accept, content_type)
        built = self._built.get(key)
        if built is not None and built[0] is auth:
            return built[1]
        headers = self._build_headers(accept, content_type, auth)
        self._built[key] = (auth, headers)
        return headers

    def _build_headers(self, accept: str, content_type: str | None, auth: Mapping[str, str]) -> Any:
        headers: Any = {}
        if self.options.as_groups:
            from urllib3 import HTTPHeaderDict  # multiple Impersonate-Group headers need a multi-dict

            headers = HTTPHeaderDict()
        headers["Accept"] = accept
        headers["User-Agent"] = f"kubectl-kyrec/{__version__}"
        if content_type:
            headers["Content-Type"] = content_type
        for k, v in auth.items():
            headers[k] = v
        if self.options.as_user:
            headers["Impersonate-User"] = self.options.as_user
        for group in self.options.as_groups:
            headers.add("Impersonate-Group", group)
        return headers

    def _retry_after(self, response: Response, fallback: float) -> float:
        value = response.header("Retry-After")
        try:
            seconds = float(value) if value is not None else fallback
        except ValueError:
            seconds = fallback
        return max(0.0, min(seconds, self.policy.max_retry_after))

    def _connection_error(self, exc: TransportError) -> ClusterError:
        where = self.config.server or self.transport.base_url
        if exc.kind == "tls":
            return ClusterError(f'TLS failure talking to {where} (context "{self.config.context}"): {exc.detail}')
        return ClusterError(or_offline(self.options, f'cannot reach the cluster at {where} (context '
                                                     f'"{self.config.context}"): {exc.detail}; check the network'))

    def get_json(self, path: str, *, query: Mapping[str, Any] | None = None, category: str = "get",
                 verb: str = "get", resource: str = "", namespace: str = "") -> Any:
        response = self.request("GET", path, query=query, category=category)
        if not response.ok:
            raise self.fail(response, verb, resource, namespace, path)
        return response.json(path)

    def fail(self, response: Response, verb: str, resource: str, namespace: str, path: str) -> StatusError:
        """The one-line error for a final non-2xx answer. `verb` is the RBAC verb (list, patch, ...) and
        `resource` the plural with its group (`deployments.apps`), so that a 403 can name the rule that
        would grant the request."""
        message = response.status_message()
        if response.status == 403:
            # the RBAC authorizer's own words name the verb it checked (an apply that creates its object is
            # checked for create, not patch): they win over the caller's guess
            said = _RBAC_DENIAL.search(message)
            if said is not None:
                verb, plural, group = said.group(1), said.group(2), said.group(3)
            else:
                plural, _, group = resource.partition(".")
            where = f' in namespace "{namespace}"' if namespace else (" cluster-wide" if resource else "")
            # the authorizer's sentence says no more than ours once it is parsed; any other is kept whole
            text = f"forbidden: cannot {verb} {resource or path}{where} as {self._who()}" + (
                "" if said is not None else f": {message}")
            if plural:
                text += f'; grant: apiGroups: ["{group}"], resources: ["{plural}"], verbs: ["{verb}"]'
            return ForbiddenError(text, 403, response)
        if response.status == 429:
            return StatusError(f"{verb} {resource or path}: the server kept answering 429 Too Many Requests; "
                               f"gave up after {self.policy.attempts} attempts", 429, response)
        return StatusError(f"{verb} {resource or path}: {response.status} {message}", response.status, response)

    def _who(self) -> str:
        if self.options.as_user:
            return f'"{self.options.as_user}" (impersonated)'
        return f'user "{self.config.user}" of context "{self.config.context}"'


# ---- the kubernetes-backed transport --------------------------------------------------------------------

class _KubernetesTransport:
    """Requests sent on the connection pool the kubernetes package built from the kubeconfig (its TLS, proxy
    and pool settings), not through its REST layer: what that layer adds per request (its body encoding by
    content type, a Timeout object, version-dependent error raising) is decided once here: a write's CPU fell
    from 0.65 to 0.57 ms, 88 Python calls fewer (bench/apply_write_cpu.py). urllib3 copies a Timeout for each
    request, so the ones kept here are shared by apply's writer threads safely."""

    def __init__(self, api_client: Any) -> None:
        import urllib3

        self._api_client = api_client
        self._pool = api_client.rest_client.pool_manager
        self.base_url = str(api_client.configuration.host)
        self._timeouts: dict[float | None, urllib3.Timeout] = {}
        self._auth: tuple[float, dict[str, str]] | None = None     # (reuse until, auth headers)
        self.clock: Callable[[], float] = time.monotonic
        self._direct: tuple[str, Any] | None = self._direct_pool()       # (origin, its pool): _urlopen

    def auth_headers(self) -> dict[str, str]:
        """The kubeconfig's auth headers, asked of the package at most once per AUTH_REUSE_SECONDS: its refresh
        hook (a token from an exec plugin or an auth provider) renews a token five minutes before it expires
        (kubernetes/config/kube_config.py EXPIRY_SKEW_PREVENTION_DELAY), so one a second old is still good; asked
        per request, the hook re-assigned seven configuration fields before each of apply's writes. The same
        dict is returned while it is reused (KubeClient keeps the headers built from it)."""
        now = self.clock()
        reused = self._auth
        if reused is not None and now < reused[0]:
            return reused[1]
        out = {}
        for setting in self._api_client.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                out[str(setting["key"])] = str(setting["value"])
        if reused is not None and reused[1] == out:
            out = reused[1]         # unchanged: the headers built from it stay good
        self._auth = (now + AUTH_REUSE_SECONDS, out)
        return out

    def _timeout(self, seconds: float | None) -> Any:
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            import urllib3

            # the kubernetes REST layer's own default when none is given: 30 s to connect, reads unbounded
            timeout = urllib3.Timeout(total=seconds) if seconds else urllib3.Timeout(connect=30.0, read=None)
            self._timeouts[seconds] = timeout
        return timeout

    def _urlopen(self, method: str, url: str, data: bytes | None, headers: Mapping[str, str], timeout: Any) -> Any:
        """The request sent on the API server's own connection pool, taken from the pool manager once: the
        manager's request() re-parsed the URL, looked the pool up by a normalised key and copied the headers
        for every request, a tenth of a write's Python calls (bench/apply_write_cpu.py). Sent as the manager
        sends it (the request URI, redirects not followed). A proxy (a ProxyManager, which adds its headers
        per request) or a URL outside the server's origin goes through the manager, as does every request
        once the manager has closed the pool it handed out."""
        import urllib3

        direct = self._direct
        if direct is not None and url.startswith(direct[0]) and url[len(direct[0]):].startswith("/"):
            try:
                return direct[1].urlopen(method, url[len(direct[0]):], body=data, headers=headers,
                                         timeout=timeout, preload_content=False, redirect=False,
                                         assert_same_host=False)
            except urllib3.exceptions.ClosedPoolError:
                self._direct = None
        return self._pool.request(method, url, body=data, headers=headers, timeout=timeout, preload_content=False)

    def _direct_pool(self) -> tuple[str, Any] | None:
        """(origin, pool) for `_urlopen`, or None when the manager must choose the pool per request."""
        import urllib3

        if type(self._pool) is not urllib3.PoolManager:
            return None         # a ProxyManager or a SOCKS manager: their own per-request handling
        try:
            parsed = urllib3.util.parse_url(self.base_url)
            if parsed.scheme not in ("http", "https") or not parsed.host:
                return None
            origin = f"{parsed.scheme}://{parsed.netloc}"
            return origin, self._pool.connection_from_url(origin)
        except (urllib3.exceptions.HTTPError, ValueError):
            return None         # a server URL urllib3 cannot parse: the first request says so, as before

    def send(self, method: str, url: str, headers: Mapping[str, str], body: Any,
             timeout: float | None) -> Response:
        import urllib3

        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            # retries=False (connect() sets it on the configuration, so on the pool): an error is raised as
            # itself, never wrapped in MaxRetryError, and kyrec retries by its own rules
            resp = self._urlopen(method, url, data, headers, self._timeout(timeout))
        except urllib3.exceptions.SSLError as exc:
            raise TransportError("tls", _first_line(str(exc))) from None
        except urllib3.exceptions.NewConnectionError as exc:
            raise TransportError("unreachable", _reason(exc)) from None
        except urllib3.exceptions.ConnectTimeoutError as exc:
            raise TransportError("unreachable", f"connect timed out ({_reason(exc)})") from None
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise TransportError("timeout", _reason(exc)) from None
        except urllib3.exceptions.ProtocolError as exc:
            raise TransportError("reset", _reason(exc)) from None
        except urllib3.exceptions.HTTPError as exc:
            raise TransportError("unreachable", _reason(exc)) from None
        try:
            raw = resp.data
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise TransportError("timeout", _reason(exc)) from None
        except urllib3.exceptions.HTTPError as exc:
            raise TransportError("reset", _reason(exc)) from None
        finally:
            resp.release_conn()
        # the pool's own case-insensitive header mapping, not copied: a write reads no header but on a 429 or 5xx
        return Response(int(resp.status), resp.headers, raw or b"")


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None) or (exc.args[1] if len(exc.args) > 1 else None)
    text = str(inner) if inner else str(exc)
    for marker in ("Connection refused", "Connection reset by peer", "timed out", "Name or service not known"):
        if marker in text:
            return marker.lower() if marker != "Connection reset by peer" else "connection reset by peer"
    return _first_line(text)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[-1][:200] if text.strip() else "no detail"


def connect(options: ConnectionOptions, **kwargs: Any) -> KubeClient:
    """A client for the context `options` name (kubeconfig flags, KUBECONFIG, ~/.kube/config)."""
    resolved = resolve(options)
    try:
        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config
    except ImportError:  # pragma: no cover - a dependency of the package
        raise ClusterError(or_offline(options, "the `kubernetes` package is not installed; install kubectl-kyrec "
                                      "with its dependencies")) from None
    configuration = k8s_client.Configuration()
    configuration.retries = False        # kyrec retries itself, by its own rules, and counts every request
    # connections kept for reuse: one per request apply's writers can have in flight (urllib3 opens more when
    # they are all busy and then drops the extra ones, with a warning on stderr)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, MAX_IN_FLIGHT)
    try:
        api_client = k8s_config.new_client_from_config(
            config_file=os.pathsep.join(resolved.paths), context=resolved.context, persist_config=False,
            client_configuration=configuration)
    except Exception as exc:  # noqa: BLE001 - ConfigException, exec plugin failures, bad certificates...
        raise ClusterError(f'cannot use context "{resolved.context}" of {", ".join(resolved.paths)}: '
                           f"{_first_line(str(exc))}") from None
    # A token kubeconfig's refresh hook (kubernetes/config/kube_config.py _set_config) assigns the same host
    # again before every request, and the host setter then reads every environment variable for a proxy
    # (kubernetes/client/configuration.py): a third of each write's CPU in `apply` (bench/apply_write_cpu.py),
    # for nothing, as the connection pool took its proxy once, when it was built. Setting the proxy (the
    # setter is public) pins that decision; the token is still refreshed on every request.
    api_client.configuration.proxy = api_client.configuration.proxy
    return KubeClient(_KubernetesTransport(api_client), resolved, options, **kwargs)
