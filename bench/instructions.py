"""Instructions executed by one small end-to-end `eval`, counted by valgrind: a comparison between two versions
of kyrec that the machine's load does not move (issue 35's "no regression over 3 %").

    python bench/instructions.py [--pods 200] [--policies 24] [--output json] [--venv PATH] [--against REV ...]
                                 [--repeat N] [--keep DIR]

The workload is bench/e2e.py's at a small size: the first --policies corpus ValidatingPolicies that match Pods
(from ../shared/corpus/kyverno-policies, or $KYREC_SHARED/corpus/kyverno-policies) and --pods generated Pods as
the `kubectl get pods -A -o json` List; the command is

    kubectl-kyrec eval -p POLICY... -r pods.json --now 2026-11-29T00:00:00Z -o json --jobs 1

(`--output FORMAT` for another `-o`: the output formats' own cost, e.g. yaml, junit, sarif, table.)

run under `valgrind --tool=callgrind`, and the number printed is callgrind's total of instructions executed
(`Ir`, every process of the run summed: `--jobs 1` keeps it to one). Wall and CPU times under valgrind are of
no use; the instruction count is the same on a quiet and on a loaded machine.

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


def write_inputs(work: Path, pods: int, policies: int) -> list[str]:
    """pods.json in `work`; the policy files' paths (read in place)."""
    e2e = _e2e()
    if not e2e.CORPUS.is_dir():
        sys.exit(f"corpus not found at {e2e.CORPUS} (set KYREC_SHARED)")
    files = [str(p) for p in e2e.pod_policy_files(policies)]
    e2e.write_pods(work / "pods.json", pods)
    return files


def command(script: str, policy_files: list[str], work: Path, output: str = "json") -> list[str]:
    return [script, "eval", *(a for p in policy_files for a in ("-p", p)), "-r", str(work / "pods.json"),
            "--now", NOW, *(("-o", output) if output != "table" else ()), "--jobs", "1"]


def child_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KYREC_DEBUG")}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["PYTHONHASHSEED"] = "0"
    return env


def count(script: str, policy_files: list[str], work: Path, label: str, repeat: int,
          output: str = "json") -> list[int]:
    """Callgrind's instruction totals of `repeat` runs of the command (after one run outside valgrind that
    fills the bytecode cache)."""
    env = child_env(work / f"pycache-{label}")
    argv = command(script, policy_files, work, output)
    first = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if first.returncode not in (0, 1):
        sys.exit(f"{label}: {' '.join(argv[:2])} ... exited {first.returncode}: {first.stderr.strip()[-500:]}")
    totals = []
    for i in range(repeat):
        out_dir = work / f"callgrind-{label}-{i}"
        out_dir.mkdir()
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir}/callgrind.%p",
                               *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--policies", type=int, default=24)
    parser.add_argument("--output", default="json", help="eval's -o (table: no -o)")
    parser.add_argument("--venv", help="measure this virtual environment's kubectl-kyrec (default: this one's)")
    parser.add_argument("--against", metavar="REV", action="append", default=[],
                        help="also measure git revision REV, and print the ratio (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="valgrind runs per version (the lowest is shown)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (inputs, callgrind files, REV's venv)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind not found")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kyrec-instructions-"))
    work.mkdir(parents=True, exist_ok=True)
    others = [work / f"against-{i}" for i in range(len(args.against))]
    try:
        policy_files = write_inputs(work, args.pods, args.policies)
        print(f"eval of {len(policy_files)} corpus ValidatingPolicies x {args.pods} Pods "
              f"(-o {args.output}, --jobs 1)",
              flush=True)
        this = count(console_script(args.venv), policy_files, work, "this", args.repeat, args.output)
        print(_line(f"this version ({args.venv or sys.prefix})", this), flush=True)
        for rev, where in zip(args.against, others):
            script = build_version(rev, where)
            then = count(script, policy_files, work, where.name, args.repeat, args.output)
            print(_line(rev, then))
            print(f"ratio this / {rev}: {min(this) / min(then):.4f} ({(min(this) / min(then) - 1) * 100:+.2f} %)",
                  flush=True)
    finally:
        for where in others:
            if not args.keep and where.exists():
                remove_version(where)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
