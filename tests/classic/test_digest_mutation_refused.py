"""A verifyImages entry that would patch digests (`mutateDigest`, true by default) in a policy that only audits
is refused as Kyverno's policy validation refuses it (kk: api/kyverno/v1/image_verification_types.go
ImageVerification.Validate, called from pkg/validation/policy/validate.go with the policy's
validationFailureAction, replaced by the entry's own failureAction). Kyverno's CLI v1.17.2 agrees: `apply` of
such a policy logs `policy validation error ... mutateDigest must be set to false for 'Audit' failure action`
and counts the policy as an error, and accepts it once the policy or the entry enforces."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_kyrec.evaluate.classic.engine import refused_by_kyverno
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify


def _refused(entry: dict[str, Any], action: str | None) -> str | None:
    spec: dict[str, Any] = {"rules": [
        {"name": "ok", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"deny": {}}},
        {"name": "images", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
         "verifyImages": [{"imageReferences": ["ghcr.io/x/*"], "mutateDigest": False},
                          {"imageReferences": ["ghcr.io/y/*"], **entry}]}]}
    if action is not None:
        spec["validationFailureAction"] = action
    doc = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}, "spec": spec}
    refused = refused_by_kyverno(classify(documents_from_text(json.dumps(doc), "p.json")).classic[0])
    return None if refused is None else refused.message


REFUSAL = ("ClusterPolicy \"p\": spec.rules[1].verifyImages[1].mutateDigest: Invalid value: true: "
           "mutateDigest must be set to false for \u2018Audit\u2019 failure action")


@pytest.mark.parametrize(("entry", "action"), [
    ({}, None),                                   # Audit by default, mutateDigest true by default
    ({}, "Audit"),
    ({"mutateDigest": True}, "audit"),
    ({"failureAction": "Audit"}, "Enforce"),      # the entry's own action wins
])
def test_refused(entry: dict[str, Any], action: str | None) -> None:
    assert _refused(entry, action) == REFUSAL


@pytest.mark.parametrize(("entry", "action"), [
    ({}, "Enforce"),
    ({}, "enforce"),
    ({"mutateDigest": False}, None),
    ({"failureAction": "Enforce"}, "Audit"),
])
def test_accepted(entry: dict[str, Any], action: str | None) -> None:
    assert _refused(entry, action) is None
