"""Benchmark: 10,000 distinct generated Deployments and Pods against every corpus ValidatingPolicy.

Prints a table: matched (subject, policy) pairs per second through kyrec's pipeline, the result counts,
peak memory, `kubectl-kyrec --help` start-up time, and the ratio of kyrec's time to the raw engine's: the
same compiled programs evaluated on one activation per subject, in this process, in the same run.

    python bench/eval.py [--subjects 10000]

Reads the policies from ../shared/corpus/kyverno-policies (in place).
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext  # noqa: E402
from kubectl_kyrec.cel.environment import Environments  # noqa: E402
from kubectl_kyrec.cel.libraries import library_factory  # noqa: E402
from kubectl_kyrec.evaluate.match import matches_constraints  # noqa: E402
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval  # noqa: E402
from kubectl_kyrec.evaluate.request import build_request  # noqa: E402
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subjects  # noqa: E402
from kubectl_kyrec.evaluate.validating.engine import compile_validating_policy  # noqa: E402
from kubectl_kyrec.expect.reports import expected_reports  # noqa: E402
from kubectl_kyrec.load.documents import load_documents  # noqa: E402
from kubectl_kyrec.load.gc_pause import gc_paused  # noqa: E402
from kubectl_kyrec.load.policy.policies import PolicySet, classify  # noqa: E402
from kubectl_kyrec.load.run_inputs.kinds import KindTable  # noqa: E402
from kubectl_kyrec.model import Document, Source  # noqa: E402

# KYREC_SHARED: the shared directory elsewhere (a git worktree has no ../shared), as tests/shared_inputs.py reads it
CORPUS = Path(os.environ.get("KYREC_SHARED") or ROOT.parent / "shared") / "corpus" / "kyverno-policies"
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
IMAGES = ["nginx:1.27", "nginx:latest", "ghcr.io/acme/api:2.1", "busybox", "registry.k8s.io/pause:3.9",
          "docker.io/library/redis:7@sha256:" + "a" * 64]


def pod_spec(rng: random.Random, i: int) -> dict:
    containers = []
    for c in range(rng.randint(1, 3)):
        container: dict = {"name": f"c{c}", "image": rng.choice(IMAGES)}
        if rng.random() < 0.6:
            container["resources"] = {"limits": {"memory": f"{rng.choice([64, 128, 512, 2048])}Mi", "cpu": "500m"},
                                      "requests": {"memory": "64Mi", "cpu": "100m"}}
        if rng.random() < 0.5:
            container["securityContext"] = {"runAsNonRoot": rng.random() < 0.7,
                                            "allowPrivilegeEscalation": rng.random() < 0.3,
                                            "capabilities": {"drop": ["ALL"]}}
        if rng.random() < 0.3:
            container["ports"] = [{"containerPort": 8000 + i % 100, "protocol": "TCP"}]
        containers.append(container)
    spec: dict = {"containers": containers}
    if rng.random() < 0.2:
        spec["hostNetwork"] = True
    if rng.random() < 0.3:
        spec["volumes"] = [{"name": "data", "emptyDir": {}}]
    return spec


def subjects(n: int) -> list[Document]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        labels = {"app": f"app-{i}"}
        if rng.random() < 0.5:
            labels["app.kubernetes.io/name"] = f"app-{i}"
        meta = {"name": f"w-{i}", "namespace": f"ns-{i % 50}", "uid": f"00000000-0000-0000-0000-{i:012d}",
                "labels": labels}
        if i % 2:
            obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(rng, i)}
        else:
            obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                   "spec": {"replicas": rng.randint(1, 5), "selector": {"matchLabels": {"app": f"app-{i}"}},
                            "template": {"metadata": {"labels": labels}, "spec": pod_spec(rng, i)}}}
        out.append(Document(obj, Source("generated", i + 1)))
    return out


def load_policies() -> PolicySet:
    files = [p for p in CORPUS.glob("*-vpol/**/*.yaml")
             if ".kyverno-test" not in p.parts and ".chainsaw-test" not in p.parts
             and p.name not in ("artifacthub-pkg.yaml", "kustomization.yaml")]
    return classify(load_documents([str(p) for p in sorted(files)]))


def startup_seconds() -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kubectl_kyrec", "--help"], check=True, capture_output=True,
                       cwd=ROOT)
        best = min(best, time.perf_counter() - start)
    return best


def raw_engine_seconds(policies: PolicySet, docs: list[Document]) -> tuple[float, int]:
    """The engine alone: the same compiled programs, one activation per subject, no kyrec bookkeeping."""
    kinds = KindTable()
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    compiled = [compile_validating_policy(p, envs, [], NOW) for p in policies.validating]
    subject_list = make_subjects(docs, kinds).subjects
    # decide the matched (subject, variant) pairs outside the timed loop
    work = []
    for s in subject_list:
        req = build_request(s.obj, resource=s.resource, namespaced=s.namespaced)
        ctx = SubjectContext(s, req, None)
        pairs = [(cp, cv) for cp in compiled for cv in cp.variants
                 if matches_constraints(cv.variant.match_constraints, req, None)]
        work.append((ctx, pairs))
    evaluated = 0
    start = time.perf_counter()
    for ctx, pairs in work:
        for cp, cv in pairs:
            activation = ctx.activation(cp.env)
            if not all(p.evaluate(activation).value is True for p in cv.conditions):
                evaluated += 1
                continue
            for v in cv.validations:
                if v.program.evaluate(activation).value is not True:
                    break
            evaluated += 1
    return time.perf_counter() - start, evaluated


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subjects", type=int, default=10_000)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")
    policies = load_policies()
    docs = subjects(args.subjects)
    libs = library_factory(LibraryContext(now=NOW, provider=EmptyProvider()))
    # both measured as the CLI runs: with the cyclic collector off (see cli/common.py)
    with gc_paused():
        start = time.perf_counter()
        outcome = run_eval(policies, docs, [], kinds=KindTable(), libraries=libs, options=EvalOptions(now=NOW))
        kyrec_s = time.perf_counter() - start
        raw_s, raw_pairs = raw_engine_seconds(policies, docs)
    counts = Counter(r.result for r in outcome.results)
    pairs = len(outcome.results)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("subjects", f"{len(docs):,}"),
        ("policies", f"{len(policies.validating)}"),
        ("matched pairs", f"{pairs:,}"),
        ("kyrec eval (compile + evaluate + reports)", f"{kyrec_s:.2f} s"),
        ("pairs / s (kyrec)", f"{pairs / kyrec_s:,.0f}"),
        ("raw engine (same programs, same pairs)", f"{raw_s:.2f} s ({raw_pairs:,} pairs)"),
        ("kyrec / raw engine", f"{kyrec_s / raw_s:.2f}x"),
        ("results pass/fail/warn/error/skip",
         "/".join(str(counts.get(k, 0)) for k in ("pass", "fail", "warn", "error", "skip"))),
        ("expected reports", f"{len(expected_reports(outcome.pairs, outcome.now, outcome.report_api)):,}"),
        ("peak RSS", f"{rss_mib:,.0f} MiB"),
        ("start-up (kubectl-kyrec --help, best of 5)", f"{startup_seconds():.3f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
