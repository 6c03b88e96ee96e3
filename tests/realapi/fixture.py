"""The real kube-apiserver for the tests: one per session, built on demand (tests/realapi/build.py), started by
the same Go program serve.sh runs, with Kyverno's CRDs from ../shared installed in place.

Fixtures (registered for every test by tests/conftest.py):
- `realapi`: the session's RealServer. Without Go this is a skip outside CI (one reason, listed again at the
  end of the run) and a failure under CI=true, as is a failed build or start: CI must not pass by not
  running the real server.
- `kubectl_path`: a kubectl: the one on PATH, else one built from the pinned k8s.io/kubectl.

A bare API server runs no controllers: a deleted namespace stays Terminating and nothing is
garbage-collected. Tests therefore never share names: `realapi.unique(prefix)` gives a fresh name per call, and
cluster-scoped objects that would change other tests' outcomes are deleted directly (`realapi.kube.delete`).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import select
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realapi import build
from tests.shared_inputs import SHARED, in_ci

CRDS = SHARED / "crds" / "kyverno"
START_TIMEOUT = 300          # seconds from exec to "ready" (etcd, API server, 24 CRDs, discovery)

APPLY_PATCH = "application/apply-patch+yaml"

# what could not be had this session and why: listed at the end of the run by tests/conftest.py
UNAVAILABLE: dict[str, str] = {}
# how long the build lookup and the start took this session (printed at the end of the run, for CI logs)
TIMINGS: dict[str, float] = {}


class StartError(RuntimeError):
    pass


def plural_path(api_version: str, plural: str, namespace: str = "", name: str = "") -> str:
    """The REST path of a collection or object: ('v1', 'configmaps', 'ns', 'x') -> /api/v1/namespaces/ns/..."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    return f"{base}/{name}" if name else base


class Answer:
    def __init__(self, status: int, body: bytes, warnings: list[str] | None = None) -> None:
        self.status = status
        self.raw = body
        # the texts of the Warning headers (`299 - "text"`, quotes inside escaped), as kubectl prints them
        self.warnings = [w[7:-1].replace('\\"', '"') if w.startswith('299 - "') else w for w in warnings or []]

    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.raw[:300]!r})"


class Kube:
    """A minimal HTTP client for one kubeconfig context: the tests' own view of the server, independent of the
    kubernetes client kyrec uses (a test must not check kyrec with kyrec's own reading)."""

    def __init__(self, kubeconfig: Path, context: str = "admin") -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        ctx = next(c["context"] for c in config["contexts"] if c["name"] == context)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])
        self.server = cluster["server"]
        self.token = user.get("token", "")
        self.ssl: ssl.SSLContext | None = None
        if self.server.startswith("https:"):
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            self.ssl = ssl.create_default_context(cadata=ca)

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, str] | None = None,
                content_type: str = "application/json") -> Answer:
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(url, data=data, method=method)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=60) as resp:
                return Answer(resp.status, resp.read(), resp.headers.get_all("Warning"))
        except urllib.error.HTTPError as err:
            return Answer(err.code, err.read(), err.headers.get_all("Warning"))

    def get(self, path: str, **query: str) -> Any:
        """The object at `path`, or None when it does not exist; any other failure raises."""
        answer = self.request("GET", path, query=query or None)
        if answer.status == 404:
            return None
        assert answer.status == 200, answer
        return answer.json()

    def apply(self, path: str, obj: Mapping[str, Any], manager: str, *, force: bool = False,
              dry_run: bool = False) -> Answer:
        query = {"fieldManager": manager}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, dict(obj), query=query, content_type=APPLY_PATCH)

    def delete(self, path: str, **options: Any) -> Answer:
        return self.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", **options})


class RealServer:
    """A running realapi process (`serve`), its kubeconfig (contexts admin and restricted) and helpers."""

    def __init__(self, binary: Path, workdir: Path) -> None:
        self.binary = binary
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.log = workdir / "server.log"
        self.pid = 0
        self._names = itertools.count(1)
        self.start_seconds = 0.0

    def start(self, crds: Path, timeout: float = START_TIMEOUT) -> None:
        """Start detached: the server is not a child of the test process (a shell starts it in the
        background, prints its pid and exits). Tests that check they leave no child processes behind (the
        --jobs workers) would otherwise see this session-long server; `--watch-pid` makes it stop by itself
        when the test run is gone, however it ended."""
        started = time.monotonic()
        command = [str(self.binary), "serve", "--kubeconfig", str(self.kubeconfig), "--crds", str(crds),
                   "--log", str(self.log), "--watch-pid", str(os.getpid())]
        with open(self.log, "ab") as log:
            shell = subprocess.Popen(["/bin/sh", "-c", '"$@" </dev/null & echo $!', "sh", *command],
                                     stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        assert shell.stdout is not None
        stdout = shell.stdout
        try:
            self.pid = int(stdout.readline())
        finally:
            shell.wait(timeout=30)
        deadline = started + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([stdout], [], [], 1.0)
            if ready:
                line = stdout.readline()
                if line.strip() == b"ready":
                    self.start_seconds = time.monotonic() - started
                    self.kube = Kube(self.kubeconfig)
                    self._stdout = stdout          # kept open: the server's stdout is this pipe
                    return
                if not line:                       # EOF: the server ended before it was ready
                    break
            elif not self.running():
                break
        self.stop()
        stdout.close()
        raise StartError(f"the real API server did not get ready within {timeout:.0f}s; its log ends:\n"
                         f"{self.log_tail()}")

    def running(self) -> bool:
        """Whether the server process exists and is not a zombie (a container's init may never reap it)."""
        if not self.pid:
            return False
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            return True
        return state != "Z"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 40) -> None:
        """SIGTERM to the server's own pid, a bounded wait, then SIGKILL."""
        if not self.running():
            return
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.running():
            os.kill(self.pid, signal.SIGKILL)

    # ---- helpers for tests ---------------------------------------------------------------------------------

    def unique(self, prefix: str = "t") -> str:
        """A name no other test of the session uses (a DNS label: namespaces, objects, policies)."""
        clean = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")[:40] or "t"
        return f"{clean}-{next(self._names)}"

    def kube_as(self, context: str) -> Kube:
        return Kube(self.kubeconfig, context)

    def seed(self, *docs: Mapping[str, Any] | str | Path) -> None:
        """Server-side apply objects as serve.sh's seeds are applied (the same Go code): a manager from each
        object's first managedFields entry (default kubectl), status through the status subresource."""
        paths: list[str] = []
        with tempfile.TemporaryDirectory() as tmp:
            inline = [d for d in docs if isinstance(d, Mapping)]
            if inline:
                seeds = Path(tmp) / "seed.yaml"
                seeds.write_text(yaml.safe_dump_all([dict(d) for d in inline]))
                paths.append(str(seeds))
            for d in docs:
                if isinstance(d, str | Path):
                    paths.append(str(d))
            done = subprocess.run([str(self.binary), "seed", "--kubeconfig", str(self.kubeconfig), *paths],
                                  capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    def namespace(self, prefix: str = "ns") -> str:
        """A fresh namespace, created now."""
        name = self.unique(prefix)
        self.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name


def _skip_or_fail(message: str) -> None:
    UNAVAILABLE["real API server"] = message
    if in_ci():
        pytest.fail(f"CI=true and the real API server is not available: {message}", pytrace=False)
    pytest.skip(f"real API server not available: {message}")


_SESSION: dict[str, Any] = {}


@pytest.fixture(scope="session")
def realapi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    if "error" in _SESSION:                     # one attempt per session, whatever the number of tests
        _skip_or_fail(_SESSION["error"])
    if not CRDS.is_dir():
        _SESSION["error"] = f"{CRDS} (Kyverno's CRDs, ../shared) is missing"
        _skip_or_fail(_SESSION["error"])
    began = time.monotonic()
    try:
        binary = build.build("server")
        TIMINGS["build (0 when cached)"] = time.monotonic() - began
    except build.BuildError as exc:
        _SESSION["error"] = str(exc)
        _skip_or_fail(str(exc))
    server = RealServer(binary, tmp_path_factory.mktemp("realapi"))
    try:
        server.start(CRDS)
        TIMINGS["start to ready"] = server.start_seconds
    except StartError as exc:
        _SESSION["error"] = str(exc)
        _skip_or_fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kubectl_path() -> str:
    """kubectl from PATH; where there is none, one built from the pinned k8s.io/kubectl (same rules as realapi:
    a skip outside CI, a failure under CI=true when it cannot be had)."""
    found = shutil.which("kubectl")
    if found:
        return found
    try:
        return str(build.build("kubectl"))
    except build.BuildError as exc:
        message = f"no kubectl on PATH and none could be built: {exc}"
        UNAVAILABLE["kubectl"] = message
        if in_ci():
            pytest.fail(f"CI=true and {message}", pytrace=False)
        pytest.skip(message)


def kubectl_env(kubeconfig: Path, home: Path) -> dict[str, str]:
    """An environment for kubectl against `kubeconfig`: its own HOME so no user kuberc or cache leaks in."""
    return {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home), "KUBECACHEDIR": str(home / "cache")}
