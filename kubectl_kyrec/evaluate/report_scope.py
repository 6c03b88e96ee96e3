"""What the report checks (`diff --reports`, `coverage`) compare against: expected reports for a state.

Subjects come from the state (or `-r`), evaluated as the background scan would; objects that are
themselves reports, policies or Kyverno's bookkeeping are never subjects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.environment import LibraryFactory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, EvalOutcome, run_eval
from kubectl_kyrec.evaluate.subjects import KindLookup
from kubectl_kyrec.load.policies import PolicySet
from kubectl_kyrec.model import Document, Subject

# report and bookkeeping kinds are never scanned subjects
NOT_SUBJECTS = {
    "wgpolicyk8s.io": {"PolicyReport", "ClusterPolicyReport"},
    "openreports.io": {"Report", "ClusterReport"},
    "reports.kyverno.io": {"EphemeralReport", "ClusterEphemeralReport"},
    "kyverno.io": {"UpdateRequest"},
}

LABEL_PREFIX = {
    "ValidatingPolicy": "vpol.kyverno.io/",
    # Kyverno's PolicyLabelPrefix only checks the cluster kinds (SEMANTICS D.2 quirk)
    "NamespacedValidatingPolicy": "validatingadmissionpolicy.apiserver.io/",
}


@dataclass(frozen=True)
class ReportScope:
    outcome: EvalOutcome
    expected: list[dict[str, Any]]
    subjects: list[Subject]            # subjects with at least one expected result
    evaluated_uids: frozenset[str]
    policy_versions: dict[str, str] | None
    policy_keys: frozenset[str]


def is_subject(doc: Document) -> bool:
    group = doc.api_version.split("/", 1)[0] if "/" in doc.api_version else ""
    return doc.kind not in NOT_SUBJECTS.get(group, set())


def policy_versions(policies: PolicySet, state: Sequence[Document]) -> dict[str, str] | None:
    """The policy resourceVersion labels the background controller would write; None when unknown."""
    stored = {(d.kind, d.namespace, d.name): str((d.obj.get("metadata") or {}).get("resourceVersion") or "")
              for d in state if d.api_version.startswith("policies.kyverno.io/")}
    out: dict[str, str] = {}
    for p in policies.validating:
        if not p.background:
            continue
        rv = p.meta.resource_version or stored.get((p.meta.kind, p.meta.namespace, p.meta.name), "")
        if not rv:
            return None
        out[LABEL_PREFIX[p.meta.kind] + p.meta.name] = rv
    return out


def report_scope(policies: PolicySet, subjects: Sequence[Document], state: Sequence[Document], *,
                 kinds: KindLookup, libraries: LibraryFactory, options: EvalOptions) -> ReportScope:
    candidates = [d for d in subjects if is_subject(d)]
    outcome = run_eval(policies, candidates, state, kinds=kinds, libraries=libraries, options=options)
    expected = outcome.reports
    owed = {str(r["metadata"]["name"]) for r in expected}
    in_scope = [s for s in outcome.subjects if s.ref.uid in owed]
    keys = frozenset([*(p.meta.key for p in policies.validating), *(p.meta.key for p in policies.admission)])
    return ReportScope(outcome, expected, in_scope, frozenset(s.ref.uid for s in outcome.subjects),
                       policy_versions(policies, state), keys)
