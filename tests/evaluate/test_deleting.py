"""DeletingPolicy: parsing (load/policy/deleting.py), the engine (evaluate/deleting/engine.py: Handle, Evaluate,
the controller's LISTs and its schedule), on in-memory documents."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import pytest

from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.deleting.engine import (
    DeleteOptions,
    DeletionStatus,
    compile_deleting_policy,
    evaluate_object,
    listed_resources,
    next_run,
    run_deleting,
    subject_context,
)
from kubectl_kyrec.evaluate.subjects import make_subjects
from kubectl_kyrec.load.policy.deleting import parse_deleting_policy
from kubectl_kyrec.load.policy.policies import classify, parse_exception
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source

NOW = datetime.datetime(2026, 12, 4, 22, 35, 10, tzinfo=datetime.UTC)
K8S = list(kubernetes_libraries())
KINDS = KindTable()


def libraries(kind: str, namespace: str) -> Sequence[Library]:
    return K8S


def doc(obj: dict[str, Any], line: int = 1) -> Document:
    return Document(obj, Source("in-memory.yaml", line))


def dpol(name: str = "clean", *, kind: str = "DeletingPolicy", namespace: str = "", schedule: str = "*/5 * * * *",
         conditions: Sequence[str] = (), resources: Sequence[str] = ("configmaps",),
         operations: Sequence[str] = ("CREATE",),
         selector: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    constraints: dict[str, Any] = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                      "operations": list(operations), "resources": list(resources)}]}
    if selector is not None:
        constraints["objectSelector"] = selector
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    meta.update(extra.pop("metadata", {}))
    return {"apiVersion": "policies.kyverno.io/v1", "kind": kind, "metadata": meta,
            "spec": {"schedule": schedule, "matchConstraints": constraints,
                     "conditions": [{"name": f"c{i}", "expression": e} for i, e in enumerate(conditions)],
                     **extra.pop("spec", {})}, **extra}


def cm(name: str, namespace: str = "apps", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "labels": labels},
            "data": {"stale": "yes"}}


def status_of(policy_obj: dict[str, Any], obj: dict[str, Any], exceptions: Sequence[dict[str, Any]] = (),
              namespaces: dict[str, Any] | None = None) -> DeletionStatus:
    policy = parse_deleting_policy(doc(policy_obj))
    cp = compile_deleting_policy(policy, Environments(libraries), [parse_exception(doc(e)) for e in exceptions],
                                 NOW)
    subject = make_subjects([doc(obj)], KINDS).subjects[0]
    return evaluate_object(cp, subject_context(subject, namespaces or {})).status


# ---- parsing ------------------------------------------------------------------------------------------------

def test_classify_puts_both_kinds_with_the_deleting_policies() -> None:
    policies = classify([doc(dpol()), doc(dpol("ns-clean", kind="NamespacedDeletingPolicy"))])
    assert [(p.meta.kind, p.meta.namespace) for p in policies.deleting] == [
        ("DeletingPolicy", ""), ("NamespacedDeletingPolicy", "default")]
    assert policies.others == [] and policies.errors == []


@pytest.mark.parametrize(("change", "message"), [
    ({"spec": {"schedule": None}}, "spec.schedule: Required value"),
    ({"spec": {"deletionPropagationPolicy": "Now"}}, "spec.deletionPropagationPolicy: Unsupported value: 'Now'"),
    ({"status": {"lastExecutionTime": "yesterday"}},
     'status.lastExecutionTime: Invalid value: "yesterday": status.lastExecutionTime in body must be of type '
     'date-time'),
])
def test_what_the_api_server_refuses_is_an_input_error(change: dict[str, Any], message: str) -> None:
    obj = dpol()
    for key, value in change.items():
        obj[key] = {**obj.get(key, {}), **value}
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        parse_deleting_policy(doc(obj))


def test_a_namespaced_deleting_policy_has_no_v1alpha1() -> None:
    obj = dpol(kind="NamespacedDeletingPolicy")
    obj["apiVersion"] = "policies.kyverno.io/v1alpha1"
    with pytest.raises(InputError, match="unknown version"):
        parse_deleting_policy(doc(obj))


# ---- one object -------------------------------------------------------------------------------------------

def test_every_condition_true_deletes_and_one_false_keeps() -> None:
    assert status_of(dpol(conditions=["object.data.stale == 'yes'", "true"]), cm("a")) is DeletionStatus.DELETE
    assert status_of(dpol(conditions=["object.data.stale == 'yes'", "false"]), cm("a")) is DeletionStatus.KEEP


def test_operations_play_no_part_in_matching() -> None:
    # a deletion is no admission request: Kyverno widens every rule's operations to `*` (engine.go matchPolicy)
    assert status_of(dpol(operations=["DELETE"]), cm("a")) is DeletionStatus.DELETE


def test_other_kinds_and_the_object_selector_do_not_match() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "apps"}}
    assert status_of(dpol(), secret) is DeletionStatus.NO_MATCH
    assert status_of(dpol(selector={"matchLabels": {"tmp": "true"}}), cm("a")) is DeletionStatus.NO_MATCH
    assert status_of(dpol(selector={"matchLabels": {"tmp": "true"}}), cm("a", tmp="true")) is DeletionStatus.DELETE


def test_a_condition_error_is_an_error_unless_another_is_false() -> None:
    assert status_of(dpol(conditions=["object.data.absent == 'x'"]), cm("a")) is DeletionStatus.ERROR
    # compiler/policy.go match: a false condition answers at once, whatever errors came before
    assert status_of(dpol(conditions=["object.data.absent == 'x'", "false"]), cm("a")) is DeletionStatus.KEEP


def test_conditions_cannot_read_variables_as_in_kyverno() -> None:
    # the dpol compiler compiles conditions before it declares the variables: Kyverno v1.17.2's CLI fails
    # "undefined field 'wanted'" (and its webhook refuses the policy)
    obj = dpol(conditions=["namespaceObject.metadata.labels.env == variables.wanted"],
               spec={"variables": [{"name": "wanted", "expression": "'dev'"}]})
    with pytest.raises(InputError, match=r"spec\.conditions\[0\]\.expression: .*undefined field 'wanted'"):
        compile_deleting_policy(parse_deleting_policy(doc(obj)), Environments(libraries), [], NOW)
    # a variable that does not compile refuses the policy all the same
    obj = dpol(spec={"variables": [{"name": "bad", "expression": "object.metadata.name =="}]})
    with pytest.raises(InputError, match=r"spec\.variables\[0\]\.expression"):
        compile_deleting_policy(parse_deleting_policy(doc(obj)), Environments(libraries), [], NOW)


def test_namespace_object() -> None:
    policy = dpol(conditions=["namespaceObject.metadata.labels.env == 'dev'"])
    namespaces = {"apps": {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "apps", "labels": {"env": "dev"}}}}
    assert status_of(policy, cm("a"), namespaces=namespaces) is DeletionStatus.DELETE
    namespaces["apps"]["metadata"]["labels"]["env"] = "prod"
    assert status_of(policy, cm("a"), namespaces=namespaces) is DeletionStatus.KEEP


def test_an_exception_naming_the_policy_keeps_the_object() -> None:
    exception = {"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
                 "metadata": {"name": "keep", "namespace": "apps"},
                 "spec": {"policyRefs": [{"name": "clean", "kind": "DeletingPolicy"}],
                          "matchConditions": [{"name": "n", "expression": "object.metadata.name == 'a'"}],
                          # the deleting provider does not look at expiry
                          "expiresAt": "2000-01-01T00:00:00Z"}}
    assert status_of(dpol(), cm("a"), [exception]) is DeletionStatus.EXEMPT
    assert status_of(dpol(), cm("b"), [exception]) is DeletionStatus.DELETE
    other_kind = {**exception, "spec": {**exception["spec"],
                                        "policyRefs": [{"name": "clean", "kind": "ValidatingPolicy"}]}}
    assert status_of(dpol(), cm("a"), [other_kind]) is DeletionStatus.DELETE


def test_a_bad_condition_does_not_compile() -> None:
    policy = parse_deleting_policy(doc(dpol(conditions=["object.metadata.name =="])))
    with pytest.raises(InputError, match=r"spec\.conditions\[0\]\.expression"):
        compile_deleting_policy(policy, Environments(libraries), [], NOW)


# ---- the schedule -----------------------------------------------------------------------------------------

def test_next_run_counts_from_the_last_run_else_the_creation() -> None:
    created = dpol(schedule="0 3 * * *", metadata={"creationTimestamp": "2026-12-04T10:00:00Z"})
    run = next_run(parse_deleting_policy(doc(created)), NOW)
    # due at 2026-12-05 03:00, still to come
    assert (run.at, run.due) == (datetime.datetime(2026, 12, 5, 3, tzinfo=datetime.UTC), False)
    ran = {**created, "status": {"lastExecutionTime": "2026-12-03T03:00:05Z"}}
    run = next_run(parse_deleting_policy(doc(ran)), NOW)
    # its run of 2026-12-04 03:00 has not happened: the controller runs it at once
    assert (run.at, run.due) == (datetime.datetime(2026, 12, 4, 3, tzinfo=datetime.UTC), True)


def test_next_run_of_a_manifest_without_times_is_from_now() -> None:
    run = next_run(parse_deleting_policy(doc(dpol(schedule="*/5 * * * *"))), NOW)
    assert run.at == datetime.datetime(2026, 12, 4, 22, 40, tzinfo=datetime.UTC) and not run.due
    # the cluster's copy of the policy says when it was created and last ran
    policy = parse_deleting_policy(doc(dpol(schedule="*/5 * * * *")))
    assert next_run(policy, NOW, ("2026-12-04T22:00:00Z", "")).due
    assert not next_run(policy, NOW, ("2026-12-04T22:00:00Z", "2026-12-04T22:35:00Z")).due


def test_a_schedule_that_does_not_parse_is_an_error() -> None:
    run = next_run(parse_deleting_policy(doc(dpol(schedule="every day"))), NOW)
    assert run.at is None and run.error.startswith("failed to get the policy execution time: ")


# ---- a run over a state -------------------------------------------------------------------------------------

def test_wildcards_and_subresources_are_not_listed() -> None:
    policy = parse_deleting_policy(doc(dpol(resources=["configmaps", "*", "pods/status"])))
    lists, skipped = listed_resources(policy)
    assert [(x.group, x.version, x.resource) for x in lists] == [("", "v1", "configmaps")]
    assert len(skipped) == 2


def test_a_run_deletes_what_matches_in_scope() -> None:
    policies = [parse_deleting_policy(doc(dpol("all", conditions=["object.metadata.name != 'keep'"]))),
                parse_deleting_policy(doc(dpol("team", kind="NamespacedDeletingPolicy", namespace="team")))]
    state = [doc(cm("a")), doc(cm("keep")), doc(cm("b", "team")), doc(cm("filtered", "kube-system"))]

    def filtered(kind: str, namespace: str, name: str, api_version: str) -> bool:
        return namespace == "kube-system"

    out = run_deleting(policies, state, kinds=KINDS, envs=Environments(libraries),
                       options=DeleteOptions(now=NOW, filtered=filtered))
    assert sorted((o.policy.key, o.subject.ref.display(), str(o.status)) for o in out.outcomes) == [
        ("all", "ConfigMap apps/a", "delete"), ("all", "ConfigMap apps/keep", "keep"),
        ("all", "ConfigMap team/b", "delete"), ("team/team", "ConfigMap team/b", "delete")]
    assert [o.subject.ref.name for o in out.deletions].count("b") == 2


def test_a_policy_without_match_constraints_does_not_run() -> None:
    obj = dpol()
    del obj["spec"]["matchConstraints"]
    out = run_deleting([parse_deleting_policy(doc(obj))], [doc(cm("a"))], kinds=KINDS, envs=Environments(libraries),
                       options=DeleteOptions(now=NOW))
    assert out.outcomes == [] and "matchConstraints is required" in out.errors[0].message


def test_an_object_selector_that_does_not_parse_stops_the_run() -> None:
    # LabelSelectorAsSelector fails before any LIST: Kyverno's run deletes nothing
    bad = {"matchExpressions": [{"key": "tmp", "operator": "Exists", "values": ["x"]}]}
    out = run_deleting([parse_deleting_policy(doc(dpol(selector=bad)))], [doc(cm("a", tmp="x"))], kinds=KINDS,
                       envs=Environments(libraries), options=DeleteOptions(now=NOW))
    assert out.outcomes == [] and "objectSelector" in out.errors[0].message
