"""tests/realapi/serve.sh as documented in docs/testing.md: a server of its own, seeds applied as the first
managedFields manager with status through the status subresource, RBAC for the restricted user from a seed,
`ready` on stdout, a clean stop on SIGTERM. And the build cache's key."""

from __future__ import annotations

import select
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.realapi import build
from tests.realapi.fixture import Kube, RealServer, plural_path

HERE = Path(__file__).resolve().parent

SEED = """\
apiVersion: v1
kind: Namespace
metadata: {name: seeded}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: chart
  namespace: seeded
  resourceVersion: "12345"
  uid: 0f0f0f0f-0000-4000-8000-000000000000
  managedFields:
  - manager: helm
    operation: Update
    apiVersion: v1
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
data: {k: v}
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: seeded-vpol
  managedFields:
  - manager: kyverno
    operation: Apply
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "true"
status:
  conditionStatus:
    ready: true
    message: seeded
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: read-configmaps}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: restricted-read-configmaps}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: read-configmaps}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: restricted}]
"""


def test_serve_sh_seeds_writes_both_contexts_and_stops_on_sigterm(realapi: RealServer, tmp_path: Path) -> None:
    # `realapi` first: it builds (or fails CI) once; serve.sh then finds the cached binary
    seed = tmp_path / "seed.yaml"
    seed.write_text(SEED)
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen([str(HERE / "serve.sh"), "--kubeconfig", str(kubeconfig), "--log",
                             str(tmp_path / "server.log"), str(seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 240)
        assert ready, "serve.sh printed nothing within 240s"
        assert proc.stdout.readline() == b"ready\n", proc.stderr.read() if proc.stderr else ""
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["current-context"] == "admin"
        assert {c["name"] for c in config["contexts"]} == {"admin", "restricted"}
        server = config["clusters"][0]["cluster"]["server"]
        assert server.startswith("https://127.0.0.1:")
        admin, restricted = Kube(kubeconfig), Kube(kubeconfig, "restricted")

        chart = admin.get(plural_path("v1", "configmaps", "seeded", "chart"))
        assert chart["data"] == {"k": "v"}
        # server fields of the seed are not kept; its first manager is who applied it
        assert chart["metadata"]["uid"] != "0f0f0f0f-0000-4000-8000-000000000000"
        assert [(m["manager"], m["operation"]) for m in chart["metadata"]["managedFields"]] == [("helm", "Apply")]
        plain = admin.get(plural_path("v1", "configmaps", "default", "plain"))
        assert [m["manager"] for m in plain["metadata"]["managedFields"]] == ["kubectl"]

        vpol = admin.get(plural_path("policies.kyverno.io/v1", "validatingpolicies", "", "seeded-vpol"))
        assert vpol["status"]["conditionStatus"] == {"ready": True, "message": "seeded"}
        entries = {(m["manager"], m.get("subresource", "")) for m in vpol["metadata"]["managedFields"]}
        assert entries == {("kyverno", ""), ("kyverno", "status")}

        assert restricted.request("GET", plural_path("v1", "configmaps", "seeded")).status == 200
        denied = restricted.request("GET", plural_path("v1", "secrets", "seeded"))
        assert denied.status == 403
        assert denied.json()["message"] == ('secrets is forbidden: User "restricted" cannot list resource "secrets" '
                                            'in API group "" in the namespace "seeded"')

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_serve_sh_refuses_without_a_kubeconfig() -> None:
    done = subprocess.run([str(HERE / "serve.sh")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_the_cache_key_is_the_pinned_version_and_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    version = build.kubernetes_version()
    assert version.startswith("v1.3")
    server, kubectl = build.cached_path("server"), build.cached_path("kubectl")
    assert server.parent == tmp_path / "kubectl-kyrec" / "realapi" / version
    assert server.name.startswith("server-") and kubectl.name.startswith("kubectl-")
    # the kubectl binary does not depend on the server's sources, and the reverse
    assert server.name[len("server-"):] != kubectl.name[len("kubectl-"):]


def test_a_cached_binary_is_used_without_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(build, "go_binary", lambda: None)
    with pytest.raises(build.BuildError, match="no Go toolchain"):
        build.build("server")
    cached = build.cached_path("server")
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")
    assert build.build("server") == cached


def test_without_go_the_real_server_tests_skip_with_one_reason_and_fail_under_ci(tmp_path: Path) -> None:
    # a pytest run of its own on a machine "without Go": no cached binary (an empty cache), KYREC_GO naming none
    import os
    import sys

    root = HERE.parents[1]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "KYREC_GO": str(tmp_path / "no-go")}
    env.pop("CI", None)
    target = "tests/realapi/test_live_both.py"
    args = [sys.executable, "-m", "pytest", target, "-q", "-rs", "-k", "not double"]
    outside = subprocess.run(args, capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert outside.returncode == 0, outside.stdout[-2000:]
    reason = f"no Go toolchain: KYREC_GO={tmp_path / 'no-go'} is not an executable"
    skipped = [line for line in outside.stdout.splitlines() if line.startswith("SKIPPED")]
    # every real-server test skips for the one reason (one build attempt), said once more at the end
    assert len(skipped) > 10 and all(line.endswith(f"real API server not available: {reason} (the real API "
                                                   "server is built from k8s.io/kubernetes "
                                                   f"{build.kubernetes_version()})") for line in skipped)
    start = outside.stdout.index("not run: real API server / registry tests")
    summary = outside.stdout[start:outside.stdout.index("short test summary info", start)]
    assert summary.count(reason) == 1 and " passed" not in outside.stdout
    in_ci = subprocess.run(args, capture_output=True, text=True, env={**env, "CI": "true"}, cwd=root, timeout=300)
    assert in_ci.returncode == 1, in_ci.stdout[-2000:]
    assert f"CI=true and the real API server is not available: {reason}" in in_ci.stdout


def test_the_server_stops_when_the_watched_process_is_gone(realapi: RealServer, tmp_path: Path) -> None:
    # what keeps a killed test run from leaving its detached server behind: --watch-pid
    from tests.realapi.fixture import CRDS

    watched = subprocess.Popen(["sleep", "600"])
    server = RealServer(realapi.binary, tmp_path)
    proc: subprocess.Popen[bytes] | None = None
    try:
        server.start(CRDS)
        assert server.running() and server.pid != watched.pid
        assert Kube(server.kubeconfig).get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
        # the fixture's server watches the test run; this one is told to watch `sleep` instead
        server.stop()
        assert not server.running()
        server = RealServer(realapi.binary, tmp_path / "second")
        (tmp_path / "second").mkdir()
        command = [str(realapi.binary), "serve", "--kubeconfig", str(server.kubeconfig), "--crds", str(CRDS),
                   "--log", str(server.log), "--watch-pid", str(watched.pid)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 240)
        assert ready and proc.stdout.readline() == b"ready\n"
        watched.kill()
        watched.wait(timeout=10)
        assert proc.wait(timeout=60) == 0
        assert "is gone: stopping" in server.log.read_text()
    finally:
        watched.kill()
        server.stop()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
