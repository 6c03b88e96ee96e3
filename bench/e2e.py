"""End to end: the real `kubectl-kyrec` command, as a user runs it, beside the raw engine (issue 10).

    python bench/e2e.py [--pods 10000] [--formats json,table,...] [--keep DIR] [--skip-diff] [--skip-coverage]
                        [--jobs N] [--repeat N]

eval: the first 24 corpus ValidatingPolicies (by path) that match Pods x N generated Pods, written as the
`kubectl get pods -A -o json` List kubectl prints (4-space indent). For each output format the console
script `kubectl-kyrec` of this interpreter's environment runs as a child process: wall time, and that
child's peak RSS from `os.wait4`'s rusage. In the same run, in this process, the raw engine compiles the
same policies and evaluates the same programs on the same (Pod, policy) pairs, one activation per Pod, no
kyrec bookkeeping; each ratio is the command's time over the raw engine's compile + evaluate time, as wall
time and as CPU time (user + system: on a machine shared with other work, wall time measures the neighbours
too, CPU time much less so).

diff (bench/diff.py's 20,000-object state) and coverage (bench/coverage.py's 50,000 subjects): the same
child-process measurement, plus the share of the run's CPU time spent rendering. That share is measured by running
the same entry point (`kubectl_kyrec.cli.console:main`) in a child whose renderers are wrapped in timers
(every function of `kubectl_kyrec.render.*`, the sink, and the `to_json`/`changes_json` methods that build
documents), outermost calls only.

The children run with kyrec's bytecode compiled first (as a `pip install` leaves it; see CHILD_ENV), so no
run pays for compiling kyrec's modules where PYTHONDONTWRITEBYTECODE is set.

Kyverno CLI column (issue 24): with `KYVERNO_BIN_DIR` naming a directory that holds a `kubectl-kyverno` built
from Kyverno's repository (outside this project), `kubectl-kyverno apply POLICIES --resource PODS --policy-report
--output-format json` runs on the same Pods and policies, measured the same way (wall, CPU, peak RSS of the
child), and its outcome is checked against kyrec's: the pass and fail counts of every policy must be equal.
Kyverno's CLI reads no `List`, so it is given the same Pods as a YAML stream (`pods.yaml`). The same is done
for the classic set (bench/classic.py's ClusterPolicies whose validate rules match Pods: the JMESPath/pattern
ones and the `validate.cel` ones) on `--classic-pods` Pods, beside `kubectl kyrec eval -o json` on them.
Without `KYVERNO_BIN_DIR` the column is skipped, and the run says so.

Reads the policies from ../shared/corpus/kyverno-policies (or $KYREC_SHARED/corpus/kyverno-policies) in place;
writes its inputs to a temporary directory (or --keep DIR).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import mmap
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext  # noqa: E402
from kubectl_kyrec.cel.environment import Environments  # noqa: E402
from kubectl_kyrec.cel.libraries import library_factory  # noqa: E402
from kubectl_kyrec.evaluate.match import matches_constraints  # noqa: E402
from kubectl_kyrec.evaluate.request import build_request  # noqa: E402
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subjects  # noqa: E402
from kubectl_kyrec.evaluate.validating.engine import candidate_variants, compile_validating_policy  # noqa: E402
from kubectl_kyrec.load.documents import load_documents  # noqa: E402
from kubectl_kyrec.load.gc_pause import gc_paused  # noqa: E402
from kubectl_kyrec.load.policy.policies import classify  # noqa: E402
from kubectl_kyrec.load.run_inputs.kinds import KindTable  # noqa: E402
from kubectl_kyrec.load.run_inputs.state import load_state  # noqa: E402

# KYREC_SHARED: the shared directory elsewhere (a git worktree has no ../shared), as tests/shared_inputs.py reads it
CORPUS = Path(os.environ.get("KYREC_SHARED") or ROOT.parent / "shared") / "corpus" / "kyverno-policies"
NOW = "2026-11-29T00:00:00Z"
NOW_DT = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
FORMATS = ("json", "table", "yaml", "junit", "sarif", "reports")


def _bench_module(name: str) -> Any:
    """bench/<name>.py as a module (bench/ is not a package): its generators are reused, not copied."""
    spec = importlib.util.spec_from_file_location(f"kyrec_bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- inputs ------------------------------------------------------------------------------------------------

def pod_policy_files(count: int) -> list[Path]:
    """The first `count` corpus ValidatingPolicy files (by path) whose policy can match a Pod CREATE."""
    envs = Environments(library_factory(LibraryContext(now=NOW_DT, provider=EmptyProvider())))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    request = build_request(pod, resource="pods", namespaced=True)
    chosen = []
    for path in sorted(CORPUS.glob("*-vpol/**/*.yaml")):
        if (".kyverno-test" in path.parts or ".chainsaw-test" in path.parts
                or path.name in ("artifacthub-pkg.yaml", "kustomization.yaml")):
            continue
        policies = classify(load_documents([str(path)]))
        if len(policies.validating) != 1 or policies.admission:
            continue
        cp = compile_validating_policy(policies.validating[0], envs, [], NOW_DT)
        if candidate_variants(cp, request):
            chosen.append(path)
            if len(chosen) == count:
                break
    return chosen


def write_pods(path: Path, n: int) -> None:
    """`kubectl get pods -A -o json`: a List of Pods, 4-space indent as kubectl prints it."""
    bench_eval = _bench_module("eval")
    import random

    rng = random.Random(7)
    items = []
    for i in range(n):
        labels = {"app": f"app-{i}"}
        if rng.random() < 0.5:
            labels["app.kubernetes.io/name"] = f"app-{i}"
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"app-{i}-5d8f7c-x{i % 97:02d}", "namespace": f"ns-{i % 50}",
                                   "uid": f"00000000-0000-4000-8000-{i:012d}", "resourceVersion": str(1000 + i),
                                   "creationTimestamp": "2026-11-01T00:00:00Z", "labels": labels},
                      "spec": bench_eval.pod_spec(rng, i),
                      "status": {"phase": "Running", "podIP": f"10.1.{i // 250 % 256}.{i % 250}"}})
    with path.open("w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items,
                   "metadata": {"resourceVersion": ""}}, fh, indent=4)


# ---- the raw engine ----------------------------------------------------------------------------------------

def raw_engine_seconds(policy_files: list[Path], state: Path, *, evaluate: bool = True) -> tuple[float, float, int]:
    """Compile + evaluate with the engine alone: the same programs on the same (Pod, variant) pairs.

    The pairs are decided outside the timed part; compile and the evaluation loop are timed, as wall
    seconds and as this process's CPU seconds. `evaluate=False` stops before the evaluation loop, with
    everything else done: bench/instructions.py's `--bare` counts the loop's instructions as the difference.
    """
    policies = classify(load_documents([str(p) for p in policy_files]))
    docs = load_state([str(state)])
    with gc_paused():
        start, cpu_start = time.perf_counter(), time.process_time()
        envs = Environments(library_factory(LibraryContext(now=NOW_DT, provider=EmptyProvider())))
        compiled = [compile_validating_policy(p, envs, [], NOW_DT) for p in policies.validating]
        compile_s, compile_cpu = time.perf_counter() - start, time.process_time() - cpu_start
        work = []
        for s in make_subjects(docs, KindTable()).subjects:
            req = build_request(s.obj, resource=s.resource, namespaced=s.namespaced)
            ctx = SubjectContext(s, req, None)
            pairs = [(cp, cv) for cp in compiled for cv in cp.variants
                     if matches_constraints(cv.variant.match_constraints, req, None)]
            work.append((ctx, pairs))
        # the engine's own call on the compiled expression (`Program._expr`), not kyrec's adapter
        # (`Program.evaluate`, which converts values and maps error texts to cel-go's): that is kyrec's cost
        programs = [(ctx, [(cp.env, [p._expr for p in cv.conditions], [v.program._expr for v in cv.validations])
                           for cp, cv in pairs]) for ctx, pairs in work]
        evaluated = 0
        true = True
        start, cpu_start = time.perf_counter(), time.process_time()
        for ctx, exprs in programs if evaluate else ():
            for env, conditions, validations in exprs:
                activation = ctx.activation(env).raw        # one per Pod (and environment)
                evaluated += 1
                if not all(e.eval(activation).value() is true for e in conditions):
                    continue
                for e in validations:
                    if e.eval(activation).value() is not true:
                        break
        return (compile_s + time.perf_counter() - start, compile_cpu + time.process_time() - cpu_start,
                evaluated)


# ---- child processes ---------------------------------------------------------------------------------------

def console_script() -> str:
    found = Path(sys.executable).parent / "kubectl-kyrec"
    if found.exists():
        return str(found)
    which = shutil.which("kubectl-kyrec")
    if which is None:
        sys.exit("kubectl-kyrec not found: pip install -e . in this environment first")
    return which


# The children's environment: with kyrec's bytecode compiled, as a user's `pip install` leaves it (pip compiles
# what it installs). An editable install has none, and where PYTHONDONTWRITEBYTECODE is set (these machines)
# every run would compile kyrec's modules from source again: about 0.1 s a run that no user pays. The bytecode
# goes to a folder of this run (PYTHONPYCACHEPREFIX), not into the source tree.
CHILD_ENV: dict[str, str] | None = None


def prepare_child_env(work: Path) -> None:
    global CHILD_ENV
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kubectl_kyrec")], env=env, check=True)
    CHILD_ENV = env


def run_child(argv: list[str], out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run argv with stdout to `out`: wall seconds, CPU seconds (user + system) and peak RSS (MiB) of that
    child, its exit code and stderr."""
    err_path = out.with_suffix(out.suffix + ".stderr")
    with out.open("wb") as stdout, err_path.open("wb") as stderr:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env if env is not None else CHILD_ENV)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "code": child.returncode,
            "bytes": out.stat().st_size, "stderr": err_path.read_text(errors="replace")}


# A child running the CLI's own entry point with its renderers wrapped in timers: the rendering share.
TIMED = r"""
import functools, importlib, pkgutil, sys, time, atexit
sys.argv = ["kubectl-kyrec", *sys.argv[1:]]
import kubectl_kyrec.render as render_pkg
spent = [0.0]
depth = [0]
def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        depth[0] += 1
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                spent[0] += time.process_time() - start
    return wrapper
for info in pkgutil.iter_modules(render_pkg.__path__):
    module = importlib.import_module(f"kubectl_kyrec.render.{info.name}")
    for name, value in list(vars(module).items()):
        if callable(value) and getattr(value, "__module__", None) == module.__name__ and not isinstance(value, type) \
                and not name.startswith("_"):
            setattr(module, name, timed(value))
for modname, cls, meth in (("kubectl_kyrec.reconcile.coverage", "Coverage", "to_json"),
                           ("kubectl_kyrec.reconcile.downstreams", "DownstreamDiff", "changes_json"),
                           ("kubectl_kyrec.reconcile.reports", "ReportDiff", "changes_json")):
    try:
        klass = getattr(importlib.import_module(modname), cls)
        setattr(klass, meth, timed(getattr(klass, meth)))
    except (ImportError, AttributeError):
        pass
start = time.process_time()
atexit.register(lambda: sys.stderr.write(f"KYREC-RENDER {spent[0]:.4f} {time.process_time() - start:.4f}\n"))
from kubectl_kyrec.cli.console import main
main()
"""


def run_timed(args: list[str], out: Path) -> dict[str, Any]:
    res = run_child([sys.executable, "-c", TIMED, *args], out)
    line = [x for x in res["stderr"].splitlines() if x.startswith("KYREC-RENDER ")]
    render_s, inner_s = (float(v) for v in line[-1].split()[1:]) if line else (float("nan"), float("nan"))
    res["render_s"] = render_s
    res["inner_s"] = inner_s
    return res


# ---- the Kyverno CLI ---------------------------------------------------------------------------------------

def kyverno_exe() -> Path | None:
    """`kubectl-kyverno` of KYVERNO_BIN_DIR, or None (said once on stdout: a skipped column must be visible)."""
    directory = os.environ.get("KYVERNO_BIN_DIR")
    exe = Path(directory) / "kubectl-kyverno" if directory else None
    if exe is None or not exe.is_file():
        print(f"Kyverno CLI column: skipped ({'KYVERNO_BIN_DIR not set' if exe is None else f'no {exe}'})",
              flush=True)
        return None
    return exe


def kyverno_version(exe: Path) -> str:
    out = subprocess.run([str(exe), "version"], capture_output=True, text=True, check=False).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Version")), "?")


def write_yaml_stream(items: list[dict[str, Any]], path: Path) -> None:
    """The objects as a YAML stream, one document each (JSON is YAML): what Kyverno's CLI reads as resources."""
    with path.open("w") as fh:
        for obj in items:
            fh.write("---\n")
            json.dump(obj, fh)
            fh.write("\n")


# A result in either tool's JSON: its policy, then (before the next result) its result. Counted with a regular
# expression over the mapped file, not parsed: the classic set's report is one JSON line of about a gigabyte.
RESULT_RE = re.compile(rb'"policy":\s*"([^"]*)".*?"result":\s*"([a-z]+)"', re.DOTALL)


def outcome_counts(path: Path, stop: bytes | None = None) -> Counter[tuple[str, str]]:
    """(policy, result) -> count in a JSON output; `stop`: the counting ends where this text first occurs
    (kyrec's `-o json` repeats its results in the reports that follow them)."""
    counts: Counter[tuple[str, str]] = Counter()
    if path.stat().st_size == 0:
        return counts
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        end = data.find(stop) if stop else -1
        for m in RESULT_RE.finditer(data, 0, end if end >= 0 else len(data)):
            # a namespaced policy is `ns/name` in kyrec's results, its name in Kyverno's reports
            counts[(m.group(1).decode().split("/")[-1], m.group(2).decode())] += 1
    return counts


def compare_outcomes(kyrec: Counter[tuple[str, str]], kyverno: Counter[tuple[str, str]]) -> str:
    """"agree" when every policy has the same pass and fail counts, else the policies that differ."""
    if not kyrec or not kyverno:
        return f"NOT COMPARED: no results from {'kyrec' if not kyrec else 'Kyverno'}"
    policies = sorted({p for p, _ in kyrec} | {p for p, _ in kyverno})
    differ = [f"{p}: kyrec {kyrec[(p, 'pass')]}/{kyrec[(p, 'fail')]}, "
              f"kyverno {kyverno[(p, 'pass')]}/{kyverno[(p, 'fail')]}"
              for p in policies if any(kyrec[(p, r)] != kyverno[(p, r)] for r in ("pass", "fail"))]
    total = (f"{len(policies)} policies, pass {sum(v for (_, r), v in kyrec.items() if r == 'pass'):,} / "
             f"{sum(v for (_, r), v in kyverno.items() if r == 'pass'):,}, "
             f"fail {sum(v for (_, r), v in kyrec.items() if r == 'fail'):,} / "
             f"{sum(v for (_, r), v in kyverno.items() if r == 'fail'):,} (kyrec / kyverno)")
    return f"agree: {total}" if not differ else f"DIFFER on {len(differ)} ({total}): " + "; ".join(differ)


def run_kyverno(exe: Path, policy_files: list[Path], resources: Path, out: Path,
                repeat: int = 1) -> dict[str, Any]:
    argv = [str(exe), "apply", *map(str, policy_files), "--resource", str(resources), "--policy-report",
            "--output-format", "json", "--remove-color"]
    return best([run_child(argv, out, env=dict(os.environ)) for _ in range(repeat)])


# ---- the three measurements --------------------------------------------------------------------------------

def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the least wall time: the one the machine disturbed least (as timeit reports)."""
    return min(runs, key=lambda r: r["wall"])


def bench_eval(work: Path, pods: int, policies: int, formats: list[str], jobs: str | None = None,
               repeat: int = 1) -> list[tuple[str, ...]]:
    files = pod_policy_files(policies)
    state = work / "pods.json"
    write_pods(state, pods)
    print(f"eval: {len(files)} corpus ValidatingPolicies that match Pods x {pods:,} Pods "
          f"({state.stat().st_size / 1e6:.1f} MB state)", flush=True)
    # in a forked child: this process stays small, and a child's peak RSS (ru_maxrss) counts the memory of
    # the process it was forked from, so a large bench process would hide the command's own figure
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        raws = [pool.apply(raw_engine_seconds, (files, state)) for _ in range(repeat)]
    raw_s, raw_cpu, pairs = min(raws)
    if repeat > 1:
        print(f"raw engine runs: {', '.join(f'{r[0]:.2f}' for r in raws)} s", flush=True)
    print(f"raw engine, compile + evaluate: {raw_s:.2f} s wall, {raw_cpu:.2f} s CPU on {pairs:,} pairs",
          flush=True)
    exe = console_script()
    policy_args = [a for f in files for a in ("-p", str(f))]
    rows: list[tuple[str, ...]] = [
        ("eval -o FORMAT", "wall s", "x raw", "CPU s", "x raw CPU", "peak RSS MiB", "output MB", "exit")]
    for fmt in formats:
        argv = [exe, "eval", *policy_args, "--state", str(state), "--now", NOW, "-o", fmt,
                *(("--jobs", jobs) if jobs is not None else ())]
        res = best([run_child(argv, work / f"eval.{fmt}") for _ in range(repeat)])
        if res["code"] not in (0, 1):
            print(res["stderr"][-2000:], file=sys.stderr)
        rows.append((fmt, f"{res['wall']:.2f}", f"{res['wall'] / raw_s:.2f}x", f"{res['cpu']:.2f}",
                     f"{res['cpu'] / raw_cpu:.2f}x", f"{res['rss_mib']:.0f}", f"{res['bytes'] / 1e6:.1f}",
                     str(res["code"])))
        print("  " + "  ".join(rows[-1]), flush=True)
    rows.append(("raw engine", f"{raw_s:.2f}", "1.00x", f"{raw_cpu:.2f}", "1.00x", "", "", ""))
    kyverno = kyverno_exe()
    if kyverno is not None:
        with state.open() as fh:
            write_yaml_stream(json.load(fh)["items"], work / "pods.yaml")
        if "json" not in formats:      # kyrec's outcome, to check Kyverno's against
            run_child([exe, "eval", *policy_args, "--state", str(state), "--now", NOW, "-o", "json"],
                      work / "eval.json")
        res = run_kyverno(kyverno, files, work / "pods.yaml", work / "kyverno.eval.json", repeat)
        rows.append((f"kubectl-kyverno apply (Kyverno {kyverno_version(kyverno)})", f"{res['wall']:.2f}",
                     f"{res['wall'] / raw_s:.2f}x", f"{res['cpu']:.2f}", f"{res['cpu'] / raw_cpu:.2f}x",
                     f"{res['rss_mib']:.0f}", f"{res['bytes'] / 1e6:.1f}", str(res["code"])))
        print("  " + "  ".join(rows[-1]), flush=True)
        print("  outcomes, kyrec eval -o json vs Kyverno CLI: " + compare_outcomes(
            outcome_counts(work / "eval.json", b'"downstreams"'), outcome_counts(work / "kyverno.eval.json")),
            flush=True)
    return rows


def bench_classic(work: Path, pods: int, repeat: int = 1) -> list[tuple[str, ...]]:
    """The classic set (bench/classic.py: ClusterPolicies with a validate rule matching Pods, JMESPath/pattern
    and `validate.cel`) x `pods` Pods: `kubectl kyrec eval -o json` beside `kubectl-kyverno apply`."""
    exe = kyverno_exe()
    if exe is None:
        return []
    classic = _bench_module("classic")
    # Without a cluster, Kyverno's CLI v1.17.2 panics on a validate.cel rule with paramKind (a nil client in
    # pkg/admissionpolicy CollectParams) and answers nothing: such policies are left out for both tools
    # One file per policy name: a classic policy and its `-cel` twin often share a name, and kyrec evaluates a
    # policy named twice once (docs/compatibility.md) where the CLI runs both, so counts per name would differ
    policies = [p for kind in ("classic", "cel") for p in classic.pod_policies(kind) if p.meta.source is not None
                and not any((r.validate.get("cel") or {}).get("paramKind") for r in p.rules)]
    by_name: dict[str, Path] = {}
    for p in policies:
        by_name.setdefault(p.meta.name, Path(str(p.meta.source.file)))
    # a file holding a policy whose name another file took would bring that name in twice: left out
    files = sorted({path for path in by_name.values()
                    if all(by_name[p.meta.name] == path for p in policies if Path(str(p.meta.source.file)) == path)})
    items = [d.obj for d in classic.pods(pods)]
    state = work / "classic-pods.json"
    with state.open("w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}, fh)
    write_yaml_stream(items, work / "classic-pods.yaml")
    print(f"classic: {len(files)} corpus ClusterPolicy files x {pods:,} Pods", flush=True)
    policy_args = [a for f in files for a in ("-p", str(f))]
    argv = [console_script(), "eval", *policy_args, "--state", str(state), "--now", NOW, "-o", "json"]
    ours = best([run_child(argv, work / "classic.json") for _ in range(repeat)])
    theirs = run_kyverno(exe, files, work / "classic-pods.yaml", work / "kyverno.classic.json", repeat)
    rows: list[tuple[str, ...]] = []
    for label, res in (("kubectl kyrec eval -o json", ours),
                       (f"kubectl-kyverno apply (Kyverno {kyverno_version(exe)})", theirs)):
        rows.append((f"classic: {label}", f"{res['wall']:.2f}", f"{res['cpu']:.2f}", "", "",
                     f"{res['rss_mib']:.0f}", f"{res['bytes'] / 1e6:.1f}", str(res["code"])))
        print("  " + "  ".join(rows[-1]), flush=True)
    print("  outcomes, kyrec eval -o json vs Kyverno CLI: " + compare_outcomes(
        outcome_counts(work / "classic.json", b'"downstreams"'), outcome_counts(work / "kyverno.classic.json")),
        flush=True)
    return rows


def bench_diff(work: Path, repeat: int = 1) -> list[tuple[str, ...]]:
    bench_diff_module = _bench_module("diff")
    objects = bench_diff_module.state(2000, 10000)
    state, policy = work / "diff-state.json", work / "diff-policy.yaml"
    with state.open("w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}, fh, indent=2)
    policy.write_text(bench_diff_module.POLICY)
    print(f"diff: {len(objects):,} objects ({state.stat().st_size / 1e6:.1f} MB)", flush=True)
    rows = []
    for fmt in ("json", "table"):
        args = ["diff", "-p", str(policy), "--state", str(state), "--now", "2026-09-01T00:00:00Z", "-o", fmt]
        rows.append(_timed_row(f"diff -o {fmt}", args, work / f"diff.{fmt}", repeat))
    return rows


def bench_coverage(work: Path, subjects: int, repeat: int = 1) -> list[tuple[str, ...]]:
    import multiprocessing

    import yaml

    cov = _bench_module("coverage")
    state, policy = work / "coverage-state.json", work / "coverage-policies.yaml"
    # generated in a forked child (its memory is not this process's), the function passed as is
    child = multiprocessing.get_context("fork").Process(target=cov.generate_state, args=(subjects, state))
    child.start()
    child.join()
    if child.exitcode:
        sys.exit("coverage state generation failed")
    policy.write_text(yaml.safe_dump_all([d.obj for d in cov.policy_docs()], sort_keys=False))
    print(f"coverage: {subjects:,} subjects ({state.stat().st_size / 1e6:.1f} MB)", flush=True)
    now = cov.NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = []
    for fmt in ("json", "table"):
        args = ["coverage", "-p", str(policy), "--state", str(state), "--now", now, "-o", fmt]
        rows.append(_timed_row(f"coverage -o {fmt}", args, work / f"coverage.{fmt}", repeat))
    return rows


def _timed_row(label: str, args: list[str], out: Path, repeat: int = 1) -> tuple[str, ...]:
    res = best([run_timed(args, out) for _ in range(repeat)])
    if res["code"] not in (0, 1):
        print(res["stderr"][-2000:], file=sys.stderr)
    share = res["render_s"] / res["cpu"]
    row = (label, f"{res['wall']:.2f}", f"{res['cpu']:.2f}", f"{res['render_s']:.2f}", f"{share:.1%}",
           f"{res['rss_mib']:.0f}",
           f"{res['bytes'] / 1e6:.1f}", str(res["code"]))
    print("  " + "  ".join(row), flush=True)
    return row


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--policies", type=int, default=24, help="corpus ValidatingPolicies that match Pods")
    parser.add_argument("--subjects", type=int, default=50_000, help="coverage subjects")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--keep", help="write the inputs and outputs here and keep them")
    parser.add_argument("--skip-diff", action="store_true")
    parser.add_argument("--skip-coverage", action="store_true")
    parser.add_argument("--skip-classic", action="store_true", help="no classic-set row (Kyverno CLI column)")
    parser.add_argument("--skip-eval", action="store_true", help="no eval table (the 24 Pod policies)")
    parser.add_argument("--classic-pods", type=int, default=10_000, help="Pods of the classic-set rows")
    parser.add_argument("--jobs", help="pass --jobs N to eval (default: the command's own, one per CPU)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each measurement N times and keep the fastest (raw engine and commands alike)")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")
    work = Path(args.keep or tempfile.mkdtemp(prefix="kyrec-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    prepare_child_env(work)
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min), "
          f"{os.cpu_count()} cores, python {sys.version.split()[0]}", flush=True)
    eval_rows = [] if args.skip_eval else bench_eval(work, args.pods, args.policies,
                                                     [f for f in args.formats.split(",") if f], args.jobs, args.repeat)
    other: list[tuple[str, ...]] = [
        ("command", "wall s", "CPU s", "render s", "render share", "peak RSS MiB", "output MB", "exit")]
    if not args.skip_diff:
        other += bench_diff(work, args.repeat)
    if not args.skip_coverage:
        other += bench_coverage(work, args.subjects, args.repeat)
    if not args.skip_classic:
        other += bench_classic(work, args.classic_pods, args.repeat)
    if eval_rows:
        print()
        print(table(eval_rows))
    if len(other) > 1:
        print()
        print(table(other))
    print(f"\nbench process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; "
          f"load at the end {os.getloadavg()[0]:.2f}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
