"""No false alarms: every policy document to apply of every tree under ../shared/corpus and of testdata/
passes the schema check, except the ones listed here, each refused by the real API server too (the reason
says why; tests/realapi/test_schema_oracle.py checks every verdict against the server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_kyrec.cel.schema_rules import policy_schema_check
from tests.consistency.corpus_policies import policy_documents
from tests.shared_inputs import ROOT, cases, shared

# (file relative to its tree, policy name) -> why the cluster refuses it
REFUSED = {
    ("kyverno-conformance/generating-policies/validate/missing-generate/policy.yaml", "zk-kafka-address"):
        "a conformance case of a refused policy: spec.generate is required",
    ("kyverno-conformance/validating-policies/exceptions/empty-policy-ref/exception.yaml", "pod-security-exception"):
        "a conformance case of a refused exception: spec.policyRefs is required",
    ("kyverno-conformance/validating-policies/validation-checks/invalid-action/policy.yaml",
     "disallow-privilege-escalation"):
        'a conformance case of a refused policy: validationActions "test" (its chainsaw test expects the '
        "API server's message)",
    ("kyverno-policies-legacy/cost-optimization/schedule-based-quotas/schedule-based-quotas.yaml",
     "schedule-based-quotas"):
        "a broken library policy: configMap.key is no field of a ConfigMap context entry, and `variable` takes "
        "an object (jmesPath, value, default), not a string",
    ("diff/cause-rbac-generate-crb/state.yaml", "test-user"):
        "a capture (state) whose GeneratingPolicy has no spec.generate: states are not schema-checked, the "
        "cluster admitted their objects",
}


# chainsaw fills in `($test.metadata.name)` before it applies a policy; as written, the name is no DNS subdomain
# and the server refuses it (`metadata.name: Invalid value: "($test.metadata.name)": a lowercase RFC 1123
# subdomain must ...`), as kyrec does: those documents are no policies to apply as they stand
CHAINSAW_BINDING = "($test.metadata.name)"


def _refusals(root: Path, base: Path) -> dict[tuple[str, str], list[str]]:
    check = policy_schema_check()
    out: dict[tuple[str, str], list[str]] = {}
    for doc in policy_documents(root):
        errors = check.errors(doc)
        if doc.name == CHAINSAW_BINDING:
            assert [e.field for e in errors] == ["metadata.name"], errors
            continue
        if errors:
            key = (str(Path(doc.source.file).relative_to(base)), doc.name)
            out[key] = [e.message for e in errors]
    return out


CORPUS = shared("corpus")


@pytest.mark.parametrize("tree", cases(CORPUS, "Kyverno's policy corpus",
                                       lambda: sorted(p.name for p in CORPUS.iterdir() if p.is_dir())))
def test_every_corpus_policy_loads(tree: str) -> None:
    found = _refusals(CORPUS / tree, CORPUS)
    assert set(found) == {k for k in REFUSED if k[0].startswith(tree + "/")}, found


def test_every_testdata_policy_loads() -> None:
    found = _refusals(ROOT / "testdata", ROOT / "testdata")
    assert set(found) == {k for k in REFUSED if k[0].startswith("diff/")}, found
