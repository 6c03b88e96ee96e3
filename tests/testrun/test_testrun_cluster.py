"""What `resource.Get/List` see in a test: the Context file, clusterResources, paramResources."""

from __future__ import annotations

import datetime
import textwrap
from pathlib import Path

from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import run_files
from kubectl_kyrec.testsuite.suite import load_suite, parse_test_file

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: needs-quota
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: >-
      resource.List("v1", "configmaps", object.metadata.namespace,
                    {"kind": "quota"}).items.size() == 1
  - expression: >-
      resource.Get("v1", "pods", object.metadata.namespace, object.metadata.name) != null
    message: the pod itself is not in the cluster
"""

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: team}
spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: other}
spec: {containers: [{name: c, image: nginx}]}
"""

CLUSTER = """\
apiVersion: cli.kyverno.io/v1alpha1
kind: ClusterResource
metadata: {name: cluster}
spec:
  crds: [crd.yaml]
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: quota, namespace: team, labels: {kind: quota}}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: unrelated, namespace: team}
"""

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
"""


def write_suite(tmp_path: Path, cluster: bool) -> Path:
    for name, text in (("policy.yaml", POLICY), ("pods.yaml", PODS), ("cluster.yaml", CLUSTER), ("crd.yaml", CRD)):
        (tmp_path / name).write_text(text)
    test = textwrap.dedent(f"""\
        apiVersion: cli.kyverno.io/v1alpha1
        kind: Test
        metadata: {{name: cluster}}
        policies: [policy.yaml]
        resources: [pods.yaml]
        {"clusterResources: [cluster.yaml]" if cluster else ""}
        results:
        - policy: needs-quota
          isValidatingPolicy: true
          kind: Pod
          resources: [team/a]
          result: pass
        - policy: needs-quota
          isValidatingPolicy: true
          kind: Pod
          resources: [other/b]
          result: fail
        """)
    path = tmp_path / "kyverno-test.yaml"
    path.write_text(test)
    return path


def test_cluster_resources_load_their_objects_and_crds(tmp_path: Path) -> None:
    loaded = load_suite(parse_test_file(str(write_suite(tmp_path, cluster=True))))
    assert loaded.error is None
    assert [d.name for d in loaded.cluster_objects] == ["quota", "unrelated"]
    assert [c["metadata"]["name"] for c in loaded.crds] == ["widgets.example.com"]


def test_resource_list_and_get_see_the_cluster_with_selectors_honoured(tmp_path: Path) -> None:
    path = write_suite(tmp_path, cluster=True)
    (run,), errors = run_files([str(path)], now=NOW, mode=Mode.STRICT)
    assert errors == [] and run.errors == []
    assert [(r.resource, r.status, r.actual) for r in run.rows] == [
        ("team/a", "pass", "pass"),
        ("other/b", "pass", "fail"),
    ]


def test_without_cluster_resources_the_test_resources_are_not_in_the_cluster(tmp_path: Path) -> None:
    path = write_suite(tmp_path, cluster=False)
    (run,), _ = run_files([str(path)], now=NOW, mode=Mode.STRICT)
    assert [(r.resource, r.actual) for r in run.rows] == [("team/a", "fail"), ("other/b", "fail")]
