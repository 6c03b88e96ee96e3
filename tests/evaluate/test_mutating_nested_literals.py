"""A CEL map or list literal inside a plain map or list below a typed literal, in an ApplyConfiguration.

Kubernetes' patcher converts an `Object` field's map or list one level deep only (k8s.io/apiserver
pkg/cel/mutation/dynamic/objects.go convertField), so a nested literal reaches structured-merge-diff as a
`map[ref.Val]ref.Val` and the typed conversion refuses it (patch/smd.go ApplyStructuredMergeDiff). Measured
with Kyverno's CLI v1.17.2 (f64c0f58), each case below: the error texts are the CLI's, after its
`failed to evaluate policy: ` prefix. A map read from the request converts (`n1` below: the CLI applies it);
kyrec's decoded value cannot tell it from a literal, so there the outcome is undetermined, never a guess.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.cel.typed_objects import builds_only_literals, rewrite_typed_literals
from kubectl_kyrec.evaluate.mutating_admission.engine import mutating_admission_engine
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.model import Document, Source
from tests.evaluate.test_mutating import NOW, POD, _apply, _ctx, _engine, _policy

_PREFIX = "failed to evaluate policy: error applying patch: failed to convert patch object to typed object: "

# expression -> the error Kyverno's CLI gives (None: it applies the patch)
CASES: dict[str, str | None] = {
    # plain1: a map in a map below the root
    "Object{metadata: {'labels': {'x': 'y'}}}": ".metadata.labels: expected map, got &{map[x:y]}",
    # an empty one too
    "Object{metadata: {'labels': {}}}": ".metadata.labels: expected map, got &{map[]}",
    # plain2b: a struct's map under a plain map
    "Object{spec: {'securityContext': {'runAsNonRoot': true}}}":
        ".spec.securityContext: expected map, got &{map[runAsNonRoot:true]}",
    # a list in a map
    "Object{metadata: {'finalizers': ['a', 'b']}}": ".metadata.finalizers: expected list, got &{[a b]}",
    # a map in an atomic list under a typed literal
    "Object{spec: Object.spec{tolerations: [{'key': 'a'}]}}": ".spec.tolerations[0]: expected map, got &{map[key:a]}",
    # a map in a keyed list (containers by name)
    "Object{spec: Object.spec{containers: [{'name': 'c', 'image': 'x'}]}}":
        ".spec.containers: element 0: associative list with keys may not have non-map elements",
    # applied: one level of plain map below a typed literal, typed literals all the way
    "Object{metadata: Object.metadata{labels: {'x': 'y'}}}": None,
    "Object{spec: Object.spec{securityContext: {'runAsNonRoot': true}}}": None,
    "Object{spec: Object.spec{securityContext: Object.spec.securityContext{runAsNonRoot: true}}}": None,
}


@pytest.mark.parametrize("expression", list(CASES))
def test_a_nested_literal_is_refused_as_the_patcher_refuses_it(expression: str) -> None:
    step = _engine(_policy("p", [_apply(expression)])).mutate(_ctx())
    [result] = step.results
    expected = CASES[expression]
    if expected is None:
        assert result.result == "pass", result.message
        assert step.obj != POD
    else:
        assert (result.result, result.message) == ("error", _PREFIX + expected)
        assert step.obj == POD
    assert not step.undetermined


def test_a_map_read_from_the_request_inside_a_map_is_undetermined_not_refused() -> None:
    # Kyverno's CLI applies it (the labels are a Go map[string]any); a literal in the same place is refused
    pod = {**POD, "metadata": {**POD["metadata"], "labels": {"a": "b"}}}
    step = _engine(_policy("p", [_apply("Object{metadata: {'labels': object.metadata.labels}}")])).mutate(_ctx(pod))
    assert not step.results
    assert len(step.undetermined) == 1 and "metadata.labels" in step.undetermined[0]
    assert "read it from the request" in step.undetermined[0]


@pytest.mark.parametrize(("expression", "literal"), [
    ("Object{metadata: {'labels': {'x': 'y'}}}", True),
    ("Object{spec: {'a': [1, 2.5e3, size('xy')]}}", True),
    ("Object{metadata: {'labels': object.metadata.labels}}", False),
    ("Object{metadata: {'labels': variables.l}}", False),
    ("Object{metadata: {'labels': {'x': 'object'}}}", True),          # a string, not a read
    ("Object{metadata: {'labels': [1].map(x, {'a': 'b'})[0]}}", False),  # conservative: a macro's variable
])
def test_only_an_expression_of_literals_counts_as_literal(expression: str, literal: bool) -> None:
    assert builds_only_literals(rewrite_typed_literals(expression)) is literal


def test_a_mutating_admission_policy_on_the_admission_path_refuses_it_too() -> None:
    # the API server's patcher is the same code (smd.go), with the kind's schema
    policy = {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
              "metadata": {"name": "m"},
              "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                       "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["CREATE"], "resources": ["pods"]}]},
                       "mutations": [_apply("Object{metadata: {'labels': {'x': 'y'}}}")]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": "m"}, "spec": {"policyName": "m"}}
    docs: list[Any] = [Document(policy, Source("m.yaml", 1)), Document(binding, Source("m.yaml", 20))]
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    engine, errors = mutating_admission_engine(classify(docs), envs)
    assert not errors
    step = engine.mutate(_ctx())
    [result] = step.results
    assert result.result == "error"
    assert result.message.endswith(".metadata.labels: expected map, got &{map[x:y]}")
    assert step.obj == POD
