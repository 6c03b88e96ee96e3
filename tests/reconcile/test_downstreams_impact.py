"""The impact of a policy change (eval --base-policy): downstreams that appear, disappear or change, and
validation results that flip."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.model import Ref, Result, Source
from kubectl_kyrec.reconcile.impact import compare_downstreams, compare_results, compute_impact
from kubectl_kyrec.render.unified_diff import unified_diff
from tests.generating.gen_support import docs, evaluate

POLICY = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {{name: {name}}}
spec:
  evaluation:
    synchronize: {{enabled: {sync}}}
    orphanDownstreamOnPolicyDelete: {{enabled: {orphan}}}
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}}
  generate:
  - expression: >-
      generator.apply(object.metadata.name, [{{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),
      "metadata": dyn({{"name": "{cm}"}}), "data": dyn({{"k": "{value}"}})}}])
"""
NS = docs("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, uid: ua}\n", "ns.yaml")


def policy(name: str = "p", *, sync: str = "true", orphan: str = "false", cm: str = "cm", value: str = "v") -> list:
    return docs(POLICY.format(name=name, sync=sync, orphan=orphan, cm=cm, value=value), f"{name}.yaml")


def changes(base: list, head: list) -> list[tuple[str, str, str]]:
    out = compare_downstreams(evaluate(base, NS), evaluate(head, NS))
    return [(d.change, d.policy, d.object.name) for d in out]


def test_unchanged_policy_changes_nothing() -> None:
    assert changes(policy(), policy()) == []


def test_renamed_downstream_appears_and_disappears() -> None:
    assert changes(policy(), policy(cm="new")) == [("disappear", "p", "cm"), ("appear", "p", "new")]


def test_sync_off_leaves_what_it_no_longer_generates() -> None:
    out = compare_downstreams(evaluate(policy(sync="false"), NS), evaluate(policy(sync="false", cm="new"), NS))
    assert [(d.change, d.object.name) for d in out] == [("orphaned", "cm"), ("appear", "new")]
    assert "sync is off" in out[0].note and "from now on" in out[1].note


def test_changed_content_comes_with_a_diff() -> None:
    (change,) = compare_downstreams(evaluate(policy(), NS), evaluate(policy(value="w"), NS))
    assert change.change == "change"
    text = unified_diff(change.shown)
    assert text is not None and "-  k: v\n+  k: w\n" in text
    assert text.startswith("--- base/v1.ConfigMap.team-a.cm\n+++ head/v1.ConfigMap.team-a.cm\n")
    assert change.location == Source("ns.yaml", 1)


def test_deleted_policy() -> None:
    assert changes(policy(), policy("other", cm="o")) == [("appear", "other", "o"), ("disappear", "p", "cm")]
    kept = changes(policy(orphan="true"), policy("other", cm="o"))
    assert ("orphaned", "p", "cm") in kept
    assert ("orphaned", "p", "cm") in changes(policy(sync="false"), policy("other", cm="o"))


def test_a_failing_head_is_undetermined_not_a_deletion() -> None:
    broken = docs(POLICY.format(name="p", sync="true", orphan="false", cm="cm", value="v").replace(
        '"k": "v"', '"k": object.metadata.nope'))
    assert changes(policy(), broken) == [("undetermined", "p", "cm")]


def result(status: str, uid: str = "u1") -> Result:
    return Result("pol", "KyvernoValidatingPolicy", "", status, "m", Ref("v1", "Namespace", "", "n", uid),
                  location=Source("ns.yaml", 3))


def test_result_flips() -> None:
    flips = compare_results([result("pass"), result("fail", "u2"), result("pass", "u3"), result("pass", "u4")],
                            [result("fail"), result("pass", "u2"), result("error", "u3"), result("pass", "u5")])
    assert sorted((f.change, f.subject.uid) for f in flips) == [
        ("changed", "u3"), ("fail-to-pass", "u2"), ("gone", "u4"), ("new", "u5"), ("pass-to-fail", "u1")]
    assert all(f.location == Source("ns.yaml", 3) for f in flips)


def test_impact_document() -> None:
    impact = compute_impact([result("pass")], [result("fail")], evaluate(policy(), NS), evaluate(policy(), NS))
    doc = impact.to_json(unified_diff)
    assert impact.changed and doc["summary"]["result"]["pass-to-fail"] == 1
    assert doc["results"][0]["location"] == {"file": "ns.yaml", "line": 3}
    assert sum(doc["summary"]["downstream"].values()) == 0


def test_eval_base_policy_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "head").mkdir()
    (tmp_path / "base" / "p.yaml").write_text(POLICY.format(name="p", sync="true", orphan="false", cm="cm", value="v"))
    (tmp_path / "head" / "p.yaml").write_text(POLICY.format(name="p", sync="true", orphan="false", cm="cm", value="w"))
    (tmp_path / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n")
    runner = CliRunner()
    args = ["eval", "-p", str(tmp_path / "head"), "-r", str(tmp_path / "ns.yaml")]
    changed = runner.invoke(cli, [*args, "--base-policy", str(tmp_path / "base")], catch_exceptions=False)
    assert changed.exit_code == 1
    assert "Downstream changes:" in changed.stdout and "+  k: w" in changed.stdout
    assert runner.invoke(cli, [*args, "--base-policy", str(tmp_path / "base"), "--exit-code=false"]).exit_code == 0
    same = runner.invoke(cli, [*args, "--base-policy", str(tmp_path / "head")], catch_exceptions=False)
    assert same.exit_code == 0 and "changes nothing" in same.stdout
    github = runner.invoke(cli, [*args, "--base-policy", str(tmp_path / "base"), "-o", "github"])
    assert f"::notice file={tmp_path / 'ns.yaml'},line=1,title=p::downstream ConfigMap team-a/cm would change" \
        in github.stdout
