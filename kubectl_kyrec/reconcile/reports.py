"""Report reconciliation (docs/semantics/reports.md#report-reconciliation): expected policy reports against
the reports in the state.

This is the Kyverno adapter of the claims engine (`reconcile.claims`): subjects are the resources in scope
(keyed by uid, the claim identity their report's name), claims the reports (keyed by the uid they
describe), and the judgement the result comparison below. Keeper choice, precedence, duplicates, misnamed
and leftovers are the engine's; what is Kyverno's stays here.

Inputs are plain dicts as Kubernetes serves them. Every subject in scope and every Kyverno report of the
active API (objects labelled `app.kubernetes.io/managed-by: kyverno`) is classified once:

=============  =========================  ==================================================================
class          reason                     condition
=============  =========================  ==================================================================
current                                   one report for the uid, named by it, results equal expected
missing                                   no report for a subject in scope that is owed one
stale          outcome-changed            a result of the same (source, policy, rule) differs
stale          result-of-absent-policy    the report carries a result the subject is not owed (#17405)
stale          result-missing             an expected result is not in the report
misnamed       expected-name              the kept report is not `<Kind> <namespace>/<uid>` (seed 000)
duplicate                                 a second report for one uid; kept: the one named by the uid,
                                          else the newest (creationTimestamp, then name)
orphan         subject-gone               the report's scope/owner uid names no object in the state, and
                                          the state lists that kind
orphan         subject-unknown            same, but the state holds no object of that kind at all: it
                                          cannot tell (a partial state, or a kind no policy matches now)
undetermined   read-failed                a read the finding depends on failed (reconcile/reads.py)
undetermined   kind-not-captured          a read the finding depends on never happened
=============  =========================  ==================================================================

A subject's status is the first of duplicate, misnamed, stale, current/missing that applies. Stale reasons
are reported in that table order; `fields` lists a JSON pointer for every difference, into the actual
report (`/results/<i>/<field>`, `/results/<i>` for a result not owed, `/results/-` for one missing).
Results compare without `timestamp`, `resources` and `resourceSelector`; empty `message`, `rule`,
`category`, `severity`, `properties` and `source` equal absent ones (they are `omitempty` in the API).

A report describes the uid in `scope.uid`, else its first owner reference's uid, else its name. Reports of
existing objects that are not subjects in scope (no expected result, or filtered) are `stale` with
`result-of-absent-policy` when they carry results; pass `evaluated_uids` to leave out objects the run did
not look at. With `policies` (the names in the run), results of other policies are left out of the
comparison on both sides, so `-p one.yaml` does not turn every report stale.

Next background scan, per subject, as Kyverno's background controller decides it (`needsReconcile`):
the scan metadata is the (Cluster)EphemeralReport in the subject's namespace *named by the uid* (Kyverno
reads it from its lister by that name). None: `full`. Its `audit.kyverno.io/resource.hash` label differs
from the subject's current hash: `full`. No or unparsable `audit.kyverno.io/last-scan-time`, or older than
the scan interval (default 1h) as of `now`: `full`. Policy resourceVersion labels (every key with a policy
label prefix) differ from `policy_versions`: `partial`. Otherwise `none`. Recent Kyverno creates
background reports with `generateName: <uid>-`, so that lookup by name finds nothing and every rescan is
full (`next_scan_reason: scan-metadata-not-named-by-uid`). `oldest_ephemeral_age_s` is the age of the
oldest ephemeral report labelled with the subject's uid (or, not yet adopted, annotated with its
namespace and name): results still waiting for the aggregator.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import UsageError

# the report APIs, kinds and result statuses are those the expected reports are written with
from kubectl_kyrec.evaluate.generating.downstreams import LABEL_MANAGED_BY
from kubectl_kyrec.expect.reports import REPORT_KINDS, ExpectedReports
from kubectl_kyrec.expect.resource_hash import resource_hash
from kubectl_kyrec.load.policy.policies import UNEVALUATED_SOURCES
from kubectl_kyrec.load.run_inputs.exclusions import parse_rfc3339
from kubectl_kyrec.load.run_inputs.kyverno_config import ResourceFilter, filtered
from kubectl_kyrec.model import OPENREPORTS, WGPOLICY, Ref, Subject, ref_of
from kubectl_kyrec.reconcile.causes import LABEL_SOURCE, Cause
from kubectl_kyrec.reconcile.claims import (
    EXPECTED_NAME,  # noqa: F401  (re-exported: the misnamed reason belongs to this table too)
    IGNORED,
    Claim,
    Expectation,
    Finding,
    Judgement,
    Leftover,
    Verdict,
    classify,
)
from kubectl_kyrec.reconcile.diff_pair import DiffPair, DiffText, Layout
from kubectl_kyrec.reconcile.downstreams import diff_name
from kubectl_kyrec.reconcile.list_read import Read

EPHEMERAL_API = "reports.kyverno.io/v1"
EPHEMERAL_KINDS = ("EphemeralReport", "ClusterEphemeralReport")

LABEL_RESOURCE_UID = "audit.kyverno.io/resource.uid"
LABEL_RESOURCE_HASH = "audit.kyverno.io/resource.hash"
LABEL_RESOURCE_KIND = "audit.kyverno.io/resource.kind"
ANNOTATION_LAST_SCAN = "audit.kyverno.io/last-scan-time"
ANNOTATION_RESOURCE_NAMESPACE = "audit.kyverno.io/resource.namespace"
ANNOTATION_RESOURCE_NAME = "audit.kyverno.io/resource.name"

# Kyverno's IsPolicyLabel prefixes (pkg/utils/report/metadata.go), mpol/dpol from
# docs/semantics/reports.md#ephemeral-reports-and-scans
POLICY_LABEL_PREFIXES = (
    "cpol.kyverno.io/", "pol.kyverno.io/", "vpol.kyverno.io/", "ivpol.kyverno.io/", "gpol.kyverno.io/",
    "mpol.kyverno.io/", "dpol.kyverno.io/", "polex.kyverno.io/", "validatingadmissionpolicy.apiserver.io/",
    "validatingadmissionpolicybinding.apiserver.io/", "mutatingadmissionpolicy.apiserver.io/",
    "mutatingadmissionpolicybinding.apiserver.io/",
)

DEFAULT_SCAN_INTERVAL = datetime.timedelta(hours=1)
_OMITEMPTY = frozenset(("message", "rule", "category", "severity", "properties", "source"))
_NOT_COMPARED = frozenset(("timestamp", "resources", "resourceSelector"))


class ReportClass(enum.StrEnum):
    CURRENT = "current"
    MISSING = "missing"
    STALE = "stale"
    ORPHAN = "orphan"
    DUPLICATE = "duplicate"
    MISNAMED = "misnamed"
    # a read the finding depends on failed or never happened (reconcile/reads.py): never acted on
    UNDETERMINED = "undetermined"


class StaleReason(enum.StrEnum):
    OUTCOME_CHANGED = "outcome-changed"
    RESULT_OF_ABSENT_POLICY = "result-of-absent-policy"
    RESULT_MISSING = "result-missing"


class NextScan(enum.StrEnum):
    FULL = "full"
    PARTIAL = "partial"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class ScanDecision:
    next_scan: NextScan
    reason: str | None
    oldest_ephemeral_age_s: int | None


@dataclass(frozen=True, slots=True)
class ReportChange:
    """One classified object (a subject's report, a missing one, a duplicate or an orphan)."""

    klass: ReportClass
    reason: str | None
    subject: Ref | None
    report: Ref
    fields: tuple[str, ...] = ()
    shown: DiffPair | None = None   # a stale report's results, live and expected (rendered at the edge)
    next_scan: NextScan | None = None
    next_scan_reason: str | None = None
    oldest_ephemeral_age_s: int | None = None
    in_scope: bool = True
    message: str = ""
    # the LISTs this finding depends on (reconcile/reads.py); the plan acts only when all were listed
    depends_on: tuple[Read, ...] = ()
    # why it is not current (reconcile/causes.py); None until the run asks, and for current
    cause: Cause | None = None

    def to_json(self, diff_text: DiffText) -> dict[str, Any]:
        """The `changes[]` entry of docs/output.md; `nextScanReason` and `inScope` are additions.
        `diff_text` renders `shown`."""
        return {
            "domain": "report",
            "class": str(self.klass),
            "reason": self.reason,
            "enforced": True,
            "policy": None,
            "trigger": None,
            "subject": self.subject.to_json() if self.subject else None,
            "object": self.report.to_json(),
            "fields": list(self.fields),
            "diff": diff_text(self.shown),
            "nextScan": str(self.next_scan) if self.next_scan else None,
            "nextScanReason": self.next_scan_reason,
            "oldestEphemeralAgeSeconds": self.oldest_ephemeral_age_s,
            "inScope": self.in_scope,
            "message": self.message or None,
            "cause": self.cause.to_json() if self.cause else None,
        }


@dataclass(frozen=True, slots=True)
class SubjectStatus:
    """Where one subject in scope stands; `results` are its expected (policy, result) pairs."""

    subject: Ref
    status: ReportClass
    reason: str | None
    report: Ref | None
    results: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ReportDiff:
    report_api: str
    changes: tuple[ReportChange, ...]
    subjects: tuple[SubjectStatus, ...]
    filtered_subjects: tuple[Ref, ...] = ()
    ignored_reports: tuple[Ref, ...] = ()
    # (policy, subject) whose result kyrec cannot decide: left out of the comparison, named in a notice
    undetermined: tuple[tuple[str, Ref], ...] = ()
    verdicts: tuple[Verdict, ...] = ()          # the engine's, one per subject in scope (as `subjects`)
    # report sources of policy kinds kyrec does not evaluate whose results were left out
    left_out_sources: tuple[str, ...] = ()
    # (policy, rule) of the history-dependent rules (diff_reports `history_rules`) whose entries the state's
    # reports held, with how many subjects' reports held one
    left_out_rules: tuple[tuple[str, str, int], ...] = ()

    def left_out_notice(self) -> str | None:
        if not self.left_out_sources:
            return None
        return ("report results of policy kinds kyrec does not evaluate were left out of the comparison: "
                + ", ".join(self.left_out_sources))

    def __post_init__(self) -> None:
        # coverage reads the verdicts: a diff built without them would cover no subject at all
        if len(self.verdicts) != len(self.subjects):
            raise ValueError(f"ReportDiff: {len(self.verdicts)} verdicts for {len(self.subjects)} subjects")

    def summary(self) -> dict[str, int]:
        """Count of changes per class, every class present."""
        counts = {str(c): 0 for c in ReportClass}
        for change in self.changes:
            counts[str(change.klass)] += 1
        return counts

    def changes_json(self, diff_text: DiffText) -> list[dict[str, Any]]:
        return [c.to_json(diff_text) for c in self.changes]


def detect_report_api(objects: Iterable[Mapping[str, Any]]) -> str:
    """openreports when the state holds any report of that API, else wgpolicyk8s."""
    kinds = REPORT_KINDS[OPENREPORTS]
    for obj in objects:
        if obj.get("apiVersion") == OPENREPORTS and obj.get("kind") in kinds:
            return OPENREPORTS
    return WGPOLICY


def is_policy_label(key: str) -> bool:
    return key.startswith(POLICY_LABEL_PREFIXES)


def described_uid(report: Mapping[str, Any]) -> str:
    """The uid a report is about: scope.uid, else the first owner's uid, else its name."""
    scope = report.get("scope")
    if isinstance(scope, Mapping) and scope.get("uid"):
        return str(scope["uid"])
    meta = report.get("metadata") or {}
    for owner in meta.get("ownerReferences") or []:
        if isinstance(owner, Mapping) and owner.get("uid"):
            return str(owner["uid"])
    return str(meta.get("name") or "")


def normalize_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result as compared: no timestamps or resource lists, omitempty fields dropped when empty."""
    out = {k: v for k, v in result.items() if k not in _NOT_COMPARED and (v or k not in _OMITEMPTY)}
    # scored is not omitempty: Go always writes it, absent means false
    out["scored"] = bool(out.get("scored", False))
    if "properties" in out and isinstance(out["properties"], Mapping):
        out["properties"] = {str(k): str(v) for k, v in out["properties"].items()}
    return out


def result_key(result: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(result.get("source") or ""), str(result.get("policy") or ""), str(result.get("rule") or ""))


def _sort_key(result: Mapping[str, Any]) -> tuple[str, str, str]:
    source, policy, rule = result_key(result)
    return (policy, rule, source)


@dataclass(frozen=True)
class _Comparison:
    reasons: tuple[StaleReason, ...]
    fields: tuple[str, ...]


_SAME = _Comparison((), ())


def compare_results(expected: Sequence[Mapping[str, Any]],
                    actual: Sequence[Mapping[str, Any]]) -> _Comparison:
    """Keyed by (source, policy, rule); pointers index the actual results as given."""
    exp_by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in expected:
        exp_by_key.setdefault(result_key(r), []).append(normalize_result(r))
    act_norm: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in actual:
        act_norm.setdefault(result_key(r), []).append(normalize_result(r))
    if act_norm == exp_by_key:
        # the same results under the same keys, in the same order per key: nothing below would differ
        return _SAME
    act_by_key: dict[tuple[str, str, str], list[tuple[int, dict[str, Any]]]] = {}
    for i, r in enumerate(actual):
        act_by_key.setdefault(result_key(r), []).append((i, normalize_result(r)))
    reasons: set[StaleReason] = set()
    fields: list[str] = []
    for key, acts in act_by_key.items():
        exps = exp_by_key.get(key)
        if exps is None:
            reasons.add(StaleReason.RESULT_OF_ABSENT_POLICY)
            fields.extend(f"/results/{i}" for i, _ in acts)
            continue
        for n, (i, act) in enumerate(acts):
            if n >= len(exps):
                # more results under one key than expected: the extra one is not owed
                reasons.add(StaleReason.RESULT_OF_ABSENT_POLICY)
                fields.append(f"/results/{i}")
                continue
            differing = _differing_fields(exps[n], act, f"/results/{i}")
            if differing:
                reasons.add(StaleReason.OUTCOME_CHANGED)
                fields.extend(differing)
    for key, exps in exp_by_key.items():
        missing = len(exps) - len(act_by_key.get(key, ()))
        if missing > 0:
            reasons.add(StaleReason.RESULT_MISSING)
            fields.extend(["/results/-"] * missing)
    ordered = tuple(r for r in StaleReason if r in reasons)
    return _Comparison(ordered, tuple(dict.fromkeys(fields)))


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


# Result properties one Kyverno release writes and an earlier one does not: `cel.validationIndex` on a failed
# ValidatingPolicy validation is Kyverno main's (vpol engine.go withValidationIndex), absent from v1.17.2's
# reports (checked on v1.17.2's controllers, docs/compatibility.md "Ground truth"). kyrec writes them, and
# a cluster's result without one is not stale for it: the controller of that release never rewrites it.
RELEASE_PROPERTIES = frozenset({"cel.validationIndex"})


def _differing_fields(exp: Mapping[str, Any], act: Mapping[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    for key in sorted(set(exp) | set(act)):
        a, b = exp.get(key), act.get(key)
        if a == b:
            continue
        if key == "properties" and isinstance(a or {}, Mapping) and isinstance(b or {}, Mapping):
            pa, pb = a or {}, b or {}
            out.extend(f"{prefix}/properties/{_pointer_token(k)}" for k in sorted(set(pa) | set(pb))
                       if pa.get(k) != pb.get(k) and not (k in RELEASE_PROPERTIES and k not in pb))
        else:
            out.append(f"{prefix}/{_pointer_token(key)}")
    return out


def shown_results(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The results as the diff shows them: normalized, in Kyverno's report order, keys in report order."""
    return [_ordered(r) for r in sorted((normalize_result(r) for r in results), key=_sort_key)]


def _ordered(result: Mapping[str, Any]) -> dict[str, Any]:
    head = ("source", "policy", "rule", "result", "message", "scored", "category", "severity", "properties")
    out = {k: result[k] for k in head if k in result}
    out.update((k, v) for k, v in result.items() if k not in out)
    return out


def results_pair(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], name: str) -> DiffPair:
    return DiffPair(name, shown_results(before), shown_results(after), Layout.RESULTS)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = _meta(obj).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def _results(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = report.get("results")
    return [r for r in results if isinstance(r, Mapping)] if isinstance(results, list) else []


def _created(obj: Mapping[str, Any]) -> datetime.datetime | None:
    ts = _meta(obj).get("creationTimestamp")
    return parse_rfc3339(ts) if isinstance(ts, str) else None


def _report_ref(report: Mapping[str, Any]) -> Ref:
    meta = _meta(report)
    return Ref(str(report.get("apiVersion", "")), str(report.get("kind", "")),
               str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(meta.get("uid") or ""))


def expected_identity(subject: Ref, api: str) -> Ref:
    """The report Kyverno's aggregator looks up for this subject (uid "" : it need not exist)."""
    namespaced_kind, cluster_kind = REPORT_KINDS[api]
    kind = namespaced_kind if subject.namespace else cluster_kind
    return Ref(api, kind, subject.namespace, subject.uid, "")


@dataclass
class _EphemeralIndex:
    by_name: dict[tuple[str, str, str], Mapping[str, Any]]       # (kind, namespace, name)
    by_uid: dict[str, list[Mapping[str, Any]]]
    unadopted: dict[tuple[str, str], list[Mapping[str, Any]]]    # (namespace, name) from annotations


def _index_ephemeral(objects: Iterable[Mapping[str, Any]]) -> _EphemeralIndex:
    index = _EphemeralIndex({}, {}, {})
    for obj in objects:
        if obj.get("apiVersion") != EPHEMERAL_API or obj.get("kind") not in EPHEMERAL_KINDS:
            continue
        meta = _meta(obj)
        index.by_name[(str(obj["kind"]), str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = obj
        uid = str(_labels(obj).get(LABEL_RESOURCE_UID) or "")
        if uid:
            index.by_uid.setdefault(uid, []).append(obj)
        else:
            ann = _annotations(obj)
            key = (str(ann.get(ANNOTATION_RESOURCE_NAMESPACE) or ""),
                   str(ann.get(ANNOTATION_RESOURCE_NAME) or ""))
            index.unadopted.setdefault(key, []).append(obj)
    return index


def decide_next_scan(subject: Subject, ephemeral: _EphemeralIndex, *, now: datetime.datetime,
                     policy_versions: Mapping[str, str] | None,
                     scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL) -> ScanDecision:
    ref = subject.ref
    pending = [r for r in ephemeral.by_uid.get(ref.uid, ())
               if _meta(r).get("namespace", "") in ("", ref.namespace)]
    pending += [r for r in ephemeral.unadopted.get((ref.namespace, ref.name), ())
                if _labels(r).get(LABEL_RESOURCE_KIND) in (None, ref.kind)]
    ages = [(now - c).total_seconds() for c in (_created(r) for r in pending) if c is not None]
    oldest = int(max(ages)) if ages else None

    kind = EPHEMERAL_KINDS[0] if ref.namespace else EPHEMERAL_KINDS[1]
    meta_report = ephemeral.by_name.get((kind, ref.namespace, ref.uid))
    if meta_report is None:
        background = any(_labels(r).get(LABEL_SOURCE) == "background-scan" for r in pending)
        reason = "scan-metadata-not-named-by-uid" if background else "no-scan-metadata"
        return ScanDecision(NextScan.FULL, reason, oldest)
    labels = _labels(meta_report)
    if labels.get(LABEL_RESOURCE_HASH, "") != resource_hash(subject.obj):
        return ScanDecision(NextScan.FULL, "resource-hash-changed", oldest)
    last_scan = _annotations(meta_report).get(ANNOTATION_LAST_SCAN)
    if not last_scan:
        return ScanDecision(NextScan.FULL, "last-scan-time-missing", oldest)
    scanned = parse_rfc3339(str(last_scan))
    if scanned is None:
        return ScanDecision(NextScan.FULL, "last-scan-time-invalid", oldest)
    # Go: time.Now().After(annTime.Add(forceDelay)), strictly after
    if now > scanned + scan_interval:
        return ScanDecision(NextScan.FULL, "scan-interval-elapsed", oldest)
    if policy_versions is None:
        return ScanDecision(NextScan.NONE, "policy-versions-not-checked", oldest)
    actual = {str(k): str(v) for k, v in labels.items() if is_policy_label(str(k))}
    if actual != dict(policy_versions):
        return ScanDecision(NextScan.PARTIAL, "policy-versions-changed", oldest)
    return ScanDecision(NextScan.NONE, None, oldest)


@dataclass
class _StateReports:
    """The state as the report diff reads it: Kyverno's reports of the active API by the uid they describe,
    those of the other API (never compared), and every other object by uid with the kinds listed."""

    reports_by_uid: dict[str, list[Mapping[str, Any]]]
    other_api: list[Ref]
    existing: dict[str, Mapping[str, Any]]
    listed_kinds: set[tuple[str, str]]

    @classmethod
    def of(cls, state: Sequence[Mapping[str, Any]], api: str) -> _StateReports:
        kinds = REPORT_KINDS[api]
        other_kinds = {(a, k) for a, ks in REPORT_KINDS.items() if a != api for k in ks}
        out = cls({}, [], {}, set())
        for obj in state:
            api_version, kind = obj.get("apiVersion"), obj.get("kind")
            if api_version == api and kind in kinds:
                if _labels(obj).get(LABEL_MANAGED_BY) == "kyverno":
                    out.reports_by_uid.setdefault(described_uid(obj), []).append(obj)
                continue
            if (api_version, kind) in other_kinds:
                if _labels(obj).get(LABEL_MANAGED_BY) == "kyverno":
                    out.other_api.append(_report_ref(obj))
                continue
            out.listed_kinds.add((str(api_version), str(kind)))
            uid = _meta(obj).get("uid")
            if uid:
                out.existing[str(uid)] = obj
        return out


def _scope(subjects: Sequence[Subject], resource_filters: Sequence[ResourceFilter]
           ) -> tuple[list[Subject], list[Ref]]:
    """(in scope, taken out by Kyverno's resourceFilters): each subject once."""
    in_scope: list[Subject] = []
    filtered_out: list[Ref] = []
    seen: set[str] = set()
    for subject in subjects:
        ref = subject.ref
        if ref.uid in seen:
            continue
        seen.add(ref.uid)
        if resource_filters and filtered(ref.kind, ref.namespace, ref.name, resource_filters,
                                         api_version=ref.api_version):
            filtered_out.append(ref)
            continue
        in_scope.append(subject)
    return in_scope, filtered_out


def diff_reports(
    expected: Sequence[Mapping[str, Any]],
    subjects: Sequence[Subject],
    state: Sequence[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    policy_versions: Mapping[str, str] | None = None,
    scan_interval: datetime.timedelta = DEFAULT_SCAN_INTERVAL,
    report_api: str | None = None,
    resource_filters: Sequence[ResourceFilter] = (),
    policies: Collection[str] | None = None,
    evaluated_uids: Collection[str] | None = None,
    undetermined: Collection[tuple[str, str]] = (),
    unevaluated_sources: Collection[str] = UNEVALUATED_SOURCES,
    history_rules: Collection[tuple[str, str]] = (),
) -> ReportDiff:
    """Classify every subject in scope and every Kyverno report of the active API in `state`.

    `expected`: the expected reports (one per subject with results); an `ExpectedReports` is read one
    subject at a time, its reports never built. `subjects`: the subjects in scope;
    those `resource_filters` filter are taken out of scope. `policy_versions`: every label the background
    controller would set, `{label: resourceVersion}`: `<prefix><policy name>` for each background policy
    (`vpol.kyverno.io/`, `cpol.kyverno.io/`, ...), `polex.kyverno.io/<name>` for legacy PolicyExceptions,
    VAP/MAP binding labels; None when unknown (then no partial-scan decision is made). `undetermined`:
    (policy, subject uid) pairs whose result kyrec cannot decide; the cluster's entries for them are not
    compared (the report holds a result there that kyrec can neither confirm nor call stale).
    `unevaluated_sources`: report sources of policy kinds kyrec does not evaluate (MutatingPolicy, ...):
    their results are left out on both sides, so they are never stale, orphan or missing. `history_rules`:
    (policy, rule) of classic rules whose entries say what happened when Kyverno processed a request, not what
    the state shows (mutate-existing rules: the targets as the background controller found them then); their
    `kyverno` results are left out on both sides, each subject's counted in `left_out_rules`.
    """
    api = report_api or detect_report_api(state)
    if api not in REPORT_KINDS:
        raise UsageError(f"unknown report API {api!r} (expected {WGPOLICY} or {OPENREPORTS})")
    indexed = _StateReports.of(state, api)
    existing, listed_kinds, actual_by_uid = indexed.existing, indexed.listed_kinds, indexed.reports_by_uid
    ignored = indexed.other_api
    ephemeral = _index_ephemeral(state)

    left_out_kinds: set[str] = set()

    def kept(source: str, policy: str) -> bool:
        if source in unevaluated_sources:
            left_out_kinds.add(source)
            return False
        return policies is None or policy in policies

    history = set(history_rules)
    history_seen: dict[tuple[str, str], set[str]] = {}

    def keep_result(r: Mapping[str, Any]) -> bool:
        source, policy = str(r.get("source") or ""), str(r.get("policy") or "")
        if history and source == "kyverno" and (policy, str(r.get("rule") or "")) in history:
            return False
        return kept(source, policy)

    def note_history(uid: str, results: Iterable[Mapping[str, Any]]) -> None:
        for r in results:
            key = (str(r.get("policy") or ""), str(r.get("rule") or ""))
            if str(r.get("source") or "") == "kyverno" and key in history:
                history_seen.setdefault(key, set()).add(uid)

    undecided = set(undetermined)
    left_out: list[tuple[str, Ref]] = []

    def keeper(ref: Ref) -> Callable[[Mapping[str, Any]], bool]:
        """`keep_result` for one subject's reports, without the results kyrec cannot decide."""
        if not any(uid == ref.uid for _, uid in undecided):
            return keep_result
        for policy in sorted(p for p, uid in undecided if uid == ref.uid):
            left_out.append((policy, ref))
        return lambda r: keep_result(r) and (str(r.get("policy") or ""), ref.uid) not in undecided

    # per subject owed a report: its expected (policy, result) pairs (for coverage's totals), and a way to
    # its expected results (for the judge)
    owed: dict[str, tuple[tuple[str, str], ...]] = {}
    pairs: dict[tuple[str, str], tuple[str, str]] = {}     # one tuple per distinct pair: 50,000 share a few
    expected_of: Callable[[str], list[Mapping[str, Any]]]
    if isinstance(expected, ExpectedReports):
        # built subject by subject when judged, and dropped: never every expected report at once
        lazy = expected
        for uid in lazy.uids():
            owed[uid] = tuple(pairs.setdefault(pair, pair) for pair in (
                (r.policy, r.result) for r in lazy.reported(uid) if kept(r.source, r.policy)))

        def expected_of(uid: str) -> list[Mapping[str, Any]]:
            return [r for r in lazy.entries(uid) if keep_result(r)]
    else:
        expected_by_uid: dict[str, list[Mapping[str, Any]]] = {}
        for report in expected:
            expected_by_uid[described_uid(report)] = [r for r in _results(report) if keep_result(r)]
        for uid, rs in expected_by_uid.items():
            owed[uid] = tuple(pairs.setdefault(pair, pair) for pair in (
                (str(r.get("policy") or ""), str(r.get("result") or "")) for r in rs))

        def expected_of(uid: str) -> list[Mapping[str, Any]]:
            return expected_by_uid.get(uid, [])

    in_scope, filtered_out = _scope(subjects, resource_filters)

    scans: dict[str, ScanDecision] = {}
    keeps: dict[str, Callable[[Mapping[str, Any]], bool]] = {}
    expectations: list[Expectation] = []
    for subject in in_scope:
        ref = subject.ref
        scans[ref.uid] = decide_next_scan(subject, ephemeral, now=now, policy_versions=policy_versions,
                                          scan_interval=scan_interval)
        expectations.append(Expectation(ref.uid, ref, expected_identity(ref, api), owed=bool(owed.get(ref.uid))))
        keeps[ref.uid] = keeper(ref)

    # the engine hands claims back; their report objects are found by identity, not equality
    report_of: dict[int, Mapping[str, Any]] = {}
    claims: list[Claim] = []
    for uid, reports in actual_by_uid.items():
        for report in reports:
            claim = Claim(uid, _report_ref(report), _created(report))
            report_of[id(claim)] = report
            claims.append(claim)

    def judge(expectation: Expectation, claim: Claim) -> Judgement:
        # an object outside the scope (filtered, or owed nothing) is owed no result, whatever was expected
        exp_results = expected_of(expectation.key) if expectation.in_scope else []
        keep = keeps.get(expectation.key, keep_result)
        if history:
            note_history(expectation.key, _results(report_of[id(claim)]))
        act_results = [r for r in _results(report_of[id(claim)]) if keep(r)]
        comparison = compare_results(exp_results, act_results)
        shown = None
        if comparison.reasons:
            # kubectl diff's direction and names, as the downstreams' diffs: from the cluster's report to the
            # report the next scan writes
            where = diff_name({"apiVersion": claim.ref.api_version, "kind": claim.ref.kind,
                               "metadata": {"namespace": claim.ref.namespace, "name": claim.ref.name}})
            shown = results_pair(act_results, exp_results, where)
        return Judgement(tuple(str(r) for r in comparison.reasons), comparison.fields, shown)

    def leftover(uid: str, reports: Sequence[Claim]) -> Leftover:
        # reports left over: about objects outside the scope, or about nothing that exists
        found = existing.get(uid)
        keep = keeper(ref_of(found)) if found is not None else keep_result
        carried = [res for c in reports for res in _results(report_of[id(c)])]
        if history and found is not None:
            note_history(uid, carried)
        if carried and all(str(res.get("source") or "") in unevaluated_sources for res in carried):
            # only results of policy kinds kyrec does not evaluate: never orphan or stale
            left_out_kinds.update(str(res.get("source") or "") for res in carried)
            return IGNORED
        if found is None:
            return Leftover(orphan_reasons=tuple(_orphan_reason(report_of[id(c)], listed_kinds)
                                                 for c in reports))
        if (evaluated_uids is not None and uid not in evaluated_uids) or not any(
                keep(res) for c in reports for res in _results(report_of[id(c)])):
            # not looked at by this run, or carrying nothing of the policies in the run
            return IGNORED
        keeps[uid] = keep
        ref = ref_of(found)
        return Leftover(subject=Expectation(uid, ref, expected_identity(ref, api), owed=False, in_scope=False))

    outcome = classify(expectations, claims, judge, leftover)
    ignored.extend(c.ref for c in outcome.ignored)
    changes = [_change(f, scans) for f in outcome.findings]
    statuses = [SubjectStatus(v.subject.subject, ReportClass(str(v.status)), v.reason,
                              v.claim.ref if v.claim is not None else None, owed.get(v.subject.key, ()))
                for v in outcome.verdicts]
    return ReportDiff(api, tuple(changes), tuple(statuses), tuple(filtered_out), tuple(ignored),
                      undetermined=tuple(dict.fromkeys(left_out)), verdicts=outcome.verdicts,
                      left_out_sources=tuple(sorted(left_out_kinds)),
                      left_out_rules=tuple((p, r, len(uids)) for (p, r), uids in sorted(history_seen.items())))


_NOT_IN_SCOPE = ScanDecision(NextScan.NONE, "not-in-scope", None)


def _change(finding: Finding, scans: Mapping[str, ScanDecision]) -> ReportChange:
    """The engine's finding as a `changes[]` entry, with the background-scan decision of its subject."""
    klass = ReportClass(str(finding.klass))
    expectation = finding.subject
    if expectation is None:
        assert finding.claim is not None    # only orphans have no subject, and they are claims
        return ReportChange(klass, finding.reason, None, finding.claim.ref, in_scope=False)
    scan = scans.get(expectation.key, _NOT_IN_SCOPE) if expectation.in_scope else _NOT_IN_SCOPE
    report = finding.claim.ref if finding.claim is not None else expectation.identity
    judged = finding.judgement if klass != ReportClass.DUPLICATE else None
    return ReportChange(klass, finding.reason, expectation.subject, report,
                        fields=judged.fields if judged is not None else (),
                        shown=judged.shown if judged is not None else None,
                        next_scan=scan.next_scan, next_scan_reason=scan.reason,
                        oldest_ephemeral_age_s=scan.oldest_ephemeral_age_s, in_scope=expectation.in_scope)


def described_kind(report: Mapping[str, Any]) -> tuple[str, str] | None:
    """(apiVersion, kind) of what a report is about, from its scope or first owner."""
    scope = report.get("scope")
    if isinstance(scope, Mapping) and scope.get("kind"):
        return str(scope.get("apiVersion") or ""), str(scope["kind"])
    for owner in _meta(report).get("ownerReferences") or []:
        if isinstance(owner, Mapping) and owner.get("kind"):
            return str(owner.get("apiVersion") or ""), str(owner["kind"])
    return None


def _orphan_reason(report: Mapping[str, Any], listed_kinds: set[tuple[str, str]]) -> str:
    """`subject-gone` when the state lists that kind (so the uid would be there), else `subject-unknown`."""
    kind = described_kind(report)
    return "subject-gone" if kind is not None and kind in listed_kinds else "subject-unknown"
