"""What the report checks (`diff --reports`, `coverage`) compare against: expected reports for a state.

Subjects come from the state (or `-r`), evaluated as the background scan would; objects that are
themselves reports, policies or Kyverno's bookkeeping are never subjects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubectl_kyrec.cel.environment import Environments, LibraryFactory
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
from kubectl_kyrec.evaluate.pipeline import EvalOptions, EvalOutcome, run_eval
from kubectl_kyrec.evaluate.subjects import KindLookup
from kubectl_kyrec.expect.reports import ExpectedReports
from kubectl_kyrec.load.policy.policies import PolicySet, is_policy_document
from kubectl_kyrec.load.policy.vocabulary import REPORT_SOURCE
from kubectl_kyrec.model import UNDETERMINED, Document, Result, Subject

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.classic.mutate_existing_preview import TargetPreview

# report and bookkeeping kinds are never scanned subjects
NOT_SUBJECTS = {
    "wgpolicyk8s.io": {"PolicyReport", "ClusterPolicyReport"},
    "openreports.io": {"Report", "ClusterReport"},
    "reports.kyverno.io": {"EphemeralReport", "ClusterEphemeralReport"},
    "kyverno.io": {"UpdateRequest"},
}

IMAGE_VALIDATING_SOURCE = REPORT_SOURCE["ImageValidatingPolicy"]

LABEL_PREFIX = {
    "ClusterPolicy": "cpol.kyverno.io/",
    "Policy": "pol.kyverno.io/",
    "ValidatingPolicy": "vpol.kyverno.io/",
    "ImageValidatingPolicy": "ivpol.kyverno.io/",
    # Kyverno's PolicyLabelPrefix only checks the cluster kinds (docs/semantics/reports.md#ephemeral-reports-and-scans)
    "NamespacedValidatingPolicy": "validatingadmissionpolicy.apiserver.io/",
    "NamespacedImageValidatingPolicy": "validatingadmissionpolicy.apiserver.io/",
}


@dataclass(frozen=True)
class ReportScope:
    outcome: EvalOutcome
    expected: ExpectedReports          # built report by report when read
    subjects: list[Subject]            # subjects with at least one expected result
    evaluated_uids: frozenset[str]
    policy_versions: dict[str, str] | None
    policy_keys: frozenset[str]
    # the results behind undetermined_pairs: their messages say why each is undetermined (the notices name it)
    undetermined: tuple[Result, ...] = ()


def is_subject(doc: Document) -> bool:
    group = doc.api_version.split("/", 1)[0] if "/" in doc.api_version else ""
    return doc.kind not in NOT_SUBJECTS.get(group, set())


def policy_versions(policies: PolicySet, state: Sequence[Document]) -> dict[str, str] | None:
    """The policy resourceVersion labels the background controller would write; None when unknown."""
    stored = {(d.kind, d.namespace, d.name): str((d.obj.get("metadata") or {}).get("resourceVersion") or "")
              for d in state if is_policy_document(d)}
    out: dict[str, str] = {}
    metas = [(p.meta, p.background) for p in policies.validating]
    metas.extend((p.meta, p.background) for p in policies.classic)
    metas.extend((p.meta, p.background) for p in policies.image_validating)
    for meta, background in metas:
        if not background:
            continue
        rv = meta.resource_version or stored.get((meta.kind, meta.namespace, meta.name), "")
        if not rv:
            return None
        out[LABEL_PREFIX[meta.kind] + meta.name] = rv
    return out


def generating_pairs(generating: GeneratingOutcome) -> list[tuple[Result, bool]]:
    """GeneratingPolicy results as reports carry them (docs/semantics/generating.md#report-results).

    Kyverno writes one when it processes the trigger's UpdateRequest and the policy gave a result:
    generated (pass), exempted (pass/skip), or failed (error). A trigger that predates a policy without
    generateExisting is never processed; a policy labelled `reports.kyverno.io/disabled` reports nothing.
    """
    out = []
    for o in generating.outcomes:
        if o.result is None or o.result.result == UNDETERMINED:
            # Kyverno's report holds a result here that kyrec cannot decide: `eval` shows it, reports cannot
            continue
        reportable = o.owed and "reports.kyverno.io/disabled" not in o.policy.meta.labels
        out.append((o.result, reportable))
    return out


def mutate_existing_pairs(previews: Iterable[TargetPreview]) -> list[tuple[Result, bool]]:
    """Classic mutate-existing results as the triggers' reports carry them: the entry the background controller
    writes once it processed the trigger's UpdateRequest (evaluate/classic/mutate_existing_preview.py
    report_results, and plain_rule_entries for the policy's plain mutate rules; docs/semantics/reports.md
    #mutate-existing-entries). An undetermined one is never reported."""
    return [e for p in previews for e in ((p.report,) if p.report is not None else ()) + p.trigger_entries]


def undetermined_pairs(generating: GeneratingOutcome | None, outcome: EvalOutcome | None = None
                       ) -> frozenset[tuple[str, str]]:
    """(policy, subject uid) whose result kyrec cannot decide: a GeneratingPolicy's that needs request data,
    and an ImageValidatingPolicy's `undetermined` result in `outcome` (it needs a registry): the cluster's
    report may hold a result there that kyrec can neither confirm nor call stale. Both kinds answer once per
    subject; a classic policy's rules answer one by one, and leaving out the policy would leave out its
    decided rules too, so its undetermined rules are not listed here."""
    return frozenset((r.policy, r.subject.uid) for r in undetermined_results(generating, outcome))


def undetermined_results(generating: GeneratingOutcome | None, outcome: EvalOutcome | None = None) -> list[Result]:
    """The results `undetermined_pairs` names."""
    found: list[Result] = []
    if generating is not None:
        found.extend(o.result for o in generating.outcomes if o.result is not None and o.result.result == UNDETERMINED)
    if outcome is not None:
        found.extend(r for r in outcome.results if r.result == UNDETERMINED and r.source == IMAGE_VALIDATING_SOURCE)
    return found


def report_scope(policies: PolicySet, subjects: Sequence[Document], state: Sequence[Document], *,
                 kinds: KindLookup, libraries: LibraryFactory, options: EvalOptions,
                 generating: GeneratingOutcome | None = None, envs: Environments | None = None) -> ReportScope:
    """Expected reports for `subjects`; `generating` (the GeneratingPolicies run over the same subjects)
    adds their results to the triggers' reports. `envs`: the run's environments over `libraries`, which
    compiled the policies already (pipeline.run_eval)."""
    candidates = [d for d in subjects if is_subject(d)]
    outcome = run_eval(policies, candidates, state, kinds=kinds, libraries=libraries, options=options, envs=envs)
    pairs: Sequence[tuple[Result, bool]] = outcome.pairs
    gen_keys: list[str] = []
    if generating is not None and generating.outcomes:
        pairs = [*pairs, *generating_pairs(generating)]
        gen_keys = [p.key for p in generating.policies]
    expected = ExpectedReports(pairs, options.now, options.report_api)
    owed = set(expected.uids())
    by_uid = {s.ref.uid: s for s in outcome.subjects}
    if generating is not None:
        for trigger in generating.triggers:
            by_uid.setdefault(trigger.ref.uid, trigger)
    in_scope = [s for uid, s in by_uid.items() if uid in owed]
    keys = frozenset([*(p.meta.key for p in policies.validating), *(p.meta.key for p in policies.admission),
                      *(p.meta.key for p in policies.classic),
                      *(p.meta.key for p in policies.image_validating), *gen_keys])
    return ReportScope(outcome, expected, in_scope, frozenset(by_uid), policy_versions(policies, state), keys,
                       tuple(undetermined_results(generating, outcome)))
