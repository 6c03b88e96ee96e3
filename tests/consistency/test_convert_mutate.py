"""convert: ClusterPolicy mutate rules (patchStrategicMerge) -> MutatingPolicy ApplyConfiguration, and
`--verify` comparing the mutated objects (convert/mutate.py, run/convert.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify


def _policy(*patches: Any, kinds: tuple[str, ...] = ("Pod",), **mutate: Any) -> dict[str, Any]:
    rules = [{"name": f"r{i}", "match": {"any": [{"resources": {"kinds": list(kinds)}}]},
              "mutate": {"patchStrategicMerge": p, **mutate}} for i, p in enumerate(patches)]
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "m"},
            "spec": {"rules": rules}}


RESOURCES = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                     "labels": {"team": "b", "z": "1"}},
     "spec": {"securityContext": {"runAsUser": 5}, "containers": [{"name": "c", "image": "i"}]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "namespace": "default"},
     "spec": {"containers": [{"name": "c", "image": "i"}]}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
     "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
         "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
]

PATCH = {"metadata": {"labels": {"team": "a", "app.kubernetes.io/part-of": "web"}},
         "spec": {"securityContext": {"runAsNonRoot": True}, "terminationGracePeriodSeconds": 10}}
SPEC_PATCH = {"spec": PATCH["spec"]}
# Pods and Services: no autogen (kk: pkg/cel/autogen CanAutoGen wants the one resource pods)
NO_AUTOGEN = ("Pod", "Service")


def test_strategic_merge_becomes_an_apply_configuration_that_mutates_alike() -> None:
    # maps holding maps are typed literals: Kubernetes' patcher refuses a map literal inside a map literal
    # (docs/compatibility.md, measured with Kyverno's CLI v1.17.2)
    original = _policy(PATCH, kinds=NO_AUTOGEN)
    conv = convert_policy(original)
    assert conv.refusals == []
    doc = conv.documents[0]
    assert doc["kind"] == "MutatingPolicy"
    assert doc["spec"]["mutations"] == [{"patchType": "ApplyConfiguration", "applyConfiguration": {
        "expression": "Object{metadata: Object.metadata{labels: {'team': 'a', 'app.kubernetes.io/part-of': 'web'}}, "
                      "spec: Object.spec{securityContext: {'runAsNonRoot': true}, "
                      "terminationGracePeriodSeconds: 10}}"}}]
    diffs, subjects = verify(original, conv.documents, RESOURCES)
    assert subjects > len(RESOURCES)
    assert [d.line() for d in diffs] == []


def test_a_spec_patch_on_pods_autogens_into_the_pod_template_alike() -> None:
    # `Object.spec` is renamed by Kyverno's MutatingPolicy autogen (`Object.spec.template.spec`): checked with
    # its CLI on a Deployment
    original = _policy(SPEC_PATCH)
    conv = convert_policy(original)
    assert conv.refusals == []
    assert conv.documents[0]["spec"]["mutations"][0]["applyConfiguration"]["expression"] == (
        "Object{spec: Object.spec{securityContext: {'runAsNonRoot': true}, terminationGracePeriodSeconds: 10}}")
    diffs, subjects = verify(original, conv.documents, RESOURCES)
    assert subjects > len(RESOURCES)
    assert [d.line() for d in diffs] == []        # the Deployment too: both autogen into the pod template


def test_a_metadata_map_on_pods_is_refused_under_autogen() -> None:
    # `Object.metadata{...}` stays named after the Pod in the controllers' copies: a type mismatch there
    # (Kyverno's CLI: `unexpected type name "Object.metadata", expected "Object.spec.template.metadata"`),
    # and `{'labels': {...}}` below `Object{}` is refused on the Pod itself
    conv = convert_policy(_policy(PATCH))
    assert conv.documents == []
    assert conv.refusals[0].startswith("spec.rules[0].mutate.patchStrategicMerge.metadata: needs the typed "
                                       "literal Object.metadata{...}")
    none = _policy(PATCH)
    none["metadata"]["annotations"] = {"pod-policies.kyverno.io/autogen-controllers": "none"}
    assert convert_policy(none).refusals == []


@pytest.mark.parametrize(("patch", "expression"), [
    # values of different types: a typed literal (a map literal's values share one type in cel-go)
    ({"spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 5}}},
     "Object{spec: Object.spec{securityContext: Object.spec.securityContext{runAsNonRoot: true, runAsUser: 5}}}"),
    ({"spec": {"template": {"spec": {"priorityClassName": "p"}}}},
     "Object{spec: Object.spec{template: Object.spec.template{spec: {'priorityClassName': 'p'}}}}"),
])
def test_maps_become_typed_literals_where_a_map_literal_cannot_hold_them(patch: Any, expression: str) -> None:
    conv = convert_policy(_policy(patch, kinds=("DaemonSet",)))
    assert conv.refusals == []
    assert conv.documents[0]["spec"]["mutations"][0]["applyConfiguration"]["expression"] == expression


def test_a_map_of_maps_with_a_key_no_typed_literal_can_name_is_refused() -> None:
    conv = convert_policy(_policy({"metadata": {"annotations": {"a.b/c": {"x": "y"}}}}, kinds=NO_AUTOGEN))
    assert conv.documents == []
    assert conv.refusals[0].startswith("spec.rules[0].mutate.patchStrategicMerge.metadata.annotations.a.b/c: a key "
                                       "that is not a CEL identifier")


def test_verify_compares_the_mutated_objects() -> None:
    """A conversion that sets one value wrong is reported per subject, with the path and both values."""
    original = _policy(SPEC_PATCH)
    wrong = convert_policy(original).documents
    mutation = wrong[0]["spec"]["mutations"][0]["applyConfiguration"]
    mutation["expression"] = mutation["expression"].replace("terminationGracePeriodSeconds: 10",
                                                            "terminationGracePeriodSeconds: 11")
    diffs, _ = verify(original, wrong, RESOURCES)
    lines = [d.line() for d in diffs]
    assert ("m: Pod/default/p (as given): mutated object differs at /spec/terminationGracePeriodSeconds: "
            "original 10, converted 11") in lines
    assert any(d.subject == "Deployment/default/d" and d.mutation == "/spec/template/spec/terminationGracePeriodSeconds"
               for d in diffs)
    assert all(d.verdict for d in diffs)          # they count as differences of decision (exit 1)


def test_rules_in_order_share_one_policy() -> None:
    original = _policy({"metadata": {"labels": {"team": "a"}}}, {"metadata": {"labels": {"team": "b"}}},
                       kinds=NO_AUTOGEN)
    conv = convert_policy(original)
    assert len(conv.documents) == 1 and len(conv.documents[0]["spec"]["mutations"]) == 2
    diffs, _ = verify(original, conv.documents, RESOURCES)
    assert [d.line() for d in diffs] == []


@pytest.mark.parametrize(("patch", "mutate", "field", "why"), [
    ({"spec": {"containers": [{"name": "c", "image": "x"}]}}, {}, "spec.rules[0].mutate.patchStrategicMerge.spec."
     "containers", "a list in patchStrategicMerge"),
    ({"spec": {"(hostNetwork)": True, "dnsPolicy": "None"}}, {}, "spec.rules[0].mutate.patchStrategicMerge.spec."
     "(hostNetwork)", "anchors and $patch directives"),
    ({"spec": {"+(dnsPolicy)": "None"}}, {}, "spec.rules[0].mutate.patchStrategicMerge.spec.+(dnsPolicy)", "anchors"),
    ({"metadata": {"labels": {"x": None}}}, {}, "spec.rules[0].mutate.patchStrategicMerge.metadata.labels.x",
     "null in patchStrategicMerge deletes"),
    ({"metadata": {"labels": {"x": "{{ request.namespace }}"}}}, {}, "spec.rules[0].mutate.patchStrategicMerge."
     "metadata.labels.x", "a variable"),
    (None, {"patchesJson6902": "- op: add\n  path: /spec/x\n  value: 1\n"}, "spec.rules[0].mutate.patchesJson6902",
     "creates missing parents"),
])
def test_what_is_not_exact_is_refused_by_field(patch: Any, mutate: dict[str, Any], field: str, why: str) -> None:
    doc = _policy(patch, **mutate)
    if patch is None:
        del doc["spec"]["rules"][0]["mutate"]["patchStrategicMerge"]
    conv = convert_policy(doc)
    assert conv.documents == []
    assert conv.refusals and conv.refusals[0].startswith(f"{field}: ") and why in conv.refusals[0]


def test_mixed_policy_and_split_groups_are_refused() -> None:
    mixed = _policy(PATCH)
    mixed["spec"]["rules"].append({"name": "v", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                   "validate": {"message": "m", "pattern": {"spec": {"containers": [{"name": "?*"}]}}}})
    assert convert_policy(mixed).refusals[0].startswith("spec.rules: a policy with both mutate and other rules")
    split = _policy(SPEC_PATCH, {"metadata": {"labels": {"q": "r"}}})
    split["spec"]["rules"][1]["match"] = {"any": [{"resources": {"kinds": ["Service"]}}]}
    assert convert_policy(split).refusals[0].startswith("spec.rules: mutate rules with different match")


def test_cli_writes_a_mutating_policy_and_verifies(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(_policy(PATCH, kinds=NO_AUTOGEN)))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump_all(RESOURCES))
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "-o", str(tmp_path / "out"),
                                      "--verify", "-r", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.output + result.stderr
    assert "verified" in result.output and "0 verdict difference(s)" in result.output
    written = yaml.safe_load((tmp_path / "out" / "m.yaml").read_text())
    assert written["kind"] == "MutatingPolicy"
    linted = CliRunner().invoke(cli, ["lint", "-p", str(tmp_path / "out")])
    assert linted.exit_code == 0, linted.output
