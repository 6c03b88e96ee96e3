"""Downstream reconciliation (docs/semantics/downstreams.md): the desired downstreams of every (policy, trigger) against
the objects of the state, scoped per trigger uid.

=============  ===================  =========================================================================
class          reason               condition
=============  ===================  =========================================================================
missing                             desired, nothing at that identity (enforced when Kyverno would
                                    write it: a new trigger, sync on, or generateExisting on)
missing        predates-policy      same, but the trigger existed before the policy and generateExisting
                                    is off: Kyverno owes it nothing (enforced: false)
missing        policy-age-unknown   same, but whether the trigger predates the policy cannot be told (no
                                    creationTimestamp anywhere): always counted (enforced), even with
                                    sync off; apply writes it only where Kyverno would if it were owed
drifted        changed-fields       desired, owned, a field the policy sets differs from live (or a field
                                    only Kyverno's managers own is no longer set by the policy)
drifted        foreign-fields       desired, owned, live carries fields another manager set that the
                                    policy does not set: Kyverno's full replace would remove them
                                    (not for useServerSideApply policies, whose apply leaves them)
in-sync                             desired, owned, no difference
conflict       unowned              desired, the object there is not Kyverno's (not enforced when the
                                    trigger is owed nothing: predates the policy)
conflict       other-policy         desired, the object there is another policy's
conflict       other-trigger        desired, the object there is this policy's for another trigger
orphan         trigger-gone         owned, trigger uid absent from a state that lists the trigger's kind
orphan         trigger-unknown      owned, trigger absent, and the state lists no object of that kind
orphan         no-longer-matches    owned, trigger exists, the policy no longer matches it (#16832)
orphan         not-desired          owned, trigger matches, object not in the desired set (#16759)
orphan         policy-gone          labelled for a policy absent from a complete policy set
undetermined   needs-request        the output depends on request data --values does not give
undetermined   needs-registry       the output depends on image data only a registry gives (run with
                                    --registry): Kyverno's answer is not known, nothing is acted on
undetermined   evaluation-error     evaluating the policy failed for this trigger: Kyverno writes nothing
                                    and cleans nothing up
undetermined   kind-not-captured    desired, not in the state, and the state never listed its kind (no
                                    object of it, no capture record): it may well exist; or another read
                                    the finding depends on never happened (reconcile/reads.py), such
                                    as a lookup the trigger's evaluation made (unread_triggers)
undetermined   read-failed          a read the finding depends on failed (403, 5xx, timeout), live or as
                                    a capture recorded it: whatever it looked like, it is not acted on
=============  ===================  =========================================================================

`enforced: false` marks what Kyverno would not act on: drift and orphans of sync-off policies, a missing
downstream of a sync-off policy whose trigger already exists (Kyverno generates on admission only),
downstreams owed to no one (predates-policy), clones left by a deleted policy, and whatever is
undetermined or trigger-unknown. Conflicts are findings: Kyverno skips them silently, forever.

Partial input: only downstreams labelled for a policy in the run are examined (unless the policy set is
complete: then the rest are policy-gone); with triggers from manifests (`trigger_uids`), only their
downstreams. The state's kinds decide trigger-gone against trigger-unknown.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from kubectl_kyrec.evaluate.generating.downstreams import claims_generated, identity, owner_of
from kubectl_kyrec.evaluate.generating.outcomes import UNREAD_LOOKUP, GeneratingOutcome, TriggerOutcome, TriggerStatus
from kubectl_kyrec.load.policy.generating import GeneratingPolicy
from kubectl_kyrec.load.run_inputs.secret_digests import digested_like, stored_value
from kubectl_kyrec.model import Ref, group_version, ref_of
from kubectl_kyrec.reconcile.diff_pair import DiffPair, DiffText
from kubectl_kyrec.reconcile.list_read import Read
from kubectl_kyrec.reconcile.masking import mask_pair
from kubectl_kyrec.reconcile.normalize import (
    DEFAULT_KYVERNO_MANAGERS,
    changed_fields,
    comparable,
    is_secret,
    merge_expected,
    remove_pointers,
    secret_bytes,
    unset_managed_fields,
)

if TYPE_CHECKING:
    # a change's cause is found by `diff` (run/diff.py); `apply`, which names none, never imports causes.py
    from kubectl_kyrec.reconcile.causes import Cause

Identity = tuple[str, str, str, str]


class DownstreamClass(enum.StrEnum):
    MISSING = "missing"
    DRIFTED = "drifted"
    IN_SYNC = "in-sync"
    CONFLICT = "conflict"
    ORPHAN = "orphan"
    UNDETERMINED = "undetermined"


class Reason(enum.StrEnum):
    PREDATES_POLICY = "predates-policy"
    POLICY_AGE_UNKNOWN = "policy-age-unknown"
    CHANGED_FIELDS = "changed-fields"
    FOREIGN_FIELDS = "foreign-fields"
    UNOWNED = "unowned"
    OTHER_POLICY = "other-policy"
    OTHER_TRIGGER = "other-trigger"
    TRIGGER_GONE = "trigger-gone"
    TRIGGER_UNKNOWN = "trigger-unknown"
    NO_LONGER_MATCHES = "no-longer-matches"
    NOT_DESIRED = "not-desired"
    POLICY_GONE = "policy-gone"
    NEEDS_REQUEST = "needs-request"
    NEEDS_REGISTRY = "needs-registry"
    EVALUATION_ERROR = "evaluation-error"
    # a classic generate rule with sync on updates an existing target without an ownership check
    KYVERNO_WOULD_OVERWRITE = "kyverno-would-overwrite"
    KIND_NOT_CAPTURED = "kind-not-captured"
    # a LIST this finding depends on failed (reconcile/reads.py)
    READ_FAILED = "read-failed"


@dataclass(frozen=True)
class DownstreamChange:
    """One examined object; `expected` is what Kyverno would write, `actual` what the state holds."""

    klass: DownstreamClass
    reason: Reason | None
    enforced: bool
    policy: str
    trigger: Ref | None
    object: Ref
    fields: tuple[str, ...] = ()
    shown: DiffPair | None = None   # what the unified diff of a drift shows (rendered at the edge)
    expected: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    actual: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    message: str = ""
    prune: bool = False          # `apply --prune` may delete it
    # False: Kyverno itself would not write it, though it counts (see __post_init__); None: as `enforced` says
    kyverno_writes: bool | None = field(default=None, compare=False)
    # Kyverno rewrites it with an update (PUT, the whole object), not server-side apply: a classic rule
    # with useServerSideApply off (background/generate/generator.go)
    replace: bool = field(default=False, compare=False)
    # the LISTs this finding depends on (reconcile/reads.py); the plan acts only when all were listed
    depends_on: tuple[Read, ...] = field(default=(), compare=False)
    # why it is not in sync (reconcile/causes.py); None until the run asks, and for in-sync
    cause: Cause | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # One rule for every generating path (CEL and classic build these rows apart): a downstream whose owed-ness
        # hangs on an unknown policy age is always counted (docs/semantics/downstreams.md#honest-on-partial-input; what
        # kyrec cannot decide must not pass as clean), even where Kyverno would not write it either way (sync off,
        # trigger existing); apply still leaves those alone.
        if self.reason is Reason.POLICY_AGE_UNKNOWN and not self.enforced:
            object.__setattr__(self, "enforced", True)
            object.__setattr__(self, "kyverno_writes", False)

    @property
    def finding(self) -> bool:
        return self.klass is not DownstreamClass.IN_SYNC and self.enforced

    def to_json(self, diff_text: DiffText) -> dict[str, Any]:
        """The `changes[]` entry of docs/output.md (`message` is an addition); `diff_text` renders `shown`."""
        return {
            "domain": "downstream",
            "class": str(self.klass),
            "reason": str(self.reason) if self.reason else None,
            "enforced": self.enforced,
            "policy": self.policy,
            "trigger": self.trigger.to_json() if self.trigger else None,
            "subject": None,
            "object": self.object.to_json(),
            "fields": list(self.fields),
            "diff": diff_text(self.shown),
            "message": self.message or None,
            "cause": self.cause.to_json() if self.cause else None,
        }


@dataclass(frozen=True)
class DownstreamDiff:
    changes: tuple[DownstreamChange, ...]
    out_of_scope: int = 0       # Kyverno downstreams of policies not in the run, or outside its filters: not shown

    def summary(self) -> dict[str, int]:
        counts = {str(c): 0 for c in DownstreamClass}
        for change in self.changes:
            counts[str(change.klass)] += 1
        return counts

    def changes_json(self, diff_text: DiffText) -> list[dict[str, Any]]:
        return [c.to_json(diff_text) for c in self.changes]

    @property
    def findings(self) -> list[DownstreamChange]:
        return [c for c in self.changes if c.finding]


# ---- the state, indexed once ------------------------------------------------------------------------------

ListedCheck = Callable[[str, str, str], "bool | None"]
"""(apiVersion, kind, namespace) -> listed (True), known unreadable (False), no record (None)."""


@dataclass
class StateIndex:
    by_identity: dict[Identity, Mapping[str, Any]] = field(default_factory=dict)
    by_uid: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    listed_kinds: set[tuple[str, str]] = field(default_factory=set)      # (group, kind)
    generated: list[Mapping[str, Any]] = field(default_factory=list)     # labelled by some gpol
    # the state's record of what it listed (ClusterState.is_listed); None: kinds with objects were listed
    is_listed: ListedCheck | None = None
    # the salts of a capture whose Secrets hold digests: what a policy writes is digested to compare
    secret_salts: tuple[bytes, ...] = ()

    def lists(self, group: str, version: str, kind: str, namespace: str) -> bool:
        """Whether the state listed this kind where the object would be (its absence then means something)."""
        return self.listing(group, version, kind, namespace) is True

    def listing(self, group: str, version: str, kind: str, namespace: str) -> bool | None:
        """Listed there (True), its LIST failed (False), or no record of one (None)."""
        if self.is_listed is not None:
            return self.is_listed(f"{group}/{version}" if group else version, kind, namespace)
        return True if (group, kind) in self.listed_kinds else None

    @classmethod
    def build(cls, objects: Iterable[Mapping[str, Any]], is_listed: ListedCheck | None = None,
              secret_salts: tuple[bytes, ...] = ()) -> StateIndex:
        index = cls(is_listed=is_listed, secret_salts=secret_salts)
        for obj in objects:
            key = identity(obj)
            index.by_identity[key] = obj
            index.listed_kinds.add((key[0], key[1]))
            uid = (obj.get("metadata") or {}).get("uid")
            if uid:
                index.by_uid[str(uid)] = obj
            if claims_generated(obj):
                index.generated.append(obj)
        return index


# ---- what the diff of a drift shows --------------------------------------------------------------------

def diff_name(obj: Mapping[str, Any]) -> str:
    """kubectl diff's file name: <group>.<version>.<Kind>.<namespace>.<name> (core: v1.Kind...)."""
    group, version = group_version(str(obj.get("apiVersion") or ""))
    meta = obj.get("metadata") or {}
    parts = [p for p in (group, version, str(obj.get("kind") or ""), str(meta.get("namespace") or ""),
                         str(meta.get("name") or "")) if p]
    return ".".join(parts)


def _display(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` without managedFields (kubectl diff hides them too); a shallow copy, the rest shared."""
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def drift_pair(before: Mapping[str, Any], after: Mapping[str, Any]) -> DiffPair:
    """The live object and the object after the write, masked, named as kubectl diff names them."""
    masked_before, masked_after = mask_pair(_display(before), _display(after))
    return DiffPair(diff_name(after), masked_before, masked_after)


def _owned_path(obj: Any, pointer: str) -> None:
    """Replace every container on `pointer`'s path below `obj` by a copy, so that removing what it names
    changes no object `obj` shares parts with."""
    node = obj
    for token in (t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:-1]):
        if isinstance(node, dict) and isinstance(node.get(token), dict | list):
            node[token] = child = dict(node[token]) if isinstance(node[token], dict) else list(node[token])
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node) \
                and isinstance(node[int(token)], dict | list):
            item = node[int(token)]
            node[int(token)] = child = dict(item) if isinstance(item, dict) else list(item)
        else:
            return
        node = child


def after_write(expected: Mapping[str, Any], live: Mapping[str, Any], remove: Sequence[str]) -> dict[str, Any]:
    """The live object once Kyverno writes `expected` over it, `remove` pointers gone (display only; shares
    unchanged parts with `live`)."""
    kind = str(expected.get("kind") or "")
    # merge_expected copies what it merges into and deep-copies what it takes from `expected`
    merged = merge_expected(_display(live), _display(expected), (), kind)
    if is_secret(expected):
        content = secret_bytes(live)
        content.update(secret_bytes(expected))
        merged.pop("stringData", None)
        merged["data"] = {k: stored_value(v) for k, v in content.items()}
    for pointer in remove:
        _owned_path(merged, pointer)
    remove_pointers(merged, list(remove))
    return merged


def compare(expected: Mapping[str, Any], live: Mapping[str, Any], *, server_side_apply: bool,
            kyverno_managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS, secret_salts: Sequence[bytes] = ()
            ) -> tuple[Reason | None, tuple[str, ...], DiffPair | None]:
    """(reason, fields, what the diff shows) for an owned downstream: None when in sync. `secret_salts`: the
    live object comes from a capture whose Secret values are digests with one of these salts."""
    expected = digested_like(expected, live, secret_salts)
    exp = comparable(expected)
    act = comparable(live)
    changed = [d.pointer for d in changed_fields(exp, act)]
    managed = unset_managed_fields(exp, live, act, kyverno_managers=kyverno_managers)
    stale = [f.pointer for f in managed if not f.foreign]
    foreign = [] if server_side_apply else [f.pointer for f in managed if f.foreign]
    if changed or stale:
        reason = Reason.CHANGED_FIELDS
    elif foreign:
        reason = Reason.FOREIGN_FIELDS
    else:
        return None, (), None
    fields = tuple(dict.fromkeys([*changed, *stale, *foreign]))
    after = after_write(expected, live, [*stale, *foreign])
    return reason, fields, drift_pair(live, after)


# ---- classification ---------------------------------------------------------------------------------------

def _trigger_ref_from_labels(obj: Mapping[str, Any]) -> Ref | None:
    owner = owner_of(obj)
    if not owner.trigger_uid and not owner.trigger_name:
        return None
    api_version = f"{owner.trigger_group}/{owner.trigger_version}" if owner.trigger_group else owner.trigger_version
    return Ref(api_version, owner.trigger_kind, owner.trigger_namespace, owner.trigger_name, owner.trigger_uid)


def _conflict_reason(live: Mapping[str, Any], policy: GeneratingPolicy) -> Reason:
    owner = owner_of(live)
    if not owner.managed_by_kyverno or not owner.policy_name:
        return Reason.UNOWNED
    if owner.policy_name != policy.name or (owner.policy_namespace is not None
                                            and owner.policy_namespace != _policy_ns(policy)):
        return Reason.OTHER_POLICY
    return Reason.OTHER_TRIGGER


def _policy_ns(policy: GeneratingPolicy) -> str:
    return policy.meta.namespace if policy.namespaced else ""


class _Owners:
    """Which policy of the run a generated object's labels name (a gpol and an ngpol may share a name)."""

    def __init__(self, policies: Sequence[GeneratingPolicy]) -> None:
        self.by_name: dict[str, list[GeneratingPolicy]] = {}
        for p in policies:
            self.by_name.setdefault(p.name, []).append(p)

    def policy_of(self, obj: Mapping[str, Any]) -> GeneratingPolicy | None:
        owner = owner_of(obj)
        candidates = self.by_name.get(owner.policy_name, [])
        if owner.policy_namespace is not None:
            return next((p for p in candidates if _policy_ns(p) == owner.policy_namespace), None)
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        for p in candidates:
            if p.namespaced and p.meta.namespace == namespace:
                return p
        return next((p for p in candidates if not p.namespaced), None)


def diff_downstreams(generating: GeneratingOutcome, state: Iterable[Mapping[str, Any]] | StateIndex, *,
                     complete_policy_set: bool = False, trigger_uids: Collection[str] | None = None,
                     namespace: str | None = None, known_policies: Collection[str] = (),
                     cluster_policies: Mapping[str, GeneratingPolicy] | None = None,
                     kyverno_managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS) -> DownstreamDiff:
    """Classify every desired and every owned downstream of the run.

    `trigger_uids`: the triggers given as manifests (their downstreams only); None when triggers come
    from the state. `namespace`: only downstreams in this namespace (`-n`). `known_policies`: names of
    generating policies in the policy set that this run did not evaluate (filtered out, or broken): their
    downstreams are out of scope, never policy-gone. `cluster_policies`: the state's copies of generating
    policies by name; a policy-gone downstream whose policy the cluster still has is deleted with it only
    when that copy has sync on and orphanDownstreamOnPolicyDelete off.
    """
    index = state if isinstance(state, StateIndex) else StateIndex.build(state)
    owners = _Owners(generating.policies)
    outcomes = generating.by_key()
    cluster = cluster_policies or {}

    def gone(obj: Mapping[str, Any]) -> DownstreamChange | None:
        name = owner_of(obj).policy_name
        if complete_policy_set and name not in known_policies:
            return _policy_gone(obj, cluster.get(name))
        return None

    changes, out_of_scope = walk_downstreams(
        generating.outcomes, index.generated, index, namespace=namespace, trigger_uids=trigger_uids,
        evaluated_uids=generating.evaluated_uids, unit_of=owners.policy_of,
        outcome_of=lambda policy, uid: outcomes.get((policy.key, uid)), gone=gone,
        desired=lambda o, expected, live: _classify_desired(o, expected, live, index, kyverno_managers),
        owned=lambda policy, obj, o, evaluated: _classify_owned(policy, obj, o, evaluated, index))
    changes.sort(key=_order)
    return DownstreamDiff(tuple(changes), out_of_scope)


U = TypeVar("U")


def walk_downstreams(outcomes: Iterable[TriggerOutcome], owned_objects: Iterable[Mapping[str, Any]],
                     index: StateIndex, *, namespace: str | None, trigger_uids: Collection[str] | None,
                     evaluated_uids: Collection[str], unit_of: Callable[[Mapping[str, Any]], U | None],
                     outcome_of: Callable[[U, str], TriggerOutcome | None],
                     gone: Callable[[Mapping[str, Any]], DownstreamChange | None],
                     desired: Callable[[TriggerOutcome, Mapping[str, Any], Mapping[str, Any] | None],
                                       DownstreamChange],
                     owned: Callable[[U, Mapping[str, Any], TriggerOutcome | None, bool], DownstreamChange],
                     first_desired_only: bool = False) -> tuple[list[DownstreamChange], int]:
    """The one walk both generate families take (GeneratingPolicy units are policies, classic ones rules):
    first every desired downstream, then every owned object the run did not desire, each in scope or
    counted out of it. Scope is the same for both: `-n` (the object's namespace), the triggers given as
    manifests (`trigger_uids`), and a trigger the state holds but the run left out (a filter). What differs
    is passed in: how an owned object finds its unit (`unit_of`), its outcome (`outcome_of`), what to say
    when its unit is not in the run (`gone`: a change, or None for out of scope) and the two classifiers.
    `first_desired_only`: a second desire of one identity is not listed again (classic rules of one policy
    may write one target; a GeneratingPolicy's repeats are each listed)."""
    changes: list[DownstreamChange] = []
    seen: set[Identity] = set()

    def in_namespace(key: Identity) -> bool:
        return namespace is None or key[2] == namespace

    # 1. what is desired
    for o in outcomes:
        if o.status is not TriggerStatus.GENERATED:
            continue
        for expected in o.objects:
            key = identity(expected)
            if not in_namespace(key) or (first_desired_only and key in seen):
                continue
            seen.add(key)
            changes.append(desired(o, expected, index.by_identity.get(key)))
    # 2. what is owned and not desired
    out_of_scope = 0
    for obj in owned_objects:
        key = identity(obj)
        if key in seen or not in_namespace(key):
            continue
        unit = unit_of(obj)
        if unit is None:
            change = gone(obj)
            if change is None:
                out_of_scope += 1
            else:
                seen.add(key)
                changes.append(change)
            continue
        trigger_uid = owner_of(obj).trigger_uid
        if trigger_uids is not None and trigger_uid not in trigger_uids:
            out_of_scope += 1
            continue
        found = outcome_of(unit, trigger_uid)
        evaluated = trigger_uid in evaluated_uids
        if found is None and not evaluated and trigger_uid in index.by_uid:
            out_of_scope += 1       # the trigger exists but this run left it out (a filter)
            continue
        seen.add(key)
        changes.append(owned(unit, obj, found, evaluated))
    return changes, out_of_scope


def _order(change: DownstreamChange) -> tuple[str, str, str, str, str, str]:
    t = change.trigger
    o = change.object
    return (change.policy, t.namespace if t else "", t.name if t else "", o.kind, o.namespace, o.name)


def _classify_desired(outcome: TriggerOutcome, expected: Mapping[str, Any], live: Mapping[str, Any] | None,
                      index: StateIndex, kyverno_managers: Sequence[str]) -> DownstreamChange:
    policy = outcome.policy
    trigger = outcome.trigger.ref
    trigger_exists = trigger.uid in index.by_uid
    sync = policy.synchronize
    if live is None:
        group, version = group_version(str(expected.get("apiVersion") or ""))
        key = identity(expected)
        listing = index.listing(group, version, key[1], key[2])
        if listing is False:
            # the LIST was made and failed: not a kind a capture left out, and no capture advice fixes it
            where = f" in {key[2]}" if key[2] else ""
            return DownstreamChange(DownstreamClass.UNDETERMINED, Reason.READ_FAILED, False, policy.key,
                                    trigger, ref_of(expected), expected=expected,
                                    message=f"cannot tell: the LIST of {key[1]} objects{where} failed: it may exist")
        if listing is not True:
            return DownstreamChange(DownstreamClass.UNDETERMINED, Reason.KIND_NOT_CAPTURED, False, policy.key,
                                    trigger, ref_of(expected), expected=expected,
                                    message=f"the state never listed {key[1]} objects: it may exist")
        if not outcome.owed:
            return DownstreamChange(DownstreamClass.MISSING, Reason.PREDATES_POLICY, False, policy.key, trigger,
                                    ref_of(expected), expected=expected,
                                    message="the trigger predates the policy and generateExisting is off")
        # Kyverno writes it on the trigger's admission, and for existing triggers only through sync (the
        # watcher recreates deleted downstreams) or generateExisting (when the policy is created or updated)
        enforced = sync or policy.generate_existing or not trigger_exists
        if not outcome.age_known:
            return DownstreamChange(DownstreamClass.MISSING, Reason.POLICY_AGE_UNKNOWN, enforced, policy.key,
                                    trigger, ref_of(expected), expected=expected,
                                    message="the policy's creation time is unknown: if the trigger predates it, "
                                            "Kyverno owes it nothing")
        return DownstreamChange(DownstreamClass.MISSING, None, enforced, policy.key, trigger, ref_of(expected),
                                expected=expected)
    obj_ref = ref_of(live)
    owner = owner_of(live)
    owned = (owner.managed_by_kyverno and owner.policy_name == policy.name and owner.trigger_uid == trigger.uid
             and (owner.policy_namespace is None or owner.policy_namespace == _policy_ns(policy)))
    if not owned:
        conflict = _conflict_reason(live, policy)
        message = _conflict_message(conflict, live)
        if not outcome.owed:
            message += "; the trigger predates the policy, so Kyverno never tries to write it"
        elif not outcome.age_known:
            message += "; the policy's creation time is unknown (if the trigger predates it, Kyverno never tries)"
        return DownstreamChange(DownstreamClass.CONFLICT, conflict, outcome.owed, policy.key, trigger, obj_ref,
                                expected=expected, actual=live, message=message)
    reason, fields, shown = compare(expected, live, server_side_apply=policy.use_server_side_apply,
                                   kyverno_managers=kyverno_managers, secret_salts=index.secret_salts)
    if reason is None:
        return DownstreamChange(DownstreamClass.IN_SYNC, None, True, policy.key, trigger, obj_ref,
                                expected=expected, actual=live)
    # Kyverno corrects an owned downstream of a policy without useServerSideApply by an Update of the whole
    # object (GenerateResources: "SSA-apply, or a full Update"; docs/semantics/generating.md#downstream-objects, step
    # 6), which removes the fields other managers added; a server-side apply cannot remove them, so a plan that applied
    # would write the same drift on every run and never converge
    return DownstreamChange(DownstreamClass.DRIFTED, reason, sync, policy.key, trigger, obj_ref, fields, shown,
                            expected=expected, actual=live, replace=not policy.use_server_side_apply)


def _conflict_message(reason: Reason, live: Mapping[str, Any]) -> str:
    owner = owner_of(live)
    if reason is Reason.UNOWNED:
        return "an object Kyverno does not manage is in the way; Kyverno skips it (no adoption)"
    if reason is Reason.OTHER_POLICY:
        return f"owned by policy {owner.policy_name!r}"
    return f"owned by trigger uid {owner.trigger_uid!r} ({owner.trigger_kind} {owner.trigger_name})"


def _policy_gone(obj: Mapping[str, Any], in_cluster: GeneratingPolicy | None) -> DownstreamChange:
    """A downstream of a policy outside the complete set. Kyverno deletes the data ones (no source-uid)
    of a policy it tracked; clones stay (#17596). A copy of the policy still in the cluster says more:
    with sync off or orphanDownstreamOnPolicyDelete on, its deletion leaves everything.

    Without that copy (the policy is gone from the cluster too) nothing says whether the deleted policy
    orphaned its downstreams on purpose: Kyverno keeps them then (recorded from Kyverno itself,
    testdata/kyverno-truth/policy-deleted), and only a policy without orphanDownstreamOnPolicyDelete has
    them deleted. The finding stays counted, but `apply --prune` never deletes on that unknown."""
    owner = owner_of(obj)
    clone = bool(owner.source_uid)
    prune = not clone
    if clone:
        message = "a clone: Kyverno leaves clones of a deleted policy (#17596)"
    elif in_cluster is not None and not in_cluster.synchronize:
        message = "the cluster's copy of the policy has sync off: deleting it leaves its downstreams"
    elif in_cluster is not None and in_cluster.orphan_on_policy_delete:
        message = "the cluster's copy of the policy orphans its downstreams on delete"
    else:
        message = ""
    enforced = not message
    if in_cluster is None and not clone:
        message, prune = UNKNOWN_ORPHANING, False
    return DownstreamChange(
        DownstreamClass.ORPHAN, Reason.POLICY_GONE, enforced, owner.policy_name, _trigger_ref_from_labels(obj),
        ref_of(obj), actual=obj, prune=prune, message=message)


# a policy-gone downstream whose policy the cluster no longer has: why --prune leaves it
UNKNOWN_ORPHANING = ("the policy is gone from the cluster, so whether it orphaned its downstreams on delete "
                     "(orphanDownstreamOnPolicyDelete) is not known: Kyverno keeps them if it did; --prune "
                     "leaves it (delete it by hand if it should go)")


def _classify_owned(policy: GeneratingPolicy, obj: Mapping[str, Any], outcome: TriggerOutcome | None,
                    evaluated: bool, index: StateIndex) -> DownstreamChange:
    owner = owner_of(obj)
    trigger = _trigger_ref_from_labels(obj)
    obj_ref = ref_of(obj)
    sync = policy.synchronize

    def change(klass: DownstreamClass, reason: Reason, enforced: bool, message: str = "",
               trigger_ref: Ref | None = trigger) -> DownstreamChange:
        prunable = klass is DownstreamClass.ORPHAN and reason in (
            Reason.TRIGGER_GONE, Reason.NO_LONGER_MATCHES, Reason.NOT_DESIRED)
        return DownstreamChange(klass, reason, enforced, policy.key, trigger_ref, obj_ref, actual=obj,
                                message=message, prune=prunable)

    if outcome is not None:
        trigger_ref = outcome.trigger.ref
        if outcome.status is TriggerStatus.ERROR:
            return change(DownstreamClass.UNDETERMINED, Reason.EVALUATION_ERROR, False, outcome.message,
                          trigger_ref)
        if outcome.status is TriggerStatus.NEEDS_REQUEST:
            return change(DownstreamClass.UNDETERMINED, Reason.NEEDS_REQUEST, False, outcome.message, trigger_ref)
        if outcome.status is TriggerStatus.NEEDS_REGISTRY:
            return change(DownstreamClass.UNDETERMINED, Reason.NEEDS_REGISTRY, False, outcome.message, trigger_ref)
        if outcome.status in UNREAD_LOOKUP:
            # the engine's reason (read-failed, kind-not-captured) names the status
            return change(DownstreamClass.UNDETERMINED, Reason(outcome.status.value), False, outcome.message,
                          trigger_ref)
        if outcome.status is TriggerStatus.SKIPPED:
            return change(DownstreamClass.ORPHAN, Reason.NO_LONGER_MATCHES, sync,
                          "a matchCondition is false for the trigger now", trigger_ref)
        message = ("a policy exception exempts the trigger" if outcome.status is TriggerStatus.EXEMPT
                   else "the policy no longer generates it for this trigger")
        return change(DownstreamClass.ORPHAN, Reason.NOT_DESIRED, sync, message, trigger_ref)
    if evaluated:
        return change(DownstreamClass.ORPHAN, Reason.NO_LONGER_MATCHES, sync,
                      "the policy's matchConstraints no longer select the trigger")
    if owner.trigger_uid and index.lists(owner.trigger_group, owner.trigger_version, owner.trigger_kind,
                                         owner.trigger_namespace):
        return change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, sync,
                      "no object with the trigger's uid in the state")
    return change(DownstreamClass.ORPHAN, Reason.TRIGGER_UNKNOWN, False,
                  f"the state lists no {owner.trigger_kind or 'trigger'} objects: cannot tell whether it exists")


def unread_triggers(changes: Sequence[DownstreamChange], outcomes: Iterable[TriggerOutcome]
                    ) -> list[DownstreamChange]:
    """`changes` with what the triggers whose evaluation rests on a lookup the state read from a cluster cannot
    answer would have written (their outcome's status: the engine's reason, `kind-not-captured` or
    `read-failed`).

    Kyverno reads what it looks up, so such a failure is kyrec's: the downstreams of the trigger are
    `undetermined` with that reason (docs/architecture.md, partial reads), never `evaluation-error` (Kyverno
    writing nothing) nor absent (a run that looks clean). An owned one has it already (its trigger's status);
    where the trigger owns none, one row per target the policy may write stands for it (its identity as far as
    the policy states it without the lookup: a name or namespace made by a variable stays empty). Undetermined
    rows are counted, never acted on: no write, no prune."""
    out = list(changes)
    held = {(c.policy, c.trigger.uid, c.object.kind) for c in changes
            if c.klass is DownstreamClass.UNDETERMINED and c.trigger is not None}
    for o in outcomes:
        if o.status not in UNREAD_LOOKUP:
            continue
        for target in _targets(o.policy):
            if (o.policy.key, o.trigger.ref.uid, target.kind) in held:
                continue
            held.add((o.policy.key, o.trigger.ref.uid, target.kind))
            out.append(DownstreamChange(
                DownstreamClass.UNDETERMINED, Reason(o.status.value), False, o.policy.key, o.trigger.ref, target,
                message=f"cannot tell what the trigger generates: {o.message}"))
    out.sort(key=_order)
    return out


def unplaced(change: DownstreamChange) -> bool:
    """A row standing for what a trigger would write (unread_triggers: neither expected nor held) whose namespace
    the policy does not state (made by a variable or an expression): it may be in any namespace, so a
    namespace filter must not drop it (reconcile/selection.py), or the run would look clean under `-n`."""
    return change.klass is DownstreamClass.UNDETERMINED and change.expected is None and change.actual is None and \
        not change.object.namespace


def _targets(policy: GeneratingPolicy) -> list[Ref]:
    """The downstreams a policy may write, as far as its text names them: a classic rule's generate kinds,
    with the name and namespace where they are literals; a GeneratingPolicy's are made by expressions (one
    row with no identity)."""
    from kubectl_kyrec.evaluate.classic.generate_objects import ClassicGenerateRule

    if not isinstance(policy, ClassicGenerateRule) or not policy.kinds():
        return [Ref("", "", "", "", "")]
    g = policy.generation

    def literal(key: str) -> str:
        value = str(g.get(key) or "")
        return "" if "{{" in value else value

    refs = []
    for i, (api_version, kind) in enumerate(dict.fromkeys(policy.kinds())):
        top = i == 0 and g.get("kind") == kind
        refs.append(Ref(api_version, kind, literal("namespace") if top else "", literal("name") if top else "", ""))
    return refs
