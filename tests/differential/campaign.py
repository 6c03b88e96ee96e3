"""The differential campaign: corpus validating policies x their resources and seeded variants, through the
Kyverno CLI and through `kubectl kyrec eval`, compared per (policy, rule, resource).

    KYVERNO_BIN_DIR=/path/to/dir python tests/differential/campaign.py [--variants 24] [--seed 1]
        [--limit N] [--jobs 2] [--record testdata/differential/golden.json.xz] [--work DIR]

`KYVERNO_BIN_DIR` holds a `kubectl-kyverno` built from Kyverno's repository (outside this project; see
docs/compatibility.md "Differential testing against the Kyverno CLI"). For each policy file the CLI runs once
on all of its resources (`apply POLICY --resource FILE --policy-report --output-format json`), kyrec once
(`eval -p POLICY -r FILE -o json`, in this process). `--record` writes the inputs (corpus path + the resources,
base and variants) and Kyverno's rows as the golden set tests/differential/test_replay.py replays without
Kyverno; without it the campaign prints its figures and the disagreements by class.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import lzma
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.differential.compare import classify, compare, pair_of, run_kyrec  # noqa: E402
from tests.differential.harness import (  # noqa: E402
    Answer,
    dump_yaml,
    kyverno_answer,
    load_yaml,
    make_variants,
    select_cases,
)

CORPUS = ROOT.parent / "shared" / "corpus"


def kyverno_bin() -> Path:
    directory = os.environ.get("KYVERNO_BIN_DIR")
    if not directory:
        sys.exit("KYVERNO_BIN_DIR is not set: it must name the directory holding a built kubectl-kyverno")
    exe = Path(directory) / "kubectl-kyverno"
    if not exe.is_file():
        sys.exit(f"{exe} does not exist")
    return exe


def kyverno_version(exe: Path) -> str:
    out = subprocess.run([str(exe), "version"], capture_output=True, text=True, check=False).stdout
    return " ".join(out.split())


def _limit_memory() -> None:
    # a runaway CLI (see harness.policy_strings) must fail alone, not take the machine's memory from others
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


MEMORY_LIMIT = 4 << 30


def run_kyverno(exe: Path, policy: Path, resources: Path) -> tuple[Answer, str]:
    try:
        proc = subprocess.run([str(exe), "apply", str(policy), "--resource", str(resources), "--policy-report",
                               "--output-format", "json", "--remove-color",
                               # one resource the CLI cannot map (a removed apiVersion) must not end the batch
                               "--continue-on-fail"],
                              capture_output=True, text=True, check=False, timeout=300, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        return {}, "kyverno: timed out"
    if proc.returncode not in (0, 1):
        return {}, f"kyverno: exit {proc.returncode}: {proc.stderr[:500]}"
    return kyverno_answer(proc.stdout), (proc.stderr + proc.stdout)[-2000:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=24, help="variants per policy, beside its own resources")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, help="only the first N policies")
    parser.add_argument("--only", help="only policies whose corpus path contains this")
    parser.add_argument("--jobs", type=int, default=2, help="Kyverno CLI processes at a time")
    parser.add_argument("--record", help="write the golden set here (.json.xz)")
    parser.add_argument("--work", help="keep the generated resource files here")
    parser.add_argument("--now", default="2026-11-29T00:00:00Z")
    parser.add_argument("--kyverno-commit", default="",
                        help="the commit the CLI was built from (a build without VCS data cannot say it)")
    parser.add_argument("--show", type=int, default=3, help="examples printed per disagreement class")
    args = parser.parse_args()
    exe = kyverno_bin()
    version = kyverno_version(exe)
    print(f"kyverno: {version}", flush=True)
    cases = select_cases(CORPUS)
    if args.only:
        cases = [c for c in cases if args.only in c.policy]
    if args.limit:
        cases = cases[:args.limit]
    work = Path(args.work or tempfile.mkdtemp(prefix="kyrec-differential-"))
    work.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for i, case in enumerate(cases):
        case.resources = make_variants(case, load_yaml(CORPUS / case.policy), len(case.base) + args.variants,
                                       args.seed)
        path = work / f"{i:04d}.yaml"
        path.write_text(dump_yaml(case.resources))
        files.append(path)
    print(f"{len(cases)} policies, {sum(len(c.resources) for c in cases)} resources", flush=True)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        answers = list(pool.map(lambda i: run_kyverno(exe, CORPUS / cases[i].policy, files[i]), range(len(cases))))
    print(f"kyverno: {time.perf_counter() - start:.0f} s", flush=True)
    start = time.perf_counter()
    totals: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    recorded: list[dict[str, Any]] = []
    for i, case in enumerate(cases):
        theirs, log = answers[i]
        ours, errors = run_kyrec(CORPUS / case.policy, files[i], args.now)
        result = compare(theirs, ours, case.resources)
        totals["policies with rows"] += bool(theirs or ours)
        totals["pairs"] += len(result.pairs)
        totals["rows"] += len(result.rows)
        totals["agree"] += len(result.rows) - len(result.disagree)
        totals["pairs agreeing"] += len(result.pairs - {pair_of(k) for k in result.disagree})
        if not theirs:
            totals["policies with no kyverno row"] += 1
        for key in result.disagree:
            cls = classify(key, result)
            classes[cls] += 1
            shown = examples.setdefault(cls, [])
            if len(shown) < args.show:
                shown.append(f"{case.policy} {key[1:]}\n      kyverno {result.theirs.get(key)}\n"
                             f"      kyrec   {result.ours.get(key)}")
        if errors:
            totals["policies with kyrec errors"] += 1
        recorded.append({"policy": case.policy, "resources": case.resources,
                         "kyverno": [[*k, *v] for k, v in sorted(theirs.items())]})
        if not theirs and not ours and "no resources" not in log:
            examples.setdefault("(no rows on either side)", []).append(f"{case.policy}: {log[-300:]}")
    print(f"kyrec: {time.perf_counter() - start:.0f} s", flush=True)
    for k, v in totals.items():
        print(f"{k}: {v}")
    for cls, n in classes.most_common():
        print(f"\n{n:6d}  {cls}")
        for e in examples.get(cls, []):
            print("    " + e)
    for e in examples.get("(no rows on either side)", [])[:20]:
        print("  no rows: " + e)
    if args.record:
        data = {"kyverno": version, "kyvernoCommit": args.kyverno_commit, "seed": args.seed,
                "variants": args.variants, "now": args.now,
                "cases": recorded}
        with lzma.open(args.record, "wt", preset=9) as fh:
            json.dump(data, fh, separators=(",", ":"), sort_keys=True)
        print(f"recorded {args.record}: {Path(args.record).stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
