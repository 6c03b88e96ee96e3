"""evaluate/policy_validation.py: every problem of every policy is reported, each at its field's line, and
the policies Kyverno would refuse leave the set (the others stay)."""

from __future__ import annotations

import datetime
from pathlib import Path

from kubectl_kyrec.evaluate.policy_validation import validate_policies
from kubectl_kyrec.load.documents import load_documents_with_lines
from kubectl_kyrec.load.policy.policies import classify

NOW = datetime.datetime(2026, 12, 5, tzinfo=datetime.UTC)
PODS = """  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
"""
TEXT = ("""apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: multi
spec:
""" + PODS + """  variables:
  - name: a
    expression: "object.metadata.name +"
  - name: b
    expression: "variables.a + 'x'"
  validations:
  - expression: "object.metadata.name =="
  - expression: "variables.b == 'y'"
  - expression: "true"
    messageExpression: "'m' + "
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: classic
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "{{ nothere }}"
      deny:
        conditions:
          any:
          - key: "{{ request.object.[?? }}"
            operator: Equals
            value: x
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: fine
spec:
""" + PODS + """  validations:
  - expression: "true"
""")


def test_every_bad_expression_of_every_policy_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(TEXT)
    located = load_documents_with_lines([str(path)])
    policies = validate_policies(classify([d.document for d in located], {d.document.source: d.lines
                                                                          for d in located}), NOW)
    found = [(e.source.line if e.source else 0, e.message.split(": ")[0], e.field) for e in policies.errors]

    def line(marker: str) -> int:
        return next(i for i, text in enumerate(TEXT.splitlines(), 1) if marker in text)

    assert found == [
        (line("name +"), 'ValidatingPolicy "multi"', "spec.variables[0].expression"),
        # variables.b reads the bad variable: not reported again, nor is the validation reading b
        (line("name =="), 'ValidatingPolicy "multi"', "spec.validations[0].expression"),
        (line("'m' + "), 'ValidatingPolicy "multi"', "spec.validations[2].messageExpression"),
        (line("nothere"), 'ClusterPolicy "classic"', "spec.rules[0].validate.message"),
        (line("[??"), 'ClusterPolicy "classic"', "spec.rules[0].validate.deny.conditions.any[0].key"),
    ]
    assert [p.meta.name for p in policies.validating] == ["fine"] and policies.classic == []
