"""Which reads each finding depends on, and the one rule that keeps a partial read from becoming an action
(docs/architecture.md#never-act-on-a-partial-picture).

A finding is only as good as the LISTs behind it. A downstream is `missing` only if its kind was listed
where it would be; an orphan is `trigger-gone` only if the trigger's kind was listed, `policy-gone` only if
the policy kinds were; what a policy wants for a trigger is only known if every kind its evaluation looks at
(namespaces for a namespaceSelector, clone sources, context lookups) was listed. Each finding carries these
reads as data (`depends_on`); `hold_unread` turns a finding whose reads did not all succeed into
`undetermined`, naming the read, and the plan (reconcile/plan.py) refuses to act on a change whose reads are
not all listed, whatever its class. A read is satisfied only by a full LIST recorded as listed; a failed one
(403, 5xx after retries, timeout, an expired continue token that did not recover) is unreadable, and a kind
that was never listed (not served, not captured) is unknown: both leave the finding undetermined.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.load.run_inputs.kinds import guess_plural
from kubectl_kyrec.load.run_inputs.sources import strings_in
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.downstreams import DownstreamChange, DownstreamClass, Reason
from kubectl_kyrec.reconcile.list_read import Read

if TYPE_CHECKING:
    from kubectl_kyrec.reconcile.reports import ReportChange

ListedCheck = Callable[[str, str, str], "bool | None"]
"""(apiVersion, kind, namespace) -> listed (True), known unreadable (False), no record (None)."""

# The kinds a policy of each family lives in: a downstream is policy-gone only when all of its family's
# kinds were listed (a cluster without Kyverno's classic CRDs, or a failed LIST, says nothing about them).
CEL_GENERATING_POLICY_KINDS = (("policies.kyverno.io/v1", "GeneratingPolicy"),
                               ("policies.kyverno.io/v1", "NamespacedGeneratingPolicy"))
CLASSIC_POLICY_KINDS = (("kyverno.io/v1", "ClusterPolicy"), ("kyverno.io/v1", "Policy"))
# what a report's results come from when the policy set is the cluster's
REPORTING_POLICY_KINDS = (("policies.kyverno.io/v1", "ValidatingPolicy"),
                          ("policies.kyverno.io/v1", "NamespacedValidatingPolicy"),
                          *CEL_GENERATING_POLICY_KINDS,
                          ("policies.kyverno.io/v1", "PolicyException"),
                          ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
                          ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
                          *CLASSIC_POLICY_KINDS,
                          ("kyverno.io/v2", "PolicyException"))
NAMESPACE_READ_KEYS = ("namespaceSelector", "namespaceObject")


@dataclass(frozen=True)
class Unread:
    """A dependency that was not satisfied: the read, and whether it failed (False) or never happened (None)."""

    read: Read
    listed: bool | None
    message: str = ""

    def text(self) -> str:
        if self.listed is False:
            return f"the LIST of {self.read.text()} failed" + (f" ({self.message})" if self.message else "")
        return f"{self.read.text()} objects were not read (the cluster does not serve them, or the state " \
               f"never listed them)"


@dataclass(frozen=True)
class ReadRecord:
    """What the run's state says about its reads: ClusterState.is_listed and .unreadable_message."""

    is_listed: ListedCheck
    message_of: Callable[[str, str, str], str | None] = lambda api_version, kind, namespace: None

    @classmethod
    def of(cls, state: Any) -> ReadRecord:
        """The record a ClusterState keeps (its `is_listed` and `unreadable_message`)."""
        return cls(state.is_listed, state.unreadable_message)

    def unread(self, reads: Iterable[Read]) -> Unread | None:
        """The first read not listed, failed ones first (they are what the user has to fix)."""
        never: Unread | None = None
        for read in reads:
            listed = self.is_listed(read.api_version, read.kind, read.namespace)
            if listed is True or (listed is None and read.soft):
                continue
            if listed is False:
                return Unread(read, False, self.message_of(read.api_version, read.kind, read.namespace) or "")
            never = never or Unread(read, None)
        return never


def policy_family_reads(classic: bool, namespace: str) -> tuple[Read, ...]:
    """The LISTs that tell whether a policy of this family still exists (a namespaced one in `namespace`)."""
    kinds = CLASSIC_POLICY_KINDS if classic else CEL_GENERATING_POLICY_KINDS
    return tuple(Read(api, kind, namespace if kind in ("Policy", "NamespacedGeneratingPolicy") else "")
                 for api, kind in kinds)


def exception_reads() -> tuple[Read, ...]:
    """The PolicyException kinds (CEL and classic): what exempts a trigger or a subject."""
    return tuple(Read(api, kind, soft=True) for api, kind in REPORTING_POLICY_KINDS if kind == "PolicyException")


def reporting_policy_reads() -> tuple[Read, ...]:
    return tuple(Read(api, kind, soft=True) for api, kind in REPORTING_POLICY_KINDS)


def evaluation_reads(policy_doc: Mapping[str, Any], kinds: Iterable[tuple[str, str]]) -> tuple[Read, ...]:
    """The reads what a policy wants for a trigger depends on, beyond the trigger itself: Namespaces when it
    selects or looks at them, and every kind of `kinds` (apiVersion, kind) its text names, as a kind
    (`"kind": "Secret"`) or as a resource (`resource.Get("v1", "secrets", ...)`, an apiCall's urlPath).
    Over-naming a kind costs only caution (an undetermined finding when that kind is unreadable); missing
    one could turn a failed read into a delete. These reads are soft: only a failed LIST of them counts."""
    text = "\n".join(strings_in(policy_doc.get("spec")))
    reads: dict[tuple[str, str], Read] = {}
    if any(key in text for key in NAMESPACE_READ_KEYS):
        reads[("", "Namespace")] = Read("v1", "Namespace", soft=True)
    for api_version, kind in kinds:
        if not kind or (api_version.rpartition("/")[0], kind) in reads:
            continue
        if re.search(rf"\b{re.escape(kind)}\b", text) or re.search(rf"\b{re.escape(guess_plural(kind))}\b", text):
            reads[(api_version.rpartition("/")[0], kind)] = Read(api_version, kind, soft=True)
    return tuple(reads.values())


def downstream_reads(change: DownstreamChange, *, policy_reads: Sequence[Read] | None, classic: bool,
                     policy_namespace: str, triggers_from_state: bool, policies_from_state: bool
                     ) -> tuple[Read, ...]:
    """What this downstream finding depends on having been read.

    - missing: its own kind where it would be (else it may exist);
    - any finding about a trigger read from the state: the trigger's kind (trigger-gone means absent from
      a complete LIST);
    - findings that come from evaluating the policy (missing, drifted, in-sync, no-longer-matches,
      not-desired): `policy_reads`, what the evaluation looked at;
    - policy-gone, when the policies are the state's: the policy kinds of its family (with `-p ...
      --all-policies` the user says the set is complete, and no read decides it).
    Conflicts and undetermined findings are acted on by nobody and depend on nothing."""
    if change.klass in (DownstreamClass.CONFLICT, DownstreamClass.UNDETERMINED):
        return ()
    reads: list[Read] = []
    obj = change.object
    if change.klass is DownstreamClass.MISSING:
        reads.append(Read(obj.api_version, obj.kind, obj.namespace))
    if change.reason is Reason.POLICY_GONE:
        if policies_from_state:
            reads.extend(policy_family_reads(classic, policy_namespace))
    else:
        if change.trigger is not None and change.trigger.kind and triggers_from_state:
            t = change.trigger
            reads.append(Read(t.api_version, t.kind, t.namespace))
        if change.reason not in (Reason.TRIGGER_GONE, Reason.TRIGGER_UNKNOWN):
            reads.extend(policy_reads or ())
    return tuple(dict.fromkeys(reads))


def _carrying(change: DownstreamChange, depends_on: tuple[Read, ...]) -> DownstreamChange:
    """`change` with `depends_on` set: its other fields copied as they are, not rebuilt one by one through
    __init__ and __post_init__ as dataclasses.replace does (they already went through them), once per downstream
    finding (3,000 creates: a third of hold_unread, bench/apply_prewrite.py)."""
    copied = object.__new__(type(change))
    copied.__dict__.update(change.__dict__)
    object.__setattr__(copied, "depends_on", depends_on)
    return copied


def hold_unread(change: DownstreamChange, depends_on: tuple[Read, ...], record: ReadRecord) -> DownstreamChange:
    """`change` carrying its reads; `undetermined` (never acted on) when one of them is not listed.

    An orphan already `trigger-unknown` stays so when the trigger's kind was simply never listed: that
    class says exactly this and is never acted on; a failed LIST makes it undetermined like the rest."""
    change = _carrying(change, depends_on)
    unread = record.unread(depends_on)
    if unread is None:
        return change
    if change.reason is Reason.TRIGGER_UNKNOWN and unread.listed is None:
        return change
    reason = Reason.READ_FAILED if unread.listed is False else Reason.KIND_NOT_CAPTURED
    was = f"{change.klass}/{change.reason}" if change.reason else str(change.klass)
    return dataclasses.replace(
        change, klass=DownstreamClass.UNDETERMINED, reason=reason, enforced=False, prune=False,
        kyverno_writes=None,
        message=f"cannot tell: {unread.text()}; from what was read it looks {was}"
                + (f": {change.message}" if change.message else ""))


def report_reads(change: ReportChange, actual: Mapping[str, Any] | None, *, policy_reads: Sequence[Read]
                 ) -> tuple[Read, ...]:
    """What a report finding depends on: the report kind where the report is (or would be), the subject's
    kind where the subject is (for an orphan, the kind the report describes: `subject-gone` means absent
    from a complete LIST), and `policy_reads`: what the expected results come from (the policy kinds when
    the policy set is the cluster's, and what the policies' evaluation looks at)."""
    report = change.report
    reads = [Read(report.api_version, report.kind, report.namespace, soft=True)]
    subject: Ref | None = change.subject
    if subject is not None:
        # the subject was read: a failed LIST of its kind elsewhere (another namespace) still says the
        # kind's picture is partial, but no record of it says nothing
        reads.append(Read(subject.api_version, subject.kind, subject.namespace, soft=True))
    elif change.reason == "subject-gone" and actual is not None:
        # here, as ReportClass in hold_unread_report: the report domain is not imported by a run without
        # it (apply of GeneratingPolicies reads the downstreams' reads alone)
        from kubectl_kyrec.reconcile.reports import described_kind

        described = described_kind(actual)
        if described is not None:
            reads.append(Read(described[0], described[1], report.namespace))
    reads.extend(policy_reads)
    return tuple(dict.fromkeys(reads))


def hold_unread_report(change: ReportChange, depends_on: tuple[Read, ...], record: ReadRecord) -> ReportChange:
    """As `hold_unread`, for a report finding; an orphan already `subject-unknown` (its kind never listed)
    stays so."""
    from kubectl_kyrec.reconcile.reports import ReportClass

    change = dataclasses.replace(change, depends_on=depends_on)
    unread = record.unread(depends_on)
    if unread is None or (change.reason == "subject-unknown" and unread.listed is None):
        return change
    reason = str(Reason.READ_FAILED if unread.listed is False else Reason.KIND_NOT_CAPTURED)
    was = f"{change.klass}/{change.reason}" if change.reason else str(change.klass)
    return dataclasses.replace(change, klass=ReportClass.UNDETERMINED, reason=reason,
                               message=f"cannot tell: {unread.text()}; from what was read it looks {was}")
