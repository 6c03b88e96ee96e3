"""ImageValidatingPolicy results in the expected reports: the background scan runs the cluster-scoped kind
(kk: pkg/controllers/report/utils/scanner.go AsImageValidatingPolicy), labels it `ivpol.kyverno.io/<name>`
(pkg/utils/report/metadata.go PolicyLabelPrefix), and an undetermined result is never written: the
cluster's entry for it is left out of the comparison instead."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions
from kubectl_kyrec.expect.report_scope import report_scope, undetermined_pairs
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def policy(kind: str, name: str, expression: str) -> Document:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "7"}
    if kind.startswith("Namespaced"):
        meta["namespace"] = "ns"
    spec = {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                    "operations": ["CREATE"], "resources": ["pods"]}]},
            "matchImageReferences": [{"glob": "ghcr.io/*"}], "validations": [{"expression": expression}]}
    return Document({"apiVersion": "policies.kyverno.io/v1", "kind": kind, "metadata": meta, "spec": spec},
                    Source("p.yaml", 1))


def pod(name: str, image: str) -> Document:
    return Document({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                     "spec": {"containers": [{"name": "c", "image": image}]}}, Source("r.yaml", 1))


def test_scanned_reported_and_undetermined_left_out() -> None:
    policies = classify([policy("ImageValidatingPolicy", "names", "object.metadata.name == 'good'"),
                         policy("NamespacedImageValidatingPolicy", "local", "false")])
    subjects = [pod("good", "nginx"), pod("bad", "nginx"), pod("fetched", "ghcr.io/a/b:1")]
    scope = report_scope(policies, subjects, subjects, kinds=KindTable(),
                         libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                         options=EvalOptions(now=NOW))
    entries = {uid: [(e["policy"], e["rule"], e["result"], e["source"]) for e in scope.expected.entries(uid)]
               for uid in scope.expected.uids()}
    # the namespaced kind is evaluated (eval shows it) but never scanned into a report
    assert entries == {"uid-good": [("names", "names", "pass", "KyvernoImageValidatingPolicy")],
                       "uid-bad": [("names", "names", "fail", "KyvernoImageValidatingPolicy")]}
    assert {r.policy for r in scope.outcome.results} == {"names", "ns/local"}
    assert scope.policy_versions is not None and scope.policy_versions["ivpol.kyverno.io/names"] == "7"
    assert undetermined_pairs(None, scope.outcome) == {("names", "uid-fetched"), ("ns/local", "uid-fetched")}
