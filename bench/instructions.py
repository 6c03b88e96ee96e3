"""Instructions executed by one small end-to-end `eval`, counted by valgrind: a comparison between two versions
of kyrec that the machine's load does not move (issue 35's "no regression over 3 %").

    python bench/instructions.py [--pods 200] [--policies 24] [--output json] [--input resources|state]
                                 [--jobs 1] [--bare] [--venv PATH] [--against REV ...] [--repeat N] [--keep DIR]

The workload is bench/e2e.py's at a small size: the first --policies corpus ValidatingPolicies that match Pods
(from ../shared/corpus/kyverno-policies, or $KYREC_SHARED/corpus/kyverno-policies) and --pods generated Pods as
the `kubectl get pods -A -o json` List; the command is

    kubectl-kyrec eval -p POLICY... -r pods.json --now 2026-11-29T00:00:00Z -o json --jobs 1

(`--output FORMAT` for another `-o`: the output formats' own cost, e.g. yaml, junit, sarif, table;
`--input state` reads the same List with `--state pods.json` instead of `-r`, the path eval reads as it
evaluates; `--jobs N` for another `--jobs`: the workers' instructions are counted too, each forked process
writes its own callgrind file and they are summed.)

Per Pod: `--pods 1000,2000` (two sizes) counts the command at both and prints the instructions per Pod
between them, (count(N2) - count(N1)) / (N2 - N1): start-up, reading the policies and compiling them cancel
out. `--bare` counts, on the same inputs in the same run, the bare engine of bench/scale.py and bench/e2e.py
(`raw_engine_seconds`: cel-expr-python evaluating the same compiled programs on the same (Pod, policy) pairs,
one activation per Pod): its evaluation loop's instructions are those of a run with the loop less those of
the same run without it (`evaluate=False`), divided by the Pods; the ratio command / bare is printed per Pod.
Keep both sizes at or above 1,000 Pods with more than one job: below PARALLEL_PAIRS pairs
(evaluate/pipeline.py) eval evaluates in its own process, so the two sizes would not run the same way.

run under `valgrind --tool=callgrind`, and the number printed is callgrind's total of instructions executed
(`Ir`, every process of the run summed: `--jobs 1` keeps it to one; a forked worker's file would hold
its parent's instructions before the fork too, so the parent's are dumped, and zeroed, before each fork).
Wall and CPU times under valgrind are of no use; the instruction count is the same on a quiet and on a
loaded machine.

What is held fixed so that the count depends on the code alone: the inputs (written once, read by every run),
`--now`, PYTHONHASHSEED=0, and Python's bytecode: each version's modules (and the standard library's) are
compiled into a cache of this run (PYTHONPYCACHEPREFIX) by a first run outside valgrind, so no measured run
compiles a module (an editable install has no bytecode, and PYTHONDONTWRITEBYTECODE may be set).
Runs of one version differ by a few hundred thousand instructions in billions (--repeat shows it).

The command measured is the `kubectl-kyrec` of this interpreter's environment, or of --venv PATH. With
--against REV (once or more), a throwaway git worktree of REV and a virtual environment with it installed are
built outside the project (under the system's temporary directory, removed afterwards unless --keep), every
version runs on the same inputs, and the ratio (this version / REV) is printed for each REV.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOW = "2026-11-29T00:00:00Z"
_TOTAL = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def _e2e() -> Any:
    """bench/e2e.py as a module (bench/ is not a package): its input generators are reused, not copied."""
    spec = importlib.util.spec_from_file_location("kyrec_bench_e2e", ROOT / "bench" / "e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_inputs(work: Path, sizes: list[int], policies: int) -> list[str]:
    """pods.json (one size) or pods-N.json (each of several) in `work`; the policy files' paths (read in place)."""
    e2e = _e2e()
    if not e2e.CORPUS.is_dir():
        sys.exit(f"corpus not found at {e2e.CORPUS} (set KYREC_SHARED)")
    files = [str(p) for p in e2e.pod_policy_files(policies)]
    for pods in sizes:
        e2e.write_pods(pods_path(work, sizes, pods), pods)
    return files


def pods_path(work: Path, sizes: list[int], pods: int) -> Path:
    return work / ("pods.json" if len(sizes) == 1 else f"pods-{pods}.json")


def command(script: str, policy_files: list[str], pods: Path, output: str = "json", source: str = "resources",
            jobs: int = 1) -> list[str]:
    return [script, "eval", *(a for p in policy_files for a in ("-p", p)),
            "-r" if source == "resources" else "--state", str(pods), "--now", NOW,
            *(("-o", output) if output != "table" else ()), "--jobs", str(jobs)]


# the bare engine (bench/e2e.py raw_engine_seconds) in a child: argv = the evaluate flag (1/0), the Pods' file,
# the policy files
_BARE = """
import importlib.util, sys
from pathlib import Path
evaluate, state, *files = sys.argv[1:]
spec = importlib.util.spec_from_file_location("kyrec_bench_e2e", {e2e!r})
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)
e2e.raw_engine_seconds([Path(f) for f in files], Path(state), evaluate=evaluate == "1")
"""


def bare_argv(policy_files: list[str], pods: Path, evaluate: bool) -> list[str]:
    """The bare engine on `pods`, with its evaluation loop or (not `evaluate`) everything but it."""
    code = _BARE.format(e2e=str(ROOT / "bench" / "e2e.py"))
    return [sys.executable, "-c", code, "1" if evaluate else "0", str(pods), *policy_files]


def child_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KYREC_DEBUG")}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["PYTHONHASHSEED"] = "0"
    return env


def count(argv: list[str], work: Path, label: str, repeat: int) -> list[int]:
    """Callgrind's instruction totals of `repeat` runs of `argv` (after one run outside valgrind that fills
    the bytecode cache)."""
    env = child_env(work / f"pycache-{label.split(':')[0]}")
    first = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if first.returncode not in (0, 1):
        sys.exit(f"{label}: {' '.join(argv[:2])} ... exited {first.returncode}: {first.stderr.strip()[-500:]}")
    totals = []
    for i in range(repeat):
        out_dir = work / f"callgrind-{label.replace(':', '-')}-{i}"
        out_dir.mkdir(parents=True)
        # a forked child starts with its parent's counts so far: every fork is preceded by a dump of the
        # parent's (which zeroes them), so that the files of the run add up to each instruction once
        done = subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=fork",
                               f"--callgrind-out-file={out_dir}/callgrind.%p", *argv],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != first.returncode:
            sys.exit(f"{label}: under valgrind the command exited {done.returncode}, {first.returncode} without: "
                     f"{done.stderr.strip()[-500:]}")
        total = 0
        for path in out_dir.iterdir():
            found = _TOTAL.search(path.read_text(errors="replace"))
            if found is None:
                sys.exit(f"{label}: no instruction total in {path}")
            total += int(found.group(1))
        totals.append(total)
    return totals


def build_version(rev: str, where: Path) -> str:
    """A worktree of `rev` at where/tree and a venv at where/venv with it installed; its console script."""
    tree, venv = where / "tree", where / "venv"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True,
                   stdout=subprocess.DEVNULL)
    # the same interpreter as this one (a venv's base), so only kyrec and its pinned dependencies differ
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e", str(tree)], check=True)
    return str(venv / "bin" / "kubectl-kyrec")


def remove_version(where: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where / "tree")], check=False)
    shutil.rmtree(where, ignore_errors=True)


def console_script(venv: str | None) -> str:
    if venv is not None:
        script = Path(venv) / "bin" / "kubectl-kyrec"
    else:
        script = Path(sys.executable).parent / "kubectl-kyrec"
    if not script.exists():
        sys.exit(f"{script} not found: pip install -e . in that environment first")
    return str(script)


def _line(label: str, totals: list[int]) -> str:
    spread = f" (runs differ by {max(totals) - min(totals):,})" if len(totals) > 1 else ""
    return f"{label}: {min(totals):,} instructions{spread}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", default="200", help="Pods (N, or N1,N2: the instructions per Pod between them)")
    parser.add_argument("--policies", type=int, default=24)
    parser.add_argument("--output", default="json", help="eval's -o (table: no -o)")
    parser.add_argument("--input", default="resources", choices=("resources", "state"),
                        help="read the Pods' List with -r (resources) or with --state")
    parser.add_argument("--jobs", type=int, default=1, help="eval's --jobs")
    parser.add_argument("--bare", action="store_true", help="also count the bare engine's loop on the same Pods")
    parser.add_argument("--venv", help="measure this virtual environment's kubectl-kyrec (default: this one's)")
    parser.add_argument("--against", metavar="REV", action="append", default=[],
                        help="also measure git revision REV, and print the ratio (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="valgrind runs per version (the lowest is shown)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (inputs, callgrind files, REV's venv)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.pods.split(",") if n]
    if len(sizes) not in (1, 2) or (len(sizes) == 2 and sizes[0] >= sizes[1]):
        sys.exit("--pods: N, or N1,N2 with N1 < N2")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind not found")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kyrec-instructions-"))
    work.mkdir(parents=True, exist_ok=True)
    others = [work / f"against-{i}" for i in range(len(args.against))]
    reading = "-r" if args.input == "resources" else "--state"
    try:
        policy_files = write_inputs(work, sizes, args.policies)
        print(f"eval of {len(policy_files)} corpus ValidatingPolicies x {args.pods} Pods "
              f"({reading} pods.json, -o {args.output}, --jobs {args.jobs})", flush=True)

        def measured(script: str, label: str, name: str) -> list[int]:
            """The lowest count at each size, printed; with two sizes, the instructions per Pod."""
            lows = []
            for pods in sizes:
                argv = command(script, policy_files, pods_path(work, sizes, pods), args.output, args.input,
                               args.jobs)
                totals = count(argv, work, f"{label}:{pods}", args.repeat)
                print(_line(f"{name}, {pods:,} Pods", totals), flush=True)
                lows.append(min(totals))
            if len(sizes) == 2:
                print(f"{name}: {_per_pod(lows, sizes):,.0f} instructions per Pod", flush=True)
            return lows

        this = measured(console_script(args.venv), "this", f"this version ({args.venv or sys.prefix})")
        if args.bare:
            loops = []
            for pods in sizes:
                path = pods_path(work, sizes, pods)
                with_loop = count(bare_argv(policy_files, path, True), work, f"bare:{pods}", args.repeat)
                without = count(bare_argv(policy_files, path, False), work, f"bare:{pods}-setup", args.repeat)
                loops.append(min(with_loop) - min(without))
                print(f"bare engine, {pods:,} Pods: {loops[-1]:,} instructions in its evaluation loop "
                      f"({loops[-1] / pods:,.0f} per Pod)", flush=True)
            bare = _per_pod(loops, sizes) if len(sizes) == 2 else loops[0] / sizes[0]
            ours = _per_pod(this, sizes) if len(sizes) == 2 else this[0] / sizes[0]
            print(f"per Pod: this version {ours:,.0f}, bare engine {bare:,.0f}: {ours / bare:.2f}x"
                  + ("" if len(sizes) == 2 else " (one size: the command's start-up is in its figure)"), flush=True)
        for rev, where in zip(args.against, others):
            then = measured(build_version(rev, where), where.name, rev)
            for pods, a, b in zip(sizes, this, then):
                print(f"{pods:,} Pods, ratio this / {rev}: {a / b:.4f} ({(a / b - 1) * 100:+.2f} %)", flush=True)
            if len(sizes) == 2:
                ratio = _per_pod(this, sizes) / _per_pod(then, sizes)
                print(f"per Pod, ratio this / {rev}: {ratio:.4f} ({(ratio - 1) * 100:+.2f} %)", flush=True)
    finally:
        for where in others:
            if not args.keep and where.exists():
                remove_version(where)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _per_pod(counts: list[int], sizes: list[int]) -> float:
    return (counts[1] - counts[0]) / (sizes[1] - sizes[0])


if __name__ == "__main__":
    main()
