"""convert: ClusterCleanupPolicy/CleanupPolicy -> DeletingPolicy/NamespacedDeletingPolicy, and `--verify`
comparing which objects each would delete (convert/cleanup.py, evaluate/classic/cleanup.py, run/convert.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert import conditions, jmes
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.evaluate.classic.cleanup import CleanupStatus, cleanup_decision
from kubectl_kyrec.run.convert import variants, verify
from tests.shared_inputs import SHARED

CLEAN = {"apiVersion": "kyverno.io/v2", "kind": "ClusterCleanupPolicy",
         "metadata": {"name": "clean", "annotations": {"a": "b"}},
         "spec": {"schedule": "*/5 * * * *", "deletionPropagationPolicy": "Background",
                  "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["team-*", "dev"]}}]},
                  "exclude": {"any": [{"resources": {"names": ["keep-*"]}}]},
                  "conditions": {"all": [
                      {"key": "{{ target.metadata.ownerReferences[] || `[]` }}", "operator": "Equals", "value": []},
                      {"key": "{{ target.metadata.labels.tier }}", "operator": "NotEquals", "value": "db"}]}}}


def _pod(name: str, namespace: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, **meta},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


RESOURCES = [
    _pod("a", "team-x", labels={"tier": "web"}),
    _pod("keep-b", "dev", labels={"tier": "web"}),
    _pod("c", "dev", labels={"tier": "db"}),
    _pod("d", "dev", labels={"tier": "web"},
         ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "1"}]),
    _pod("e", "other", labels={"tier": "web"}),
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f", "namespace": "dev"}},
]


def _decisions(policy: dict[str, Any]) -> dict[CleanupStatus, int]:
    out: dict[CleanupStatus, int] = {}
    for resource in RESOURCES:
        for _, variant in variants(resource):
            group, _, version = str(variant["apiVersion"]).rpartition("/")
            status = cleanup_decision(policy, variant, group, version, {})
            out[status] = out.get(status, 0) + 1
    return out


def test_cleanup_policy_becomes_a_deleting_policy_that_deletes_the_same_objects() -> None:
    conv = convert_policy(CLEAN)
    assert conv.refusals == [] and conv.exact
    [doc] = conv.documents
    assert doc["kind"] == "DeletingPolicy" and doc["apiVersion"] == "policies.kyverno.io/v1"
    assert doc["metadata"] == {"name": "clean", "annotations": {"a": "b"}}
    spec = doc["spec"]
    assert spec["schedule"] == "*/5 * * * *" and spec["deletionPropagationPolicy"] == "Background"
    assert spec["matchConstraints"]["resourceRules"][0]["resources"] == ["pods"]
    assert [c["name"] for c in spec["conditions"]] == ["match", "exclude", "conditions"]
    diffs, count = verify(CLEAN, conv.documents, RESOURCES)
    assert diffs == [] and count > 40
    # not vacuous: the run deletes some subjects and keeps others, for each reason
    decided = _decisions(CLEAN)
    assert decided[CleanupStatus.DELETE] > 5 and decided[CleanupStatus.KEEP] > 5
    assert decided[CleanupStatus.NOT_SELECTED] > 5


def test_verify_finds_a_conversion_that_deletes_otherwise() -> None:
    conv = convert_policy(CLEAN)
    weaker = copy.deepcopy(conv.documents)
    weaker[0]["spec"]["conditions"] = [c for c in weaker[0]["spec"]["conditions"] if c["name"] != "exclude"]
    diffs, _ = verify(CLEAN, weaker, RESOURCES)
    assert diffs and {(d.original, d.converted) for d in diffs} == {("keep", "delete")}
    assert any(d.subject == "Pod/dev/keep-b" and d.variant == "as given" for d in diffs)


ERRING_FIRST = {**CLEAN, "metadata": {"name": "ordered"}, "spec": {
    "schedule": "0 * * * *", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
    "conditions": {"any": [{"key": "{{ target.metadata.labels.missing }}", "operator": "Equals", "value": "x"},
                           {"key": "{{ target.metadata.name }}", "operator": "Equals", "value": "a"}]}}}


def test_conditions_keep_kyvernos_order_past_an_error() -> None:
    """The cleanup controller stops at an `any` condition that errors (the object is kept); CEL's `||` would
    let the later true condition delete it. The conversion tests each condition in order."""
    pod = _pod("a", "dev")
    assert cleanup_decision(ERRING_FIRST, pod, "", "v1", {}) == CleanupStatus.ERROR
    conv = convert_policy(ERRING_FIRST)
    assert conv.exact
    diffs, _ = verify(ERRING_FIRST, conv.documents, [pod])
    assert diffs == []
    # the same conditions joined with `||` delete it: the difference verify would report
    naive = copy.deepcopy(conv.documents)
    naive[0]["spec"]["conditions"][-1]["expression"] = conditions.block(
        ERRING_FIRST["spec"]["conditions"], "spec.conditions", jmes.Scope({"target": "object"}))
    diffs, _ = verify(ERRING_FIRST, naive, [pod])
    assert [(d.subject, d.original, d.converted) for d in diffs if d.variant == "as given"] == [
        ("Pod/dev/a", "keep", "delete")]


def test_namespaced_cleanup_policy_deletes_in_its_namespace_only() -> None:
    policy = {"apiVersion": "kyverno.io/v2", "kind": "CleanupPolicy", "metadata": {"name": "n", "namespace": "dev"},
              "spec": {"schedule": "0 * * * *", "match": {"any": [{"resources": {"kinds": ["Pod", "Namespace"]}}]}}}
    conv = convert_policy(policy)
    assert conv.exact
    [doc] = conv.documents
    assert doc["kind"] == "NamespacedDeletingPolicy" and doc["metadata"]["namespace"] == "dev"
    resources = [*RESOURCES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}}]
    diffs, _ = verify(policy, conv.documents, resources)
    assert diffs == []
    assert cleanup_decision(policy, RESOURCES[2], "", "v1", {}) == CleanupStatus.DELETE
    assert cleanup_decision(policy, RESOURCES[0], "", "v1", {}) == CleanupStatus.NOT_SELECTED


def test_refused_by_field() -> None:
    def refusal(**spec: Any) -> list[str]:
        return convert_policy({**CLEAN, "spec": {**CLEAN["spec"], **spec}}).refusals

    ops = {"any": [{"resources": {"kinds": ["Pod"], "operations": ["CREATE"]}}]}
    assert refusal(match=ops)[0].startswith("spec.match.any[0].resources.operations: ")
    assert refusal(context=[{"name": "x", "variable": {"value": 1}}])[0].startswith("spec.context: ")
    reads = {"all": [{"key": "{{ request.namespace }}", "operator": "Equals", "value": "dev"}]}
    assert refusal(conditions=reads)[0].startswith("spec.conditions: reads `request`")
    timed = {"all": [{"key": "{{ time_diff('{{target.metadata.creationTimestamp}}','{{ time_now_utc() }}') }}",
                      "operator": "GreaterThan", "value": "0h0m30s"}]}
    assert refusal(conditions=timed)[0].startswith("spec.conditions.all[0]")


def test_cli_writes_the_corpus_cleanup_policies_or_names_the_field(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = CliRunner().invoke(cli, ["convert", "-p", str(SHARED / "corpus/kyverno-policies-legacy/cleanup"),
                                   "-o", str(out)])
    assert run.exit_code == 1, run.output
    assert "ClusterCleanupPolicy 'clean-bare-pods': converted exactly" in run.output
    assert "ClusterCleanupPolicy 'cleanup-empty-replicasets' not converted: spec.conditions.all[0].value" in run.output
    written = yaml.safe_load((out / "clean-bare-pods.yaml").read_text())
    assert written["kind"] == "DeletingPolicy" and written["spec"]["schedule"] == "*/5 * * * *"
