"""Why a downstream or a report is not in sync (issue 28): one `Cause` per change that is not in-sync or
current, chosen from the evidence the state holds, the most certain first:

1. UpdateRequests (`kyverno.io/v2`, `v1beta1`) of the policy for the trigger: a Failed one with its
   message, a Pending or Skip one with its age and retry count; else a queue of Pending ones for the
   policy ("N update requests pending for this policy, the oldest M old"), unless the threshold below
   proves the trigger never had one;
2. Kyverno's configuration: `updateRequestThreshold` (its ConfigMap's), when as many requests as it allows
   were made before the trigger and still exist; the reports controller's flags read from its Deployment
   (`--backgroundScan=false`, `--policyReports=false`, `--aggregateReports=false`, the
   `--maxBackgroundReports` breaker, `--skipResourceFilters=false` with the entry that then skips the
   subject), and the `resourceFilters` entry that skips the trigger (admission) or the report's subject;
3. Kyverno's own permissions (`rbac`): whether the background controller's service account may get/create
   (missing), update (drifted, synchronized) or delete (orphan, synchronized) the downstream's kind in its
   namespace, and whether the reports controller's may get/list/watch the subject's kind cluster-wide (the
   verbs Kyverno checks itself: pkg/policy/generate/validate.go `canIGenerate`, `validateAuthReports`);
   answered live by a SubjectAccessReview (cluster/access_review.py), else by the state's RBAC objects
   (k8s/rbac.py), else not at all;
4. the policy: not Ready (its status conditions), generateExisting off for a trigger that predates it,
   synchronize off; for a report, the cluster's copy of a policy that owes it results with background
   processing off or the label `reports.kyverno.io/disabled` (classic policies: the reports controller
   lists them without it, pkg/controllers/report/utils/utils.go `FetchClusterPolicies`), and the rescan
   decision Kyverno's background controller would take;
5. the object's history: a trigger that no longer matches, with the manager that changed it since its
   downstream was made (and the labels that manager owns); an unowned object at the target that Kyverno
   once wrote (its manager is in managedFields) and another manager changed since; the managedFields of a
   drifted downstream naming a manager that is not Kyverno's, the latest first (who and when);
6. otherwise `unknown`: no guess. When the state lacks evidence one of the steps above reads (it never
   listed Kyverno's UpdateRequests, ConfigMap or Deployments, or the RBAC objects that decide a permission,
   or the LIST failed), the `unknown` names what is missing and the command that captures it (`kubectl kyrec
   capture --kind ...`), or the failure: a cause that cannot be ruled out is not passed over in silence.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.k8s.rbac import RBAC_API, RBAC_GROUP, AccessRequest, StateRBAC, service_account_user
from kubectl_kyrec.k8s.times import kubectl_age
from kubectl_kyrec.load.run_inputs.cluster_state import capture_command
from kubectl_kyrec.load.run_inputs.exclusions import parse_rfc3339
from kubectl_kyrec.load.run_inputs.kyverno_config import (
    UPDATE_REQUEST_THRESHOLD,
    ResourceFilter,
    find_kyverno_configmap,
    matching_filter,
)
from kubectl_kyrec.load.run_inputs.kyverno_install import BACKGROUND, KYVERNO_NAMESPACE, REPORTS, KyvernoInstall
from kubectl_kyrec.model import Ref, ref_of
from kubectl_kyrec.reconcile.normalize import DEFAULT_KYVERNO_MANAGERS, is_kyverno_manager

UPDATE_REQUEST_APIS = ("kyverno.io/v2", "kyverno.io/v1beta1")
LABEL_SOURCE = "audit.kyverno.io/source"           # of a report: who made it (background-scan, admission)
LABEL_REPORTS_DISABLED = "reports.kyverno.io/disabled"  # kk: api/kyverno/constants.go LabelExcludeReporting


@dataclass(frozen=True, slots=True)
class Cause:
    """`kind`: update-request | update-request-queue | kyverno-config | controller-flag | resource-filter | rbac |
    policy | rescan | history | managed-fields | unknown; `evidence`: the objects that say so."""

    kind: str
    message: str
    evidence: tuple[Ref, ...] = ()

    @property
    def text(self) -> str:
        """As a table shows it: the message, or `unknown` (with what the state lacks, when it lacks evidence)."""
        if self.kind != "unknown":
            return self.message
        return "unknown" if self.message == UNKNOWN_MESSAGE else f"unknown: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "evidence": [r.to_json() for r in self.evidence]}


UNKNOWN_MESSAGE = "nothing the state holds says why"
UNKNOWN = Cause("unknown", UNKNOWN_MESSAGE)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _created(obj: Mapping[str, Any]) -> datetime.datetime | None:
    ts = _meta(obj).get("creationTimestamp")
    return parse_rfc3339(ts) if isinstance(ts, str) else None


# ---- the evidence, indexed once ----------------------------------------------------------------------------

# what a live run asks the cluster (cluster/access_review.py): True, False, or None when it cannot tell
AccessCheck = Callable[[AccessRequest], "bool | None"]
# (group, plural) of a kind, as the run's REST mapper knows it (load/run_inputs/kinds.py KindTable)
ResourceOf = Callable[[str, str], "tuple[str, str] | None"]

EPHEMERAL_KINDS = ("EphemeralReport", "ClusterEphemeralReport")


@dataclass(frozen=True)
class Evidence:
    """What the causes are read from: the state's UpdateRequests, policies, RBAC objects and Kyverno's
    Deployments, Kyverno's filters, the cluster's answers to access reviews (live), `now`."""

    now: datetime.datetime
    update_requests: tuple[Mapping[str, Any], ...] = ()
    policies: Mapping[str, Mapping[str, Any]] | None = None      # the state's policy objects by key
    admission_filters: tuple[ResourceFilter, ...] = ()           # the ConfigMap's resourceFilters
    scan_filters: tuple[ResourceFilter, ...] = ()                # those the reports controller applies
    by_uid: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    install: KyvernoInstall = field(default_factory=KyvernoInstall)
    rbac: StateRBAC | None = None
    access: AccessCheck | None = None
    resource_of: ResourceOf | None = None
    background_ephemeral: int = 0        # ephemeral reports of the background scan the state holds
    update_request_threshold: int = UPDATE_REQUEST_THRESHOLD   # the ConfigMap's updateRequestThreshold
    config_ref: Ref | None = None        # Kyverno's ConfigMap, when the state holds it
    # the state's record of its LISTs (ClusterState.is_listed, .read_failure, .serves): what evidence it lacks
    listed: Callable[[str, str, str], bool | None] | None = None
    read_failure: Callable[[str, str, str], str | None] | None = None
    serves: Callable[[str, str], bool | None] | None = None

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]], *, now: datetime.datetime,
           admission_filters: Sequence[ResourceFilter] = (), scan_filters: Sequence[ResourceFilter] = (),
           listed: Callable[[str, str, str], bool | None] | None = None, access: AccessCheck | None = None,
           resource_of: ResourceOf | None = None, update_request_threshold: int = UPDATE_REQUEST_THRESHOLD,
           read_failure: Callable[[str, str, str], str | None] | None = None,
           serves: Callable[[str, str], bool | None] | None = None) -> Evidence:
        """`listed(apiVersion, kind, namespace)`: the state's record of its LISTs (ClusterState.is_listed);
        `read_failure(apiVersion, kind, namespace)`: why such a LIST failed; `serves(apiVersion, kind)`: whether
        the server serves the kind (None: not known). Without `listed` no evidence is said to be missing."""
        objects = list(objects)
        urs: list[Mapping[str, Any]] = []
        policies: dict[str, Mapping[str, Any]] = {}
        by_uid: dict[str, Mapping[str, Any]] = {}
        ephemeral = 0
        for obj in objects:
            kind = str(obj.get("kind") or "")
            api = str(obj.get("apiVersion") or "")
            meta = _meta(obj)
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            if meta.get("uid"):
                by_uid.setdefault(str(meta["uid"]), obj)
            if kind == "UpdateRequest" and api in UPDATE_REQUEST_APIS:
                urs.append(obj)
            elif api.startswith(("kyverno.io/", "policies.kyverno.io/")) and kind.endswith("Policy"):
                policies[f"{namespace}/{name}" if namespace else name] = obj
            elif kind in EPHEMERAL_KINDS and api.startswith("reports.kyverno.io/") and \
                    _map(meta.get("labels")).get(LABEL_SOURCE) == "background-scan":
                ephemeral += 1
        rbac = StateRBAC.of(objects, lambda kind, namespace: listed(RBAC_API, kind, namespace)) \
            if listed is not None else None
        configmap = find_kyverno_configmap(objects)
        return cls(now, tuple(urs), policies, tuple(admission_filters), tuple(scan_filters), by_uid,
                   KyvernoInstall.of(objects), rbac, access, resource_of, ephemeral, update_request_threshold,
                   ref_of(configmap) if configmap is not None else None, listed, read_failure, serves)


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
                old = f", {kubectl_age((ev.now - created).total_seconds())} old" if created else ""
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
    oldest = f", the oldest {kubectl_age((ev.now - min(times)).total_seconds())} old" if times else ""
    return Cause("update-request-queue", f"{len(pending)} update request(s) pending for this policy{oldest}",
                 tuple(ref_of(ur) for ur in pending))


def update_request_threshold_cause(trigger: Ref | None, ev: Evidence) -> Cause | None:
    """Kyverno's admission creates no UpdateRequest while `updateRequestThreshold` or more exist (kk:
    pkg/utils/generator/updaterequests.go). Proved for a trigger's creation only by the requests the state
    holds that were made before it: each of them existed then, so its admission found at least as many."""
    obj = ev.by_uid.get(trigger.uid) if trigger is not None and trigger.uid and not trigger.synthetic else None
    created = _created(obj) if obj is not None else None
    if created is None:
        return None
    before = [ur for ur in ev.update_requests if (t := _created(ur)) is not None and t < created]
    if len(before) < ev.update_request_threshold:
        return None
    assert trigger is not None
    return Cause("kyverno-config", f"Kyverno creates no update request while {ev.update_request_threshold} or more "
                                   f"exist (updateRequestThreshold): {len(before)} the state holds were made before "
                                   f"{trigger.display()}, so its admission made none",
                 (ev.config_ref,) if ev.config_ref is not None else ())


# ---- 2. Kyverno's configuration ---------------------------------------------------------------------------

def filter_cause(ref: Ref | None, filters: Sequence[ResourceFilter], who: str) -> Cause | None:
    if ref is None or not filters:
        return None
    entry = matching_filter(ref.kind, ref.namespace, ref.name, filters, api_version=ref.api_version)
    if entry is None:
        return None
    return Cause("resource-filter", f"{who} skips {ref.display()}: resourceFilters entry {entry.text}")


def controller_flag_cause(ev: Evidence, subject: Ref | None) -> Cause | None:
    """The reports controller's flags, as its Deployment gives them (kk: cmd/reports-controller/main.go:
    no background scan controller without --backgroundScan; --policyReports=false makes the scan store
    nothing (pkg/controllers/report/background/controller.go `storeReport` only when policyReports); no
    aggregation into policy reports without --aggregateReports; the `background scan reports` breaker
    refuses new ephemeral reports while more than --maxBackgroundReports exist)."""
    controller = ev.install.controller(REPORTS)
    if controller is None:
        return None
    evidence = (controller.deployment,)
    for flag, effect in (("backgroundScan", "no background scan reports on existing objects"),
                         ("policyReports", "the background scan stores no reports"),
                         ("aggregateReports", "ephemeral reports are never aggregated into policy reports")):
        if controller.bool_flag(flag) is False:
            return Cause("controller-flag", f"the reports controller runs with {controller.given(flag)}: {effect}",
                         evidence)
    limit_text = controller.flag("maxBackgroundReports")
    limit = int(limit_text) if limit_text is not None and limit_text.lstrip("-").isdigit() else 10000
    if ev.background_ephemeral > limit:
        return Cause("controller-flag", f"the reports controller creates no ephemeral report while more than "
                                        f"{limit} exist (--maxBackgroundReports); the state holds "
                                        f"{ev.background_ephemeral}", evidence)
    if subject is not None and not ev.scan_filters and controller.bool_flag("skipResourceFilters") is False:
        entry = matching_filter(subject.kind, subject.namespace, subject.name, ev.admission_filters,
                                api_version=subject.api_version)
        if entry is not None:
            flag = controller.given("skipResourceFilters")
            return Cause("controller-flag", f"the reports controller runs with {flag}: resourceFilters entry "
                                            f"{entry.text} skips {subject.display()}", evidence)
    return None


_COMPONENT_TEXT = {BACKGROUND: "background controller", REPORTS: "reports controller"}


def _allowed(ev: Evidence, req: AccessRequest) -> tuple[bool | None, str]:
    """The cluster's answer when it gave one, else the state's RBAC objects'; and which answered."""
    if ev.access is not None:
        answer = ev.access(req)
        if answer is not None:
            return answer, "SubjectAccessReview"
    if ev.rbac is not None:
        return ev.rbac.allowed(req), "the state's RBAC objects"
    return None, ""


def _rbac_answers(ev: Evidence, component: str, requests: Sequence[tuple[str, str]], group: str, plural: str,
                  namespace: str) -> list[tuple[str, bool | None, str]]:
    """(verb, answer, who answered) per request; none when no Deployment of Kyverno's names the account: the
    chart's default name may not be the one Kyverno runs as (or Kyverno may not run at all), and a denial to
    it would say nothing."""
    if not ev.install.account_seen(component):
        return []
    user, groups = service_account_user(*ev.install.account(component))
    out: list[tuple[str, bool | None, str]] = []
    for verb, name in requests:
        # allowed for every name first: one review per verb, resource and namespace however many objects ask,
        # and only a refusal is asked again for the object's own name (a rule with resourceNames may allow it)
        answer, by = _allowed(ev, AccessRequest(user, groups, verb, group, plural, namespace, ""))
        if answer is not True and name:
            answer, by = _allowed(ev, AccessRequest(user, groups, verb, group, plural, namespace, name))
        out.append((verb, answer, by))
    return out


def rbac_cause(ev: Evidence, component: str, requests: Sequence[tuple[str, str]], api_version: str, kind: str,
               namespace: str) -> Cause | None:
    """The verbs of `requests` ((verb, name) pairs) the controller's service account may not use on the
    kind in `namespace` ("" cluster-wide); None when all are allowed or none is known to be denied, and when
    no Deployment of Kyverno's names the account: a binding cannot stand in for one, since the built-in ones
    name every authenticated user (`system:basic-user` to `system:authenticated`) and so every account, whether
    Kyverno runs as it or runs at all; a live run and an offline run of its capture then answer alike."""
    found = ev.resource_of(api_version, kind) if ev.resource_of is not None else None
    if found is None:
        return None
    group, plural = found
    answers = _rbac_answers(ev, component, requests, group, plural, namespace)
    denied: list[str] = []
    said_by = ""
    for verb, answer, by in answers:
        if answer is False and verb not in denied:
            denied.append(verb)
            said_by = by
    if not denied:
        return None
    sa_namespace, sa_name = ev.install.account(component)
    user, groups = service_account_user(sa_namespace, sa_name)
    resource = f"{plural}.{group}" if group else plural
    where = f"in namespace {namespace}" if namespace else "cluster-wide"
    verbs = ", ".join(f'"{v}"' for v in denied)
    message = (f"Kyverno's {_COMPONENT_TEXT[component]} (service account {sa_namespace}/{sa_name}) may not "
               f"{'/'.join(denied)} {resource} {where} ({said_by}); grant: apiGroups: [\"{group}\"], "
               f"resources: [\"{plural}\"], verbs: [{verbs}]")
    evidence = tuple(ref_of(b) for b in ev.rbac.bindings_for(user, groups, namespace)) \
        if ev.rbac is not None and said_by != "SubjectAccessReview" else ()
    return Cause("rbac", message, evidence)


# Kyverno's own permission check of a generate rule: get and create, update and delete with synchronize
# (kk: pkg/policy/generate/validate.go canIGenerate); each class needs the requests that would fix it
_DOWNSTREAM_VERBS = {"missing": (("get", True), ("create", False)), "drifted": (("get", True), ("update", True)),
                     "orphan": (("delete", True),)}


def downstream_rbac_cause(klass: str, enforced: bool, obj: Ref | None, ev: Evidence) -> Cause | None:
    verbs = _DOWNSTREAM_VERBS.get(klass)
    if obj is None or verbs is None or (klass != "missing" and not enforced):
        return None
    # a create names no object (a POST to the collection): a rule limited to resourceNames cannot grant it
    requests = [(verb, obj.name if named else "") for verb, named in verbs]
    return rbac_cause(ev, BACKGROUND, requests, obj.api_version, obj.kind, obj.namespace)


def report_rbac_cause(subject: Ref | None, ev: Evidence) -> Cause | None:
    """The reports controller watches every subject kind cluster-wide (kk: pkg/policy/validate/validate.go
    validateAuth: get, list, watch, namespace "")."""
    if subject is None:
        return None
    return rbac_cause(ev, REPORTS, [("get", ""), ("list", ""), ("watch", "")], subject.api_version,
                      subject.kind, "")


# ---- 3. the policy ----------------------------------------------------------------------------------------

def policy_status_cause(policy: str, ev: Evidence) -> Cause | None:
    """A policy the state's copy says is not ready: classic policies keep a `Ready` condition (and
    `status.ready`); the CEL kinds a `conditionStatus` whose `ready` is false when a condition is not True
    (kk: pkg/controllers/policystatus, e.g. RBACPermissionsGranted "Policy is not ready for reporting,
    missing permissions: ...", WebhookConfigured), and the first such condition is named."""
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
    conditions = _map(status.get("conditionStatus"))
    if conditions.get("ready") is False:
        failing = [_map(c) for c in conditions.get("conditions") or [] if str(_map(c).get("status")) != "True"]
        detail = f"{failing[0].get('type')}: {failing[0].get('message') or failing[0].get('reason') or 'no message'}" \
            if failing else str(conditions.get("message") or "no condition says why")
        return Cause("policy", f"policy {policy} is not ready: {detail}", (ref_of(obj),))
    return None


def _background_off(obj: Mapping[str, Any]) -> str | None:
    spec = _map(obj.get("spec"))
    if str(obj.get("apiVersion") or "").startswith("kyverno.io/"):
        return "spec.background: false" if spec.get("background") is False else None
    enabled = _map(_map(spec.get("evaluation")).get("background")).get("enabled")
    return "spec.evaluation.background.enabled: false" if enabled is False else None


def report_policy_cause(policies: Sequence[str], ev: Evidence) -> Cause | None:
    """The cluster's copy of a policy that owes the report results: not ready, background processing off,
    or (classic) labelled out of reporting. The copy is what Kyverno runs, whatever -p gave kyrec."""
    for policy in policies:
        found = policy_status_cause(policy, ev)
        if found is not None:
            return found
    for policy in policies:
        obj = (ev.policies or {}).get(policy)
        if obj is None:
            continue
        off = _background_off(obj)
        if off is not None:
            return Cause("policy", f"the cluster's policy {policy} has {off}: the background scan skips it",
                         (ref_of(obj),))
        if str(obj.get("apiVersion") or "").startswith("kyverno.io/") and \
                LABEL_REPORTS_DISABLED in _map(_meta(obj).get("labels")):
            return Cause("policy", f"the cluster's policy {policy} has the label {LABEL_REPORTS_DISABLED}: the "
                                   "reports controller leaves it out", (ref_of(obj),))
    return None


# ---- 4. the object's history ------------------------------------------------------------------------------

def _label_keys(entry: Mapping[str, Any]) -> list[str]:
    """The labels a managedFields entry owns (fieldsV1 `f:metadata` / `f:labels` / `f:<key>`)."""
    labels = _map(_map(_map(entry.get("fieldsV1")).get("f:metadata")).get("f:labels"))
    return sorted(k[2:] for k in labels if k.startswith("f:"))


def _foreign_entries(obj: Mapping[str, Any], managers: Sequence[str]) -> list[Mapping[str, Any]]:
    entries = [_map(e) for e in _meta(obj).get("managedFields") or []]
    return [e for e in entries if e.get("manager") and not is_kyverno_manager(str(e["manager"]), managers)
            and e.get("operation") in ("Update", "Apply")]


def _later(entry: Mapping[str, Any], than: datetime.datetime | None) -> bool:
    when = parse_rfc3339(str(entry.get("time") or "")) if entry.get("time") else None
    return when is not None and than is not None and when > than


def trigger_history_cause(trigger: Ref | None, downstream: Mapping[str, Any] | None, ev: Evidence,
                          managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS) -> Cause | None:
    """A trigger that no longer matches: the latest change to it by a manager that is not Kyverno's, made
    after its downstream was created (so after it last matched), with the labels that manager owns."""
    obj = ev.by_uid.get(trigger.uid) if trigger is not None and trigger.uid and not trigger.synthetic else None
    if obj is None or downstream is None:
        return None
    made = _created(downstream)
    since = [e for e in _foreign_entries(obj, managers) if _later(e, made)]
    if not since:
        return None
    latest = max(since, key=lambda e: str(e.get("time") or ""))
    labels = _label_keys(latest)
    owns = f", which owns its labels {', '.join(labels)}" if labels else ""
    assert trigger is not None
    return Cause("history", f"{trigger.display()} no longer matches: changed by {latest['manager']} "
                            f"({latest.get('operation')}) at {latest['time']}{owns}, after the downstream was made",
                 (ref_of(obj),))


def unowned_history_cause(obj: Mapping[str, Any] | None, managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS
                          ) -> Cause | None:
    """An object at the downstream's identity that Kyverno does not own but once wrote (a Kyverno manager
    in its managedFields): another manager changed it since, and with it the labels Kyverno recognises
    its downstreams by."""
    if obj is None:
        return None
    entries = [_map(e) for e in _meta(obj).get("managedFields") or []]
    ours = [e for e in entries if e.get("manager") and is_kyverno_manager(str(e["manager"]), managers)]
    if not ours:
        return None
    times = [t for t in (parse_rfc3339(str(e["time"])) for e in ours if e.get("time")) if t is not None]
    last_ours = max(times, default=None)
    since = [e for e in _foreign_entries(obj, managers) if _later(e, last_ours)]
    if not since:
        return None
    latest = max(since, key=lambda e: str(e.get("time") or ""))
    return Cause("history", f"written by Kyverno ({ours[0]['manager']}), then changed by {latest['manager']} "
                            f"({latest.get('operation')}) at {latest['time']}: its labels no longer mark it "
                            "as Kyverno's", (ref_of(obj),))


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


# ---- what the state lacks -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Gap:
    """Evidence a cause reads that the state lacks: `what` as said ("UpdateRequests in namespace kyverno"),
    `resource` as `capture --kind` takes it, and `note`: why it could not be had ("could not be read: ..."),
    "" when it was never listed (then a capture gets it)."""

    what: str
    resource: str = ""
    note: str = ""


# (apiVersion, kind, resource name for capture --kind) of the evidence the steps above read
_UPDATE_REQUESTS = ("kyverno.io/v2", "UpdateRequest", "updaterequests.kyverno.io")
_CONFIGMAPS = ("v1", "ConfigMap", "configmaps")
_DEPLOYMENTS = ("apps/v1", "Deployment", "deployments.apps")
_RBAC = {kind: (RBAC_API, kind, f"{kind.lower()}s.{RBAC_GROUP}")
         for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")}


def _gap(ev: Evidence, evidence: tuple[str, str, str], namespace: str = "") -> Gap | None:
    api_version, kind, resource = evidence
    if ev.listed is None or ev.listed(api_version, kind, namespace) is True:
        return None
    if ev.serves is not None and ev.serves(api_version, kind) is False:
        return None         # not served, so none exists: nothing to capture
    failure = ev.read_failure(api_version, kind, namespace) if ev.read_failure is not None else None
    where = f" in namespace {namespace}" if namespace else ""
    return Gap(f"{kind}s{where}", resource, f"could not be read: {failure}" if failure else "")


def _rbac_gaps(ev: Evidence, component: str, requests: Sequence[tuple[str, str]], api_version: str, kind: str,
               namespace: str) -> list[Gap]:
    """What keeps Kyverno's permissions undecided: its Deployments (which account it runs as), and, where
    neither the cluster answered (live, a SubjectAccessReview) nor the state's RBAC objects could, the RBAC
    kinds the decision needs (a live run reads them too, so it lacks what its capture lacks)."""
    found = ev.resource_of(api_version, kind) if ev.resource_of is not None else None
    if found is None:
        return []
    deployments = _gap(ev, _DEPLOYMENTS, KYVERNO_NAMESPACE)
    if deployments is None:
        answers = _rbac_answers(ev, component, requests, found[0], found[1], namespace)
        if not any(answer is None for _, answer, _ in answers):
            return []       # decided, or no Deployment of Kyverno's names an account (Kyverno runs elsewhere or not)
    needed = [_gap(ev, _RBAC["ClusterRoleBinding"]), _gap(ev, _RBAC["ClusterRole"])]
    if namespace:
        needed += [_gap(ev, _RBAC["RoleBinding"], namespace), _gap(ev, _RBAC["Role"], namespace)]
    return [g for g in [deployments, *needed] if g is not None]


def _unknown(gaps: Sequence[Gap | None]) -> Cause:
    """`unknown`, naming the evidence the state lacks and how to capture it (or why its LIST failed)."""
    unique = list(dict.fromkeys(g for g in gaps if g is not None))
    if not unique:
        return UNKNOWN
    parts = [f"{g.what} ({g.note})" if g.note else g.what for g in unique]
    message = f"nothing the state holds says why, and it lacks evidence that could: {', '.join(parts)}"
    capture = [g.resource for g in unique if not g.note and g.resource]
    if capture:
        message += (f"; capture {'it' if len(capture) == 1 else 'them'} with: "
                    f"{capture_command(','.join(dict.fromkeys(capture)))}, and pass it with another --state")
    return Cause("unknown", message)


def downstream_gaps(klass: str, enforced: bool, obj: Ref | None, ev: Evidence) -> list[Gap]:
    """The evidence a downstream change's cause reads that the state lacks."""
    gaps = [_gap(ev, _UPDATE_REQUESTS, KYVERNO_NAMESPACE)]
    if klass == "missing":
        gaps.append(_gap(ev, _CONFIGMAPS, KYVERNO_NAMESPACE))     # resourceFilters, updateRequestThreshold
    verbs = _DOWNSTREAM_VERBS.get(klass)
    if obj is not None and verbs is not None and (klass == "missing" or enforced):
        requests = [(verb, obj.name if named else "") for verb, named in verbs]
        gaps.extend(_rbac_gaps(ev, BACKGROUND, requests, obj.api_version, obj.kind, obj.namespace))
    return [g for g in gaps if g is not None]


def report_gaps(subject: Ref | None, ev: Evidence) -> list[Gap]:
    """The evidence a missing or stale report's cause reads that the state lacks."""
    gaps = [_gap(ev, _DEPLOYMENTS, KYVERNO_NAMESPACE), _gap(ev, _CONFIGMAPS, KYVERNO_NAMESPACE)]
    if subject is not None:
        gaps.extend(_rbac_gaps(ev, REPORTS, [("get", ""), ("list", ""), ("watch", "")], subject.api_version,
                               subject.kind, ""))
    return [g for g in gaps if g is not None]


# ---- the choice ---------------------------------------------------------------------------------------------

def downstream_cause(*, klass: str, reason: str | None, enforced: bool, policy: str, trigger: Ref | None,
                     actual: Mapping[str, Any] | None, ev: Evidence, obj: Ref | None = None) -> Cause:
    """The cause of a downstream change (`klass` not in-sync), in the module's order."""
    found = update_request_cause(policy, trigger, ev)
    if (found is None or found.kind == "update-request-queue") and klass == "missing":
        # a trigger whose admission met the threshold has no request of its own to wait in the queue
        found = update_request_threshold_cause(trigger, ev) or found
    if found is None and klass == "missing":
        found = filter_cause(trigger, ev.admission_filters, "Kyverno's admission webhook")
    if found is None:
        found = downstream_rbac_cause(klass, enforced, obj, ev)
    if found is None:
        found = policy_status_cause(policy, ev)
    if found is None and reason == "needs-registry":
        # the row's own reason is the cause: the state holds no evidence for it, the registry does
        found = Cause("policy", f"policy {policy} reads image data only a registry gives (needs-registry): run "
                                "with --registry to evaluate it")
    if found is None and reason == "predates-policy":
        found = Cause("policy", f"the trigger predates policy {policy} and generateExisting is off: Kyverno "
                                "generates on the trigger's admission only")
    if found is None and not enforced and klass in ("drifted", "orphan"):
        found = Cause("policy", f"policy {policy} does not synchronize: Kyverno leaves its downstreams as they are")
    if found is None and reason == "no-longer-matches":
        found = trigger_history_cause(trigger, actual, ev)
    if found is None and reason == "unowned":
        found = unowned_history_cause(actual)
    if found is None and klass == "drifted":
        found = managed_fields_cause(actual)
    return found or _unknown(downstream_gaps(klass, enforced, obj, ev))


def report_cause(*, subject: Ref | None, next_scan: str | None, next_scan_reason: str | None,
                 oldest_ephemeral_age_s: int | None, ev: Evidence, policies: Sequence[str] = (),
                 klass: str | None = None) -> Cause:
    """The cause of a report change (not current), in the module's order: no UpdateRequest makes a report.
    `policies`: those that owe the subject results (the expected report's). What keeps Kyverno from
    writing a report (its flags, its permissions, the cluster's policy) is said of a `missing` or `stale`
    one only: it does not explain an orphan, a duplicate or a misnamed report."""
    writes = klass in (None, "missing", "stale")
    found = controller_flag_cause(ev, subject) if writes else None
    if found is None:
        found = filter_cause(subject, ev.scan_filters, "the reports controller")
    if found is None and writes:
        found = report_rbac_cause(subject, ev)
    if found is None and writes:
        found = report_policy_cause(policies, ev)
    if found is None and oldest_ephemeral_age_s is not None:
        found = Cause("rescan", f"results wait in ephemeral reports for the aggregator, the oldest "
                                f"{kubectl_age(oldest_ephemeral_age_s)} old")
    if found is None and next_scan in ("full", "partial"):
        found = Cause("rescan", f"Kyverno's next background scan of the subject is {next_scan}"
                                + (f" ({next_scan_reason})" if next_scan_reason else ""))
    return found or (_unknown(report_gaps(subject, ev)) if writes else UNKNOWN)
