"""Why `apply --yes` of N creates is slower than N raw server-side-apply requests: one factor at a time.

    KYREC_SHARED=/work/shared python bench/apply_probe.py [--objects 3000] [--concurrency 8] [--rounds 2]

bench/apply_writes.py compares the installed command's wall time with a minimal client's; this script splits
kyrec's time and varies what the minimal client sends, on one real API server (tests/realapi):

- kyrec runs as the installed command would (`kubectl_kyrec.cli.console.main`, a subprocess), with the
  transport's `send` wrapped to log each request (monotonic start and end, method, URL, headers without the
  credentials, the body): the log gives the time to the first write (start-up, reads, evaluation,
  planning), the writing phase (first write sent to last answered) and the requests by kind.
- The minimal client (bench/apply_writes.py's RawClient) replays the writes: kyrec's exact bodies, query and
  headers, into namespaces of its own (seeded alike, so that every request is a create), and variants that
  change one factor: the bare body of apply_writes.py, kyrec's body without its labels, without the query's
  force/fieldManager, with kyrec's headers or apply_writes.py's.
- The API server's own time per request from its /metrics (apiserver_request_duration_seconds, the PATCH
  requests on configmaps: the sum and count before and after each run), so that server time and client time
  are told apart: `server ms/req` is the server's mean, `wall/req` the client's wall time per request times
  the concurrency.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from apply_writes import NOW, POLICY, RawClient  # noqa: E402 - after the path is set

from tests.realapi import build  # noqa: E402
from tests.realapi.fixture import CRDS, RealServer  # noqa: E402

# run in the kyrec subprocess: the console script, with every request logged (one JSON line each, written at
# once: the command ends with os._exit)
LOGGED = r"""
import json, sys, time
from kubectl_kyrec.cluster import client
log = open(sys.argv.pop(1), "w", buffering=1)
send = client._KubernetesTransport.send
def logged(self, method, url, headers, body, timeout):
    started = time.monotonic()
    response = send(self, method, url, headers, body, timeout)
    clean = {k: v for k, v in dict(headers).items() if k.lower() != "authorization"}
    log.write(json.dumps({"t0": started, "t1": time.monotonic(), "cpu": time.process_time(), "method": method,
                          "url": url, "headers": clean, "body": body if method != "GET" else None,
                          "status": response.status}) + "\n")
    return response
client._KubernetesTransport.send = logged
log.write(json.dumps({"start": time.monotonic()}) + "\n")
from kubectl_kyrec.cli.console import main
sys.argv[0] = "kubectl-kyrec"
main()
"""


def server_seconds(server: RealServer, verb: str = "APPLY", resource: str = "configmaps") -> tuple[float, int]:
    """The API server's summed request seconds and request count for `verb` on `resource` so far."""
    text = server.kube.request("GET", "/metrics").raw.decode()
    total, count = 0.0, 0
    for line in text.splitlines():
        if not line.startswith("apiserver_request_duration_seconds_"):
            continue
        if f'verb="{verb}"' not in line or f'resource="{resource}"' not in line:
            continue
        value = float(line.rsplit(" ", 1)[1])
        if line.startswith("apiserver_request_duration_seconds_sum"):
            total += value
        elif line.startswith("apiserver_request_duration_seconds_count"):
            count += int(value)
    return total, count


def server_cpu(server: RealServer) -> float:
    """CPU seconds the API server process (etcd is in it) has used: robust to a loaded machine, where its
    request durations are not."""
    fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kyrec_run(server: RealServer, work: Path, tag: str, objects: int, concurrency: int) -> dict[str, Any]:
    namespaces = [f"team-{tag}-{i:05d}" for i in range(objects)]
    server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces))
    policy = work / f"policy-{tag}.yaml"
    policy.write_text(POLICY.replace("LEVEL", tag))
    log = work / f"log-{tag}.jsonl"
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(work / "cache")}
    before, cpu = server_seconds(server), server_cpu(server)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", LOGGED, str(log), "apply", "-p", str(policy), "--yes", "-o", "json",
                           *NOW, "--concurrency", str(concurrency)], capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    after, cpu = server_seconds(server), server_cpu(server) - cpu
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-2000:])
    records = [json.loads(line) for line in log.read_text().splitlines()]
    start = records[0]["start"]
    requests = records[1:]
    writes = [r for r in requests if r["method"] != "GET"]
    reads = [r for r in requests if r["method"] == "GET"]
    first = min(r["t0"] for r in writes) if writes else start
    last = max(r["t1"] for r in writes) if writes else start
    write_cpu = max(r["cpu"] for r in writes) - min(r["cpu"] for r in writes) if writes else 0.0
    ordered = sorted(reads, key=lambda r: r["t0"])
    slowest = sorted(reads, key=lambda r: r["t0"] - r["t1"])[:5]
    phases = (f"first request at {ordered[0]['t0'] - start:.2f} s, reads until {ordered[-1]['t1'] - start:.2f} s, "
              f"then {first - ordered[-1]['t1']:.2f} s to the first write; slowest reads "
              + ", ".join(f"{re.sub(r'https?://[^/]+', '', r['url'])[:60]} {r['t1'] - r['t0']:.2f}" for r in slowest)
              if reads else "")
    return {"wall": wall, "to_first_write": first - start, "phases": phases, "writing": last - first, "writes": writes,
            "reads": len(reads), "read_seconds": sum(r["t1"] - r["t0"] for r in reads),
            "server": (after[0] - before[0], after[1] - before[1]), "exit": done.returncode,
            "server_cpu": cpu, "write_cpu": write_cpu,
            "namespaces": namespaces}


def replay(server: RealServer, work: Path, writes: list[dict[str, Any]], old_tag: str, tag: str, concurrency: int,
           variant: str) -> dict[str, Any]:
    """kyrec's writes sent again by the minimal client, into namespaces of their own, changed by `variant`."""
    objects = len(writes)
    namespaces = [f"team-{tag}-{i:05d}" for i in range(objects)]
    server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces))
    raw = RawClient(server.kubeconfig, concurrency)
    token = raw.headers.get("Authorization")
    prepared = []
    for write in writes:
        url = write["url"].replace(f"team-{old_tag}-", f"team-{tag}-")
        body = json.loads(json.dumps(write["body"]).replace(f"team-{old_tag}-", f"team-{tag}-"))
        headers = dict(write["headers"])
        if variant == "bare":
            ns = body["metadata"]["namespace"]
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": body["metadata"]["name"],
                    "namespace": ns}, "data": body.get("data")}
        elif variant == "no-labels":
            body["metadata"].pop("labels", None)
        elif variant == "raw-query":
            url = re.sub(r"\?.*", "?fieldManager=bench-raw&force=true", url)
        elif variant == "raw-headers":
            headers = {k: v for k, v in raw.headers.items() if k != "Authorization"}
        if token:
            headers["Authorization"] = token
        prepared.append((url, json.dumps(body).encode(), headers))
    failed = 0
    lock = threading.Lock()

    def one(item: tuple[str, bytes, dict[str, str]]) -> None:
        nonlocal failed
        url, body, headers = item
        status = raw.pool.request("PATCH", url, body=body, headers=headers).status
        if status not in (200, 201):
            with lock:
                failed += 1

    before, cpu = server_seconds(server), server_cpu(server)
    process = time.process_time()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, prepared))
    wall = time.monotonic() - started
    after, cpu = server_seconds(server), server_cpu(server) - cpu
    return {"wall": wall, "server": (after[0] - before[0], after[1] - before[1]), "failed": failed,
            "server_cpu": cpu, "client_cpu": time.process_time() - process}


def line(label: str, wall: float, server: tuple[float, int], server_cpu: float, extra: str = "") -> None:
    seconds, count = server
    mean = seconds / count * 1000 if count else float("nan")
    print(f"{label:<40}{wall:>8.2f}{count:>7}{mean:>10.2f}{server_cpu:>11.2f}   {extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", nargs="*", default=["exact", "bare", "no-labels", "raw-query", "raw-headers"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kyrec-bench-probe-"))
    server = RealServer(build.build("server"), work)
    server.start(CRDS)
    try:
        print(f"real API server ready in {server.start_seconds:.1f} s; {args.objects} creates, "
              f"{args.concurrency} in flight")
        print(f"{'run':<40}{'wall s':>8}{'PATCH':>7}{'server ms':>10}{'server CPU':>11}")
        for n in range(args.rounds):
            tag = f"k{n}"
            k = kyrec_run(server, work, tag, args.objects, args.concurrency)
            line(f"kyrec apply (round {n})", k["wall"], k["server"], k["server_cpu"],
                 f"exit {k['exit']}; to first write {k['to_first_write']:.2f} s, writing {k['writing']:.2f} s "
                 f"(kyrec CPU {k['write_cpu']:.2f} s), {k['reads']} reads ({k['read_seconds']:.2f} s summed)")
            print(f"  {k['phases']}")
            if n == 0 and k["writes"]:
                first = k["writes"][0]
                print(f"  kyrec's write: {first['method']} {first['url']}\n  headers {first['headers']}\n"
                      f"  body {json.dumps(first['body'])}", flush=True)
            for variant in args.variants:
                r = replay(server, work, k["writes"], tag, f"{variant[:5]}{n}", args.concurrency, variant)
                line(f"  minimal client, {variant}", r["wall"], r["server"], r["server_cpu"],
                     f"{r['failed']} failed, client CPU {r['client_cpu']:.2f} s")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
