"""ImageValidatingPolicy results against Kyverno v1.17.2's own (testdata/eval/ivpol-offline/kyverno-v1.17.2.yaml,
its CLI's policy report over the same files): policies whose answers need no registry, an exception's skip
(with Kyverno's empty exception key), autogen on a Deployment, errors and a failure with its auditAnnotation."""

from __future__ import annotations

import datetime
from pathlib import Path

import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable

CASE = Path(__file__).resolve().parents[2] / "testdata" / "eval" / "ivpol-offline"
NOW = datetime.datetime(2026, 12, 4, tzinfo=datetime.timezone.utc)


def test_kyrec_gives_kyvernos_results() -> None:
    policies = classify(load_documents([str(CASE / "policies.yaml"), str(CASE / "exceptions.yaml")])).raise_errors()
    resources = load_documents([str(CASE / "resources.yaml")])
    outcome = run_eval(policies, resources, resources, kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                       options=EvalOptions(now=NOW))
    assert not outcome.errors
    ours = sorted((r.policy, r.subject.kind, r.subject.name, r.rule, r.result, r.message, dict(r.properties))
                  for r in outcome.results)
    report = yaml.safe_load((CASE / "kyverno-v1.17.2.yaml").read_text())
    theirs = sorted((r["policy"], r["resources"][0]["kind"], r["resources"][0]["name"], r["rule"], r["result"],
                     r["message"], r.get("properties") or {}) for r in report["results"])
    assert ours == theirs
