"""A foreach element that errors (its preconditions or deny conditions read a key it lacks) is passed over
unless it is the list's last element, whose error is the rule's (kk: pkg/engine/handlers/validation/
validate_resource.go validateElements: `if index < len(elements)-1 { continue }`). Before, kyrec passed over
every element whose preconditions errored, the last one too (the rule passed where Kyverno gives an error), and
stopped at the first element whose deny conditions errored (an error where Kyverno goes on to a later
element's failure). The verdicts below are Kyverno CLI v1.17.2's (`kubectl-kyverno apply`, commit f64c0f58) on
this policy and these Pods, recorded 2026-12-05."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli


def _policy(where: str) -> dict[str, Any]:
    foreach: dict[str, Any] = {"list": "request.object.spec.containers",
                               "deny": {"conditions": {"any": [{"key": "{{ element.image }}", "operator": "Equals",
                                                                "value": "bad"}]}}}
    probe = {"key": "{{ element.foo }}", "operator": "NotEquals", "value": "x"}
    if where == "preconditions":
        foreach["preconditions"] = {"all": [probe]}
    else:
        foreach["deny"]["conditions"]["any"].insert(0, probe)
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "fe", "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"validationFailureAction": "Audit", "background": True, "rules": [{
                "name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "validate": {"message": "bad image", "foreach": [foreach]}}]}}


def _pod(name: str, *containers: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": f"c{i}", **c} for i, c in enumerate(containers)]}}


PODS = [
    _pod("nofoo2", {"image": "bad"}, {"image": "good"}),
    _pod("lastfoo", {"image": "bad"}, {"image": "bad", "foo": "y"}),
    _pod("firstfoo", {"image": "good", "foo": "y"}, {"image": "bad"}),
    _pod("firstfoobad", {"image": "bad", "foo": "y"}, {"image": "good"}),
    _pod("lastx", {"image": "good"}, {"image": "good", "foo": "x"}),
]

# Kyverno CLI v1.17.2 (`apply --policy-report`): with preconditions reading `element.foo` (an error where there
# is no `foo`; `lastx` has no result: every element skipped), and with a deny condition reading it first
KYVERNO_PRECONDITIONS = {"nofoo2": "error", "lastfoo": "fail", "firstfoo": "error", "firstfoobad": "fail"}
KYVERNO_DENY = {"nofoo2": "error", "lastfoo": "fail", "firstfoo": "fail", "firstfoobad": "fail", "lastx": "pass"}


def _results(tmp_path: Path, policy: dict[str, Any]) -> dict[str, str]:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump_all(PODS))
    out = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "p.yaml"), "-r", str(tmp_path / "r.yaml"),
                                   "-o", "json", "--now", "2026-12-01T00:00:00Z"])
    assert out.exit_code in (0, 1), out.output
    return {r["subject"]["name"]: r["result"] for r in yaml.safe_load(out.output)["results"]}


def test_an_erring_element_precondition_is_the_rules_error_only_on_the_last_element(tmp_path: Path) -> None:
    got = _results(tmp_path, _policy("preconditions"))
    assert got.pop("lastx", "skip") == "skip"
    assert got == KYVERNO_PRECONDITIONS


def test_an_erring_deny_condition_is_passed_over_before_the_last_element(tmp_path: Path) -> None:
    assert _results(tmp_path, _policy("deny")) == KYVERNO_DENY
