"""Results of many subjects share their equal parts (evaluate/validating/engine.py make_result): a run holds its
results until they are written, so one properties mapping and one message text per distinct value, not
one per result (issue 36: the memory of a large run)."""

from __future__ import annotations

import datetime
import sys

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Result, Source

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)

POLICY = """
apiVersion: policies.kyverno.io/v1alpha1
kind: ValidatingPolicy
metadata:
  name: needs-team
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    messageExpression: "'a Pod needs the label ' + 'team'"
  - expression: "object.spec.containers.all(c, c.image.endsWith(':' + object.metadata.annotations['tag']))"
"""


def _pods(count: int) -> list[Document]:
    # text made at run time: equal contents, distinct objects, as the engine hands them out
    return [Document({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"p{i}", "namespace": "default",
                                   **({"labels": {"team": "".join(["a", "b"])}} if i % 2 else {})},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                     Source("pods.yaml", i + 1)) for i in range(count)]


def _results(count: int) -> list[Result]:
    policies = classify(documents_from_text(POLICY, "policy.yaml"))
    libraries = library_factory(LibraryContext(now=NOW, provider=EmptyProvider()))
    outcome = run_eval(policies, _pods(count), [], kinds=KindTable(), libraries=libraries,
                       options=EvalOptions(now=NOW))
    assert len(outcome.results) == count and not outcome.errors
    return outcome.results


def test_equal_properties_and_messages_are_one_object() -> None:
    results = _results(6)
    fails = [r for r in results if r.result == "fail"]
    errors = [r for r in results if r.result == "error"]
    # even Pods fail the first validation (its messageExpression), odd ones err on the missing annotation
    assert len(fails) == 3 and len(errors) == 3
    assert fails[0].message == "a Pod needs the label team"
    assert dict(fails[0].properties) == {"process": "background scan", "cel.validationIndex": "0"}
    assert dict(errors[0].properties) == {"process": "background scan", "cel.validationIndex": "1"}
    for group in (fails, errors):
        assert len({id(r.properties) for r in group}) == 1
        assert len({id(r.message) for r in group}) == 1
    # the shared mapping is never one of another value: the two indexes stay two mappings
    assert fails[0].properties is not errors[0].properties


def test_sharing_is_bounded() -> None:
    import kubectl_kyrec.evaluate.validating.engine as validating

    _results(4)
    assert 0 < len(validating._SHARED_TEXT) <= validating._SHARED_MAX
    assert len(validating._SHARED_PROPERTIES) <= validating._SHARED_MAX
    assert sys.getsizeof(validating._SHARED_TEXT) < 1 << 20
