"""kyrec's writer (cluster/writer.py `execute`) beside the minimal client at the same concurrency, in this process.

    KYREC_SHARED=/work/shared python bench/apply_write_par.py [--objects 3000] [--concurrency 8] [--rounds 3]
        [--kubeconfig FILE]

bench/apply_write_cpu.py compares the two clients one request at a time; `apply --yes` sends them from
`--concurrency` worker threads, where the dispatching, the answers' queue and the GIL shared by the threads
count too. This script plans N server-side-apply creates of ConfigMaps with the labels kyrec's generate
downstreams carry and sends them through `execute` (what `apply` runs once the plan is made: tiers, workers,
outcomes in the plan's order), then the same bodies through bench/apply_writes.py's raw client from a
ThreadPoolExecutor of the same size; alternated `--rounds` times. Printed per run: wall seconds, this
process's CPU seconds over the writes alone (start-up, reading and planning are not in either), and the
ratios. The server shares the machine's cores with both clients, so the client's CPU slows the server:
compare CPU first, wall within one round.

The real API server is started here (tests/realapi), or, with --kubeconfig, an already running one
(tests/realapi/serve.sh --kubeconfig FILE); every run writes into a Namespace of its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from apply_writes import RawClient, kyverno_labels, realapi  # noqa: E402 - after the path is set


def _namespace(kube: object, name: str) -> None:
    kube.apply("/api/v1/namespaces/" + name,  # type: ignore[attr-defined]
               {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "bench", force=True)


def kyrec_run(kubeconfig: Path, namespace: str, count: int, concurrency: int) -> tuple[float, float, int]:
    """(wall, CPU, failed) of `execute` over N creates planned as `apply` plans them."""
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.discovery import discover
    from kubectl_kyrec.cluster.writer import DryRun, Status, execute
    from kubectl_kyrec.model import Ref
    from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange

    client = connect(ConnectionOptions(kubeconfig=str(kubeconfig), context="admin"))
    found = discover(client, cache_dir=None)
    labels = kyverno_labels("team-settings", namespace, "00000000-0000-0000-0000-000000000000")
    changes = []
    for i in range(count):
        name = f"kyrec-{i:05d}"
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": {"team": namespace}}
        changes.append(PlannedChange(Action.CREATE, "downstream", "missing", None,
                                     Ref("v1", "ConfigMap", namespace, name, ""), body=body, message="create"))
    plan = Plan(tuple(changes))
    # one request first: the connection and the lazy imports, as the raw client's pool is warm too
    execute(client, Plan((PlannedChange(Action.CREATE, "downstream", "missing", None,
                                        Ref("v1", "ConfigMap", namespace, "kyrec-warm", ""),
                                        body={"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": "kyrec-warm", "namespace": namespace}},
                                        message="create"),)), resolve_kind=found.find)
    started, cpu = time.perf_counter(), time.process_time()
    outcomes = execute(client, plan, resolve_kind=found.find, dry_run=DryRun.NONE, concurrency=concurrency)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return wall, cpu, sum(1 for o in outcomes if o.status is not Status.DONE)


def raw_run(kubeconfig: Path, namespace: str, count: int, concurrency: int) -> tuple[float, float, int]:
    client = RawClient(kubeconfig, concurrency)
    labels = kyverno_labels("team-settings", namespace, "00000000-0000-0000-0000-000000000000")
    client.apply(namespace, "raw-warm", labels)
    failed = 0
    lock = threading.Lock()

    def one(i: int) -> None:
        nonlocal failed
        if client.apply(namespace, f"raw-{i:05d}", labels) not in (200, 201):
            with lock:
                failed += 1

    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(count)))
    return time.perf_counter() - started, time.process_time() - cpu, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kubeconfig", type=Path, help="a running realapi server's")
    args = parser.parse_args()
    with realapi(args.kubeconfig, "kyrec-bench-wpar-") as kubeconfig:
        from tests.realapi.fixture import Kube

        kube = Kube(kubeconfig)
        print(f"{args.objects} creates, {args.concurrency} in flight; load average {os.getloadavg()[0]:.1f}")
        print(f"{'round':<7}{'kyrec wall':>11}{'CPU':>7}{'raw wall':>10}{'CPU':>7}{'wall ratio':>12}{'CPU ratio':>11}")
        totals = [0.0, 0.0, 0.0, 0.0]
        for round_ in range(args.rounds):
            tag = f"{os.getpid()}-{round_}"
            _namespace(kube, f"wpar-k-{tag}")
            _namespace(kube, f"wpar-r-{tag}")
            kw, kc, kf = kyrec_run(kubeconfig, f"wpar-k-{tag}", args.objects, args.concurrency)
            rw, rc, rf = raw_run(kubeconfig, f"wpar-r-{tag}", args.objects, args.concurrency)
            assert kf == 0 and rf == 0, f"failed writes: kyrec {kf}, raw {rf}"
            for i, v in enumerate((kw, kc, rw, rc)):
                totals[i] += v
            print(f"{round_:<7}{kw:>11.2f}{kc:>7.2f}{rw:>10.2f}{rc:>7.2f}{kw / rw:>11.2f}x{kc / rc:>10.2f}x",
                  flush=True)
        kw, kc, rw, rc = totals
        print(f"{'all':<7}{kw:>11.2f}{kc:>7.2f}{rw:>10.2f}{rc:>7.2f}{kw / rw:>11.2f}x{kc / rc:>10.2f}x; "
              f"CPU ms per write: kyrec {kc * 1e3 / (args.objects * args.rounds):.3f}, raw "
              f"{rc * 1e3 / (args.objects * args.rounds):.3f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
