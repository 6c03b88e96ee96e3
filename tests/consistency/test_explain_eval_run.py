"""`explain` evaluates each subject with eval's own per-subject evaluation (evaluate/pipeline.py
`evaluate_policies`, the recorder on), which runs the ImageValidatingPolicies before the admission policies;
explain shows a subject's trees as it always has: its admission, the mutating policies', then the
ValidatingPolicies', the admission policies', the ImageValidatingPolicies', the classic policies' and the
DeletingPolicies'. Every kind of testdata/consistency/kinds loaded at once, so each subject has trees of all.
"""

from __future__ import annotations

import pytest

from tests.consistency.test_explain_pairs import KINDS, NOW, RESOURCES, kyrec, policy_args

# the rank of a subject's tree by its policy's kind, in the order explain shows them
RANK = {"Admission": 0, "MutatingAdmissionPolicy": 1, "MutatingPolicy": 2, "NamespacedMutatingPolicy": 2,
        "ValidatingPolicy": 3, "NamespacedValidatingPolicy": 3, "ValidatingAdmissionPolicy": 4,
        "ImageValidatingPolicy": 5, "NamespacedImageValidatingPolicy": 5, "ClusterPolicy": 6, "Policy": 6,
        "DeletingPolicy": 7, "NamespacedDeletingPolicy": 7}


@pytest.mark.parametrize("where", ["-r", "--state"])
def test_a_subjects_trees_keep_their_order_by_kind(where: str) -> None:
    _, explained = kyrec("explain", *policy_args(KINDS), where, str(RESOURCES), *NOW, "-o", "json")
    by_subject: dict[tuple[str, str], list[int]] = {}
    for e in explained["explanations"]:
        if e["policyKind"] in RANK:         # the GeneratingPolicies' trees come after every subject's
            by_subject.setdefault((e["subject"]["kind"], e["subject"]["name"]), []).append(RANK[e["policyKind"]])
    pod = by_subject[("Pod", "web")]
    # the Pod has a tree of each validating kind (and, admitted, of each mutating one)
    assert {3, 4, 5, 6, 7} <= set(pod)
    assert where == "--state" or {0, 1, 2} <= set(pod)
    for subject, ranks in by_subject.items():
        assert ranks == sorted(ranks), subject
