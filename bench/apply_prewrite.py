"""What `apply --yes` of N creates spends before its first write, split by phase under cProfile.

    KYREC_SHARED=/work/shared python bench/apply_prewrite.py [--objects 3000] [--rounds 2] [--kubeconfig FILE]

bench/apply_probe.py found that kyrec's writing phase is the raw client's and that what kyrec adds comes
before the first write. This script measures that part alone: the installed `kubectl-kyrec apply
--dry-run=client` (everything `apply --yes` does up to its first request that writes: start-up, the file
and live reads, evaluation, diffing and planning; then nothing is sent) of the bench/apply_writes.py
GeneratingPolicy over N seeded Namespaces, run as a subprocess under cProfile timed by the process's CPU
clock, the profile's cumulative CPU seconds of each phase printed beside the number of Python function
calls, which the machine's load does not move at all (the CPU seconds move less than wall time does, but
still move on a loaded machine: compare calls between versions, seconds within one run). Waiting on the
server is not in the CPU seconds; the wall time of each run is printed too.

The real API server (tests/realapi, as bench/apply_writes.py starts it) is started and seeded here, or,
with --kubeconfig, an already running one whose Namespaces `team-p-NNNNN` are seeded (tests/realapi/serve.sh
--kubeconfig FILE SEED.yaml starts one by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from apply_writes import NOW, POLICY  # noqa: E402 - after the path is set

# run in the kyrec subprocess: the console script under cProfile, the profile written by an atexit handler
# (the command ends with os._exit after running them, cli/quick_exit.py)
PROFILED = r"""
import atexit, cProfile, sys, time
out = sys.argv.pop(1)
# CPU seconds of this process: what the other jobs on a loaded machine take is not counted (waiting on the
# server is not either: its share is the number of requests)
profile = cProfile.Profile(time.process_time)
def written():
    profile.disable()
    profile.dump_stats(out)
atexit.register(written)
sys.argv[0] = "kubectl-kyrec"
profile.enable()
from kubectl_kyrec.cli.console import main
main()
"""

# phase -> the function whose cumulative time it is (file suffix, function name); the first found wins
PHASES = (
    ("whole command", ("cli/console.py", "main")),
    ("  the command itself (after click's start-up)", ("cli/apply_cmd.py", "apply_command")),
    ("  policy files read", ("load/run_inputs/sources.py", "read")),
    ("  live read (connect, discovery, LISTs)", ("cluster/live_source.py", "_read")),
    ("    kubeconfig and client (connect)", ("cluster/client.py", "connect")),
    ("  diff (validate, generate, compare)", ("run/diff.py", "diff_inputs")),
    ("    policies validated and compiled", ("evaluate/policy_validation.py", "validate_policies")),
    ("    generating policies per trigger", ("evaluate/generating/engine.py", "run_generating")),
    ("    downstreams compared and held", ("run/diff.py", "held_downstreams")),
    ("    causes", ("run/diff.py", "with_causes")),
    ("  plan", ("reconcile/plan.py", "plan_changes")),
    # cProfile counts a recursive function's outermost calls only: every import, nested ones once
    ("imports (wherever they happen)", ("<frozen importlib._bootstrap>", "_find_and_load")),
)


def phase_split(profile: Path) -> tuple[int, float, dict[str, float]]:
    """(function calls, profiled seconds, phase -> cumulative seconds) of one profile."""
    stats = pstats.Stats(str(profile))
    raw = stats.stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for label, (suffix, name) in PHASES:
        found = [ct for (file, _, func), (_, _, _, ct, _) in raw.items() if file.endswith(suffix) and func == name]
        out[label] = sum(found)
    return stats.total_calls, stats.total_tt, out  # type: ignore[attr-defined]


def run(kubeconfig: Path, policy: Path, work: Path, tag: str) -> tuple[int, float, dict[str, float], float, dict]:
    kyrec = shutil.which("kubectl-kyrec")
    assert kyrec is not None, "no kubectl-kyrec on PATH (activate the venv it is installed in)"
    interpreter = Path(kyrec).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()
    profile = work / f"apply-{tag}.prof"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "XDG_CACHE_HOME": str(work / "cache"),
           "PYTHONDONTWRITEBYTECODE": "", "PYTHONHASHSEED": "0"}
    started = time.perf_counter()
    # run in the work directory: `python -c` puts its directory first on sys.path, so from a checkout the
    # checkout's package would be measured whatever kubectl-kyrec is on PATH (main's venv run from a branch's
    # worktree measured the branch)
    done = subprocess.run([interpreter, "-c", PROFILED, str(profile), "apply", "-p", str(policy),
                           "--dry-run=client", "-o", "json", *NOW], capture_output=True, text=True, env=env,
                          cwd=work)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"apply exited {done.returncode}: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout).get("summary", {})
    calls, seconds, phases = phase_split(profile)
    return calls, seconds, phases, wall, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2, help="profiled runs (the first warms the caches)")
    parser.add_argument("--kubeconfig", type=Path, help="a running server's (its Namespaces seeded here)")
    args = parser.parse_args()
    kyrec = shutil.which("kubectl-kyrec")
    if kyrec is None:
        sys.exit("apply_prewrite: no kubectl-kyrec on PATH (activate the venv it is installed in)")
    interpreter = Path(kyrec).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()
    subprocess.run([interpreter, "-c", "import compileall, os, kubectl_kyrec; "
                    "compileall.compile_dir(os.path.dirname(kubectl_kyrec.__file__), quiet=1)"],
                   check=False, cwd="/", env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    work = Path(tempfile.mkdtemp(prefix="kyrec-bench-prewrite-"))
    server = None
    try:
        namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-p-{i:05d}"}}
                      for i in range(args.objects)]
        if args.kubeconfig is None:
            from tests.realapi import build
            from tests.realapi.fixture import CRDS, RealServer

            server = RealServer(build.build("server"), work)
            server.start(CRDS)
            server.seed(*namespaces)
            kubeconfig = server.kubeconfig
        else:
            kubeconfig = args.kubeconfig
            import yaml

            seeds = work / "seed.yaml"
            seeds.write_text(yaml.safe_dump_all(namespaces))
            binary = subprocess.run([sys.executable, str(ROOT / "tests/realapi/build.py"), "server"],
                                    capture_output=True, text=True, check=True).stdout.strip()
            subprocess.run([binary, "seed", "--kubeconfig", str(kubeconfig), str(seeds)], check=True,
                           capture_output=True)
        policy = work / "policy.yaml"
        policy.write_text(POLICY.replace("LEVEL", "p"))
        print(f"kyrec: {kyrec}; {args.objects} Namespaces; load average {os.getloadavg()[0]:.1f}")
        rows: list[tuple[int, float, dict[str, float], float]] = []
        for round_ in range(args.rounds):
            calls, seconds, phases, wall, summary = run(kubeconfig, policy, work, str(round_))
            rows.append((calls, seconds, phases, wall))
            print(f"round {round_}: {calls:,} function calls, {seconds:.2f} s profiled, {wall:.2f} s wall, "
                  f"plan {summary}", flush=True)
        heads = "".join(f"{f'round {i}':>10}" for i in range(len(rows)))
        print(f"\n{'phase (cProfile cumulative CPU seconds)':<52}{heads}")
        for label, _ in PHASES:
            print(f"{label:<52}" + "".join(f"{r[2][label]:>10.3f}" for r in rows))
        print(f"{'function calls (the load does not move them)':<52}" + "".join(f"{r[0]:>10}" for r in rows))
        print(f"{'wall seconds (it does)':<52}" + "".join(f"{r[3]:>10.2f}" for r in rows))
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
