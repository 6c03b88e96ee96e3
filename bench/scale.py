"""Scale (issue 36): wall time and peak memory of the installed `kubectl-kyrec eval` as the Pods grow.

    python bench/scale.py [--pods 20000,40000] [--inputs yaml,state] [--formats table,json]
                          [--kyverno-pods 1000] [--keep DIR] [--jobs N] [--repeat N]

Inputs, for each N of --pods: N Pods in the shapes of the corpus Pod tests (bench/e2e.py's `write_pods`, over
bench/eval.py's `pod_spec`), written twice: as one YAML manifest of N documents in block style (`yaml`: read
with `eval -r FILE`) and as the `kubectl get pods -A -o json` List (`state`: read with `eval --state FILE`).
Policies: the 24 corpus ValidatingPolicies of ../shared/corpus/kyverno-policies that select Pods (bench/e2e.py's
`pod_policy_files`). Every (input, format) pair runs the installed command as a child process with its stdout
a pipe this process drains (what `| consumer` sees): wall time, CPU time and the child's peak RSS (`os.wait4`,
the figure `/usr/bin/time -v` prints). Beside it, in the same run, the bare engine: cel-expr-python evaluating
the same compiled programs on the same (Pod, policy) pairs, one activation per Pod, no loading or output
(bench/e2e.py's `raw_engine_seconds`, in a forked child so this process stays small).

Linux carries the parent's peak RSS into a child it starts (ru_maxrss survives fork and exec), so the inputs
are generated and the bare engine runs in forked children: the bench process's own peak is printed at the end
as the floor under every child's figure.

--repeat N runs the bare engine and every (input, format) N times, interleaved (bare, each command, bare,
each command, ...), and keeps the smallest wall and CPU time of each side, and the largest peak RSS: on a
machine whose speed drifts (a shared virtual machine: the bare engine alone moved 12 -> 15 s between two runs
of the same 50,000 Pods) one run of each side measures the drift as much as kyrec; the smallest of several
is the figure least moved by it, taken alike for both sides. The spread of each side is printed too.

With --keep DIR, the generated inputs (pods-N.json, pods-N.yaml) stay in DIR beside the outputs.

The slope: for each (input, format), the peak RSS growth per 1,000 Pods between the smallest and the largest
N, and the ratio of the peaks at the largest N and at half of it where both were run (the issue's goal:
peak at 100,000 at most 1.2x the peak at 50,000).

KYREC_SHARED names the shared directory when it is not ../shared (a git worktree).

Kyverno's CLI (row 4 of the issue's table): with KYVERNO_BIN_DIR naming a directory that holds
`kubectl-kyverno` (v1.17.2), `kubectl-kyverno apply POLICIES --resource PODS.yaml --policy-report` runs on
--kyverno-pods Pods beside `kubectl-kyrec eval -r PODS.yaml --no-mutate -o json`; without it the row says
it was skipped. It is slow (minutes at 1,000 Pods): --kyverno-pods 0 leaves it out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _bench_module(name: str) -> Any:
    """bench/<name>.py as a module (bench/ is not a package): its generators are reused, not copied."""
    spec = importlib.util.spec_from_file_location(f"kyrec_bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # its functions are sent to a Pool's child by name
    spec.loader.exec_module(module)
    return module


e2e = _bench_module("e2e")     # which reads KYREC_SHARED itself
INPUTS = ("yaml", "state")
FORMATS = ("table", "wide", "json", "yaml", "junit", "sarif", "reports", "github")


def _write_inputs(pods: int, state: Path, manifest: Path) -> None:
    """In a forked child: the JSON List (e2e's generator) and the same Pods as one block-style YAML manifest."""
    import yaml

    e2e.write_pods(state, pods)
    with state.open() as fh:
        items = json.load(fh)["items"]
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with manifest.open("w") as fh:
        yaml.dump_all(items, fh, Dumper=dumper, sort_keys=False, default_flow_style=False)


def write_inputs(pods: int, state: Path, manifest: Path) -> None:
    child = multiprocessing.get_context("fork").Process(target=_write_inputs, args=(pods, state, manifest))
    child.start()
    child.join()
    if child.exitcode:
        sys.exit(f"generating {pods} Pods failed")


def run_piped(argv: list[str], env: dict[str, str] | None) -> dict[str, Any]:
    """argv with stdout a pipe read to its end here: wall, CPU (user + system), peak RSS of the child, bytes."""
    with tempfile.TemporaryFile() as err_file:     # a file, not a pipe: a long stderr cannot block the child
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err_file, env=env)
        assert child.stdout is not None
        received = 0
        while chunk := child.stdout.read(1 << 20):
            received += len(chunk)
        _, status, usage = os.wait4(child.pid, 0)
        err_file.seek(0)
        err = err_file.read()
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "code": child.returncode, "bytes": received, "stderr": err.decode(errors="replace")}


def eval_argv(exe: str, files: list[Path], source: str, path: Path, fmt: str, jobs: str | None) -> list[str]:
    policy_args = [a for f in files for a in ("-p", str(f))]
    source_args = ["-r", str(path)] if source == "yaml" else ["--state", str(path)]
    return [exe, "eval", *policy_args, *source_args, "--now", e2e.NOW,
            *(("-o", fmt) if fmt != "table" else ()), *(("--jobs", jobs) if jobs is not None else ())]


def bench_size(work: Path, files: list[Path], pods: int, inputs: list[str], formats: list[str],
               jobs: str | None, repeat: int = 1, keep: bool = False) -> list[dict[str, Any]]:
    state, manifest = work / f"pods-{pods}.json", work / f"pods-{pods}.yaml"
    write_inputs(pods, state, manifest)
    exe = e2e.console_script()
    bare: list[tuple[float, float]] = []
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(s, f): [] for s in inputs for f in formats}
    for round_no in range(repeat):
        with multiprocessing.get_context("fork").Pool(1) as pool:
            raw_s, raw_cpu, pairs = pool.apply(e2e.raw_engine_seconds, (files, state))
        bare.append((raw_s, raw_cpu))
        print(f"{pods:,} Pods ({manifest.stat().st_size / 1e6:.1f} MB YAML, {state.stat().st_size / 1e6:.1f} MB "
              f"JSON): bare engine {raw_s:.2f} s wall, {raw_cpu:.2f} s CPU on {pairs:,} pairs"
              + (f" (round {round_no + 1} of {repeat})" if repeat > 1 else ""), flush=True)
        for (source, fmt), done in runs.items():
            res = run_piped(eval_argv(exe, files, source, manifest if source == "yaml" else state, fmt, jobs),
                            e2e.CHILD_ENV)
            if res["code"] not in (0, 1):
                print(res["stderr"][-2000:], file=sys.stderr)
            res.update(pods=pods, source=source, fmt=fmt, raw_s=raw_s, raw_cpu=raw_cpu)
            done.append(res)
            print("  " + "  ".join(row(res)), flush=True)
    measured = []
    raw_s, raw_cpu = min(b[0] for b in bare), min(b[1] for b in bare)
    if repeat > 1:
        print(f"  bare engine over {repeat} rounds: wall {min(b[0] for b in bare):.2f}-{max(b[0] for b in bare):.2f} s,"
              f" the smallest taken", flush=True)
    for (source, fmt), done in runs.items():
        best = dict(min(done, key=lambda r: r["wall"]))
        best.update(cpu=min(r["cpu"] for r in done), rss_mib=max(r["rss_mib"] for r in done),
                    raw_s=raw_s, raw_cpu=raw_cpu)
        if repeat > 1:
            print(f"  {fmt} ({source}) over {repeat} rounds: wall {min(r['wall'] for r in done):.2f}-"
                  f"{max(r['wall'] for r in done):.2f} s", flush=True)
        measured.append(best)
    if not keep:
        for path in (state, manifest):
            path.unlink()
    return measured


HEADER = ("Pods", "input", "-o", "wall s", "x bare", "CPU s", "x bare CPU", "peak RSS MiB", "output MB", "exit")


def row(res: dict[str, Any]) -> tuple[str, ...]:
    label = "-r YAML" if res["source"] == "yaml" else "--state JSON"
    return (f"{res['pods']:,}", label, res["fmt"], f"{res['wall']:.2f}", f"{res['wall'] / res['raw_s']:.2f}x",
            f"{res['cpu']:.2f}", f"{res['cpu'] / res['raw_cpu']:.2f}x", f"{res['rss_mib']:.0f}",
            f"{res['bytes'] / 1e6:.1f}", str(res["code"]))


def slopes(measured: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [("input", "-o", "Pods", "peak RSS MiB", "MiB per 1,000 Pods", "peak(N) / peak(N/2)")]
    for source in dict.fromkeys(r["source"] for r in measured):
        for fmt in dict.fromkeys(r["fmt"] for r in measured):
            runs = sorted((r for r in measured if r["source"] == source and r["fmt"] == fmt),
                          key=lambda r: r["pods"])
            if len(runs) < 2:
                continue
            low, high = runs[0], runs[-1]
            slope = (high["rss_mib"] - low["rss_mib"]) / ((high["pods"] - low["pods"]) / 1000)
            half = next((r for r in runs if r["pods"] * 2 == high["pods"]), None)
            out.append(("-r YAML" if source == "yaml" else "--state JSON", fmt,
                        f"{low['pods']:,} -> {high['pods']:,}", f"{low['rss_mib']:.0f} -> {high['rss_mib']:.0f}",
                        f"{slope:.1f}", f"{high['rss_mib'] / half['rss_mib']:.2f}x" if half else "-"))
    return out


def bench_kyverno(work: Path, files: list[Path], pods: int, jobs: str | None) -> list[tuple[str, str]]:
    """Row 4: kyrec `eval -r --no-mutate -o json` beside Kyverno's CLI `apply` on the same YAML Pods."""
    kyverno = e2e.kyverno_exe()     # prints the skip when KYVERNO_BIN_DIR is not set
    if kyverno is None:
        return [(f"{pods:,} Pods: Kyverno CLI", "skipped (KYVERNO_BIN_DIR not set or no kubectl-kyverno)")]
    state, manifest = work / "kyverno-pods.json", work / "kyverno-pods.yaml"
    write_inputs(pods, state, manifest)
    ours = e2e.run_child([*eval_argv(e2e.console_script(), files, "yaml", manifest, "json", jobs), "--no-mutate"],
                         work / "kyrec.json")
    theirs = e2e.run_kyverno(kyverno, files, manifest, work / "kyverno.json")
    agreement = e2e.compare_outcomes(e2e.outcome_counts(work / "kyrec.json", b'"downstreams"'),
                                     e2e.outcome_counts(work / "kyverno.json"))
    rows = []
    for label, res in ((f"{pods:,} Pods: kubectl-kyrec eval -r --no-mutate -o json", ours),
                       (f"{pods:,} Pods: kubectl-kyverno apply (Kyverno {e2e.kyverno_version(kyverno)})", theirs)):
        rows.append((label, f"{res['wall']:.2f} s wall, {res['cpu']:.2f} s CPU, {res['rss_mib']:.0f} MiB, "
                            f"exit {res['code']}"))
    rows.append(("outcomes", agreement))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default="2000,5000", help="comma-separated Pod counts")
    parser.add_argument("--inputs", default=",".join(INPUTS), help="yaml (-r manifest), state (--state JSON)")
    parser.add_argument("--formats", default="table,json", help=f"-o formats, of {','.join(FORMATS)}")
    parser.add_argument("--policies", type=int, default=24, help="corpus ValidatingPolicies that select Pods")
    parser.add_argument("--kyverno-pods", type=int, default=1000, help="Pods of the Kyverno CLI row (0: none)")
    parser.add_argument("--jobs", help="pass --jobs N to eval (default: the command's own)")
    parser.add_argument("--keep", help="write the inputs and outputs here and keep them")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of bare engine and commands, interleaved; the smallest time of each side")
    args = parser.parse_args()
    if not e2e.CORPUS.is_dir():
        sys.exit(f"corpus not found at {e2e.CORPUS}")
    sizes = [int(n) for n in args.pods.split(",") if n]
    inputs = [i for i in args.inputs.split(",") if i]
    formats = [f for f in args.formats.split(",") if f]
    if bad := [i for i in inputs if i not in INPUTS] + [f for f in formats if f not in FORMATS]:
        sys.exit(f"unknown input or format: {', '.join(bad)}")
    work = Path(args.keep or tempfile.mkdtemp(prefix="kyrec-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    e2e.prepare_child_env(work)
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min), {os.cpu_count()} cores, "
          f"python {sys.version.split()[0]}", flush=True)
    files = e2e.pod_policy_files(args.policies)
    print(f"{len(files)} corpus ValidatingPolicies that select Pods", flush=True)
    measured = []
    for pods in sizes:
        measured += bench_size(work, files, pods, inputs, formats, args.jobs, max(1, args.repeat), bool(args.keep))
    kyverno_rows = bench_kyverno(work, files, args.kyverno_pods, args.jobs) if args.kyverno_pods else []
    print()
    print(e2e.table([HEADER, *(row(r) for r in measured)]))
    slope_rows = slopes(measured)
    if len(slope_rows) > 1:
        print()
        print(e2e.table(slope_rows))
    for label, text in kyverno_rows:
        print(f"{label}: {text}")
    load = os.getloadavg()
    print(f"\nbench process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB "
          f"(the floor under every child's figure); load at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
