"""Generation on the admitted trigger (issue 37): `eval` on manifests evaluates GeneratingPolicies and classic
generate rules on the object its admission chain admitted, as Kyverno does (its generate webhooks are
validating webhooks, called after every mutating one; evaluate/generating/admitted.py). Before, they saw the
manifest as written: a label a mutation adds was not there for their match or their data.

Where admission cannot tell the admitted object, generation is decided over the objects it may be: an outcome
every order agrees on stands, one that differs (or any outcome under another unknown) is `undetermined`,
its reason said, and nothing is listed as generated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

NAMESPACES = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
              "resources": ["namespaces"]}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}


def mutating(name: str, value: str) -> dict[str, Any]:
    """A MutatingPolicy setting the label tier=VALUE on every Namespace."""
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [NAMESPACES]}, "mutations": [{
                "patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": f'Object{{metadata: Object.metadata{{labels: {{"tier": "{value}"}}}}}}'}}]}}


def generating(name: str, *, gold_only: bool) -> dict[str, Any]:
    """A GeneratingPolicy writing a ConfigMap whose data is the trigger's tier label (`none` without one);
    `gold_only`: it selects Namespaces labelled tier=gold only."""
    constraints: dict[str, Any] = {"resourceRules": [NAMESPACES]}
    if gold_only:
        constraints["objectSelector"] = {"matchLabels": {"tier": "gold"}}
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": constraints, "generate": [{"expression": (
                'generator.Apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
                f'"metadata": dyn({{"name": "{name}"}}), '
                '"data": dyn({"tier": object.metadata.?labels.?tier.orValue("none")})}])')}]}}


def classic(name: str, *, gold_only: bool) -> dict[str, Any]:
    """A ClusterPolicy generate rule writing a ResourceQuota labelled with the trigger's tier (`none` without)."""
    resources: dict[str, Any] = {"kinds": ["Namespace"]}
    if gold_only:
        resources["selector"] = {"matchLabels": {"tier": "gold"}}
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"rules": [{"name": "quota", "match": {"any": [{"resources": resources}]}, "generate": {
                "apiVersion": "v1", "kind": "ResourceQuota", "name": name,
                "namespace": "{{request.object.metadata.name}}",
                "data": {"metadata": {"labels": {"tier": "{{request.object.metadata.labels.tier || 'none'}}"}},
                         "spec": {"hard": {"pods": "10"}}}}}]}}


def broken() -> dict[str, Any]:
    """A MutatingPolicy whose expression fails on a Namespace without annotations (webhook-error)."""
    policy = mutating("broken", "x")
    policy["spec"]["mutations"][0]["applyConfiguration"]["expression"] = (
        'Object{metadata: Object.metadata{labels: {"x": object.metadata.annotations["missing"]}}}')
    return policy


def eval_json(tmp_path: Path, *policies: dict[str, Any], args: tuple[str, ...] = (),
              resource: dict[str, Any] = NAMESPACE) -> dict[str, Any]:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(list(policies)))
    (tmp_path / "ns.yaml").write_text(yaml.safe_dump(resource))
    run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policies.yaml"), "-r", str(tmp_path / "ns.yaml"),
                                   "-o", "json", *args])
    assert run.exit_code in (0, 1), run.stderr
    return dict(json.loads(run.stdout))


def downstreams(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["policy"]: d["object"] for d in doc["downstreams"]}


def generate_results(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["policy"]: r for r in doc["results"] if r["policy"] in ("gpol", "cpol")}


def test_a_label_the_mutation_adds_selects_the_trigger(tmp_path: Path) -> None:
    doc = eval_json(tmp_path, mutating("add-tier", "gold"), generating("gpol", gold_only=True),
                    classic("cpol", gold_only=True))
    got = downstreams(doc)
    # the manifest has no tier label: only its admitted object (tier=gold) is selected
    assert set(got) == {"gpol", "cpol"}
    assert got["gpol"]["data"] == {"tier": "gold"}
    assert got["cpol"]["metadata"]["labels"]["tier"] == "gold"
    assert {p: r["result"] for p, r in generate_results(doc).items()} == {"gpol": "pass", "cpol": "pass"}


def test_the_generated_data_reads_the_admitted_object(tmp_path: Path) -> None:
    doc = eval_json(tmp_path, mutating("add-tier", "gold"), generating("gpol", gold_only=False),
                    classic("cpol", gold_only=False))
    got = downstreams(doc)
    assert got["gpol"]["data"] == {"tier": "gold"}
    assert got["cpol"]["metadata"]["labels"]["tier"] == "gold"


def test_without_the_chain_the_manifest_is_the_trigger(tmp_path: Path) -> None:
    doc = eval_json(tmp_path, mutating("add-tier", "gold"), generating("gpol", gold_only=False),
                    generating("gold", gold_only=True), args=("--no-mutate",))
    # --no-mutate: validated (and generated) as written
    assert downstreams(doc)["gpol"]["data"] == {"tier": "none"}
    assert "gold" not in downstreams(doc)


def test_generation_the_orders_disagree_on_is_undetermined(tmp_path: Path) -> None:
    doc = eval_json(tmp_path, mutating("add-gold", "gold"), mutating("add-silver", "silver"),
                    generating("gpol", gold_only=True), classic("cpol", gold_only=True))
    # gold in one order, silver in the other: whether the policies select the Namespace depends on the order
    assert downstreams(doc) == {}
    got = generate_results(doc)
    assert {p: r["result"] for p, r in got.items()} == {"gpol": "undetermined", "cpol": "undetermined"}
    for result in got.values():
        message = result["message"]
        assert message.startswith("order-dependent: the policy gives ")
        assert "generated 1 object(s)" in message and "no match" in message
        assert "on the 2 objects that 2 orders of the mutations admit" in message
        assert "MutatingPolicies add-gold, add-silver" in message
    # an undetermined result is never put in a report
    assert not any(r["policy"] in ("gpol", "cpol") for report in doc["reports"] for r in report["results"])


def test_generation_every_order_agrees_on_stands(tmp_path: Path) -> None:
    agreed = generating("agreed", gold_only=False)
    agreed["spec"]["generate"][0]["expression"] = (
        'generator.Apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
        '"metadata": dyn({"name": "agreed"}), "data": dyn({"tiered": string(has(object.metadata.labels))})}])')
    doc = eval_json(tmp_path, mutating("add-gold", "gold"), mutating("add-silver", "silver"), agreed,
                    generating("reads-tier", gold_only=False))
    # both orders label the Namespace: `agreed` writes the same object; `reads-tier` copies the label, which
    # differs
    assert downstreams(doc) == {"agreed": downstreams(doc)["agreed"]}
    assert downstreams(doc)["agreed"]["data"] == {"tiered": "true"}
    results = {r["policy"]: r["result"] for r in doc["results"]}
    assert results["agreed"] == "pass"
    assert results["reads-tier"] == "undetermined"


def test_another_unknown_makes_every_generation_undetermined(tmp_path: Path) -> None:
    doc = eval_json(tmp_path, mutating("add-tier", "gold"), broken(), generating("gpol", gold_only=False),
                    classic("cpol", gold_only=True))
    assert downstreams(doc) == {}
    got = generate_results(doc)
    assert {p: r["result"] for p, r in got.items()} == {"gpol": "undetermined", "cpol": "undetermined"}
    for result in got.values():
        assert result["message"].startswith("the admitted trigger is not known (webhook-error: ")
        assert result["message"].endswith("on the object admitted in load order: generated 1 object(s)")


def test_a_policy_that_selects_no_object_tried_stays_silent(tmp_path: Path) -> None:
    platinum = generating("platinum", gold_only=True)
    platinum["spec"]["matchConstraints"]["objectSelector"] = {"matchLabels": {"tier": "platinum"}}
    doc = eval_json(tmp_path, mutating("add-tier", "gold"), broken(), platinum)
    assert downstreams(doc) == {}
    assert not any(r["policy"] == "platinum" for r in doc["results"])


def test_explain_shows_the_generation_eval_lists(tmp_path: Path) -> None:
    eval_json(tmp_path, mutating("add-tier", "gold"), generating("gpol", gold_only=True))
    run = CliRunner().invoke(cli, ["explain", "-p", str(tmp_path / "policies.yaml"), "-r", str(tmp_path / "ns.yaml"),
                                   "namespace/team-a", "--policy-name", "gpol"])
    assert run.exit_code == 0, run.stderr
    tree = run.stdout[run.stdout.index("GeneratingPolicy gpol"):]
    assert "objectSelector: matched" in tree
    assert "evaluation: generated" in tree
    assert "v1 ConfigMap team-a/gpol: owed" in tree


def test_base_policy_impact_compares_generation_on_each_sides_admitted_trigger(tmp_path: Path) -> None:
    # the head adds the mutation: its admitted Namespace is labelled gold, and the gold-only policy generates
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(generating("gpol", gold_only=True)))
    doc = eval_json(tmp_path, mutating("add-tier", "gold"), generating("gpol", gold_only=True),
                    args=("--base-policy", str(tmp_path / "base.yaml")))
    changes = [(d["change"], d["policy"], d["object"]["name"]) for d in doc["impact"]["downstreams"]]
    assert changes == [("appear", "gpol", "gpol")]


def test_each_rule_of_a_classic_policy_is_decided_on_its_own(tmp_path: Path) -> None:
    policy = classic("cpol", gold_only=True)
    always = json.loads(json.dumps(classic("cpol", gold_only=False)["spec"]["rules"][0]))
    always["name"] = "always"
    always["generate"]["name"] = "always"
    always["generate"]["data"]["metadata"] = {"labels": {"fixed": "yes"}}
    policy["spec"]["rules"].append(always)
    doc = eval_json(tmp_path, mutating("add-gold", "gold"), mutating("add-silver", "silver"), policy)
    # the gold-only rule depends on the order, the other writes the same quota either way
    assert {(r["rule"], r["result"]) for r in doc["results"] if r["policy"] == "cpol"} == {
        ("quota", "undetermined"), ("always", "pass")}
    assert [d["object"]["metadata"]["name"] for d in doc["downstreams"]] == ["always"]
