"""The pattern split of classic generate (evaluate/classic/generate_objects.py _split_pattern): a rule's
GeneratePattern is substituted per trigger, and only its fields that hold a variable go through substitution.
These tests fail if a field with a variable anywhere inside it (nested, in a list, in a key) were taken as constant, if
a `$(...)` reference lost the sibling field it points at, or if the constant fields ended up shared between
downstreams or with the policy."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from kubectl_kyrec.classic import core_adapter
from kubectl_kyrec.evaluate.classic.generate_objects import ClassicGenerateRule
from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document

NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)

# one rule per place a variable can hide, each rule's only variable in its `data` sits there, so a split
# that looked only at the surface of a field would take that `data` as constant
POLICY = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: split}
spec:
  rules:
  - name: nested
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: nested
      namespace: shared
      data:
        metadata: {labels: {fixed: "yes"}}
        data:
          plain: constant
          deep: {deeper: {owner: "{{request.object.metadata.name}}"}}
  - name: in-list
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: in-list
      namespace: shared
      data:
        spec:
          podSelector: {matchLabels: {app: web}}
          policyTypes: [Ingress]
          ingress:
          - from:
            - namespaceSelector: {matchLabels: {team: "{{request.object.metadata.labels.team}}"}}
  - name: in-key
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: in-key
      namespace: shared
      data:
        data:
          "{{request.object.metadata.name}}.conf": "enabled"
  - name: constant
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: "per-{{request.object.metadata.name}}"
      namespace: shared
      data:
        metadata: {annotations: {note: "same for all"}}
        data: {mode: strict, levels: [low, high]}
  - name: reference
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: ref-target
      namespace: shared
      data:
        data: {named: "$(/name)"}
"""

TRIGGERS = """
apiVersion: v1
kind: Namespace
metadata: {name: blue, uid: uid-blue, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: green, uid: uid-green, labels: {team: b}}
"""


@pytest.fixture
def substituted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A copy of every document classic generate hands to SubstituteAll."""
    seen: list[Any] = []
    original = core_adapter.Core.substitute

    def record(self: core_adapter.Core, ctx: Any, value: Any) -> Any:
        seen.append(copy.deepcopy(value))
        return original(self, ctx, value)

    monkeypatch.setattr(core_adapter.Core, "substitute", record)
    return seen


def _generate(policy_docs: list[Document] | None = None) -> tuple[list[Document], dict[tuple[str, str], Any]]:
    docs = policy_docs if policy_docs is not None else documents_from_text(POLICY, "policy.yaml")
    triggers = documents_from_text(TRIGGERS, "triggers.yaml")
    out = run_classic_generate(classify(docs).classic, triggers, [], kinds=KindTable(),
                               options=GenerateOptions(now=NOW, user_info_known=True))
    by: dict[tuple[str, str], Any] = {}
    for o in out.outcomes:
        assert o.status is TriggerStatus.GENERATED, o.message
        assert isinstance(o.policy, ClassicGenerateRule)
        (obj,) = o.objects
        by[(o.policy.rule_name, o.trigger.ref.name)] = obj
    return docs, by


def test_a_variable_nested_in_a_list_or_in_a_key_is_substituted() -> None:
    _, by = _generate()
    assert by[("nested", "blue")]["data"] == {"plain": "constant", "deep": {"deeper": {"owner": "blue"}}}
    assert by[("nested", "green")]["data"]["deep"]["deeper"]["owner"] == "green"
    assert by[("in-list", "blue")]["spec"]["ingress"] == [
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]
    assert by[("in-list", "green")]["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "team": "b"}
    assert by[("in-key", "blue")]["data"] == {"blue.conf": "enabled"}
    assert by[("in-key", "green")]["data"] == {"green.conf": "enabled"}


def test_only_fields_holding_a_variable_go_through_substitution(substituted: list[Any]) -> None:
    _generate()
    fields = sorted({tuple(sorted(doc)) for doc in substituted if isinstance(doc, dict)})
    # per rule: `nested`, `in-list` and `in-key` hold a variable only in `data`; `constant` only in `name`;
    # `reference` has a `$(...)`, which may point at any field, so every field goes
    assert fields == [("apiVersion", "data", "kind", "name", "namespace"), ("data",), ("name",)]
    # the `constant` rule's data never reaches substitution, for either trigger
    assert not any(doc.get("data") == {"metadata": {"annotations": {"note": "same for all"}},
                                       "data": {"mode": "strict", "levels": ["low", "high"]}}
                   for doc in substituted if isinstance(doc, dict))
    assert sum(1 for doc in substituted if isinstance(doc, dict) and sorted(doc) == ["name"]) == 2


def test_a_reference_reads_a_sibling_field_that_holds_no_marker() -> None:
    _, by = _generate()
    assert by[("reference", "blue")]["data"] == by[("reference", "green")]["data"] == {"named": "ref-target"}


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict | list):
        yield value
        for v in value.values() if isinstance(value, dict) else value:
            yield from _containers(v)


def test_constant_fields_are_copied_for_every_downstream_and_the_policy_is_untouched() -> None:
    docs, by = _generate()
    before = copy.deepcopy([d.obj for d in docs])
    blue, green = by[("constant", "blue")], by[("constant", "green")]
    assert blue["data"] == green["data"] == {"mode": "strict", "levels": ["low", "high"]}
    assert blue["metadata"]["annotations"] == {"note": "same for all"}
    # no map or list is shared between two downstreams, or between a downstream and the policy
    policy_ids = {id(c) for d in docs for c in _containers(d.obj)}
    seen: set[int] = set()
    for obj in by.values():
        ids = {id(c) for c in _containers(obj)}
        assert not ids & seen and not ids & policy_ids
        seen |= ids
    # so writing into one downstream (as apply or a later stage may) changes nothing else
    blue["data"]["levels"].append("extra")
    blue["metadata"]["annotations"]["note"] = "changed"
    by[("nested", "blue")]["data"]["plain"] = "changed"
    assert green["data"]["levels"] == ["low", "high"]
    assert green["metadata"]["annotations"] == {"note": "same for all"}
    assert by[("nested", "green")]["data"]["plain"] == "constant"
    assert [d.obj for d in docs] == before
    # and a second run over the same policy objects (the split is remembered per pattern) still gives
    # the policy's values, not the ones written above
    _, again = _generate(docs)
    assert again[("constant", "blue")]["data"] == {"mode": "strict", "levels": ["low", "high"]}
    assert again[("nested", "blue")]["data"]["plain"] == "constant"
