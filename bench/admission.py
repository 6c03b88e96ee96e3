"""The admission chain's cost (issue 26): `eval` on manifests with and without it, beside the engine and
Kyverno's CLI.

    python bench/admission.py [--pods 5000] [--repeat 2] [--keep DIR]

Inputs: N generated Pods as a YAML stream of manifests (every third without an owner label, every fifth with
a 4Gi memory limit), the README's example policies (testdata/examples/policies: limit-memory,
require-owner-label) and its MutatingPolicy (testdata/examples/admission/default-owner.yaml, which gives a Pod
without an owner `owner: platform`). Measured, each as a child process of this interpreter's environment
(wall time, CPU time, peak RSS from `os.wait4`, as bench/e2e.py measures):
- `kubectl-kyrec eval -o json` (the chain: API-server defaults, the MutatingPolicy, then validation);
- the same with `--no-mutate` (the manifests validated as written);
- the engine alone, in this process: evaluate/pipeline.run_eval with and without `admit` (no loading, no
  rendering, no process start);
- with `KYVERNO_BIN_DIR`, Kyverno's CLI on the same files (`kubectl-kyverno apply POLICIES --resource
  pods.yaml`, which applies the MutatingPolicy and then validates); its fail count per validating policy
  must equal kyrec's (`--policy-report` output). Without it the column is skipped, and the run says so.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "testdata" / "examples"
NOW = "2026-12-04T00:00:00Z"


def _e2e() -> Any:
    """bench/e2e.py's measurement helpers (run_child, the children's environment, the Kyverno CLI lookup)."""
    spec = importlib.util.spec_from_file_location("kyrec_bench_e2e", ROOT / "bench" / "e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_pods(path: Path, n: int) -> None:
    docs = []
    for i in range(n):
        labels = "" if i % 3 == 0 else f"\n  labels: {{owner: team-{i % 7}}}"
        memory = "4Gi" if i % 5 == 0 else "512Mi"
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\n  namespace: ns-{i % 20}{labels}\n"
                    f"spec:\n  containers:\n  - name: app\n    image: nginx:1.{i % 30}\n    resources:\n"
                    f"      limits: {{memory: {memory}, cpu: 500m}}\n    ports: [{{containerPort: 80}}]\n")
    path.write_text("---\n".join(docs))


def engine_seconds(pods: Path, admit: bool) -> float:
    """evaluate/pipeline.run_eval on the loaded inputs, in this process (the best of three)."""
    from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.policy.policies import classify
    from kubectl_kyrec.load.run_inputs.kinds import KindTable

    now = datetime.datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    policies = classify(load_documents([str(EXAMPLES / "policies"), str(EXAMPLES / "admission")]))
    resources = load_documents([str(pods)])
    best = float("inf")
    for _ in range(3):
        libraries = library_factory(LibraryContext(now=now, provider=EmptyProvider()))
        start = time.perf_counter()
        run_eval(policies, resources, [], kinds=KindTable(), libraries=libraries,
                 options=EvalOptions(now=now, admit=admit))
        best = min(best, time.perf_counter() - start)
    return best


def kyrec_fails(doc: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in doc["results"]:
        if r["source"] == "KyvernoValidatingPolicy" and r["result"] == "fail":
            out[r["policy"]] = out.get(r["policy"], 0) + 1
    return out


def kyverno_fails(report_text: str) -> dict[str, int]:
    """Fail counts per policy from `kubectl-kyverno apply --policy-report -o json`'s report(s)."""
    out: dict[str, int] = {}
    start = report_text.find("{")
    if start < 0:
        return out
    data = json.loads(report_text[start:])
    reports = data.get("items") if isinstance(data, dict) and "items" in data else [data]
    for report in reports or []:
        for entry in report.get("results") or []:
            if entry.get("result") == "fail":
                out[entry["policy"]] = out.get(entry["policy"], 0) + 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep")
    args = parser.parse_args()
    e2e = _e2e()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kyrec-admission-"))
    work.mkdir(parents=True, exist_ok=True)
    e2e.prepare_child_env(work)
    pods = work / "pods.yaml"
    write_pods(pods, args.pods)
    exe = e2e.console_script()
    policy_args = ["-p", str(EXAMPLES / "policies"), "-p", str(EXAMPLES / "admission")]
    print(f"{args.pods} Pod manifests, 2 ValidatingPolicies + 1 MutatingPolicy, best of {args.repeat}")
    print(f"{'run':44} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9}")
    outcomes: dict[str, dict[str, int]] = {}
    for label, extra in (("kubectl-kyrec eval -o json (chain)", []),
                         ("kubectl-kyrec eval -o json --no-mutate", ["--no-mutate"])):
        runs = [e2e.run_child([exe, "eval", *policy_args, "-r", str(pods), "--now", NOW, "-o", "json", *extra],
                              work / "out.json") for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["wall"])
        if best["code"] not in (0, 1):
            sys.exit(f"{label}: exit {best['code']}: {best['stderr'][-500:]}")
        outcomes[label] = kyrec_fails(json.loads((work / "out.json").read_text()))
        print(f"{label:44} {best['wall']:7.2f} {best['cpu']:7.2f} {best['rss_mib']:9.0f}")
    for admit in (True, False):
        print(f"{'engine (pipeline.run_eval, admit=' + str(admit) + ')':44} {engine_seconds(pods, admit):7.2f}")
    kyverno = e2e.kyverno_exe()
    if kyverno is not None:
        runs = [e2e.run_child([str(kyverno), "apply", *[str(p) for p in sorted((EXAMPLES / "policies").glob("*.yaml"))],
                               str(EXAMPLES / "admission" / "default-owner.yaml"), "--resource", str(pods),
                               "--policy-report", "--output-format", "json"], work / "kyverno.out",
                              env=dict(os.environ)) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["wall"])
        print(f"{'kubectl-kyverno apply (mutate, then validate)':44} {best['wall']:7.2f} {best['cpu']:7.2f} "
              f"{best['rss_mib']:9.0f}")
        theirs = kyverno_fails((work / "kyverno.out").read_text(errors="replace"))
        ours = outcomes["kubectl-kyrec eval -o json (chain)"]
        print(f"fail counts: kyrec {ours}, Kyverno's CLI {theirs}: {'agree' if ours == theirs else 'DIFFER'}")
    print(f"(the engine lines without and with admit are the chain's own cost; inputs in {work})")


if __name__ == "__main__":
    main()
