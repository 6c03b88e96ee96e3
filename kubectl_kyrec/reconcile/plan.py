"""The plan `apply` carries out, computed from a diff; pure (docs/architecture.md#writing-corrections).

=====================================  ==========  ===============================================================
change                                  action      rule
=====================================  ==========  ===============================================================
downstream missing (enforced)           create      server-side apply of what Kyverno would write
downstream drifted (enforced)           apply       server-side apply (re-apply), conditional on the read's
                                                    resourceVersion (never takes over an object that
                                                    stopped being this trigger's after the read)
drifted, no useServerSideApply          update      PUT of the whole object, conditional on the read's
(GeneratingPolicy or classic rule)                  resourceVersion (Kyverno's UpdateResource): removes
                                                    fields other managers added, which an apply cannot
downstream orphan, prunable             delete      only with --prune; preconditions {uid, resourceVersion}
report orphan (subject-gone), dup.      delete      only with --prune; same preconditions
report missing                          create      only with --write-reports; a create, never an overwrite
scheduled-deletion (DeletingPolicy)     delete      only with --deletions; preconditions {uid, resourceVersion},
                                                    the policy's deletionPropagationPolicy
conflict, undetermined, trigger-unknown skip        never written, whatever the flags
a read it depends on not listed         skip        never written, whatever its class (reconcile/reads.py)
anything with enforced: false           skip        Kyverno itself would not act on it
missing policy-age-unknown, sync off    skip        counted, but Kyverno would not write it whatever the age
=====================================  ==========  ===============================================================

Order: CRDs, namespaces, other cluster-scoped kinds, then namespaced kinds by a rank table (what others
refer to first); deletes last, in the reverse order (namespaced objects before their namespace).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.downstreams import DownstreamChange, DownstreamClass, DownstreamDiff, Reason
from kubectl_kyrec.reconcile.list_read import Read
from kubectl_kyrec.reconcile.reads import ReadRecord

if TYPE_CHECKING:
    from kubectl_kyrec.reconcile.deletions import DeletionChange, DeletionDiff
    from kubectl_kyrec.reconcile.reports import ReportChange, ReportDiff

KYVERNO_FIELD_MANAGER = "kyverno-generate"

# metadata the API server owns; Kyverno strips these before it writes (docs/semantics/generating.md#downstream-objects,
# step 5)
_SERVER_METADATA = ("uid", "selfLink", "creationTimestamp", "managedFields", "resourceVersion", "generation",
                    "deletionTimestamp", "deletionGracePeriodSeconds")


class Action(enum.StrEnum):
    CREATE = "create"
    APPLY = "apply"
    UPDATE = "update"
    DELETE = "delete"
    SKIP = "skip"


@dataclass(frozen=True)
class PlanOptions:
    prune: bool = False              # --prune: delete prunable orphan downstreams
    reports: bool = False            # delete orphan and duplicate reports (`apply --prune`)
    write_reports: bool = False      # --write-reports: create missing reports
    deletions: bool = False          # --deletions: carry out the DeletingPolicies' scheduled deletions now
    field_manager: str = KYVERNO_FIELD_MANAGER
    force: bool = True


@dataclass(frozen=True)
class PlannedChange:
    action: Action
    domain: str                      # "downstream" | "deletion" | "report"
    klass: str
    reason: str | None
    object: Ref
    body: Mapping[str, Any] | None = None          # what create/apply sends
    precondition_uid: str = ""                      # deletes: from the read
    precondition_resource_version: str = ""
    message: str = ""                               # why a skip is a skip; what a write does
    propagation_policy: str = ""                    # deletes: DeleteOptions.propagationPolicy ("" : default)

    @property
    def writes(self) -> bool:
        return self.action is not Action.SKIP


@dataclass(frozen=True)
class Plan:
    changes: tuple[PlannedChange, ...]
    field_manager: str = KYVERNO_FIELD_MANAGER
    force: bool = True

    @property
    def writes(self) -> tuple[PlannedChange, ...]:
        return tuple(c for c in self.changes if c.writes)


# ---- order ----------------------------------------------------------------------------------------------

# namespaced kinds that others refer to go first (lightkube's sort_objects has the same idea)
_NAMESPACED_RANK = {
    "ServiceAccount": 0, "Secret": 0, "ConfigMap": 0, "LimitRange": 0, "ResourceQuota": 0,
    "PersistentVolumeClaim": 1, "Role": 1, "RoleBinding": 2, "NetworkPolicy": 2, "Service": 3,
}


def rank(ref: Ref) -> int:
    """Lower goes first: CRDs 0, Namespaces 1, other cluster-scoped 2, namespaced 3-8 (reports last)."""
    if ref.kind == "CustomResourceDefinition":
        return 0
    if ref.kind == "Namespace":
        return 1
    if not ref.namespace:
        return 2
    if ref.kind in ("PolicyReport", "Report"):
        return 8
    return 3 + _NAMESPACED_RANK.get(ref.kind, 4)


def _order(change: PlannedChange) -> tuple[int, int, str, str, str]:
    ref = change.object
    if change.action is Action.DELETE:
        return (2, -rank(ref), ref.kind, ref.namespace, ref.name)
    if change.action is Action.SKIP:
        return (3, rank(ref), ref.kind, ref.namespace, ref.name)
    return (1, rank(ref), ref.kind, ref.namespace, ref.name)


# ---- planning -----------------------------------------------------------------------------------------------

def apply_body(expected: Mapping[str, Any]) -> dict[str, Any]:
    """The object as sent: what Kyverno would write, without the metadata the server owns."""
    body = dict(expected)
    meta = body.get("metadata")
    if isinstance(meta, Mapping):
        body["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_METADATA}
    body.pop("status", None)
    return body


def _skip(domain: str, klass: str, reason: str | None, ref: Ref, message: str) -> PlannedChange:
    return PlannedChange(Action.SKIP, domain, klass, reason, ref, message=message)


def _delete(domain: str, klass: str, reason: str | None, ref: Ref, actual: Mapping[str, Any] | None,
            message: str) -> PlannedChange:
    meta = (actual or {}).get("metadata") or {}
    uid, rv = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
    if not uid or not rv:
        return _skip(domain, klass, reason, ref, "not deleted: the read gave no uid and resourceVersion to "
                                                 "make the delete conditional on")
    return PlannedChange(Action.DELETE, domain, klass, reason, ref, precondition_uid=uid,
                         precondition_resource_version=rv, message=message)


def _conditional(change: DownstreamChange, ref: Ref, action: Action, how: str, verb: str) -> PlannedChange:
    """A write of a drifted downstream carrying the read's resourceVersion, which the API server checks
    (409 if the object changed since), for a PUT and a server-side apply alike:
    - update: a classic rule with useServerSideApply off; Kyverno PUTs the whole object, so fields another
      manager added go;
    - apply: without the resourceVersion a forced apply would take over an object that stopped being this
      policy's and trigger's after the read (its labels removed or changed: a `conflict` now), which kyrec
      never writes.
    The read's uid goes with it: a resourceVersion is checked only against an object that exists, and an
    apply of an object deleted since the read would create it again (kube-apiserver answers a uid naming no
    object with 409, tests/realapi): the write is of the object read, or nothing."""
    assert change.expected is not None
    klass, reason = change.klass, str(change.reason) if change.reason else None
    rv = str(((change.actual or {}).get("metadata") or {}).get("resourceVersion") or "")
    if not rv:
        return _skip("downstream", klass, reason, ref, f"not {verb}: the read gave no resourceVersion to make "
                                                       f"the write conditional on")
    uid = str(((change.actual or {}).get("metadata") or {}).get("uid") or "")
    body = apply_body(change.expected)
    body["metadata"] = {**(body.get("metadata") or {}), "resourceVersion": rv, **({"uid": uid} if uid else {})}
    return PlannedChange(action, "downstream", klass, reason, ref, body=body,
                         message=f"{how}, if still at resourceVersion {rv}")


def plan_downstream(change: DownstreamChange, options: PlanOptions) -> PlannedChange | None:
    klass, reason = change.klass, str(change.reason) if change.reason else None
    ref = change.object
    if klass is DownstreamClass.IN_SYNC:
        return None
    if klass is DownstreamClass.CONFLICT:
        return _skip("downstream", klass, reason, ref, "never written: the object there is not this policy's "
                                                       "and trigger's (no adoption)")
    if klass is DownstreamClass.UNDETERMINED:
        return _skip("downstream", klass, reason, ref, "never written: " + (
            change.message if change.reason in (Reason.READ_FAILED, Reason.KIND_NOT_CAPTURED) and change.message
            else "kyrec cannot tell what Kyverno would write"))
    if change.reason is Reason.TRIGGER_UNKNOWN:
        return _skip("downstream", klass, reason, ref, "never deleted: the state does not list the trigger's kind")
    if not change.enforced or change.kyverno_writes is False:
        return _skip("downstream", klass, reason, ref, "not written: Kyverno itself would not act on it"
                     + (f" ({change.message})" if change.message else ""))
    if klass in (DownstreamClass.MISSING, DownstreamClass.DRIFTED):
        if change.expected is None:
            return _skip("downstream", klass, reason, ref, "not written: the expected object is not known")
        if klass is DownstreamClass.DRIFTED and change.replace:
            return _conditional(change, ref, Action.UPDATE, "update (the whole object, as Kyverno writes a rule "
                                f"without useServerSideApply) as {options.field_manager}", "updated")
        if klass is DownstreamClass.MISSING:
            return PlannedChange(Action.CREATE, "downstream", klass, reason, ref, body=apply_body(change.expected),
                                 message=f"server-side apply as {options.field_manager}"
                                         + (" (force)" if options.force else ""))
        return _conditional(change, ref, Action.APPLY, f"server-side apply as {options.field_manager}"
                            + (" (force)" if options.force else ""), "re-applied")
    if klass is DownstreamClass.ORPHAN:
        if not change.prune:
            return _skip("downstream", klass, reason, ref, "not deleted: " + (change.message or
                                                                             "Kyverno would leave it"))
        if not options.prune:
            return _skip("downstream", klass, reason, ref, "not deleted without --prune")
        return _delete("downstream", klass, reason, ref, change.actual, "delete with preconditions")
    return None


def plan_deletion(change: DeletionChange, options: PlanOptions) -> PlannedChange:
    """A DeletingPolicy's scheduled deletion, carried out ahead of its schedule only when asked; what kyrec
    cannot tell never."""
    # here, as ReportClass in plan_report: a plan of downstreams alone (apply of GeneratingPolicies) never
    # imports the deletion and report domains (their claims, causes and a score of dataclasses)
    from kubectl_kyrec.reconcile.deletions import DeletionClass

    klass, reason, ref = str(change.klass), str(change.reason) if change.reason else None, change.object
    if change.klass is DeletionClass.UNDETERMINED:
        return _skip("deletion", klass, reason, ref, "never deleted: " + (change.message or "kyrec cannot tell"))
    if not options.deletions:
        return _skip("deletion", klass, reason, ref, f"not deleted without --deletions (the policy's next run "
                                                     f"deletes it: {change.when()})")
    item = _delete("deletion", klass, reason, ref, change.actual,
                   f"delete with preconditions (propagation {change.propagation_policy or 'default'}), as "
                   f"{change.policy} would")
    return replace(item, propagation_policy=change.propagation_policy) if item.action is Action.DELETE else item


def plan_report(change: ReportChange, options: PlanOptions, *,
                actual_of: Callable[[Ref], Mapping[str, Any] | None],
                expected_of: Callable[[Ref], Mapping[str, Any] | None]) -> PlannedChange | None:
    from kubectl_kyrec.reconcile.reports import ReportClass

    klass, reason, ref = change.klass, change.reason, change.report
    if klass is ReportClass.CURRENT or (not change.in_scope and klass is not ReportClass.ORPHAN):
        return None
    if klass is ReportClass.UNDETERMINED:
        return _skip("report", klass, reason, ref, "never written: " + (change.message or "a read it depends on "
                                                                                          "did not succeed"))
    if klass is ReportClass.MISSING:
        if not options.write_reports:
            return _skip("report", klass, reason, ref, "not created without --write-reports")
        expected = expected_of(ref)
        if expected is None:
            return _skip("report", klass, reason, ref, "not created: the expected report is not known")
        return PlannedChange(Action.CREATE, "report", klass, reason, ref, body=apply_body(expected),
                             message="create (never overwrites an existing report)")
    if klass in (ReportClass.ORPHAN, ReportClass.DUPLICATE):
        if klass is ReportClass.ORPHAN and reason != "subject-gone":
            return _skip("report", klass, reason, ref, "never deleted: the state does not list the subject's kind")
        if not options.reports:
            return _skip("report", klass, reason, ref, "not deleted without --prune")
        return _delete("report", klass, reason, ref, actual_of(ref), "delete with preconditions")
    return _skip("report", klass, reason, ref, "not rewritten: Kyverno's reports controller owns existing "
                                               "reports; kyrec never overwrites one")


def _held(item: PlannedChange, depends_on: tuple[Read, ...], record: ReadRecord | None) -> PlannedChange:
    """The invariant, checked where the plan is made whatever the classifiers decided: a write or a delete
    whose reads were not all listed is a skip naming the read."""
    unread = record.unread(depends_on) if record is not None and item.writes else None
    if unread is None:
        return item
    return _skip(item.domain, item.klass, item.reason, item.object, f"never written: {unread.text()}")


def plan_changes(downstreams: DownstreamDiff | None, reports: ReportDiff | None, options: PlanOptions, *,
                 actual_of: Callable[[Ref], Mapping[str, Any] | None] = lambda ref: None,
                 expected_of: Callable[[Ref], Mapping[str, Any] | None] = lambda ref: None,
                 record: ReadRecord | None = None, deletions: DeletionDiff | None = None) -> Plan:
    """The ordered plan for a diff. `actual_of` finds a report's live object (for its resourceVersion),
    `expected_of` a missing report's expected object, `record` what the reads gave (the state's listed and
    unreadable kinds): no write or delete depends on a read it does not hold as listed."""
    planned: list[PlannedChange] = []
    for change in downstreams.changes if downstreams else ():
        item = plan_downstream(change, options)
        if item is not None:
            planned.append(_held(item, change.depends_on, record))
    for dchange in deletions.changes if deletions else ():
        planned.append(_held(plan_deletion(dchange, options), dchange.depends_on, record))
    for rchange in reports.changes if reports else ():
        item = plan_report(rchange, options, actual_of=actual_of, expected_of=expected_of)
        if item is not None:
            planned.append(_held(item, rchange.depends_on, record))
    return Plan(tuple(sorted(planned, key=_order)), options.field_manager, options.force)
