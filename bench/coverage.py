"""Benchmark: `coverage` over a state of 50,000 subjects with their reports (goal: < 30 s, < 1.5 GiB;
docs/performance.md).

Generates a `kubectl get -o json`-style List into a temporary directory: Pods across 50 namespaces, one
PolicyReport each (a few percent stale, a few percent missing, a handful duplicated or misnamed, a few
orphans), and background-scan EphemeralReports named by uid for a fifth of the Pods (so the resource hash
is computed for those). Then it measures, in one process:

- load: `json.load` of the state file,
- evaluate: picking the Pods out, building `Subject`s and evaluating them,
- coverage: `diff_reports` (which builds each subject's expected results as it compares them) +
  `compute_coverage`,
- peak memory: `ru_maxrss` of this process at the end (generation runs in a child process).

The reports written into the state are the evaluator's own expected reports (computed in the generating
child process, then perturbed); the measured run evaluates the three policies below against every subject
again, exactly as `kubectl kyrec coverage` does, and times that evaluation apart from the comparison.

Usage: python bench/coverage.py [--subjects N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext  # noqa: E402
from kubectl_kyrec.cel.libraries import library_factory  # noqa: E402
from kubectl_kyrec.evaluate.pipeline import EvalOptions  # noqa: E402
from kubectl_kyrec.expect.report_scope import report_scope  # noqa: E402
from kubectl_kyrec.expect.resource_hash import resource_hash  # noqa: E402
from kubectl_kyrec.load.gc_pause import gc_paused  # noqa: E402
from kubectl_kyrec.load.policy.policies import classify  # noqa: E402
from kubectl_kyrec.load.run_inputs.kinds import KindTable  # noqa: E402
from kubectl_kyrec.model import Document, Source  # noqa: E402
from kubectl_kyrec.reconcile.coverage import compute_coverage  # noqa: E402
from kubectl_kyrec.reconcile.reports import diff_reports  # noqa: E402

NOW = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)
POLICIES = ("require-labels", "disallow-latest-tag", "require-requests")
POLICY_VERSIONS = {f"vpol.kyverno.io/{p}": str(100 + i) for i, p in enumerate(POLICIES)}


def pod(i: int) -> dict[str, Any]:
    ns = f"team-{i % 50:02d}"
    name = f"app-{i:06d}-7c9d8f-x{i % 97:02d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"{i:08x}-aaaa-4bbb-8ccc-{i:012x}",
                     "resourceVersion": str(1000 + i), "creationTimestamp": "2026-02-01T00:00:00Z",
                     "labels": {"app": f"app-{i % 400}", "pod-template-hash": "7c9d8f"},
                     # which of the three policies this Pod fails: about one in seven each
                     "annotations": {"bench/fail": ",".join(str(j) for j in range(3) if (i + j) % 7 == 0)},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": f"app-{i}-7c9d8f", "uid": f"rs-{i:08x}",
                                          "controller": True}]},
        "spec": {"containers": [{"name": "app", "image": f"registry.example.com/app:{i % 13}.0",
                                 "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                 "env": [{"name": "MODE", "value": "prod"}]}],
                 "nodeName": f"node-{i % 40}", "restartPolicy": "Always", "serviceAccountName": "default"},
        "status": {"phase": "Running", "podIP": f"10.0.{i // 250 % 256}.{i % 250}"},
    }


def policy_docs() -> list[Document]:
    """Three ValidatingPolicies; each fails on a Pod whose `bench/fail` annotation lists its index."""
    docs = []
    for j, name in enumerate(POLICIES):
        obj = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
               "metadata": {"name": name, "resourceVersion": str(100 + j)},
               "spec": {"validationActions": ["Audit"],
                        "autogen": {"podControllers": {"controllers": []}},
                        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                                "operations": ["CREATE", "UPDATE"],
                                                                "resources": ["pods"]}]},
                        "validations": [{
                            "expression": f"!('{j}' in object.metadata.?annotations[?'bench/fail']"
                                          ".orValue('').split(','))",
                            "messageExpression": f"'{name} failed for ' + object.metadata.name"}]}}
        docs.append(Document(obj, Source("bench-policies.yaml", 1 + j)))
    return docs


def evaluate(state: list[dict[str, Any]]) -> Any:
    """What `kyrec coverage` evaluates: the policies against every subject of the state."""
    docs = [Document(o, Source("state.json")) for o in state]
    libs = library_factory(LibraryContext(now=NOW, provider=EmptyProvider()))
    return report_scope(classify(policy_docs()), docs, docs, kinds=KindTable(), libraries=libs,
                        options=EvalOptions(now=NOW))


def report(subject: dict[str, Any], results: list[dict[str, Any]], name: str | None = None) -> dict[str, Any]:
    meta = subject["metadata"]
    summary = {s: sum(1 for r in results if r["result"] == s)
               for s in ("pass", "fail", "warn", "error", "skip")}
    return {
        "apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
        "metadata": {"name": name or meta["uid"], "namespace": meta["namespace"], "uid": f"r-{meta['uid']}",
                     "creationTimestamp": "2026-02-01T00:01:00Z",
                     "labels": {"app.kubernetes.io/managed-by": "kyverno"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                          "uid": meta["uid"]}]},
        "scope": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                  "uid": meta["uid"]},
        "summary": summary, "results": results,
    }


def scan_metadata(subject: dict[str, Any]) -> dict[str, Any]:
    meta = subject["metadata"]
    return {
        "apiVersion": "reports.kyverno.io/v1", "kind": "EphemeralReport",
        "metadata": {"name": meta["uid"], "namespace": meta["namespace"],
                     "creationTimestamp": "2026-03-01T11:40:00Z",
                     "labels": {"app.kubernetes.io/managed-by": "kyverno",
                                "audit.kyverno.io/source": "background-scan",
                                "audit.kyverno.io/resource.uid": meta["uid"],
                                "audit.kyverno.io/resource.hash": resource_hash(subject), **POLICY_VERSIONS},
                     "annotations": {"audit.kyverno.io/last-scan-time": "2026-03-01T11:40:00Z"}},
        "spec": {"results": [], "summary": {}},
    }


def generate_state(n: int, path: Path, seed: int = 7) -> dict[str, int]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{k:02d}", "uid": f"ns-{k:02d}"}}
        for k in range(50)]
    planted = {"stale": 0, "missing": 0, "duplicate": 0, "misnamed": 0, "orphan": 0}
    pods = [pod(i) for i in range(n + n // 1000)]
    owed = {r["metadata"]["name"]: r["results"] for r in evaluate(pods).expected}
    for i in range(n):
        subject = pods[i]
        items.append(subject)
        roll = rng.random()
        results = owed[subject["metadata"]["uid"]]
        if roll < 0.02:
            planted["missing"] += 1
            continue
        if roll < 0.05:
            planted["stale"] += 1
            results = [dict(r) for r in results]
            results[0]["result"] = "fail" if results[0]["result"] == "pass" else "pass"
        elif roll < 0.051:
            planted["misnamed"] += 1
            items.append(report(subject, results, name=f"{subject['metadata']['name']}-report"))
            continue
        elif roll < 0.052:
            planted["duplicate"] += 1
            items.append(report(subject, results, name=f"{subject['metadata']['name']}-copy"))
        items.append(report(subject, results))
        if roll > 0.8:
            items.append(scan_metadata(subject))
    for k in range(n // 1000):
        planted["orphan"] += 1
        gone = pods[n + k]
        items.append(report(gone, owed[gone["metadata"]["uid"]]))
    with path.open("w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, fh, separators=(",", ":"))
    return planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=50_000)
    parser.add_argument("--keep", help="write the state file here instead of a temporary directory")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        state_path = Path(args.keep or tmp) / "state.json"
        t0 = time.perf_counter()
        # generated in a child process, so this process's peak memory is load + coverage only
        with multiprocessing.get_context("fork").Pool(1) as pool:
            planted = pool.apply(generate_state, (args.subjects, state_path))
        t_gen = time.perf_counter() - t0

        # measured as the CLI runs: with the cyclic collector off (see cli/common.py)
        with gc_paused():
            t0 = time.perf_counter()
            with state_path.open() as fh:
                state = json.load(fh)["items"]
            t_load = time.perf_counter() - t0

            t0 = time.perf_counter()
            scope = evaluate(state)
            t_subjects = time.perf_counter() - t0

            t0 = time.perf_counter()
            diff = diff_reports(scope.expected, scope.subjects, state, now=NOW, policy_versions=scope.policy_versions,
                                policies=scope.policy_keys, evaluated_uids=scope.evaluated_uids)
            cov = compute_coverage(diff, scope.subjects)
            t_cov = time.perf_counter() - t0
        size_mb = state_path.stat().st_size / 1e6

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = dict(cov.counts)
    print(f"coverage benchmark: {args.subjects} subjects, {len(state)} objects, state file {size_mb:.0f} MB")
    print(_markdown(["step", "value"],
                    [["generate state (not counted)", f"{t_gen:.2f} s"],
                     ["load (json.load)", f"{t_load:.2f} s"],
                     # the expected reports are read subject by subject by the comparison (ExpectedReports)
                     ["evaluate: subjects and results", f"{t_subjects:.2f} s"],
                     ["coverage (diff_reports + compute_coverage)", f"{t_cov:.2f} s"],
                     ["load + evaluate + coverage", f"{t_load + t_subjects + t_cov:.2f} s"],
                     ["peak memory (ru_maxrss: load, subjects, coverage)", f"{peak_mib:.0f} MiB"]]))
    print(_markdown(["count", "found", "planted"], [[k, counts[k], planted.get(k, "")] for k in counts]))


def _markdown(headers: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table as docs/performance.md quotes them."""
    lines = [headers, ["---"] * len(headers), *rows]
    return "\n".join("| " + " | ".join(str(cell) for cell in line) + " |" for line in lines)


if __name__ == "__main__":
    main()
