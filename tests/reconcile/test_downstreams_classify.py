"""Classification of downstreams (docs/semantics/downstreams.md), scoped per trigger uid, on partial input."""

from __future__ import annotations

from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.reconcile.downstreams import DownstreamClass, Reason, StateIndex, diff_downstreams
from tests.generating.gen_support import docs, evaluate

POLICY = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {{name: {name}}}
spec:
  evaluation: {{synchronize: {{enabled: {sync}}}}}
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}}
  generate:
  - expression: >-
      generator.apply(object.metadata.name, object.metadata.?labels.gen.orValue("") == "no" ? [] :
      [{{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({{"name": "cm"}}),
        "data": dyn({{"k": "v"}})}}])
"""


def labels(policy: str, uid: str, name: str) -> str:
    return (f"{{app.kubernetes.io/managed-by: kyverno, generate.kyverno.io/policy-name: {policy}, "
            f"generate.kyverno.io/trigger-uid: {uid}, generate.kyverno.io/trigger-name: {name}, "
            f"generate.kyverno.io/trigger-kind: Namespace, generate.kyverno.io/trigger-version: v1, "
            f"generate.kyverno.io/trigger-group: '', generate.kyverno.io/trigger-namespace: ''}}")


def namespace(name: str, uid: str, gen: str = "yes") -> str:
    return f"- {{apiVersion: v1, kind: Namespace, metadata: {{name: {name}, uid: {uid}, labels: {{gen: '{gen}'}}}}}}\n"


def configmap(ns: str, uid: str, owner_labels: str, name: str = "cm", value: str = "v") -> str:
    return (f"- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: {name}, namespace: {ns}, uid: {uid}, "
            f"labels: {owner_labels}}}, data: {{k: {value}}}}}\n")


def state(*items: str) -> list:
    return docs("apiVersion: v1\nkind: List\nitems:\n" + "".join(items))


def rows(outcome: GeneratingOutcome, objects: list, **kw: object) -> list[tuple[str, str | None, bool, str]]:
    diff = diff_downstreams(outcome, [d.obj for d in objects], **kw)   # type: ignore[arg-type]
    return [(str(c.klass), str(c.reason) if c.reason else None, c.enforced,
             f"{c.object.namespace}/{c.object.name}") for c in diff.changes]


def test_one_triggers_empty_set_never_touches_another_triggers_downstream() -> None:
    # Kyverno #16759 bug 1: trigger a's desired set goes empty; b's ConfigMap must stay
    objects = state(namespace("a", "ua", "no"), namespace("b", "ub"),
                    configmap("a", "ca", labels("p", "ua", "a")), configmap("b", "cb", labels("p", "ub", "b")))
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), objects, objects)
    assert rows(outcome, objects) == [("orphan", "not-desired", True, "a/cm"), ("in-sync", None, True, "b/cm")]


def test_sync_off_findings_are_not_enforced() -> None:
    objects = state(namespace("a", "ua"), configmap("a", "ca", labels("p", "ua", "a"), value="edited"),
                    namespace("b", "ub"))
    outcome = evaluate(docs(POLICY.format(name="p", sync="false")), objects, objects)
    # drift is reported but Kyverno would not revert it; a missing downstream of an existing trigger is
    # not recreated either
    assert rows(outcome, objects) == [("drifted", "changed-fields", False, "a/cm"), ("missing", None, False, "b/cm")]


def test_conflicts() -> None:
    objects = state(namespace("a", "ua"), namespace("b", "ub"), namespace("c", "uc"),
                    "- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: a, uid: x}}\n",
                    configmap("b", "cb", labels("other", "ub", "b")),
                    configmap("c", "cc", labels("p", "stale-uid", "c")))
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), objects, objects)
    diff = diff_downstreams(outcome, [d.obj for d in objects])
    assert [(str(c.klass), str(c.reason)) for c in diff.changes] == [
        ("conflict", "unowned"), ("conflict", "other-policy"), ("conflict", "other-trigger")]
    assert all(c.finding for c in diff.changes)


def test_triggers_from_manifests_limit_the_scope_and_join_uids() -> None:
    objects = state(namespace("a", "ua"), namespace("b", "ub"),
                    configmap("a", "ca", labels("p", "ua", "a")), configmap("b", "cb", labels("p", "ub", "b")))
    # -r gives namespace a only, without a uid: it takes the state's uid, and b's downstream is out of scope
    manifest = docs("apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {gen: 'no'}}\n")
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), manifest, objects)
    assert outcome.triggers[0].ref.uid == "ua"
    diff = diff_downstreams(outcome, [d.obj for d in objects], trigger_uids={"ua"})
    assert [(str(c.klass), str(c.reason), c.object.namespace) for c in diff.changes] == [
        ("orphan", "not-desired", "a")]
    assert diff.out_of_scope == 1


def test_a_new_trigger_from_manifests_gets_missing_downstreams() -> None:
    objects = state(namespace("a", "ua"))
    manifest = docs("apiVersion: v1\nkind: Namespace\nmetadata: {name: new}\n")
    outcome = evaluate(docs(POLICY.format(name="p", sync="false")), manifest, objects)
    listed = ClusterState.from_objects(objects, listed=[ListedKind("v1", "ConfigMap")])
    diff = diff_downstreams(outcome, StateIndex.build([d.obj for d in objects], listed.is_listed),
                            trigger_uids={t.ref.uid for t in outcome.triggers})
    (change,) = diff.changes
    # sync off, but Kyverno generates for a trigger on its creation: enforced
    assert change.trigger is not None
    assert (str(change.klass), change.enforced, change.trigger.synthetic) == ("missing", True, True)


def test_a_downstream_of_a_kind_the_state_never_listed_is_not_called_missing() -> None:
    objects = state(namespace("a", "ua"))
    manifest = docs("apiVersion: v1\nkind: Namespace\nmetadata: {name: new}\n")
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), manifest, objects)
    unlisted = ClusterState.from_objects(objects)      # Namespaces only: ConfigMaps were never listed
    diff = diff_downstreams(outcome, StateIndex.build([d.obj for d in objects], unlisted.is_listed),
                            trigger_uids={t.ref.uid for t in outcome.triggers})
    (change,) = diff.changes
    assert (change.klass, change.reason, change.enforced) == (
        DownstreamClass.UNDETERMINED, Reason.KIND_NOT_CAPTURED, False)
    assert not diff.findings


def test_policy_gone_needs_a_complete_policy_set() -> None:
    objects = state(namespace("a", "ua"), configmap("a", "ca", labels("p", "ua", "a")),
                    configmap("a", "old", labels("removed", "ua", "a"), name="old"))
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), objects, objects)
    partial = diff_downstreams(outcome, [d.obj for d in objects])
    assert [c.object.name for c in partial.changes] == ["cm"] and partial.out_of_scope == 1
    complete = diff_downstreams(outcome, [d.obj for d in objects], complete_policy_set=True)
    gone = [c for c in complete.changes if c.reason is Reason.POLICY_GONE]
    # counted, but never pruned: whether the deleted policy orphaned its downstreams is not known
    assert [(c.object.name, c.enforced, c.prune) for c in gone] == [("old", True, False)]
    assert "orphanDownstreamOnPolicyDelete" in gone[0].message
    # the cluster's copy of the removed policy decides: sync on, not orphaning -> Kyverno deletes it
    removed = evaluate(docs(POLICY.format(name="removed", sync="true")), [], []).policies[0]
    copied = diff_downstreams(outcome, [d.obj for d in objects], complete_policy_set=True,
                              cluster_policies={"removed": removed})
    gone = [c for c in copied.changes if c.reason is Reason.POLICY_GONE]
    assert [(c.object.name, c.enforced, c.prune, c.message) for c in gone] == [("old", True, True, "")]
    # a policy that is in the set but was not evaluated (filtered, broken) is not gone
    known = diff_downstreams(outcome, [d.obj for d in objects], complete_policy_set=True, known_policies={"removed"})
    assert not [c for c in known.changes if c.reason is Reason.POLICY_GONE]


def test_cloned_downstreams_of_a_deleted_policy_are_not_enforced() -> None:
    clone_labels = labels("removed", "ua", "a").replace("}", ", generate.kyverno.io/source-uid: src}")
    objects = state(namespace("a", "ua"), configmap("a", "old", clone_labels, name="old"))
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), objects, objects)
    diff = diff_downstreams(outcome, [d.obj for d in objects], complete_policy_set=True)
    gone = [c for c in diff.changes if c.reason is Reason.POLICY_GONE]
    assert [(c.enforced, c.prune) for c in gone] == [(False, False)]


def test_trigger_gone_or_unknown_depends_on_the_state_listing_the_kind() -> None:
    owned = configmap("x", "cx", labels("p", "gone-uid", "x"))
    with_kind = state(namespace("a", "ua"), configmap("a", "ca", labels("p", "ua", "a")), owned)
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), with_kind, with_kind)
    assert ("orphan", "trigger-gone", True, "x/cm") in rows(outcome, with_kind)
    without_kind = state(owned)
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), without_kind, without_kind)
    assert rows(outcome, without_kind) == [("orphan", "trigger-unknown", False, "x/cm")]


def test_namespace_filter() -> None:
    objects = state(namespace("a", "ua"), namespace("b", "ub"))
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), objects, objects)
    assert [c.object.namespace for c in diff_downstreams(outcome, [d.obj for d in objects], namespace="b").changes] \
        == ["b"]


def test_every_class_and_reason_appears_in_the_summary() -> None:
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), [], [])
    summary = diff_downstreams(outcome, []).summary()
    assert summary == {c.value: 0 for c in DownstreamClass}


def test_a_gone_policy_the_cluster_still_has_tells_whether_kyverno_deletes() -> None:
    from kubectl_kyrec.load.policy.generating import parse_generating_policy

    objects = state(namespace("a", "ua"), configmap("a", "old", labels("removed", "ua", "a"), name="old"))
    outcome = evaluate(docs(POLICY.format(name="p", sync="true")), objects, objects)

    def gone(sync: str, orphan: bool) -> tuple[bool, str]:
        text = POLICY.format(name="removed", sync=sync)
        if orphan:
            text = text.replace("evaluation: {synchronize: {enabled: true}}",
                                "evaluation: {synchronize: {enabled: true}, "
                                "orphanDownstreamOnPolicyDelete: {enabled: true}}")
        copy = parse_generating_policy(docs(text)[0])
        diff = diff_downstreams(outcome, [d.obj for d in objects], complete_policy_set=True,
                                cluster_policies={"removed": copy})
        (change,) = [c for c in diff.changes if c.reason is Reason.POLICY_GONE]
        return change.enforced, change.message

    assert gone("true", False) == (True, "")
    assert gone("false", False)[0] is False
    enforced, message = gone("true", True)
    assert not enforced and "orphans its downstreams" in message
