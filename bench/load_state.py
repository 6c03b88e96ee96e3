"""How fast `--state` files load: 10,000 Deployment-like objects written as JSON and YAML.

    /tmp/venv/bin/python bench/load_state.py [--objects N] [--keep DIR]

Generating the files and each measurement run in fresh interpreters, so that every peak RSS is the
loader's own (Linux keeps ru_maxrss across fork and exec, so a big parent would inflate its children's).
Prints one table row per format: file size, load seconds, objects per second, peak RSS of the loading
process and its RSS before loading. The last row loads the YAML List through `load_documents`, the
provenance path used for policies and manifests, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def deployment(i: int) -> dict[str, Any]:
    name = f"app-{i:05d}"
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": f"team-{i % 50}", "tier": "backend"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": f"team-{i % 50}", "uid": f"6b1f0c2e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i), "generation": 3, "creationTimestamp": "2024-05-01T12:00:00Z",
            "labels": labels, "annotations": {"deployment.kubernetes.io/revision": "3"},
        },
        "spec": {
            "replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": dict(labels)},  # shared dicts would be dumped as YAML anchors
                "spec": {
                    "serviceAccountName": name,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
                    "containers": [{
                        "name": "main", "image": f"registry.example.com/{name}:v1.{i % 7}.0",
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                        "env": [{"name": "LOG_LEVEL", "value": "info"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                      "limits": {"cpu": "500m", "memory": "512Mi"}},
                    }],
                },
            },
        },
        "status": {
            "observedGeneration": 3, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                            "lastTransitionTime": "2024-05-01T12:01:00Z"}],
        },
    }


def write_files(directory: str, count: int) -> dict[str, str]:
    items = [deployment(i) for i in range(count)]
    listed = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    paths = {
        "json (kubectl get -o json List)": os.path.join(directory, "state.json"),
        "yaml (kubectl get -o yaml List)": os.path.join(directory, "state.yaml"),
        "yaml (one document per object)": os.path.join(directory, "state-docs.yaml"),
    }
    with open(paths["json (kubectl get -o json List)"], "w") as out:
        json.dump(listed, out, indent=4)   # kubectl's own indentation
    with open(paths["yaml (kubectl get -o yaml List)"], "w") as out:
        yaml.dump(listed, out, Dumper=dumper, sort_keys=False, default_flow_style=False)
    with open(paths["yaml (one document per object)"], "w") as out:
        yaml.dump_all(items, out, Dumper=dumper, sort_keys=False, default_flow_style=False)
    return paths


def measure(path: str, loader: str) -> dict[str, float]:
    """Runs in the child: load one file, report seconds, objects and peak RSS."""
    sys.path.insert(0, ROOT)
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.run_inputs.state import load_state

    load = load_state if loader == "state" else load_documents
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    docs = load([path])
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"seconds": seconds, "objects": len(docs), "peak_kib": peak, "baseline_kib": baseline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--keep", help="write the generated files here and keep them")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--generate", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    if args.generate:
        print(json.dumps(write_files(args.generate, args.objects)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.keep or tmp
        os.makedirs(directory, exist_ok=True)
        paths = json.loads(_child("--generate", directory, "--objects", str(args.objects)))
        runs = [(label, path, "state") for label, path in paths.items()]
        runs.append(("yaml List via load_documents", paths["yaml (kubectl get -o yaml List)"], "documents"))
        rows = []
        for label, path, loader in runs:
            result = json.loads(_child("--measure", path, loader))
            rows.append((label, os.path.getsize(path) / 1e6, result["seconds"],
                         result["objects"] / result["seconds"], result["peak_kib"] / 1024,
                         result["baseline_kib"] / 1024))
    print(f"{args.objects} objects, Python {sys.version.split()[0]}, libyaml: {yaml.__with_libyaml__}")
    print(f"{'format':34} {'MB':>6} {'load s':>8} {'objects/s':>10} {'peak RSS MiB':>13} {'(start MiB)':>11}")
    for label, size, seconds, rate, peak, base in rows:
        print(f"{label:34} {size:6.1f} {seconds:8.2f} {rate:10,.0f} {peak:13.0f} {base:11.0f}")


def _child(*argv: str) -> str:
    return subprocess.run([sys.executable, __file__, *argv], check=True, capture_output=True,
                          text=True).stdout


if __name__ == "__main__":
    main()
