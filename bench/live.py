"""What a live run costs: `diff` over 20,000 objects served by the API double, beside the same diff from a
`capture` file; and `apply` of 1,000 missing downstreams.

    python bench/live.py [--namespaces 2000] [--unrelated 10000] [--apply 1000]

The cluster is bench/diff.py's state (N namespaces as triggers, 4 downstreams each, unrelated Deployments
and ConfigMaps), served over HTTP by tests/kubeapi (the double kyrec's tests use) in this process; each
kyrec run is a fresh interpreter (`kubectl-kyrec ...`) that reports its own peak RSS. Printed per run: the
requests the double answered (LIST pages, discovery, GETs of single objects, writes), wall time, the
double's own serving time (time spent building and sending answers; it runs in this process, so it is
part of the wall time of a live run) and peak memory.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.kubeapi.server import ApiServer  # noqa: E402 - after the path is set

_spec = importlib.util.spec_from_file_location("bench_diff", os.path.join(ROOT, "bench", "diff.py"))
assert _spec is not None and _spec.loader is not None
bench_diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_diff)

APPLY_POLICY = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: team-settings
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
    expression: object.metadata.name.startsWith("team-")
  generate:
  - expression: >-
      generator.apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),
      "metadata": dyn({"name": "team-settings"}), "data": dyn({"team": object.metadata.name})}])
"""

SCRIPT = "\n".join([
    "import atexit, resource, sys",
    f"sys.path.insert(0, {ROOT!r})",
    "sys.argv = ['kubectl-kyrec'] + sys.argv[1:]",
    # VmHWM, not ru_maxrss: the latter keeps the high-water mark of the forked bench process (which holds
    # the double's 20,000 objects) across exec
    "def hwm():",
    "    for line in open('/proc/self/status'):",
    "        if line.startswith('VmHWM:'):",
    "            return int(line.split()[1])",
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss",
    "atexit.register(lambda: sys.stderr.write(f'MAXRSS {hwm()}\\n'))",
    "from kubectl_kyrec.cli.console import main",
    "main()"])


def run(args: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True,
                          env={**os.environ, **env})
    elapsed = time.perf_counter() - start
    lines = [line for line in done.stderr.splitlines() if line.startswith("MAXRSS ")]
    rss = int(lines[-1].split()[1]) / 1024 if lines else float("nan")
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr)
    return elapsed, rss, done.returncode, done.stdout


def requests_of(api: ApiServer) -> tuple[dict[str, int], float]:
    counts: Counter[str] = Counter()
    for r in api.requests():
        if r.path in ("/api", "/apis") or (r.verb == "" and r.method == "GET"):
            counts["discovery"] += 1
        elif r.verb == "list":
            counts["LIST pages"] += 1
        elif r.verb == "get":
            counts["GET"] += 1
        else:
            counts[r.method] += 1
    return dict(counts), sum(r.elapsed for r in api.requests())


def row(label: str, counts: dict[str, int], elapsed: float, serving: float, rss: float, code: int) -> None:
    reqs = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
    print(f"{label:<34}{elapsed:>8.2f}{serving:>10.2f}{rss:>9.0f}   exit {code}   requests: {reqs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=2000)
    parser.add_argument("--unrelated", type=int, default=10000)
    parser.add_argument("--apply", type=int, default=1000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="kyrec-bench-live-")
    policy = os.path.join(work, "policy.yaml")
    with open(policy, "w") as fh:
        fh.write(bench_diff.POLICY)
    objects = bench_diff.state(args.namespaces, args.unrelated)
    print(f"cluster: {len(objects)} objects ({args.namespaces} namespaces, {4 * args.namespaces} downstreams, "
          f"{args.unrelated} unrelated), served by the API double")
    print(f"{'run':<34}{'wall s':>8}{'double s':>10}{'RSS MB':>9}")
    now = ["--now", "2026-09-01T00:00:00Z"]
    with ApiServer() as api:
        started = time.perf_counter()
        api.seed(*objects)
        seeded = time.perf_counter() - started
        kubeconfig = str(api.kubeconfig(__import__("pathlib").Path(work) / "kubeconfig"))
        env = {"KUBECONFIG": kubeconfig, "XDG_CACHE_HOME": os.path.join(work, "cache")}
        for label in ("diff --live (discovery uncached)", "diff --live (discovery cached)"):
            api.clear_log()
            elapsed, rss, code, _ = run(["diff", "-p", policy, "-o", "json", *now], env)
            counts, serving = requests_of(api)
            row(label, counts, elapsed, serving, rss, code)
        api.clear_log()
        state = os.path.join(work, "state.json")
        elapsed, rss, code, _ = run(["capture", "-p", policy, "-o", state], env)
        counts, serving = requests_of(api)
        row("capture", counts, elapsed, serving, rss, code)
        api.clear_log()
        elapsed, rss, code, _ = run(["diff", "-p", policy, "--state", state, "-o", "json", *now], env)
        row(f"diff --state capture ({os.path.getsize(state) / 1e6:.0f} MB)", {}, elapsed, 0.0, rss, code)
    print(f"(seeding the double took {seeded:.1f} s, not counted)")
    with ApiServer() as api:
        for i in range(args.apply):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i:05d}"}})
        apply_policy = os.path.join(work, "apply-policy.yaml")
        with open(apply_policy, "w") as fh:
            fh.write(APPLY_POLICY)
        kubeconfig = str(api.kubeconfig(__import__("pathlib").Path(work) / "kubeconfig-apply"))
        env = {"KUBECONFIG": kubeconfig, "XDG_CACHE_HOME": os.path.join(work, "cache")}
        api.clear_log()
        elapsed, rss, code, out = run(["apply", "-p", apply_policy, "--yes", "-o", "json", *now], env)
        counts, serving = requests_of(api)
        summary: dict[str, Any] = json.loads(out)["summary"] if out.strip().startswith("{") else {}
        row(f"apply of {args.apply} missing", counts, elapsed, serving, rss, code)
        print(f"  outcomes: {summary}")
        api.clear_log()
        elapsed, rss, code, out = run(["apply", "-p", apply_policy, "--yes", "-o", "json", *now], env)
        counts, serving = requests_of(api)
        row("apply again (nothing to do)", counts, elapsed, serving, rss, code)


if __name__ == "__main__":
    main()
