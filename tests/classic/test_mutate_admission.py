"""ClassicMutator.mutate: the object after Kyverno's mutating webhook (evaluate/classic/mutator.py).

Policies of one failurePolicy and scope come in Go map order: when their order changes the object, the
step says ORDER_DEPENDENT; the Ignore webhook's policies run before the Fail webhook's; within a policy each
rule patches the previous rule's output and reads it as request.object, while a later policy's first rule
still reads the request's object (the JSON context is restored after each policy)."""

from __future__ import annotations

import datetime
from typing import Any

from kubectl_kyrec.classic.context_loader import ContextSources
from kubectl_kyrec.evaluate.admission_chain import ORDER_DEPENDENT
from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext, make_subject
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable

NOW = datetime.datetime(2026, 8, 1, tzinfo=datetime.UTC)
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "a"}},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _policy(name: str, rules: str, failure: str = "Fail", extra: str = "") -> str:
    return f"""apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: {name}
spec:
  failurePolicy: {failure}
{extra}  rules:
{rules}
---
"""


def _rule(name: str, patch: str) -> str:
    return f"""  - name: {name}
    match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}
    mutate:
      patchStrategicMerge:
{patch}
"""


def _step(text: str, obj: dict[str, Any] = POD) -> Any:
    policies = classify(documents_from_text(text, "policies.yaml")).raise_errors().classic
    mutator = ClassicMutator(policies, [], state=[], now=NOW, sources=ContextSources())
    subject, _ = make_subject(obj, None, KindTable())
    request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced)
    return mutator.mutate(SubjectContext(subject, request, None))


def _labels(step: Any) -> dict[str, str]:
    return dict(step.obj["metadata"]["labels"])


def test_policies_that_commute_give_one_object() -> None:
    step = _step(_policy("a", _rule("r", "        metadata: {labels: {x: '1'}}"))
                 + _policy("b", _rule("r", "        metadata: {labels: {z: '2'}}")))
    assert step.undetermined == []
    assert _labels(step) == {"app": "a", "x": "1", "z": "2"}
    assert [(m.policy, m.rule) for m in step.mutations] == [("a", "r"), ("b", "r")]
    assert [(r.policy, r.rule, r.result, r.message) for r in step.results] == [
        ("a", "r", "pass", "mutated Pod/p in namespace ns"), ("b", "r", "pass", "mutated Pod/p in namespace ns")]
    assert step.mutations[0].patch == ({"op": "add", "path": "/metadata/labels/x", "value": "1"},)


def test_policies_whose_order_matters_are_order_dependent() -> None:
    step = _step(_policy("a", _rule("r", "        metadata: {labels: {x: '1'}}"))
                 + _policy("b", _rule("r", "        metadata: {labels: {x: '2'}}")))
    assert len(step.undetermined) == 1 and step.undetermined[0].startswith(ORDER_DEPENDENT)
    assert "a, b" in step.undetermined[0]


def test_the_ignore_webhook_runs_before_the_fail_one() -> None:
    # b (Ignore) runs first: its (x) condition fails on the request's object, although `a` sets x later
    step = _step(_policy("a", _rule("r", "        metadata: {labels: {x: '1'}}"))
                 + _policy("b", _rule("r", "        metadata: {labels: {(x): '1', z: seen}}"), failure="Ignore"))
    assert step.undetermined == []
    assert _labels(step) == {"app": "a", "x": "1"}
    assert [(r.policy, r.result) for r in step.results] == [("b", "skip"), ("a", "pass")]


def test_rules_chain_within_a_policy_and_read_the_patched_object() -> None:
    rules = (_rule("first", "        metadata: {labels: {x: '1'}}")
             + _rule("second", "        metadata: {annotations: {copy: '{{ request.object.metadata.labels.x }}'}}"))
    step = _step(_policy("a", rules))
    assert step.obj["metadata"]["annotations"] == {"copy": "1"}
    assert [m.rule for m in step.mutations] == ["first", "second"]


def test_a_later_policy_reads_the_requests_object_until_one_of_its_rules_ran() -> None:
    # one webhook call: `b` patches a's output, but its first rule reads the request's object (the JSON
    # context is restored after each policy) and its second rule reads what its first made
    x = "\"{{ request.object.metadata.labels.x || 'none' }}\""
    rules = (_rule("first", f"        metadata: {{annotations: {{before: {x}}}}}")
             + _rule("second", f"        metadata: {{annotations: {{after: {x}}}}}"))
    step = _step(_policy("a", _rule("r", "        metadata: {labels: {x: '1'}}")) + _policy("b", rules))
    # b before a would give before=none, after=none: two outcomes
    assert len(step.undetermined) == 1 and step.undetermined[0].startswith(ORDER_DEPENDENT)
    assert step.obj["metadata"]["labels"]["x"] == "1"
    assert step.obj["metadata"]["annotations"] == {"before": "none", "after": "1"}


def test_each_webhook_call_reads_the_object_the_previous_one_admitted() -> None:
    # the Ignore and Fail webhooks are two calls: the second's request.object is the first's output
    rule = _rule("r", "        metadata: {annotations: {seen: \"{{ request.object.metadata.labels.x || 'none' }}\"}}")
    step = _step(_policy("a", _rule("r", "        metadata: {labels: {x: '1'}}"), failure="Ignore")
                 + _policy("b", rule))
    assert step.undetermined == []
    assert step.obj["metadata"]["annotations"] == {"seen": "1"}


def test_apply_rules_one_stops_after_the_first_rule_that_applied() -> None:
    rules = (_rule("noop", "        metadata: {labels: {app: a}}")
             + _rule("first", "        metadata: {labels: {x: '1'}}")
             + _rule("second", "        metadata: {labels: {z: '2'}}"))
    step = _step(_policy("a", rules, extra="  applyRules: One\n"))
    assert _labels(step) == {"app": "a", "x": "1"}
    assert [(r.rule, r.result) for r in step.results] == [("noop", "skip"), ("first", "pass")]


def test_a_policy_ending_in_an_error_leaves_the_object_unknown() -> None:
    broken = """  - name: bad
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchesJson6902: |-
        - op: replace
          path: /spec/missing/field
          value: 1
"""
    step = _step(_policy("a", broken))
    assert [(r.rule, r.result) for r in step.results] == [("bad", "error")]
    assert step.mutations == [] and len(step.undetermined) == 1 and "a" in step.undetermined[0]


def test_mutate_existing_rules_do_nothing_at_admission() -> None:
    rule = """  - name: existing
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      targets:
      - {apiVersion: v1, kind: ConfigMap, name: cm, namespace: ns}
      patchStrategicMerge:
        metadata: {labels: {x: '1'}}
"""
    step = _step(_policy("a", rule))
    assert step.results == [] and step.obj == POD
