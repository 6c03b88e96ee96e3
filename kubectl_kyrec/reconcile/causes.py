"""Why a downstream or a report is not in sync (issue 28): one `Cause` per change that is not in-sync or
current, chosen from the evidence the state holds, the most certain first:

1. UpdateRequests (`kyverno.io/v2`, `v1beta1`) of the policy for the trigger: a Failed one with its
   message, a Pending or Skip one with its age and retry count; else a queue of Pending ones for the
   policy ("N update requests pending for this policy, the oldest M old");
2. Kyverno's configuration: the `resourceFilters` entry that skips the trigger (admission) or the
   report's subject (the reports controller, when it does not skip the filters);
3. the policy: not Ready (its status conditions), generateExisting off for a trigger that predates it,
   synchronize off, and for a report the rescan decision Kyverno's background controller would take;
4. the object's history: the managedFields of a drifted downstream naming a manager that is not
   Kyverno's, the latest first (who and when);
5. otherwise `unknown`: no guess.

Kyverno's own permissions (RBAC) are not read here.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.load.exclusions import parse_rfc3339
from kubectl_kyrec.load.kyverno_config import ResourceFilter, matching_filter
from kubectl_kyrec.model import Ref, ref_of
from kubectl_kyrec.reconcile.normalize import DEFAULT_KYVERNO_MANAGERS, is_kyverno_manager

UPDATE_REQUEST_APIS = ("kyverno.io/v2", "kyverno.io/v1beta1")


@dataclass(frozen=True, slots=True)
class Cause:
    """`kind`: update-request | update-request-queue | resource-filter | policy | rescan | managed-fields |
    unknown; `evidence`: the objects that say so."""

    kind: str
    message: str
    evidence: tuple[Ref, ...] = ()

    @property
    def text(self) -> str:
        """As a table shows it: the message, or `unknown`."""
        return "unknown" if self.kind == "unknown" else self.message

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "evidence": [r.to_json() for r in self.evidence]}


UNKNOWN = Cause("unknown", "nothing the state holds says why")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def age(seconds: float) -> str:
    """kubectl's AGE, coarsely: 45s, 12m, 5h, 3d."""
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _created(obj: Mapping[str, Any]) -> datetime.datetime | None:
    ts = _meta(obj).get("creationTimestamp")
    return parse_rfc3339(ts) if isinstance(ts, str) else None


# ---- the evidence, indexed once ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Evidence:
    """What the causes are read from: the state's UpdateRequests and policies, Kyverno's filters, `now`."""

    now: datetime.datetime
    update_requests: tuple[Mapping[str, Any], ...] = ()
    policies: Mapping[str, Mapping[str, Any]] | None = None      # the state's policy objects by key
    admission_filters: tuple[ResourceFilter, ...] = ()           # the ConfigMap's resourceFilters
    scan_filters: tuple[ResourceFilter, ...] = ()                # those the reports controller applies

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]], *, now: datetime.datetime,
           admission_filters: Sequence[ResourceFilter] = (), scan_filters: Sequence[ResourceFilter] = ()
           ) -> Evidence:
        urs: list[Mapping[str, Any]] = []
        policies: dict[str, Mapping[str, Any]] = {}
        for obj in objects:
            kind = str(obj.get("kind") or "")
            api = str(obj.get("apiVersion") or "")
            meta = _meta(obj)
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            if kind == "UpdateRequest" and api in UPDATE_REQUEST_APIS:
                urs.append(obj)
            elif api.startswith(("kyverno.io/", "policies.kyverno.io/")) and kind.endswith("Policy"):
                policies[f"{namespace}/{name}" if namespace else name] = obj
        return cls(now, tuple(urs), policies, tuple(admission_filters), tuple(scan_filters))


# ---- 1. UpdateRequests ------------------------------------------------------------------------------------

def _ur_triggers(ur: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The triggers an UpdateRequest is for: spec.resource (v1beta1, and v2's GetResource) and v2's
    spec.ruleContext[].trigger."""
    spec = _map(ur.get("spec"))
    out = [_map(spec.get("resource"))]
    for context in spec.get("ruleContext") or []:
        out.append(_map(_map(context).get("trigger")))
    return [t for t in out if t]


def _is_for(spec: Mapping[str, Any], trigger: Ref) -> bool:
    if spec.get("uid") and trigger.uid and not trigger.synthetic:
        return str(spec["uid"]) == trigger.uid
    return (str(spec.get("kind") or ""), str(spec.get("namespace") or ""), str(spec.get("name") or "")) == \
        (trigger.kind, trigger.namespace, trigger.name)


def _ur_state(ur: Mapping[str, Any]) -> str:
    return str(_map(ur.get("status")).get("state") or "Pending")


def update_request_cause(policy: str, trigger: Ref | None, ev: Evidence) -> Cause | None:
    mine = [ur for ur in ev.update_requests if str(_map(ur.get("spec")).get("policy") or "") == policy]
    if not mine:
        return None
    if trigger is not None:
        for wanted in ("Failed", "Pending", "Skip"):
            for ur in mine:
                if _ur_state(ur) != wanted or not any(_is_for(t, trigger) for t in _ur_triggers(ur)):
                    continue
                status = _map(ur.get("status"))
                count = int(status.get("retryCount") or 0)
                retries = f"{count} retr{'y' if count == 1 else 'ies'}"
                name = str(_meta(ur).get("name") or "")
                created = _created(ur)
                old = f", {age((ev.now - created).total_seconds())} old" if created else ""
                if wanted == "Failed":
                    message = (f"update request {name} Failed after {retries}"
                               f": {status.get('message') or 'no message'}")
                else:
                    message = f"update request {name} {wanted}{old}, {retries}"
                    if status.get("message"):
                        message += f": {status['message']}"
                return Cause("update-request", message, (ref_of(ur),))
    pending = [ur for ur in mine if _ur_state(ur) == "Pending"]
    if not pending:
        return None
    times = [t for t in (_created(ur) for ur in pending) if t is not None]
    oldest = f", the oldest {age((ev.now - min(times)).total_seconds())} old" if times else ""
    return Cause("update-request-queue", f"{len(pending)} update request(s) pending for this policy{oldest}",
                 tuple(ref_of(ur) for ur in pending))


# ---- 2. Kyverno's configuration ---------------------------------------------------------------------------

def filter_cause(ref: Ref | None, filters: Sequence[ResourceFilter], who: str) -> Cause | None:
    if ref is None or not filters:
        return None
    entry = matching_filter(ref.kind, ref.namespace, ref.name, filters, api_version=ref.api_version)
    if entry is None:
        return None
    return Cause("resource-filter", f"{who} skips {ref.display()}: resourceFilters entry {entry.text}")


# ---- 3. the policy ----------------------------------------------------------------------------------------

def policy_status_cause(policy: str, ev: Evidence) -> Cause | None:
    obj = (ev.policies or {}).get(policy)
    if obj is None:
        return None
    status = _map(obj.get("status"))
    for condition in status.get("conditions") or []:
        condition = _map(condition)
        if condition.get("type") == "Ready" and str(condition.get("status")) == "False":
            detail = condition.get("message") or condition.get("reason") or "no message"
            return Cause("policy", f"policy {policy} is not ready: {detail}", (ref_of(obj),))
    if status.get("ready") is False:
        return Cause("policy", f"policy {policy} is not ready", (ref_of(obj),))
    return None


# ---- 4. the object's history ------------------------------------------------------------------------------

def managed_fields_cause(obj: Mapping[str, Any] | None, managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS
                         ) -> Cause | None:
    """The latest write of a manager that is not Kyverno's, as managedFields record it."""
    if obj is None:
        return None
    entries = [_map(e) for e in _meta(obj).get("managedFields") or []]
    foreign = [e for e in entries if e.get("manager") and not is_kyverno_manager(str(e["manager"]), managers)
               and e.get("operation") in ("Update", "Apply")]
    if not foreign:
        return None
    latest = max(foreign, key=lambda e: str(e.get("time") or ""))
    when = f" at {latest['time']}" if latest.get("time") else ""
    return Cause("managed-fields", f"changed by {latest['manager']} ({latest.get('operation')}){when}",
                 (ref_of(obj),))


# ---- the choice ---------------------------------------------------------------------------------------------

def downstream_cause(*, klass: str, reason: str | None, enforced: bool, policy: str, trigger: Ref | None,
                     actual: Mapping[str, Any] | None, ev: Evidence) -> Cause:
    """The cause of a downstream change (`klass` not in-sync), in the module's order."""
    found = update_request_cause(policy, trigger, ev)
    if found is None and klass == "missing":
        found = filter_cause(trigger, ev.admission_filters, "Kyverno's admission webhook")
    if found is None:
        found = policy_status_cause(policy, ev)
    if found is None and reason == "predates-policy":
        found = Cause("policy", f"the trigger predates policy {policy} and generateExisting is off: Kyverno "
                                "generates on the trigger's admission only")
    if found is None and not enforced and klass in ("drifted", "orphan"):
        found = Cause("policy", f"policy {policy} does not synchronize: Kyverno leaves its downstreams as they are")
    if found is None and klass == "drifted":
        found = managed_fields_cause(actual)
    return found or UNKNOWN


def report_cause(*, subject: Ref | None, next_scan: str | None, next_scan_reason: str | None,
                 oldest_ephemeral_age_s: int | None, ev: Evidence) -> Cause:
    """The cause of a report change (not current), in the module's order: no UpdateRequest makes a report."""
    found = filter_cause(subject, ev.scan_filters, "the reports controller")
    if found is None and oldest_ephemeral_age_s is not None:
        found = Cause("rescan", f"results wait in ephemeral reports for the aggregator, the oldest "
                                f"{age(oldest_ephemeral_age_s)} old")
    if found is None and next_scan in ("full", "partial"):
        found = Cause("rescan", f"Kyverno's next background scan of the subject is {next_scan}"
                                + (f" ({next_scan_reason})" if next_scan_reason else ""))
    return found or UNKNOWN
