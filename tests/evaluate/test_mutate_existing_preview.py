"""`eval --state/--live` previews what classic mutate-existing rules change on existing targets (issue 37):
applying manifests (`-r`) starts every mutate-existing rule that matches an admitted manifest; applying the
policies (no `-r`: the state's objects are the triggers) only the rules with mutateExistingOnPolicyUpdate
(pkg/policy/mutate.go handleMutate). MutatingPolicies with mutateExisting start at admission only. The targets
are the state's objects; without a state a notice says what was not previewed
(evaluate/classic/mutate_existing_preview.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli


def _policy(on_policy_update: bool | None) -> dict[str, Any]:
    mutate: dict[str, Any] = {
        "targets": [{"apiVersion": "v1", "kind": "Secret", "namespace": "{{request.object.metadata.namespace}}"}],
        "patchStrategicMerge": {"metadata": {"labels": {"refreshed-by": "{{request.object.metadata.name}}"}}}}
    if on_policy_update is not None:
        mutate["mutateExistingOnPolicyUpdate"] = on_policy_update
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "refresh-secrets"},
            "spec": {"rules": [{"name": "stamp", "match": {"any": [{"resources": {
                "kinds": ["ConfigMap"], "names": ["dictionary"]}}]}, "mutate": mutate}]}}


def _meta(name: str, n: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "shop", "uid": f"00000000-0000-4000-8000-00000000000{n}", **extra}


STATE = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "uid": _meta("", 1)["uid"]}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("dictionary", 2), "data": {"a": "1"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("s1", 3), "type": "Opaque"},
    {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("s2", 4, labels={"refreshed-by": "dictionary"}),
     "type": "Opaque"},
]}
MANIFEST = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dictionary", "namespace": "shop"},
            "data": {"a": "2"}}


def _eval(tmp_path: Path, *policies: dict[str, Any], manifests: bool = True, state: bool = True,
          output: str = "json") -> tuple[int, str, str]:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(list(policies)))
    (tmp_path / "state.yaml").write_text(yaml.safe_dump(STATE))
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(MANIFEST))
    args = ["eval", "-p", str(tmp_path / "policies.yaml"), "-o", output]
    if manifests:
        args += ["-r", str(tmp_path / "cm.yaml")]
    if state:
        args += ["--state", str(tmp_path / "state.yaml")]
    run = CliRunner().invoke(cli, args)
    return run.exit_code, run.stdout, run.stderr


def _changes(out: str) -> dict[str, dict[str, Any]]:
    return {c["target"]["name"]: c for c in json.loads(out).get("mutateExisting", [])}


def test_applied_manifest_previews_each_existing_target(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, _policy(None))
    assert code == 0, err
    got = _changes(out)
    assert set(got) == {"s1", "s2"}
    assert got["s1"]["result"] == "pass"
    assert got["s1"]["patch"] == [{"op": "add", "path": "/metadata/labels", "value": {"refreshed-by": "dictionary"}}]
    assert got["s1"]["trigger"]["name"] == "dictionary" and got["s1"]["rule"] == "stamp"
    assert got["s1"]["location"]["file"].endswith("cm.yaml")
    # s2 carries the label already
    assert (got["s2"]["result"], got["s2"]["message"], got["s2"]["patch"]) == ("skip", "no patches applied", [])


def test_the_table_lists_each_target_change(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, _policy(None), output="table")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert ["MUTATE-EXISTING", "TARGET", "POLICY", "RULE", "TRIGGER", "RESULT", "CHANGE"] in rows
    assert ["Secret", "shop/s1", "refresh-secrets", "stamp", "ConfigMap", "shop/dictionary", "pass", "add",
            "/metadata/labels"] in rows
    assert "No policy matched any resource." not in out


def test_applying_the_policy_previews_only_rules_acting_on_policy_update(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, _policy(True), manifests=False)
    assert code == 0, err
    assert _changes(out)["s1"]["result"] == "pass"
    assert _changes(out)["s1"]["location"]["file"].endswith("state.yaml")
    for flag in (None, False):
        code, out, err = _eval(tmp_path, _policy(flag), manifests=False)
        assert code == 0, err
        assert _changes(out) == {}


def test_a_spec_level_flag_is_overridden_by_the_rules(tmp_path: Path) -> None:
    policy = _policy(False)
    policy["spec"]["mutateExistingOnPolicyUpdate"] = True
    assert _changes(_eval(tmp_path, policy, manifests=False)[1]) == {}
    policy = _policy(None)
    policy["spec"]["mutateExistingOnPolicyUpdate"] = True
    assert set(_changes(_eval(tmp_path, policy, manifests=False)[1])) == {"s1", "s2"}


def test_without_a_state_nothing_is_previewed_and_the_run_says_so(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, _policy(None), state=False)
    assert code == 0, err
    assert "mutateExisting" not in json.loads(out)
    assert ("notice: 1 mutate-existing rule(s) or policies (refresh-secrets): their targets are existing objects; "
            "give --state or --live to preview what applying this changes on them") in err


def _mpol() -> dict[str, Any]:
    """A mutateExisting MutatingPolicy: a ConfigMap named dictionary stamps every Secret with its own name."""
    rules = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"]}
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "mex"},
            "spec": {"evaluation": {"mutateExisting": {"enabled": True}},
                     "matchConstraints": {"resourceRules": [{**rules, "resources": ["configmaps"]}]},
                     "matchConditions": [{"name": "dictionary", "expression": 'object.metadata.name == "dictionary"'}],
                     "targetMatchConstraints": {"resourceRules": [{**rules, "resources": ["secrets"]}]},
                     "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                         "expression": 'Object{metadata: Object.metadata{labels: {"stamped-by": request.name}}}'}}]}}


def test_a_mutating_policys_mutate_existing_targets_are_previewed(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path, _mpol())
    assert code == 0, err
    got = _changes(out)
    assert set(got) == {"s1", "s2"}
    assert got["s1"]["kind"] == "MutatingPolicy" and got["s1"]["result"] == "pass"
    # `request` is the trigger's admission request
    assert got["s1"]["patch"] == [{"op": "add", "path": "/metadata/labels", "value": {"stamped-by": "dictionary"}}]
    assert got["s2"]["patch"] == [{"op": "add", "path": "/metadata/labels/stamped-by", "value": "dictionary"}]


def test_a_mutating_policy_previews_only_for_triggers_it_matches(tmp_path: Path) -> None:
    policy = _mpol()
    policy["spec"]["matchConditions"][0]["expression"] = 'object.metadata.name == "other"'
    code, out, err = _eval(tmp_path, policy)
    assert code == 0, err
    assert _changes(out) == {}
    # and applying the policy alone starts nothing (Kyverno has no policy-update pass for MutatingPolicies)
    code, out, err = _eval(tmp_path, _mpol(), manifests=False)
    assert code == 0, err
    assert _changes(out) == {}
