"""Benchmark: `coverage --producer kubescape` over 5,000 running Pods with summaries and manifests.

Generates, in a child process, a state as the LIST pages a live run reads (no per-object GET): Deployments,
ReplicaSets and 5,000 Pods (two containers each, three replicas per Deployment) across 40 namespaces; for
each (workload, container) the two reads of its VulnerabilityManifestSummary (plain LIST: metadata rows;
`resourceVersion=fullSpec` LIST: payloads) and its two VulnerabilityManifests' metadata (all, relevant).
Planted: about 3% missing, 8% stale (image changed or not rescanned), 5% split, 2% orphan summaries, and
references that point at the workload namespace for a tenth (unpaired). Then it measures, in one process:

- load: reading the state file through the state loader, as `--state` does,
- coverage: subjects, claims, classification, exclusions and totals (`run_vulnerability_coverage`),
- peak memory: `ru_maxrss` of this process at the end (generation runs in a child process).

Usage: python bench/kubescape.py [--pods N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "testdata" / "kubescape"))

import build  # noqa: E402, I001  (order depends on whether a build/ directory exists; the golden states' builder: one way to write a summary)

from kubectl_kyrec.load.gc_pause import gc_paused  # noqa: E402
from kubectl_kyrec.render.text_table import write_rows  # noqa: E402
from kubectl_kyrec.run.coverage import VulnerabilityRunOptions, run_vulnerability_coverage  # noqa: E402
from kubectl_kyrec.load.run_inputs.sources import FileSource  # noqa: E402

NOW = build.NOW
REPLICAS = 3
CONTAINERS = ("app", "proxy")


def generate_state(pods: int, path: Path, seed: int = 11) -> dict[str, int]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    planted = {"missing": 0, "stale": 0, "split": 0, "unpaired": 0, "orphan": 0}
    workloads = (pods + REPLICAS - 1) // REPLICAS
    made = 0
    for w in range(workloads):
        ns, name = f"team-{w % 40:02d}", f"svc-{w:05d}"
        replicas = min(REPLICAS, pods - made)
        made += replicas
        images = {c: build.image_id(f"reg.example/{name}-{c}", f"{w}-{c}") for c in CONTAINERS}
        items += build.deployment(ns, name, images, replicas=replicas)
        for c in CONTAINERS:
            roll = rng.random()
            if roll < 0.03:
                planted["missing"] += 1
                continue
            image, written = images[c], build.days_ago(0.3)
            if roll < 0.07:
                planted["stale"] += 1
                image = build.image_id(f"reg.example/{name}-{c}", "old")
            elif roll < 0.11:
                planted["stale"] += 1
                written = build.days_ago(9)
            split = rng.random() < 0.05
            unpaired = rng.random() < 0.1
            planted["split"] += split
            planted["unpaired"] += unpaired
            copies = build.summary(ns, "deployment", name, c, image, written=written, rv=str(10 + w),
                                   payload_rv=str(11 + w) if split else None)
            items += copies + build.manifests_for(copies, build.SCANNER if unpaired else None)
    for k in range(pods // 50):
        planted["orphan"] += 1
        copies = build.summary(f"team-{k % 40:02d}", "deployment", f"gone-{k:04d}", "app",
                               build.image_id("reg.example/gone", str(k)), written=build.days_ago(20))
        items += copies + build.manifests_for(copies)
    with path.open("w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, fh, separators=(",", ":"))
    planted["objects"] = len(items)
    return planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5_000)
    parser.add_argument("--keep", help="write the state file here instead of a temporary directory")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        state_path = Path(args.keep or tmp) / "state.json"
        t0 = time.perf_counter()
        with multiprocessing.get_context("fork").Pool(1) as pool:
            planted = pool.apply(generate_state, (args.pods, state_path))
        t_gen = time.perf_counter() - t0
        size_mb = state_path.stat().st_size / 1e6

        source = FileSource(state_paths=(str(state_path),))
        # measured as the CLI runs: with the cyclic collector off (see cli/common.py)
        with gc_paused():
            t0 = time.perf_counter()
            state = source.read_state()
            t_load = time.perf_counter() - t0

            class Loaded:
                def read_state(self) -> Any:
                    return state

            t0 = time.perf_counter()
            run = run_vulnerability_coverage(VulnerabilityRunOptions(now=NOW), Loaded())
            t_cov = time.perf_counter() - t0
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    cov = run.coverage
    counts = dict(cov.counts)
    print(f"state: {args.pods} Pods, {planted['objects']} objects, {size_mb:.1f} MB "
          f"(generated in {t_gen:.1f}s); planted {planted}")
    write_rows(sys.stdout, ["STAGE", "SECONDS"],
               [["load (state loader)", f"{t_load:.2f}"], ["coverage", f"{t_cov:.2f}"],
                ["total", f"{t_load + t_cov:.2f}"]], right=(1,))
    print(f"peak memory (ru_maxrss): {peak_mib:.0f} MiB")
    print("counts:", {k: counts[k] for k in ("inScope", "current", "missing", "stale", "split", "unpaired", "orphan",
                                             "splitSummaries", "unpairedSummaries")})
    # the planted figures are what the run must find
    assert counts["missing"] == planted["missing"], (counts, planted)
    # split is planted per summary, stale ones included: the summary count, not the subjects' status
    assert counts["splitSummaries"] == planted["split"], (counts, planted)
    assert counts["orphan"] == planted["orphan"], (counts, planted)
    assert counts["stale"] == planted["stale"], (counts, planted)


if __name__ == "__main__":
    main()
