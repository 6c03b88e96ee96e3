"""CPU per write: kyrec's writer beside the minimal client, one request at a time, in this process.

    KYREC_SHARED=/work/shared python bench/apply_write_cpu.py [--objects 1000] [--kubeconfig FILE] [--top 25]

bench/apply_writes.py compares wall times, which on a machine shared with other jobs (and with the API server
itself, on 2 cores) say little about what kyrec adds per write. This script measures the client's own CPU:
N server-side-apply creates of ConfigMaps carrying the labels kyrec's generate downstreams carry, sent
sequentially from the main thread, first through kyrec's writer (cluster/writer.py `_one`: the request
kyrec's `apply` makes for one planned change, with its client's retry rules, headers and outcome), then
through bench/apply_writes.py's raw client (urllib3, one pool, the same bodies). Each is timed by the
process's CPU clock (time.process_time: the server's work and the waiting are not counted), then run again
under cProfile for the number of Python function calls per write, which the load does not move, and where
kyrec's calls go.

The real API server is started here (tests/realapi), or, with --kubeconfig, an already running one
(tests/realapi/serve.sh --kubeconfig FILE) is used; the objects go into a Namespace of their own.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from apply_writes import RawClient, kyverno_labels, realapi  # noqa: E402 - after the path is set


def _kyrec_sender(kubeconfig: Path, namespace: str) -> Callable[[str], bool]:
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.discovery import discover
    from kubectl_kyrec.cluster.writer import DryRun, Status, _one
    from kubectl_kyrec.model import Ref
    from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange

    client = connect(ConnectionOptions(kubeconfig=str(kubeconfig), context="admin"))
    found = discover(client, cache_dir=None)
    plan = Plan(())
    labels = kyverno_labels("team-settings", namespace, "00000000-0000-0000-0000-000000000000")

    def send(name: str) -> bool:
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": {"team": namespace}}
        ref = Ref("v1", "ConfigMap", namespace, name, "")
        change = PlannedChange(Action.CREATE, "downstream", "missing", None, ref, body=body, message="create")
        return _one(client, plan, change, found.find, DryRun.NONE).status is Status.DONE

    return send


def _raw_sender(kubeconfig: Path, namespace: str) -> Callable[[str], bool]:
    client = RawClient(kubeconfig, 1)
    labels = kyverno_labels("team-settings", namespace, "00000000-0000-0000-0000-000000000000")
    return lambda name: client.apply(namespace, name, labels) in (200, 201)


def measure(send: Callable[[str], bool], prefix: str, count: int, top: int) -> tuple[float, int, float, str]:
    """(CPU seconds per write unprofiled, function calls per write, profiled CPU per write, top functions)."""
    send(f"{prefix}-warm")      # connections, lazy imports
    started = time.process_time()
    ok = sum(send(f"{prefix}-{i:05d}") for i in range(count))
    cpu = time.process_time() - started
    assert ok == count, f"{prefix}: {count - ok} writes failed"
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    for i in range(count):
        send(f"{prefix}-p{i:05d}")
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return cpu / count, stats.total_calls // count, stats.total_tt / count, out.getvalue()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--kubeconfig", type=Path, help="a running realapi server's")
    parser.add_argument("--top", type=int, default=25, help="kyrec's functions shown, by own time")
    args = parser.parse_args()
    with realapi(args.kubeconfig, "kyrec-bench-wcpu-") as kubeconfig:
        from tests.realapi.fixture import Kube

        namespace = f"wcpu-{os.getpid()}"
        Kube(kubeconfig).apply("/api/v1/namespaces/" + namespace,
                               {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                               "bench", force=True)
        print(f"{args.objects} sequential creates per client; load average {os.getloadavg()[0]:.1f}")
        rows = []
        for label, sender in (("kyrec writer (_one)", _kyrec_sender(kubeconfig, namespace)),
                              ("raw client (urllib3)", _raw_sender(kubeconfig, namespace))):
            cpu, calls, profiled, listing = measure(sender, label.split()[0], args.objects, args.top)
            rows.append((label, cpu, calls, profiled))
            if label.startswith("kyrec"):
                kyrec_listing = listing
        print(f"{'client':<24}{'CPU ms/write':>14}{'calls/write':>13}{'profiled ms':>13}")
        for label, cpu, calls, profiled in rows:
            print(f"{label:<24}{cpu * 1e3:>14.3f}{calls:>13}{profiled * 1e3:>13.3f}")
        print(f"kyrec / raw CPU per write: {rows[0][1] / rows[1][1]:.2f}x; load average {os.getloadavg()[0]:.1f}")
        print("\nkyrec's writer, by own time:")
        print(kyrec_listing)


if __name__ == "__main__":
    main()
