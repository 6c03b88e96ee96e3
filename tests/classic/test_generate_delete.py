"""Classic generate on a trigger's deletion (kk: webhooks/resource/generation syncTriggerAction,
webhooks/utils MatchDeleteOperation, background/common NewBackgroundContext) and a data rule without `data`."""

from __future__ import annotations

import datetime
from typing import Any

import yaml

from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.load.policy.classic import parse_classic_policy
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source

NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)

POLICY = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: lifecycle}
spec:
  rules:
  - name: on-delete
    match: {any: [{resources: {kinds: [ConfigMap], operations: [DELETE]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: "tombstone-{{request.object.metadata.name}}"
      namespace: "{{request.object.metadata.namespace}}"
      data:
        data:
          was: "{{request.object.metadata.name}}"
          old: "{{request.oldObject.metadata.name}}"
          op: "{{request.operation}}"
  - name: always
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    generate:
      synchronize: true
      apiVersion: v1
      kind: Secret
      name: "for-{{request.object.metadata.name}}"
      namespace: "{{request.object.metadata.namespace}}"
      data: {type: Opaque}
"""
TRIGGER = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app, uid: cm-1}
"""


def _run(operation: str, policy: str = POLICY, trigger: str = TRIGGER) -> Any:
    policies = classify([Document(yaml.safe_load(policy), Source("p.yaml", 1))])
    return run_classic_generate(policies.classic, [Document(yaml.safe_load(trigger), Source("t.yaml", 1))], [],
                                kinds=KindTable(),
                                options=GenerateOptions(now=NOW, operation=operation, user_info_known=True))


def test_on_delete_only_a_rule_naming_delete_generates_from_the_deleted_object() -> None:
    (o,) = _run("DELETE").outcomes
    assert o.policy.rule_name == "on-delete" and o.status is TriggerStatus.GENERATED
    (obj,) = o.objects
    assert obj["metadata"]["name"] == "tombstone-settings"
    # request.object and request.oldObject both name the deleted trigger; its uid is the trigger-uid label
    assert obj["data"] == {"was": "settings", "old": "settings", "op": "DELETE"}
    assert obj["metadata"]["labels"]["generate.kyverno.io/trigger-uid"] == "cm-1"


def test_on_create_the_delete_rule_does_not_match() -> None:
    assert [o.policy.rule_name for o in _run("CREATE").outcomes] == ["always"]


def test_matches_delete_reads_every_block() -> None:
    from kubectl_kyrec.evaluate.classic.generate_objects import matches_delete

    def rule(match: dict[str, Any]) -> Any:
        doc = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
               "spec": {"rules": [{"name": "r", "match": match, "generate": {
                   "apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y", "data": {}}}]}}
        return parse_classic_policy(Document(doc, Source("p.yaml", 1))).rules[0]

    assert matches_delete(rule({"resources": {"kinds": ["Pod"], "operations": ["DELETE"]}}))
    assert matches_delete(rule({"all": [{"resources": {"kinds": ["Pod"], "operations": ["CREATE", "DELETE"]}}]}))
    assert matches_delete(rule({"any": [{"resources": {"kinds": ["Pod"]}},
                                        {"resources": {"kinds": ["Pod"], "operations": ["DELETE"]}}]}))
    assert not matches_delete(rule({"any": [{"resources": {"kinds": ["Pod"], "operations": ["CREATE"]}}]}))
    assert not matches_delete(rule({"any": [{"resources": {"kinds": ["Pod"]}}]}))


def test_a_data_rule_without_data_writes_a_bare_object() -> None:
    policy = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: sa}
spec:
  rules:
  - name: sa
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ServiceAccount
      name: builder
      namespace: "{{request.object.metadata.name}}"
"""
    (o,) = _run("CREATE", policy, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, uid: ns-1}\n").outcomes
    (obj,) = o.objects
    assert set(obj) == {"apiVersion", "kind", "metadata"}
    assert (obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"]) == ("ServiceAccount", "builder", "team")
