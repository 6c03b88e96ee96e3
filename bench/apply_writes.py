"""`apply --yes` creating N downstream objects on the real API server (tests/realapi), beside a minimal client
sending the same number of raw server-side-apply PATCH requests at the same concurrency.

    KYREC_SHARED=/work/shared python bench/apply_writes.py [--objects 3000] [--concurrency 1 8] [--no-raw]

The server is the realapi program (tests/realapi/build.py builds it once, cached; it reads Kyverno's CRDs
from ../shared or KYREC_SHARED) started on loopback as tests/realapi starts it. N Namespaces `team-NNNNN`
are seeded per concurrency level; a GeneratingPolicy (bench/live.py's) wants one ConfigMap in each, so
`apply` plans N creates.
Each apply is the INSTALLED `kubectl-kyrec` (the one on PATH, e.g. the venv's) run as a subprocess under
/usr/bin/time (wall time, peak RSS); `--concurrency` is passed only when the installed command has it.
After the N creates, the same apply again (nothing to do) is timed too, and must write nothing.

The floor: a minimal client (urllib3, one keep-alive pool, the kubeconfig's token and CA; no kubeconfig plugin
machinery, no planning, no output) sending N server-side-apply PATCHes of the same ConfigMaps (another name, so that
they are creates too) from C threads into the same namespaces, before or after kyrec's run (the order alternates by
round, so that neither side always meets the server warmer; each side's objects are deleted, uncounted, before the
other side runs and before the next round, and each round's Namespaces after it, so that every run meets a server
holding the same objects; one round is kyrec first; both clients warm the fresh server up first, uncounted): `raw
... bare` with the bare ConfigMap, `raw ... kyverno labels` with the body kyrec sends (the eight labels Kyverno's
generate puts on a downstream, the trigger's uid among them; bench/apply_probe.py captures kyrec's requests and
shows the server spends 30-45 % more CPU per request on them). It runs in this process: its CPU column is this
process's CPU clock over the requests alone (no start-up, no imports); bench/apply_write_cpu.py compares the CPU per
write of the two clients request for request. `--rounds N` runs both N times, kyrec first in even rounds and the raw
client first in odd ones (a loaded machine makes one run say little; use an even N for a fair comparison;
the medians over the rounds are printed at the end).

kyrec's package is byte-compiled first (`compileall`, as a wheel install does) and the subprocess runs
without PYTHONDONTWRITEBYTECODE: an editable install under that variable compiles ~180 modules from source
on every start.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402 - after the path is set

from tests.realapi import build  # noqa: E402
from tests.realapi.fixture import CRDS, RealServer  # noqa: E402


@contextlib.contextmanager
def realapi(kubeconfig: Path | None, prefix: str) -> Iterator[Path]:
    """The kubeconfig of `kubeconfig`'s running server (tests/realapi/serve.sh), or else of a real API server
    started here on loopback for the block and stopped after it (its work directory removed)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    server = None
    try:
        if kubeconfig is None:
            server = RealServer(build.build("server"), work)
            server.start(CRDS)
            kubeconfig = server.kubeconfig
        yield kubeconfig
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


POLICY = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: team-settings-LEVEL
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [namespaces]
  matchConditions:
  - name: teams
    expression: object.metadata.name.startsWith("team-LEVEL-")
  generate:
  - expression: >-
      generator.apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),
      "metadata": dyn({"name": "team-settings"}), "data": dyn({"team": object.metadata.name})}])
"""
NOW = ["--now", "2026-09-01T00:00:00Z"]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int, str, str]:
    """Wall seconds, CPU seconds (user + system: how much of the wall time the client itself worked), peak
    RSS (MiB), exit code, stdout, stderr of `command` under /usr/bin/time."""
    marker = "BENCH-TIME"
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", f"{marker} %e %M %U %S", *command], capture_output=True, text=True,
                          env={**os.environ, **env})
    wall = time.perf_counter() - started
    found = re.findall(rf"^{marker} \S+ (\d+) (\S+) (\S+)$", done.stderr, re.M)
    rss = int(found[-1][0]) / 1024 if found else float("nan")
    cpu = float(found[-1][1]) + float(found[-1][2]) if found else float("nan")
    return wall, cpu, rss, done.returncode, done.stdout, done.stderr


def has_flag(kyrec: str, flag: str) -> bool:
    helped = subprocess.run([kyrec, "apply", "--help"], capture_output=True, text=True)
    return flag in helped.stdout


def admin_pool(kubeconfig: Path, concurrency: int, content_type: str) -> tuple[str, dict[str, str], Any]:
    """(server, headers, urllib3 pool of `concurrency` connections) for the kubeconfig's `admin` context: its
    token and CA, for the raw clients the benchmarks measure kyrec against."""
    import urllib3

    config = yaml.safe_load(kubeconfig.read_text())
    ctx = next(c["context"] for c in config["contexts"] if c["name"] == "admin")
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])
    headers = {"Content-Type": content_type, "Accept": "application/json",
               **({"Authorization": f"Bearer {user['token']}"} if user.get("token") else {})}
    ca = cluster.get("certificate-authority-data")
    pool = urllib3.PoolManager(maxsize=max(concurrency, 1), block=True,
                               ca_cert_data=base64.b64decode(ca).decode() if ca else None)
    return cluster["server"], headers, pool


class RawClient:
    """The floor: server-side-apply PATCHes over one urllib3 pool, nothing else."""

    def __init__(self, kubeconfig: Path, concurrency: int) -> None:
        self.server, self.headers, self.pool = admin_pool(kubeconfig, concurrency, "application/apply-patch+yaml")

    def apply(self, namespace: str, name: str, labels: dict[str, str] | None = None) -> int:
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})},
                           "data": {"team": namespace}})
        url = f"{self.server}/api/v1/namespaces/{namespace}/configmaps/{name}?fieldManager=bench-raw&force=true"
        return int(self.pool.request("PATCH", url, body=body.encode(), headers=self.headers).status)


def kyverno_labels(policy: str, namespace: str, uid: str, manager: str = "kyverno") -> dict[str, str]:
    """The labels kyrec's generate downstream carries (as bench/apply_probe.py captures them); `manager` another
    value of the same length makes them no downstream of anyone's (kyrec's downstream reads select
    managed-by=kyverno), at the same cost to the server."""
    return {"app.kubernetes.io/managed-by": manager, "generate.kyverno.io/policy-name": policy,
            "generate.kyverno.io/trigger-name": namespace, "generate.kyverno.io/trigger-namespace": "",
            "generate.kyverno.io/trigger-uid": uid, "generate.kyverno.io/trigger-kind": "Namespace",
            "generate.kyverno.io/trigger-group": "", "generate.kyverno.io/trigger-version": "v1"}


def raw_run(kubeconfig: Path, namespaces: list[str], concurrency: int, name: str,
            labels: dict[str, dict[str, str]] | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process: the client's own work, failed requests) of N PATCHes."""
    client = RawClient(kubeconfig, concurrency)
    failed = 0
    lock = threading.Lock()

    def one(namespace: str) -> None:
        nonlocal failed
        if client.apply(namespace, name, labels[namespace] if labels else None) not in (200, 201):
            with lock:
                failed += 1

    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, namespaces))
    return time.perf_counter() - started, time.process_time() - cpu, failed


def delete_objects(kubeconfig: Path, namespaces: list[str], names: list[str], concurrency: int) -> float:
    """Delete the ConfigMaps `names` in every namespace (uncounted; seconds taken): the other side then meets the
    server as this side did, without objects it would read (kyrec LISTs every ConfigMap to know what exists)."""
    server, headers, pool = admin_pool(kubeconfig, concurrency, "application/json")

    def one(target: tuple[str, str]) -> int:
        namespace, name = target
        url = f"{server}/api/v1/namespaces/{namespace}/configmaps/{name}"
        return int(pool.request("DELETE", url, headers=headers).status)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as workers:
        answers = list(workers.map(one, [(ns, name) for ns in namespaces for name in names]))
    if any(status != 200 for status in answers):
        sys.exit(f"apply_writes: {sum(s != 200 for s in answers)} of {len(answers)} deletes failed")
    return time.perf_counter() - started


def delete_namespaces(kubeconfig: Path, namespaces: list[str], concurrency: int) -> float:
    """Delete `namespaces` (uncounted; seconds taken), each then finalized at once: the test server runs no
    namespace controller, so a deleted Namespace would stay, Terminating, and kyrec reads every Namespace
    (round N would meet N rounds' worth of them, and evaluate them all)."""
    server, headers, pool = admin_pool(kubeconfig, concurrency, "application/json")

    def one(namespace: str) -> int:
        url = f"{server}/api/v1/namespaces/{namespace}"
        deleted = int(pool.request("DELETE", url, headers=headers).status)
        if deleted not in (200, 202):
            return deleted
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace},
                           "spec": {"finalizers": []}}).encode()
        return int(pool.request("PUT", f"{url}/finalize", body=body, headers=headers).status)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as workers:
        answers = list(workers.map(one, namespaces))
    if any(status != 200 for status in answers):
        sys.exit(f"apply_writes: {sum(s != 200 for s in answers)} of {len(answers)} namespace deletes failed")
    left = [item["metadata"]["name"] for item in json.loads(pool.request(
        "GET", f"{server}/api/v1/namespaces", headers=headers).data)["items"]]
    if set(left) & set(namespaces):
        sys.exit(f"apply_writes: {len(set(left) & set(namespaces))} namespaces still there after their delete")
    return time.perf_counter() - started


def run_kyrec(command: list[str], env: dict[str, str], level: int, again: bool) -> float:
    """Run kyrec's apply (and, when `again`, the same apply once more, which must write nothing), print its
    lines; its wall seconds."""
    wall, cpu, rss, code, out, err = timed(command, env)
    doc: dict[str, Any] = json.loads(out) if out.strip().startswith("{") else {}
    summary = doc.get("summary", {})
    label = f"kyrec apply --concurrency {level} ({summary.get('done', 0)} creates)"
    print(f"{label:<44}{wall:>8.2f}{cpu:>7.2f}{rss:>9.0f}{summary.get('done', 0) / wall:>10.0f}"
          f"   exit {code} {summary}", flush=True)
    if code != 0:
        sys.stderr.write(err[-2000:])
    if again:
        wall_again, cpu, rss, code, out, err = timed(command, env)
        planned = json.loads(out).get("summary", {}) if out.strip().startswith("{") else {}
        print(f"{'  the same apply again (nothing to do)':<44}{wall_again:>8.2f}{cpu:>7.2f}{rss:>9.0f}"
              f"{'':>10}   exit {code} "
              f"writes planned: {sum(v for k, v in planned.items() if k != 'failedReads')}")
    return wall


def run_raw(kubeconfig: Path, namespaces: list[str], level: int, labels: dict[str, dict[str, str]]) -> list[float]:
    """The floor at `level` in flight into the same namespaces (a name of its own: every request a create), bare
    and with kyrec's labels; their wall seconds."""
    walls = []
    for what, with_labels in (("bare", None), ("kyverno labels", labels)):
        seconds, cpu, failed = raw_run(kubeconfig, namespaces, level, f"raw-{what[:4]}", with_labels)
        print(f"{f'raw SSA PATCH x{len(namespaces)}, {level} in flight, {what}':<44}{seconds:>8.2f}"
              f"{cpu:>7.2f}{'':>9}{len(namespaces) / seconds:>10.0f}   {failed} failed", flush=True)
        walls.append(seconds)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=1,
                        help="kyrec and the raw client, this many times, in alternating order")
    parser.add_argument("--no-raw", action="store_true", help="skip the minimal client's runs")
    args = parser.parse_args()
    kyrec = shutil.which("kubectl-kyrec")
    if kyrec is None:
        sys.exit("apply_writes: no kubectl-kyrec on PATH (activate the venv it is installed in)")
    if not CRDS.is_dir():
        sys.exit(f"apply_writes: {CRDS} is missing (set KYREC_SHARED)")
    with_flag = has_flag(kyrec, "--concurrency")
    levels = args.concurrency if with_flag else [1]
    # the installed command's own interpreter (its script's #! line) byte-compiles the package it imports
    interpreter = Path(kyrec).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()
    subprocess.run([interpreter, "-c", "import compileall, os, kubectl_kyrec; "
                    "compileall.compile_dir(os.path.dirname(kubectl_kyrec.__file__), quiet=1)"],
                   check=False, cwd="/", env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    work = Path(tempfile.mkdtemp(prefix="kyrec-bench-apply-"))
    server = RealServer(build.build("server"), work)
    server.start(CRDS)
    try:
        print(f"real API server ready in {server.start_seconds:.1f} s; kyrec: {kyrec}"
              f"{'' if with_flag else ' (no --concurrency: sequential)'}")
        # a fresh server answers its first requests slowly (seconds for the first 60 writes): warmed here by
        # both clients, not counted, so that round 0's first side does not pay it alone
        warm = [f"bench-warmup-{i:03d}" for i in range(100)]
        server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in warm))
        (work / "policy-warmup.yaml").write_text(POLICY.replace("LEVEL", "warmup"))
        timed([kyrec, "apply", "-p", str(work / "policy-warmup.yaml"), "--dry-run=client", *NOW],
              {"KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(work / "cache")})
        seconds, _, _ = raw_run(server.kubeconfig, warm, max(levels), "raw-warm")
        print(f"warm-up (not counted): kyrec apply --dry-run=client, {len(warm)} raw writes in {seconds:.2f} s")
        print(f"{'run':<44}{'wall s':>8}{'CPU s':>7}{'RSS MiB':>9}{'writes/s':>10}   result")
        # level -> the walls of each round: kyrec, raw bare, raw with kyverno labels
        walls: dict[int, list[tuple[float, ...]]] = {level: [] for level in levels}
        for round_ in range(args.rounds):
            for level in levels:
                # a fresh set of triggers per level and round, so that every run is N creates
                tag = f"c{level}r{round_}"
                namespaces = [f"team-{tag}-{i:05d}" for i in range(args.objects)]
                started = time.perf_counter()
                server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                              for ns in namespaces))
                seeded = time.perf_counter() - started
                # a policy of its own per level and round (its name and its namespaces): the earlier runs'
                # objects are another policy's, outside this run
                policy = work / f"policy-{tag}.yaml"
                policy.write_text(POLICY.replace("LEVEL", tag))
                flag = ["--concurrency", str(level)] if with_flag else []
                env = {"KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(work / "cache"),
                       "PYTHONDONTWRITEBYTECODE": ""}
                command = [kyrec, "apply", "-p", str(policy), "--yes", "-o", "json", *NOW, *flag]
                uids = {item["metadata"]["name"]: item["metadata"]["uid"]
                        for item in server.kube.get("/api/v1/namespaces")["items"]}
                # labels kyrec does not take for its policy's downstreams: when the raw client runs first, its
                # objects must not change what kyrec plans (as Kyverno's own labels would: 60 refused of 60)
                labels = {ns: kyverno_labels(f"team-settings-{tag}", ns, uids[ns], manager="kyvernx")
                          for ns in namespaces}
                raw_first = not args.no_raw and round_ % 2 == 1
                print(f"  (seeding {len(namespaces)} namespaces took {seeded:.1f} s, not counted; "
                      f"{'the raw client first' if raw_first else 'kyrec first'} this round)")
                raw_walls: list[float] = []
                # each side's objects are deleted before the other side runs, so that both meet a server holding
                # the same objects (kyrec reads every ConfigMap: 6,000 more of them cost it 0.8 s of CPU)
                raw_names, kyrec_names = ["raw-bare", "raw-kyve"], ["team-settings"]
                if raw_first:
                    raw_walls = run_raw(server.kubeconfig, namespaces, level, labels)
                    gone = delete_objects(server.kubeconfig, namespaces, raw_names, max(levels))
                    print(f"  (the raw client's objects deleted in {gone:.1f} s, not counted)")
                kyrec_wall = run_kyrec(command, env, level, again=round_ == 0)
                gone = delete_objects(server.kubeconfig, namespaces, kyrec_names, max(levels))
                print(f"  (kyrec's objects deleted in {gone:.1f} s, not counted)")
                if not args.no_raw and not raw_first:
                    raw_walls = run_raw(server.kubeconfig, namespaces, level, labels)
                    gone = delete_objects(server.kubeconfig, namespaces, raw_names, max(levels))
                    print(f"  (the raw client's objects deleted in {gone:.1f} s, not counted)")
                for what, seconds in zip(("bare", "kyverno labels"), raw_walls, strict=False):
                    print(f"  kyrec / raw, {what}: {kyrec_wall / seconds:.2f}x", flush=True)
                walls[level].append((kyrec_wall, *raw_walls))
                # every round meets the same cluster: the warm-up Namespaces and this round's N, no more
                gone = delete_namespaces(server.kubeconfig, namespaces, max(levels))
                print(f"  (this round's {len(namespaces)} namespaces deleted in {gone:.1f} s, not counted)")
        if args.rounds > 1 and not args.no_raw:
            # one round says little on a shared machine: the medians, and the median of each round's ratio
            for level, rows in walls.items():
                kyrec_walls, bare, labelled = zip(*rows, strict=True)
                print(f"median of {len(rows)} rounds at {level} in flight: kyrec "
                      f"{statistics.median(kyrec_walls):.2f} s, raw bare {statistics.median(bare):.2f} s, "
                      f"raw with kyverno labels "
                      f"{statistics.median(labelled):.2f} s; kyrec / raw per round, median: bare "
                      f"{statistics.median(k / b for k, b, _ in rows):.2f}x, kyverno labels "
                      f"{statistics.median(k / labels for k, _, labels in rows):.2f}x")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
