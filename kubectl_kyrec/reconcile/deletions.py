"""Scheduled deletions: what each DeletingPolicy's next run would delete from the state (issue 26).

==================  ==================  ======================================================================
class               reason              condition
==================  ==================  ======================================================================
scheduled-deletion  null                the policy's next run selects the object and every condition holds:
                                        Kyverno deletes it then (`nextRun`, with `propagationPolicy`)
undetermined        read-failed         a LIST the answer depends on failed: the LIST of the policy's
                                        resource (object: the kind, no name), or one its evaluation looks
                                        at (Namespaces, a kind its conditions read)
undetermined        kind-not-captured   the same, for a kind the state never listed
undetermined        evaluation-error    matching or a condition failed for the object: Kyverno's run leaves
                                        it and logs the error
undetermined        needs-registry      a condition reads image data only a registry gives (run with
                                        --registry): no deletion is decided
undetermined        other-version       the state holds the object at another version than the one Kyverno
                                        LISTs: what the policy sees there is not known
==================  ==================  ======================================================================

Never acted on by `apply` unless `--deletions` asks; then each delete is conditional on the uid and
resourceVersion read, with the policy's propagation policy (reconcile/plan.py). Undetermined ones never.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.k8s.times import format_rfc3339
from kubectl_kyrec.load.policy.deleting import DeletingPolicy
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.causes import Cause
from kubectl_kyrec.reconcile.list_read import Read
from kubectl_kyrec.reconcile.reads import ReadRecord, Unread, evaluation_reads, exception_reads

if TYPE_CHECKING:
    # the DeletingPolicy engine (with its cron parser) is imported by diff_deletions, which only a run that
    # has a DeletingPolicy calls: every apply and diff imports this module (bench/RESULTS.md, imports)
    from kubectl_kyrec.evaluate.deleting.engine import DeletingOutcome, DeletionOutcome, NextRun


class DeletionClass(enum.StrEnum):
    SCHEDULED = "scheduled-deletion"
    UNDETERMINED = "undetermined"


class DeletionReason(enum.StrEnum):
    READ_FAILED = "read-failed"
    KIND_NOT_CAPTURED = "kind-not-captured"
    EVALUATION_ERROR = "evaluation-error"
    NEEDS_REGISTRY = "needs-registry"
    OTHER_VERSION = "other-version"


@dataclass(frozen=True)
class DeletionChange:
    klass: DeletionClass
    reason: DeletionReason | None
    policy: str                         # the policy's key: `name`, or `namespace/name`
    object: Ref                         # a kind-level ref (no name) for a LIST that failed
    schedule: str
    next_run: datetime.datetime | None
    due: bool                           # the scheduled time has passed: the controller runs it at once
    propagation_policy: str             # "" when the policy sets none (the API server's default)
    message: str = ""
    actual: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    depends_on: tuple[Read, ...] = field(default=(), compare=False)

    @property
    def enforced(self) -> bool:
        """Kyverno acts on a scheduled deletion; nobody acts on what kyrec cannot tell."""
        return self.klass is DeletionClass.SCHEDULED

    @property
    def finding(self) -> bool:
        return self.enforced

    @property
    def cause(self) -> Cause:
        return Cause("policy", f"{self.policy} (schedule {self.schedule!r}) runs next "
                               f"{'at ' if self.next_run is not None and not self.due else ''}{self.when()}")

    def when(self) -> str:
        """The next run as the table shows it: its time, `now (due since T)`, or `never`."""
        if self.next_run is None:
            return "never"
        text = format_rfc3339(self.next_run)
        return f"now (due since {text})" if self.due else text

    def to_json(self) -> dict[str, Any]:
        """A DiffResult `changes[]` entry of domain `deletion` (docs/output.md)."""
        return {
            "domain": "deletion",
            "class": str(self.klass),
            "reason": str(self.reason) if self.reason else None,
            "enforced": self.enforced,
            "policy": self.policy,
            "trigger": None,
            "subject": None,
            "object": self.object.to_json(),
            "fields": [],
            "diff": None,
            "message": self.message or None,
            "cause": self.cause.to_json() if self.klass is DeletionClass.SCHEDULED else None,
            "schedule": self.schedule,
            "nextRun": format_rfc3339(self.next_run) if self.next_run is not None else None,
            "due": self.due,
            "propagationPolicy": self.propagation_policy or None,
        }


@dataclass(frozen=True)
class DeletionDiff:
    changes: tuple[DeletionChange, ...]
    out_of_scope: int = 0       # deletions outside the run's filters (-n, --kind, -l), not shown

    def summary(self) -> dict[str, int]:
        counts = {str(c): 0 for c in DeletionClass}
        for change in self.changes:
            counts[str(change.klass)] += 1
        return counts

    def changes_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.changes]

    @property
    def findings(self) -> list[DeletionChange]:
        return [c for c in self.changes if c.finding]


def empty_summary() -> dict[str, int]:
    return {str(c): 0 for c in DeletionClass}


KindOf = Callable[[str, str], "str | None"]
"""(apiVersion, resource) -> kind, or None when the resource is not known."""


def _base(policy: DeletingPolicy, run: NextRun) -> dict[str, Any]:
    return {"policy": policy.key, "schedule": policy.schedule, "next_run": run.at, "due": run.due,
            "propagation_policy": policy.propagation_policy}


def diff_deletions(outcome: DeletingOutcome, record: ReadRecord, *, kind_of: KindOf,
                   known_unreadable: Iterable[tuple[str, str]] = (), policies_from_state: bool = False,
                   keep: Callable[[DeletionOutcome], bool] | None = None,
                   keep_kind: Callable[[Ref], bool] | None = None, scope_namespace: str = "") -> DeletionDiff:
    """Every deletion the policies' next runs make, and what kyrec cannot tell, with the reads each depends
    on: a finding whose reads were not all listed is `undetermined`, naming the read.

    `known_unreadable`: the (apiVersion, kind) whose LIST failed, looked for in each policy's text as what its
    conditions read; `keep`: the run's filters over the objects (-n, --kind, -l), `keep_kind` over the
    kind-level findings of LISTs that failed; the rest count as out of scope. `scope_namespace` (-n): the
    run read namespaced kinds there only, and looks at nothing else, so a cluster-wide LIST is needed there
    only; an object's deletion needs its kind listed where the object is."""
    from kubectl_kyrec.evaluate.deleting.engine import UNDECIDED, DeletionStatus

    changes: list[DeletionChange] = []
    out_of_scope = 0
    unreadable = list(known_unreadable)
    by_policy: dict[str, list[DeletionOutcome]] = {}
    for o in outcome.outcomes:
        by_policy.setdefault(o.policy.key, []).append(o)
    for policy in outcome.policies:
        run = outcome.runs.get(policy.key)
        if run is None or run.error or policy.key in outcome.refused or policy.key not in outcome.lists:
            continue
        base = _base(policy, run)
        policy_reads = (*evaluation_reads(policy.raw, unreadable),
                        *(exception_reads() if policies_from_state else ()))
        for lst in outcome.lists[policy.key]:
            kind = kind_of(lst.api_version, lst.resource)
            if kind is None:
                continue        # the API server serves no such resource: Kyverno's LIST fails and is skipped
            read = Read(lst.api_version, kind, lst.namespace or scope_namespace)
            unread = record.unread([read])
            if unread is not None and keep_kind is not None and not keep_kind(Ref(lst.api_version, kind,
                                                                                  lst.namespace, "", "")):
                out_of_scope += 1
            elif unread is not None:
                changes.append(DeletionChange(
                    DeletionClass.UNDETERMINED, _reason(unread), object=Ref(lst.api_version, kind, lst.namespace,
                                                                            "", ""),
                    message=f"cannot tell which {kind} objects the next run deletes: {unread.text()}",
                    depends_on=(read,), **base))
        for o in by_policy.get(policy.key, ()):
            if o.status not in (DeletionStatus.DELETE, DeletionStatus.ERROR, DeletionStatus.OTHER_VERSION) and \
                    o.status not in UNDECIDED:
                continue
            if keep is not None and not keep(o):
                out_of_scope += 1
                continue
            ref = o.subject.ref
            own = Read(ref.api_version, ref.kind, ref.namespace)
            depends_on = tuple(dict.fromkeys([own, *policy_reads]))
            if o.status is DeletionStatus.ERROR:
                changes.append(DeletionChange(DeletionClass.UNDETERMINED, DeletionReason.EVALUATION_ERROR,
                                              object=ref, message=o.message, actual=o.subject.obj,
                                              depends_on=depends_on, **base))
                continue
            if o.status in UNDECIDED:
                # the engine's reason for it (needs-registry, read-failed, kind-not-captured) names the status
                changes.append(DeletionChange(DeletionClass.UNDETERMINED, DeletionReason(o.status.value),
                                              object=ref, message=o.message, actual=o.subject.obj,
                                              depends_on=depends_on, **base))
                continue
            if o.status is DeletionStatus.OTHER_VERSION:
                changes.append(DeletionChange(DeletionClass.UNDETERMINED, DeletionReason.OTHER_VERSION,
                                              object=ref, message=o.message, actual=o.subject.obj,
                                              depends_on=depends_on, **base))
                continue
            change = DeletionChange(DeletionClass.SCHEDULED, None, object=ref, actual=o.subject.obj,
                                    depends_on=depends_on, **base)
            changes.append(hold_unread_deletion(change, record))
    return DeletionDiff(tuple(sorted(changes, key=_order)), out_of_scope)


def _reason(unread: Unread) -> DeletionReason:
    return DeletionReason.READ_FAILED if unread.listed is False else DeletionReason.KIND_NOT_CAPTURED


def hold_unread_deletion(change: DeletionChange, record: ReadRecord) -> DeletionChange:
    """`undetermined` when one of the reads the deletion depends on was not listed (reconcile/reads.py)."""
    unread = record.unread(change.depends_on)
    if unread is None:
        return change
    return dataclasses.replace(change, klass=DeletionClass.UNDETERMINED, reason=_reason(unread),
                               message=f"cannot tell: {unread.text()}; from what was read it looks "
                                       f"{DeletionClass.SCHEDULED}")


def _order(change: DeletionChange) -> tuple[str, str, str, str, str]:
    ref = change.object
    return (change.policy, ref.kind, ref.namespace, ref.name, ref.api_version)


