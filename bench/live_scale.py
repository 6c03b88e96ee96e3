"""Live at scale (issue 36): `diff`, `capture`, `coverage` and `apply --yes` against the real API server
holding K Namespaces and M other objects, beside `kubectl get -A` of the same kinds as the floor.

    KYREC_SHARED=/work/shared python bench/live_scale.py --namespaces 300 --objects 5000 [--policies 24]

The server is the realapi program (tests/realapi/build.py builds it once, cached; Kyverno's CRDs from
KYREC_SHARED) started on loopback as tests/realapi starts it. The cluster:
- K Namespaces `team-NNNNN`, each a trigger of one GeneratingPolicy (bench/apply_writes.py's, which wants a
  ConfigMap `team-settings` in every `team-` Namespace): none exists yet, so `diff` finds K missing
  downstreams and `apply --yes` creates K;
- M other objects spread round robin over those Namespaces: 60% Pods in the shapes of the corpus Pod tests
  (bench/eval.py's `pod_spec`), 20% Deployments with the same Pod templates, 20% ConfigMaps; created by
  concurrent raw POSTs (one urllib3 pool, 16 in flight), not timed with the runs;
- the report-producing policies: the first --policies corpus ValidatingPolicies that select Pods
  (bench/e2e.py's `pod_policy_files`), given with -p beside the GeneratingPolicy. No PolicyReport exists
  (no Kyverno runs here): plain `diff` then compares downstreams only (run/diff.py: reports are compared
  when the state holds some or --reports is given), so `diff --reports` is run too and finds every report
  missing; `coverage` finds every subject missing.

Each run is the INSTALLED `kubectl-kyrec` (the one on PATH, e.g. the venv's) as a subprocess under
/usr/bin/time (wall time, peak RSS), its output to a file. LIST pages are counted on the server: the
difference of `apiserver_request_total{verb="LIST"}` (its /metrics) across the run, so any client's LISTs,
and the server's own (none once it is idle) count too. kubectl is the one on PATH, else tests/realapi's.
The 1-minute load average is printed beside every row: the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from tests.realapi import build  # noqa: E402
from tests.realapi.fixture import CRDS, RealServer  # noqa: E402

NOW = ["--now", "2026-09-01T00:00:00Z"]
MARKER = "BENCH-TIME"


def _bench_module(name: str) -> Any:
    """bench/<name>.py as a module (bench/ is not a package): its generators are reused, not copied."""
    spec = importlib.util.spec_from_file_location(f"kyrec_bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


class Raw:
    """Concurrent raw requests over one urllib3 pool with the kubeconfig's admin token and CA."""

    def __init__(self, kubeconfig: Path, concurrency: int) -> None:
        self.server, self.headers, self.pool = _bench_module("apply_writes").admin_pool(
            kubeconfig, concurrency, "application/json")
        self.concurrency = concurrency

    def get(self, path: str) -> bytes:
        return bytes(self.pool.request("GET", self.server + path, headers=self.headers).data)

    def create_all(self, items: list[tuple[str, dict[str, Any]]]) -> int:
        """POST every (collection path, object) with `concurrency` in flight; the number that failed."""
        failed = 0
        lock = threading.Lock()

        def one(item: tuple[str, dict[str, Any]]) -> None:
            nonlocal failed
            path, obj = item
            answer = self.pool.request("POST", self.server + path, body=json.dumps(obj).encode(),
                                       headers=self.headers)
            if answer.status not in (200, 201, 409):
                with lock:
                    failed += 1
                    if failed <= 3:
                        sys.stderr.write(f"POST {path}: {answer.status} {answer.data[:300]!r}\n")

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(one, items))
        return failed

    def list_requests(self) -> Counter[str]:
        """apiserver_request_total by verb, summed over resources and codes (the server's own count)."""
        counts: Counter[str] = Counter()
        for line in self.get("/metrics").decode().splitlines():
            if line.startswith("apiserver_request_total{"):
                verb = re.search(r'verb="([A-Z]+)"', line)
                if verb:
                    counts[verb.group(1)] += int(float(line.rsplit(" ", 1)[1]))
        return counts


def cluster_objects(namespaces: list[str], m: int) -> list[tuple[str, dict[str, Any]]]:
    bench_eval = _bench_module("eval")

    def pod_spec(rng: random.Random, i: int) -> dict[str, Any]:
        """bench/eval.py's Pod spec, each container's port made its own: the API server refuses two equal
        host ports in a Pod (a hostNetwork Pod's ports are host ports), which the offline benchmarks never
        meet."""
        spec: dict[str, Any] = bench_eval.pod_spec(rng, i)
        for c, container in enumerate(spec["containers"]):
            for port in container.get("ports", []):
                port["containerPort"] += 100 * c
        return spec

    rng = random.Random(7)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(m):
        ns = namespaces[i % len(namespaces)]
        labels = {"app": f"app-{i}"}
        if rng.random() < 0.5:
            labels["app.kubernetes.io/name"] = f"app-{i}"
        meta = {"name": f"app-{i}", "namespace": ns, "labels": labels}
        kind = i % 5
        if kind < 3:
            out.append((f"/api/v1/namespaces/{ns}/pods",
                        {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(rng, i)}))
        elif kind == 3:
            out.append((f"/apis/apps/v1/namespaces/{ns}/deployments",
                        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": f"app-{i}"}},
                                  "template": {"metadata": {"labels": labels},
                                               "spec": pod_spec(rng, i)}}}))
        else:
            out.append((f"/api/v1/namespaces/{ns}/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                         "data": {"key": f"value-{i}", "other": "x" * rng.randint(10, 200)}}))
    return out


def timed(command: list[str], env: dict[str, str], out: Path) -> tuple[float, float, float, int, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MiB), exit code and stderr's tail of `command`
    under /usr/bin/time, its stdout written to `out`."""
    started = time.perf_counter()
    with out.open("wb") as fh:
        done = subprocess.run(["/usr/bin/time", "-f", f"{MARKER} %e %M %U %S", *command], stdout=fh,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    wall = time.perf_counter() - started
    found = re.findall(rf"^{MARKER} \S+ (\d+) (\S+) (\S+)$", done.stderr, re.M)
    rss = int(found[-1][0]) / 1024 if found else float("nan")
    cpu = float(found[-1][1]) + float(found[-1][2]) if found else float("nan")
    err = "\n".join(line for line in done.stderr.splitlines() if not line.startswith(MARKER))
    return wall, cpu, rss, done.returncode, err[-1500:]


def kubectl() -> str:
    return shutil.which("kubectl") or str(build.build("kubectl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=300)
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--policies", type=int, default=24, help="corpus ValidatingPolicies that select Pods")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (outputs, capture)")
    parser.add_argument("--only", nargs="+", default=[], metavar="WORD",
                        help="only the runs whose label holds one of these words (e.g. capture)")
    args = parser.parse_args()
    kyrec = shutil.which("kubectl-kyrec")
    if kyrec is None:
        sys.exit("live_scale: no kubectl-kyrec on PATH (activate the venv it is installed in)")
    if not CRDS.is_dir():
        sys.exit(f"live_scale: {CRDS} is missing (set KYREC_SHARED)")
    e2e = _bench_module("e2e")
    e2e.CORPUS = CRDS.parent.parent / "corpus" / "kyverno-policies"
    apply_writes = _bench_module("apply_writes")
    work = Path(tempfile.mkdtemp(prefix="kyrec-bench-live-scale-"))
    policies = work / "policies"
    policies.mkdir()
    (policies / "generating.yaml").write_text(apply_writes.POLICY.replace("-LEVEL", ""))
    for n, path in enumerate(e2e.pod_policy_files(args.policies)):
        shutil.copy(path, policies / f"v{n:02d}-{path.name}")
    print(f"policies: 1 GeneratingPolicy + {len(list(policies.iterdir())) - 1} corpus ValidatingPolicies "
          f"that select Pods", flush=True)
    server = RealServer(build.build("server"), work)
    server.start(CRDS)
    try:
        raw = Raw(server.kubeconfig, 16)
        namespaces = [f"team-{i:05d}" for i in range(args.namespaces)]
        started = time.perf_counter()
        failed = raw.create_all([("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": ns}}) for ns in namespaces])
        objects = cluster_objects(namespaces, args.objects)
        failed += raw.create_all(objects)
        kinds = Counter(obj["kind"] for _, obj in objects)
        print(f"real API server ready in {server.start_seconds:.1f} s; created {args.namespaces} Namespaces and "
              f"{len(objects)} objects ({', '.join(f'{v} {k}s' for k, v in sorted(kinds.items()))}) in "
              f"{time.perf_counter() - started:.1f} s, {failed} failed (not counted)", flush=True)
        env = {"KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(work / "cache"),
               "HOME": str(work / "home"), "KUBECACHEDIR": str(work / "home" / "cache")}
        p = ["-p", str(policies)]
        state = work / "state.json"
        kinds_arg = "namespaces,pods,deployments,configmaps"
        runs: list[tuple[str, list[str]]] = [
            ("kubectl get -A -o json, the 4 kinds (floor)", [kubectl(), "get", kinds_arg, "-A", "-o", "json"]),
            ("kyrec diff -o json", [kyrec, "diff", *p, "-o", "json", *NOW]),
            ("kyrec diff --reports -o json", [kyrec, "diff", *p, "--reports", "-o", "json", *NOW]),
            ("kyrec capture", [kyrec, "capture", *p, "-o", str(state)]),
            ("kyrec coverage -o json", [kyrec, "coverage", *p, "-o", "json", *NOW]),
            ("kyrec apply --yes -o json", [kyrec, "apply", *p, "--yes", "-o", "json", *NOW]),
            ("kyrec apply --yes again (nothing to do)", [kyrec, "apply", *p, "--yes", "-o", "json", *NOW]),
        ]
        print(f"{'run':<46}{'wall s':>8}{'CPU s':>8}{'RSS MiB':>9}{'LIST pages':>11}{'out MB':>8}{'load':>6}   exit",
              flush=True)
        for n, (label, command) in enumerate(runs):
            if args.only and not any(word in label for word in args.only):
                continue
            before = raw.list_requests()
            out = work / f"out-{n}.txt"
            wall, cpu, rss, code, err = timed(command, env, out)
            after = raw.list_requests()
            size = (state if "capture" in label else out).stat().st_size / 1e6
            others = {k: after[k] - before[k] for k in after if k != "LIST" and after[k] - before[k]}
            print(f"{label:<46}{wall:>8.2f}{cpu:>8.2f}{rss:>9.0f}{after['LIST'] - before['LIST']:>11}{size:>8.1f}"
                  f"{load():>6}   {code}   other requests: {others}", flush=True)
            if code not in (0, 1):
                sys.stderr.write(err + "\n")
            if "apply" in label and out.stat().st_size and out.read_bytes().lstrip().startswith(b"{"):
                print(f"  summary: {json.loads(out.read_bytes()).get('summary')}", flush=True)
    finally:
        server.stop()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
