"""Classic generate downstreams against the state, with the classes and reasons of docs/semantics/downstreams.md
(reconcile/downstreams.py), so `diff` treats ClusterPolicy/Policy and GeneratingPolicy downstreams alike.

Where classic generate differs from GeneratingPolicies (docs/semantics/classic.md#generate):
- Ownership. Kyverno's cleanup (background/generate/cleanup.go) selects a trigger's downstreams by
  managed-by, policy-name, policy-namespace and trigger-{uid,namespace,kind,group,version}: `rule-name` is
  commented out, so when one rule stops matching, the other rules' downstreams of that kind for the same
  trigger go too. kyrec classifies each downstream by its own rule (its `rule-name` label) and says so in
  the message of a no-longer-matches / trigger-gone orphan; it never widens a deletion to other rules.
- No ownership check on write. With sync on, an existing target is updated whoever owns it (data.go,
  clone.go, generator.go): an unowned object in the way is a conflict with reason
  `kyverno-would-overwrite` (kyrec never adopts; Kyverno would replace it), another policy's or trigger's
  keeps its reason and says Kyverno would overwrite it. With sync off, Kyverno skips it (reason `unowned`).
- A set that shrinks is not cleaned up: a downstream the rule no longer generates for a matching trigger
  stays (a policy update only unlabels a changed target): `not-desired`, not enforced, unless its clone
  source is gone (sync clones of a deleted source are deleted).
- Policy or rule deleted: with sync on and orphanDownstreamOnPolicyDelete off, every downstream found by
  policy+rule labels is deleted, clones included since #16329 (June 2026; the docs say clones stay).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.evaluate.classic.generate_objects import (
    LABEL_RULE_NAME,
    LABEL_SOURCE_GROUP,
    LABEL_SOURCE_KIND,
    LABEL_SOURCE_NAMESPACE,
    LABEL_SOURCE_UID,
    LABEL_SOURCE_VERSION,
    ClassicGenerateRule,
    generate_rules,
    matches_delete,
)
from kubectl_kyrec.evaluate.generating.downstreams import LABEL_POLICY_NAMESPACE, labels_of, owner_of
from kubectl_kyrec.evaluate.generating.outcomes import UNREAD_LOOKUP, GeneratingOutcome, TriggerOutcome, TriggerStatus
from kubectl_kyrec.model import Ref, ref_of
from kubectl_kyrec.reconcile.downstreams import (
    UNKNOWN_ORPHANING,
    DownstreamChange,
    DownstreamClass,
    Reason,
    StateIndex,
    compare,
    walk_downstreams,
)
from kubectl_kyrec.reconcile.normalize import DEFAULT_KYVERNO_MANAGERS

if TYPE_CHECKING:
    from kubectl_kyrec.load.policy.classic import ClassicPolicy

CROSS_RULE = ("Kyverno's cleanup selects by policy and trigger without rule-name, so it deletes this "
              "policy's other downstreams of the same kind for the trigger too")


def is_classic_downstream(obj: Mapping[str, Any]) -> bool:
    """Written by a classic generate rule: only they carry `rule-name` (GeneratingPolicies never do)."""
    return LABEL_RULE_NAME in labels_of(obj)


def classic_outcomes(outcome: GeneratingOutcome) -> tuple[GeneratingOutcome, GeneratingOutcome]:
    """(GeneratingPolicy part, classic part) of a run."""
    gpol, classic = GeneratingOutcome(), GeneratingOutcome()
    for p in outcome.policies:
        (classic if isinstance(p, ClassicGenerateRule) else gpol).policies.append(p)
    for o in outcome.outcomes:
        (classic if isinstance(o.policy, ClassicGenerateRule) else gpol).outcomes.append(o)
    for part in (gpol, classic):
        part.triggers = list(outcome.triggers)
        part.evaluated_uids = set(outcome.evaluated_uids)
    gpol.errors, gpol.notices = list(outcome.errors), list(outcome.notices)
    return gpol, classic


def _unit(o: TriggerOutcome) -> ClassicGenerateRule:
    assert isinstance(o.policy, ClassicGenerateRule)
    return o.policy


def _rule_key(policy_ns: str, policy: str, rule: str) -> tuple[str, str, str]:
    return policy_ns, policy, rule


def _label_rule_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    labels = labels_of(obj)
    return (str(labels.get(LABEL_POLICY_NAMESPACE) or ""), str(labels.get("generate.kyverno.io/policy-name") or ""),
            str(labels.get(LABEL_RULE_NAME) or ""))


def _trigger_ref(obj: Mapping[str, Any], index: StateIndex) -> Ref | None:
    owner = owner_of(obj)
    if not owner.trigger_uid:
        return None
    api_version = f"{owner.trigger_group}/{owner.trigger_version}" if owner.trigger_group else owner.trigger_version
    # classic labels carry no trigger name: the state names the trigger when it still holds it (found by uid)
    trigger = index.by_uid.get(owner.trigger_uid)
    name = str((trigger.get("metadata") or {}).get("name") or "") if trigger is not None else ""
    return Ref(api_version, owner.trigger_kind, owner.trigger_namespace, name, owner.trigger_uid)


def diff_classic_downstreams(classic: GeneratingOutcome, index: StateIndex,
                             generated: Iterable[Mapping[str, Any]], *, complete_policy_set: bool = False,
                             trigger_uids: Collection[str] | None = None, namespace: str | None = None,
                             known_policies: Collection[str] = (),
                             cluster_policies: Mapping[str, ClassicPolicy] | None = None,
                             kyverno_managers: Sequence[str] = DEFAULT_KYVERNO_MANAGERS
                             ) -> tuple[list[DownstreamChange], int]:
    """(changes, out of scope) for the classic part of a run; `generated` are the state's classic
    downstreams (is_classic_downstream). Arguments as reconcile.downstreams.diff_downstreams; policies are
    named by key (`ns/name` for a Policy)."""
    units = {_rule_key(u.policy_namespace, u.meta.name, u.rule_name): u for u in classic.policies
             if isinstance(u, ClassicGenerateRule)}
    run_policies = {(u.policy_namespace, u.meta.name) for u in units.values()}
    by_key: dict[tuple[tuple[str, str, str], str], TriggerOutcome] = {}
    for o in classic.outcomes:
        u = _unit(o)
        by_key[(_rule_key(u.policy_namespace, u.meta.name, u.rule_name), o.trigger.ref.uid)] = o
    cluster = cluster_policies or {}

    def gone(obj: Mapping[str, Any]) -> DownstreamChange | None:
        namespace, name, rule = _label_rule_key(obj)
        policy_key = f"{namespace}/{name}" if namespace else name
        if (namespace, name) in run_policies:
            return _gone(obj, policy_key, rule, cluster.get(policy_key), index, rule_only=True)
        if complete_policy_set and policy_key not in known_policies:
            return _gone(obj, policy_key, rule, cluster.get(policy_key), index, rule_only=False)
        return None

    return walk_downstreams(
        classic.outcomes, generated, index, namespace=namespace, trigger_uids=trigger_uids,
        evaluated_uids=classic.evaluated_uids, unit_of=lambda obj: units.get(_label_rule_key(obj)),
        outcome_of=lambda unit, uid: by_key.get(
            (_rule_key(unit.policy_namespace, unit.meta.name, unit.rule_name), uid)),
        gone=gone, desired=lambda o, expected, live: _desired(o, expected, live, index, kyverno_managers),
        owned=lambda unit, obj, o, evaluated: _owned(unit, obj, o, evaluated, index), first_desired_only=True)


def _desired(o: TriggerOutcome, expected: Mapping[str, Any], live: Mapping[str, Any] | None, index: StateIndex,
             kyverno_managers: Sequence[str]) -> DownstreamChange:
    unit = _unit(o)
    trigger = o.trigger.ref
    sync = unit.synchronize
    key = unit.meta.key
    if live is None:
        if not o.owed:
            return DownstreamChange(DownstreamClass.MISSING, Reason.PREDATES_POLICY, False, key, trigger,
                                    ref_of(expected), expected=expected,
                                    message=f"rule {unit.rule_name!r}: the trigger predates the policy and "
                                            "generateExisting is off")
        enforced = sync or unit.generate_existing or trigger.uid not in index.by_uid
        if not o.age_known:
            return DownstreamChange(DownstreamClass.MISSING, Reason.POLICY_AGE_UNKNOWN, enforced, key, trigger,
                                    ref_of(expected), expected=expected,
                                    message="the policy's creation time is unknown: if the trigger predates it, "
                                            "Kyverno owes it nothing")
        return DownstreamChange(DownstreamClass.MISSING, None, enforced, key, trigger, ref_of(expected),
                                expected=expected, message=f"rule {unit.rule_name!r}")
    obj_ref = ref_of(live)
    owner = owner_of(live)
    labels = labels_of(live)
    same_policy = (owner.managed_by_kyverno and owner.policy_name == unit.meta.name
                   and str(labels.get(LABEL_POLICY_NAMESPACE) or "") == unit.policy_namespace
                   and LABEL_RULE_NAME in labels)
    if same_policy and owner.trigger_uid == trigger.uid and labels.get(LABEL_RULE_NAME) == unit.rule_name:
        reason, fields, diff = compare(expected, live, server_side_apply=unit.use_server_side_apply,
                                       kyverno_managers=kyverno_managers, secret_salts=index.secret_salts)
        if reason is None:
            return DownstreamChange(DownstreamClass.IN_SYNC, None, True, key, trigger, obj_ref, expected=expected,
                                    actual=live)
        return DownstreamChange(DownstreamClass.DRIFTED, reason, sync, key, trigger, obj_ref, fields, diff,
                                expected=expected, actual=live,
                                message="" if sync else "sync is off: Kyverno leaves the change",
                                replace=not unit.use_server_side_apply)
    overwrite = ("; with sync on Kyverno updates an existing target without an ownership check, so it would "
                 "overwrite it" if sync else "")
    if not owner.managed_by_kyverno or not owner.policy_name:
        if sync:
            return DownstreamChange(DownstreamClass.CONFLICT, Reason.KYVERNO_WOULD_OVERWRITE, o.owed, key, trigger,
                                    obj_ref, expected=expected, actual=live,
                                    message="an object Kyverno does not manage is in the way; the rule has sync "
                                            "on and Kyverno updates an existing target without an ownership "
                                            "check, so it would overwrite it (kyrec never adopts it)")
        return DownstreamChange(DownstreamClass.CONFLICT, Reason.UNOWNED, o.owed, key, trigger, obj_ref,
                                expected=expected, actual=live,
                                message="an object Kyverno does not manage is in the way; sync is off, so "
                                        "Kyverno skips it (no adoption)")
    if not same_policy:
        return DownstreamChange(DownstreamClass.CONFLICT, Reason.OTHER_POLICY, o.owed, key, trigger, obj_ref,
                                expected=expected, actual=live,
                                message=f"owned by policy {owner.policy_name!r}{overwrite}")
    if owner.trigger_uid != trigger.uid:
        return DownstreamChange(DownstreamClass.CONFLICT, Reason.OTHER_TRIGGER, o.owed, key, trigger, obj_ref,
                                expected=expected, actual=live,
                                message=f"owned by trigger uid {owner.trigger_uid!r} ({owner.trigger_kind})"
                                        f"{overwrite}")
    return DownstreamChange(DownstreamClass.CONFLICT, Reason.OTHER_POLICY, o.owed, key, trigger, obj_ref,
                            expected=expected, actual=live,
                            message=f"owned by rule {labels.get(LABEL_RULE_NAME)!r} of the same policy{overwrite}")


def _gone(obj: Mapping[str, Any], policy_key: str, rule: str, in_cluster: ClassicPolicy | None,
          index: StateIndex, *, rule_only: bool) -> DownstreamChange:
    """A downstream of a policy (or of a rule) absent from the run. Kyverno deletes what a sync rule
    without orphanDownstreamOnPolicyDelete generated, clones included (#16329)."""
    old = next((u for u in generate_rules(in_cluster) if u.rule_name == rule), None) if in_cluster else None
    what = f"the policy has no generate rule {rule!r}" if rule_only else "the policy is not in the policy set"
    if old is not None and not old.synchronize:
        message, enforced = f"{what}; the cluster's copy of the rule has sync off: its deletion leaves it", False
    elif old is not None and old.orphan_on_policy_delete:
        message, enforced = f"{what}; the cluster's copy of the rule orphans its downstreams on delete", False
    else:
        clone = LABEL_SOURCE_UID in labels_of(obj)
        message = what + ("; a clone: Kyverno deletes it too since #16329 (its docs say clones stay)" if clone
                          else "")
        enforced = True
    # without the cluster's copy of the rule, whether it orphaned its downstreams is not known: never pruned
    prune = enforced and old is not None
    if old is None:
        message += "; " + UNKNOWN_ORPHANING
    return DownstreamChange(DownstreamClass.ORPHAN, Reason.POLICY_GONE, enforced, policy_key,
                            _trigger_ref(obj, index), ref_of(obj), actual=obj, prune=prune, message=message)


def _source_gone(obj: Mapping[str, Any], index: StateIndex) -> bool:
    labels = labels_of(obj)
    uid = str(labels.get(LABEL_SOURCE_UID) or "")
    listed = index.lists(str(labels.get(LABEL_SOURCE_GROUP) or ""), str(labels.get(LABEL_SOURCE_VERSION) or ""),
                         str(labels.get(LABEL_SOURCE_KIND) or ""), str(labels.get(LABEL_SOURCE_NAMESPACE) or ""))
    return bool(uid) and listed and uid not in index.by_uid


def _owned(unit: ClassicGenerateRule, obj: Mapping[str, Any], o: TriggerOutcome | None, evaluated: bool,
           index: StateIndex) -> DownstreamChange:
    owner = owner_of(obj)
    trigger = o.trigger.ref if o is not None else _trigger_ref(obj, index)
    sync = unit.synchronize
    key = unit.meta.key
    rule = f"rule {unit.rule_name!r}: "

    def change(klass: DownstreamClass, reason: Reason, enforced: bool, message: str, prune: bool = False
               ) -> DownstreamChange:
        return DownstreamChange(klass, reason, enforced, key, trigger, ref_of(obj), actual=obj,
                                message=rule + message, prune=prune and enforced)

    if _source_gone(obj, index):
        return change(DownstreamClass.ORPHAN, Reason.NOT_DESIRED, sync,
                      "its clone source is gone: Kyverno deletes the sync clones of a deleted source"
                      if sync else "its clone source is gone; sync is off, so Kyverno leaves the clone", prune=True)
    if o is not None:
        if o.status is TriggerStatus.ERROR:
            return change(DownstreamClass.UNDETERMINED, Reason.EVALUATION_ERROR, False, o.message)
        if o.status is TriggerStatus.NEEDS_REQUEST:
            return change(DownstreamClass.UNDETERMINED, Reason.NEEDS_REQUEST, False, o.message)
        if o.status is TriggerStatus.NEEDS_REGISTRY:
            return change(DownstreamClass.UNDETERMINED, Reason.NEEDS_REGISTRY, False, o.message)
        if o.status in UNREAD_LOOKUP:
            return change(DownstreamClass.UNDETERMINED, Reason(o.status.value), False, o.message)
        if o.status is TriggerStatus.SKIPPED:
            return change(DownstreamClass.ORPHAN, Reason.NO_LONGER_MATCHES, sync,
                          f"the preconditions are false for the trigger now; {CROSS_RULE}" if sync else
                          "the preconditions are false for the trigger now; sync is off, so Kyverno leaves it",
                          prune=True)
        if o.status is TriggerStatus.EXEMPT:
            return change(DownstreamClass.ORPHAN, Reason.NOT_DESIRED, False,
                          "a policy exception exempts the trigger: Kyverno skips the rule and deletes nothing")
        return change(DownstreamClass.ORPHAN, Reason.NOT_DESIRED, False,
                      "the rule no longer generates it for this trigger; Kyverno does not delete a classic "
                      "rule's former targets (a policy update only unlabels a changed target)")
    if evaluated:
        return change(DownstreamClass.ORPHAN, Reason.NO_LONGER_MATCHES, sync,
                      f"the rule no longer matches the trigger; {CROSS_RULE}" if sync else
                      "the rule no longer matches the trigger; sync is off, so Kyverno leaves it", prune=True)
    if owner.trigger_uid and index.lists(owner.trigger_group, owner.trigger_version, owner.trigger_kind,
                                         owner.trigger_namespace):
        if unit.rule is not None and matches_delete(unit.rule):
            return change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, False,
                          "no object with the trigger's uid in the state, and the rule's match names DELETE: "
                          "Kyverno generates it from the trigger when the trigger is deleted and does not "
                          "delete it then, so it stays")
        return change(DownstreamClass.ORPHAN, Reason.TRIGGER_GONE, sync,
                      f"no object with the trigger's uid in the state; {CROSS_RULE}" if sync else
                      "no object with the trigger's uid in the state; sync is off, so Kyverno leaves it",
                      prune=True)
    return change(DownstreamClass.ORPHAN, Reason.TRIGGER_UNKNOWN, False,
                  f"the state lists no {owner.trigger_kind or 'trigger'} objects: cannot tell whether it exists")


def cluster_classic_policies(state: Iterable[Any]) -> dict[str, ClassicPolicy]:
    """The ClusterPolicies/Policies a state captured from the cluster holds, by key (unreadable ones left out)."""
    from kubectl_kyrec.errors import InputError
    from kubectl_kyrec.load.policy.vocabulary import CLASSIC_POLICY_KINDS

    out: dict[str, ClassicPolicy] = {}
    for doc in state:
        # the classic model is imported at the first object of a classic kind: a state without one never does
        if doc.kind not in CLASSIC_POLICY_KINDS:
            continue
        from kubectl_kyrec.load.policy.classic import is_classic_policy, parse_classic_policy

        if is_classic_policy(doc):
            try:
                p = parse_classic_policy(doc)
            except InputError:
                continue
            out[p.meta.key] = p
    return out
