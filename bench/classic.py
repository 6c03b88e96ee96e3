"""Benchmark: the classic Pod policies of the corpus (ClusterPolicy/Policy validate rules matching Pod) x
10,000 generated Pods, through kyrec's eval pipeline.

Prints matched (Pod, policy) pairs per second, rule results per second and the result counts, for the
JMESPath/pattern policies (kyverno-policies-legacy, classic directories), the `validate.cel` policies (the
`*-cel` directories), the `validate.podSecurity` policies (pod-security/, a row of their own) and all
together.

    python bench/classic.py [--subjects 10000] [--only classic|cel|podsecurity|all]

Reads the policies from ../shared/corpus/kyverno-policies-legacy (in place).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from eval import pod_spec  # noqa: E402

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext  # noqa: E402
from kubectl_kyrec.cel.libraries import library_factory  # noqa: E402
from kubectl_kyrec.errors import InputError  # noqa: E402
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval  # noqa: E402
from kubectl_kyrec.load.documents import load_documents  # noqa: E402
from kubectl_kyrec.load.gc_pause import gc_paused  # noqa: E402
from kubectl_kyrec.load.policy.classic import ClassicPolicy  # noqa: E402
from kubectl_kyrec.load.policy.policies import PolicySet, classify  # noqa: E402
from kubectl_kyrec.load.run_inputs.kinds import KindTable  # noqa: E402
from kubectl_kyrec.model import Document, Source  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "kyverno-policies-legacy"
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)


def _matches_pod(policy: ClassicPolicy, pod_security: bool) -> bool:
    """A validate rule matching Pod: a podSecurity one when `pod_security`, any other (but manifests) if not."""
    for rule in policy.rules:
        if rule.type != "validate" or rule.validate_kind == "manifests" or \
                (rule.validate_kind == "podSecurity") != pod_security:
            continue
        match = rule.raw.get("match") or {}
        blocks = [match, *(match.get("any") or []), *(match.get("all") or [])]
        if any("Pod" in ((b or {}).get("resources") or {}).get("kinds", []) for b in blocks):
            return True
    return False


def pod_policies(kind: str) -> list[ClassicPolicy]:
    """Classic Pod policies: `cel` from the *-cel directories, `classic` from the others, `podsecurity` the
    policies with a podSecurity rule (left out of `classic`)."""
    out: list[ClassicPolicy] = []
    for directory in sorted(CORPUS.iterdir()):
        if not directory.is_dir() or (directory.name.endswith("-cel") != (kind == "cel")):
            continue
        for path in sorted(directory.rglob("*.yaml")):
            if any(part.startswith(".") for part in path.parts) or path.name == "kustomization.yaml":
                continue
            try:
                docs = load_documents([str(path)])
                out.extend(p for p in classify(docs).classic if _matches_pod(p, kind == "podsecurity"))
            except InputError:
                continue
    return out


def pods(n: int) -> list[Document]:
    import random

    rng = random.Random(11)
    out = []
    for i in range(n):
        meta = {"name": f"p-{i}", "namespace": f"ns-{i % 50}", "uid": f"00000000-0000-0000-0000-{i:012d}",
                "labels": {"app": f"app-{i}"}}
        out.append(Document({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(rng, i)},
                            Source("bench")))
    return out


def run(kind: str, subjects: list[Document]) -> None:
    kinds = ("classic", "cel", "podsecurity") if kind == "all" else (kind,)
    policies = [p for k in kinds for p in pod_policies(k)]
    policy_set = PolicySet(classic=policies)
    libraries = library_factory(LibraryContext(now=NOW, provider=EmptyProvider()))
    with gc_paused():
        start, start_cpu = time.perf_counter(), time.process_time()
        outcome = run_eval(policy_set, subjects, [], kinds=KindTable(), libraries=libraries,
                           options=EvalOptions(now=NOW))
        elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    pairs = len({(r.policy_location, r.policy, r.subject.uid) for r in outcome.results})
    counts = Counter(r.result for r in outcome.results)
    print(f"{kind:11} policies {len(policies):4}  pods {len(subjects):6}  pairs {pairs:8}  results "
          f"{len(outcome.results):8}  {elapsed:7.2f} s (CPU {cpu:7.2f} s)  {pairs / elapsed:9.0f} pairs/s  "
          f"{len(outcome.results) / elapsed:9.0f} results/s  {dict(sorted(counts.items()))}  "
          f"errors {len(outcome.errors)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--only", choices=("classic", "cel", "podsecurity", "all"))
    args = parser.parse_args()
    subjects = pods(args.subjects)
    for kind in ([args.only] if args.only else ["classic", "cel", "podsecurity", "all"]):
        run(kind, subjects)


if __name__ == "__main__":
    main()
