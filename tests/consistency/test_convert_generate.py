"""convert: ClusterPolicy generate rules (data) -> GeneratingPolicy `generator.Apply`, and `--verify` comparing
what each trigger generates (convert/generate.py, run/convert.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify
from tests.shared_inputs import SHARED


def _policy(*generates: dict[str, Any], kinds: tuple[str, ...] = ("Deployment",), **spec: Any) -> dict[str, Any]:
    rules = [{"name": f"g{i}", "match": {"any": [{"resources": {"kinds": list(kinds)}}]}, "generate": g}
             for i, g in enumerate(generates)]
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "gen"},
            "spec": {"rules": rules, **spec}}


PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "synchronize": True,
       "name": "{{request.object.metadata.name}}-pdb", "namespace": "{{request.object.metadata.namespace}}",
       "data": {"metadata": {"labels": {"app": "{{request.object.metadata.labels.app}}", "fixed": "x"}},
                "spec": {"minAvailable": 1, "selector": "{{request.object.spec.selector}}"}}}
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings",
          "namespace": "{{request.object.metadata.namespace}}",
          "data": {"data": {"replicas": "n={{request.object.spec.replicas}}", "team": "web"}}}
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "name": "view-{{request.object.metadata.name}}",
        "data": {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}}
STATIC = {"apiVersion": "v1", "kind": "ConfigMap", "name": "static", "namespace": "default",
          "data": {"data": {"a": "b"}}}

RESOURCES = [
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "d", "namespace": "default", "labels": {"app": "web", "tier": "a"}},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
         "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
]


def test_data_rules_become_generator_apply_and_generate_alike() -> None:
    """Variables in names, labels and values, a whole-value variable (a map), a cluster-scoped kind; the
    variants remove the label and the selector the rules read (both: an error) and change them."""
    original = _policy(PDB, CONFIG, ROLE, STATIC, {**STATIC, "name": "other"})
    conv = convert_policy(original)
    assert conv.refusals == []
    # rules with variables (which can error) get a policy each; the two without share one
    assert len(conv.substitutes) == 1 and "one GeneratingPolicy each" in conv.substitutes[0]
    kinds = {d["metadata"]["name"]: d for d in conv.documents}
    assert set(kinds) == {"gen-g0", "gen-g1", "gen-g2", "gen-g3"}
    assert kinds["gen-g0"]["kind"] == "GeneratingPolicy"
    assert kinds["gen-g0"]["spec"]["evaluation"] == {"synchronize": {"enabled": True}}
    assert "evaluation" not in kinds["gen-g1"]["spec"]
    assert len(kinds["gen-g3"]["spec"]["generate"]) == 2
    assert kinds["gen-g0"]["spec"]["generate"][0]["expression"].startswith("generator.Apply(")
    diffs, subjects = verify(original, conv.documents, RESOURCES)
    assert subjects > 10
    assert [d.line() for d in diffs] == []


def test_verify_reports_a_downstream_that_differs_per_trigger() -> None:
    original = _policy(PDB)
    wrong = convert_policy(original).documents
    generation = wrong[0]["spec"]["generate"][0]
    generation["expression"] = generation["expression"].replace("dyn(1)", "dyn(2)")
    diffs, _ = verify(original, wrong, RESOURCES)
    assert diffs and all(d.verdict and d.downstream for d in diffs)
    first = next(d for d in diffs if d.variant == "as given")
    assert first.line() == ("gen: Deployment/default/d (as given): generated downstreams differ at "
                            "/objects/0/spec/minAvailable: original 1, converted 2")


@pytest.mark.parametrize(("generate", "field"), [
    ({**PDB, "data": None, "clone": {"namespace": "default", "name": "x"}}, "spec.rules[0].generate.clone"),
    ({**PDB, "foreach": [{"list": "x"}]}, "spec.rules[0].generate.foreach"),
    ({**CONFIG, "namespace": ""}, "spec.rules[0].generate.namespace"),
    ({**CONFIG, "data": {"data": {"{{request.object.metadata.name}}": "x"}}}, "spec.rules[0].generate.data.data"),
])
def test_what_is_not_converted_is_refused_by_field(generate: dict[str, Any], field: str) -> None:
    conv = convert_policy(_policy(generate))
    assert conv.documents == []
    assert conv.refusals and conv.refusals[0].startswith(field), conv.refusals


def test_generate_beside_other_rules_is_refused() -> None:
    policy = _policy(PDB)
    policy["spec"]["rules"].append({"name": "v", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                    "validate": {"pattern": {"metadata": {"name": "?*"}}}})
    assert convert_policy(policy).refusals == ["spec.rules: a policy with both generate and other rules is not "
                                               "converted yet"]


def test_generate_existing_and_failure_policy_settings() -> None:
    conv = convert_policy(_policy(CONFIG, generateExisting=True, failurePolicy="Ignore"))
    spec = conv.documents[0]["spec"]
    assert spec["evaluation"] == {"generateExisting": {"enabled": True}}
    assert "failurePolicy" not in spec
    assert conv.substitutes and "failurePolicy" in conv.substitutes[0]


@pytest.mark.parametrize(("name", "policies"), [("add-network-policy", 1), ("create-default-pdb", 1),
                                               ("add-ns-quota", 2)])     # two rules with a variable: split
def test_corpus_generate_policies_convert_and_verify(name: str, policies: int, tmp_path: Path) -> None:
    found = list((SHARED / "corpus" / "kyverno-policies-legacy").glob(f"*/{name}/{name}.yaml"))
    assert len(found) == 1
    directory = found[0].parent
    out = CliRunner().invoke(cli, ["convert", "-p", str(found[0]), "-o", str(tmp_path), "--verify",
                                   "-r", str(directory / ".kyverno-test")])
    assert out.exit_code == 0, out.output
    assert "0 verdict difference(s)" in out.output
    written = yaml.safe_load_all(next(tmp_path.glob("*.yaml")).read_text())
    assert [d["kind"] for d in written] == ["GeneratingPolicy"] * policies
    linted = CliRunner().invoke(cli, ["lint", "-p", str(tmp_path)])     # Kyverno's CRD schema, kyrec's checks
    assert linted.exit_code == 0, linted.output


def test_verify_compares_resources_written_without_a_namespace() -> None:
    """eval puts a namespaced resource without metadata.namespace in `default`; verify must compare its
    results there (it once looked them up under namespace "" and compared nothing)."""
    original = _policy(PDB)
    wrong = convert_policy(original).documents
    generation = wrong[0]["spec"]["generate"][0]
    generation["expression"] = generation["expression"].replace("dyn(1)", "dyn(2)")
    resource = {**RESOURCES[0], "metadata": {k: v for k, v in RESOURCES[0]["metadata"].items() if k != "namespace"}}
    diffs, _ = verify(original, wrong, [resource])
    assert any(d.variant == "as given" and d.subject == "Deployment/d" for d in diffs), [d.line() for d in diffs]
