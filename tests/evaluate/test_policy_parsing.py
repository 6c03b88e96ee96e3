"""Policy and PolicyException parsing: defaults and the shape errors Kyverno's webhook would refuse."""

from __future__ import annotations

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.policies import parse_exception
from kubectl_kyrec.model import Document, Source


def exc(spec: dict, **meta: str) -> Document:
    return Document({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
                     "metadata": {"name": "e", **meta}, "spec": spec}, Source("e.yaml", 3))


def test_defaults() -> None:
    e = parse_exception(exc({"policyRefs": [{"name": "p", "kind": "ValidatingPolicy"}]}))
    # namespaced kind applied without a namespace: `default`, as the API server puts it
    assert e.meta.namespace == "default"
    assert e.report_result == "skip"
    assert (e.images, e.allowed_values, e.expires_at) == ((), (), "")


def test_priority_label_counts_only_positive_integers() -> None:
    spec = {"policyRefs": [{"name": "p", "kind": "ValidatingPolicy"}]}
    assert parse_exception(exc(spec, namespace="x")).priority == 0
    for value, want in (("7", 7), ("0", 0), ("-3", 0), ("high", 0)):
        doc = Document({**exc(spec).obj, "metadata": {"name": "e", "labels": {"polex.kyverno.io/priority": value}}},
                       Source("e.yaml", 3))
        assert parse_exception(doc).priority == want


def test_policy_refs_are_required() -> None:
    with pytest.raises(InputError, match=r'e.yaml:3: PolicyException "e": spec.policyRefs: Required value'):
        parse_exception(exc({}))


def test_validating_policy_needs_resource_rules() -> None:
    from kubectl_kyrec.load.policy.policies import parse_validating_policy

    doc = Document({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "p"},
                    "spec": {"validations": [{"expression": "true"}]}}, Source("p.yaml", 1))
    # Kyverno's policy webhook refuses it; JSON-mode policies take no matchConstraints
    with pytest.raises(InputError, match="spec.matchConstraints: Required value: a matchConstraints with at least"):
        parse_validating_policy(doc)
    doc.obj["spec"]["evaluation"] = {"mode": "JSON"}
    assert parse_validating_policy(doc).match_constraints is None

