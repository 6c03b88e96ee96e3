"""-n narrows the subjects evaluated, not the cluster: a Namespace among the -r documents labels its namespace
for `eval -n` as for `eval` and `explain` (run/select.py with_namespaces_left_out, the one rule both use).
Before, `eval -n team` evaluated the Pods of team against a namespace without the -r Namespace's labels, so a
ValidatingPolicy selecting that namespace by label matched nothing, while `eval` and `explain -n team` failed
the Pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.consistency.test_explain_pairs import kyrec

POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: prod-only
spec:
  matchConstraints:
    namespaceSelector:
      matchLabels:
        env: prod
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "false"
    message: denied in prod
"""
RESOURCES = """\
apiVersion: v1
kind: Namespace
metadata:
  name: team
  labels:
    env: prod
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: team
spec:
  containers:
  - name: c
    image: nginx
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: other
spec:
  containers:
  - name: c
    image: nginx
"""
NOW = ("--now", "2026-01-01T00:00:00Z")


def _rows(document: dict[str, object], key: str) -> list[tuple[str, str, str]]:
    rows = document[key]
    assert isinstance(rows, list)
    return sorted((r["policy"], r["subject"]["namespace"], r["result"]) for r in rows)


@pytest.mark.parametrize("narrowed", [(), ("-n", "team")])
def test_a_namespace_among_the_resources_labels_it_under_n(tmp_path: Path, narrowed: tuple[str, ...]) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "r.yaml").write_text(RESOURCES)
    args = ("-p", str(tmp_path / "p.yaml"), "-r", str(tmp_path / "r.yaml"), *NOW, *narrowed, "-o", "json")
    code, evaluated = kyrec("eval", *args)
    assert code == 1
    fails = [("prod-only", "team", "fail")]
    assert _rows(evaluated, "results") == fails
    _, explained = kyrec("explain", *args)
    assert sorted((e["policy"], e["subject"]["namespace"], r["result"]) for e in explained["explanations"]
                  for r in e["results"]) == fails
