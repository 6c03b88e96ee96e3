"""Policies checked against the schema the cluster would use, before anything reads them.

Every policy document kyrec loads from files (-p, -r, a test's policies, --base-policy) is validated as the
API server validates it on `kubectl apply` (strict field validation): Kyverno's CRDs for its kinds (the
version matching the document's apiVersion), Kubernetes' own types for the admissionregistration.k8s.io
kinds. The data comes with the package (data/, from packaging/derive_schemas.py). A document of a version
the data does not hold is left to the parsers' own version check.

The CRDs' x-kubernetes-validations are CEL: the CEL layer (cel/schema_rules.py) hands its evaluator in as
`rules`; without one, those rules are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.schema.tables import schema_for
from kubectl_kyrec.load.schema.validate import (
    NO_FIELD,
    REQUIRED,
    UNKNOWN,
    Problem,
    RuleEvaluator,
    problems,
    type_message,
    unsupported_message,
)
from kubectl_kyrec.model import Document

# the group of the Kubernetes kinds kyrec reads (their schema: Kubernetes' OpenAPI, their decoding: Go's)
BUILTIN_GROUP = "admissionregistration.k8s.io/"

__all__ = ["NO_FIELD", "REQUIRED", "UNKNOWN", "Problem", "RuleEvaluator", "SchemaCheck", "policy_label", "problems",
           "schema_for", "type_message", "unsupported_message"]


def policy_label(kind: str, name: str) -> str:
    """`Kind "name"`, as the API server names an object it refuses: every error about a policy starts
    `file:line: Kind "name": <field>: <message>`."""
    return f'{kind} "{name}"' if name else kind


@dataclass(frozen=True)
class SchemaCheck:
    """The schema check of the file load path, with the CEL evaluator for x-kubernetes-validations."""

    rules: RuleEvaluator | None = None

    def problems(self, doc: Document) -> list[Problem]:
        schema = schema_for(doc.api_version, doc.kind)
        if schema is None:
            return []
        return problems(schema, doc.obj, self.rules, builtin=doc.api_version.startswith(BUILTIN_GROUP))

    def errors(self, doc: Document) -> list[InputError]:
        """One InputError per problem, each naming its field (PolicySet.locate finds the field's line)."""
        label = policy_label(doc.kind, doc.name)
        return [InputError(f"{label}: {p.text}", doc.source, field=p.path) for p in self.problems(doc)]
