"""`eval --values` gives classic match/exclude blocks their user (a Kyverno CLI UserInfo document or a
Values `request`); without one, rules matching on roles/clusterRoles/subjects are undetermined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.evaluate.classic.engine import refused_in_background
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import classify

CASE = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "userinfo-unknown"


def _eval(tmp_path: Path, values: str | None) -> tuple[int, dict[str, str], str]:
    # the refused background policy is left out: it would make every run exit 3
    policies = (CASE / "policies.yaml").read_text().split("\n---\n")[:2]
    (tmp_path / "policies.yaml").write_text("\n---\n".join(policies))
    args = ["eval", "-p", str(tmp_path / "policies.yaml"), "-r", str(CASE / "resources.yaml"), "-o", "json"]
    if values is not None:
        (tmp_path / "values.yaml").write_text(values)
        args += ["--values", str(tmp_path / "values.yaml")]
    result = CliRunner().invoke(cli, args)
    rows = {f"{r['rule']} {r['subject']['name']}": r["result"] for r in json.loads(result.stdout)["results"]}
    return result.exit_code, rows, result.stderr


def test_without_a_user_the_rules_are_undetermined(tmp_path: Path) -> None:
    code, rows, _ = _eval(tmp_path, None)
    assert rows == {"only-admins default-settings": "undetermined", "ci-needs-owner default-settings": "undetermined",
                    "ci-needs-owner app-settings": "undetermined", "ci-needs-owner token": "undetermined"}
    assert code == 0        # nothing failed for sure


def test_a_kyverno_cli_userinfo_file_decides_them(tmp_path: Path) -> None:
    code, rows, _ = _eval(tmp_path, "apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\n"
                                    "clusterRoles: [cluster-admin]\n"
                                    "userInfo:\n  username: system:serviceaccount:tools:ci\n")
    assert rows == {"ci-needs-owner default-settings": "pass", "ci-needs-owner app-settings": "fail"}
    assert code == 1


def test_values_request_roles_decide_them(tmp_path: Path) -> None:
    _, rows, _ = _eval(tmp_path, "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\nrequest:\n"
                                 "  roles: ['tools:deployer']\n  userInfo: {username: bob}\n")
    assert rows == {"only-admins default-settings": "fail", "ci-needs-owner token": "fail"}


def test_a_background_policy_matching_on_users_is_refused_at_its_field(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "-p", str(CASE / "policies.yaml"), "-r", str(CASE / "resources.yaml")])
    assert result.exit_code == 3
    line = next(x for x in result.stderr.splitlines() if "only select variables are allowed in background mode" in x)
    # located at the offending field: spec.rules[1].match.any[1].clusterRoles
    text = (CASE / "policies.yaml").read_text().splitlines()
    number = int(line.split("policies.yaml:")[1].split(":")[0])
    assert text[number - 1].strip().startswith("clusterRoles:") and text[number - 2].strip() == "kinds: [ConfigMap]"


def _policy(spec: dict, annotations: dict | None = None) -> Any:
    doc = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
           "metadata": {"name": "p", **({"annotations": annotations} if annotations else {})}, "spec": spec}
    return classify(documents_from_text(json.dumps(doc), "p.json")).classic[0]


RULE = {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"pattern": {"metadata": {"labels": {"who": "{{ request.userInfo.username }}"}}}}}


def test_user_variables_refuse_a_background_policy() -> None:
    # kk containsUserVariables: the message names the variable as written, braces included
    refused = refused_in_background(_policy({"rules": [RULE]}))
    assert refused is not None and refused.message == (
        'ClusterPolicy "p": only select variables are allowed in background mode. Set '
        "spec.background=false to disable background mode for this policy rule: variable "
        "{{ request.userInfo.username }} is not allowed ")
    assert refused_in_background(_policy({"background": False, "rules": [RULE]})) is None
    # a variable under another object (element.request.userInfo) is not the request's
    nested = {**RULE, "validate": {"pattern": {"metadata": {"labels": {"x": "{{ element.request.userInfo }}"}}}}}
    assert refused_in_background(_policy({"rules": [nested]})) is None
    # kubectl's last-applied copy is not scanned; a mutate-existing rule allows the variables
    applied = {"kubectl.kubernetes.io/last-applied-configuration": "{{request.roles}}"}
    assert refused_in_background(_policy({"rules": [nested]}, applied)) is None
    existing = {"name": "m", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "mutate": {"targets": [{"apiVersion": "v1", "kind": "ConfigMap"}], "patchStrategicMerge": {}}}
    assert refused_in_background(_policy({"rules": [RULE, existing]})) is None


def test_match_exclude_users_are_named_before_variables() -> None:
    # rule 0 uses a user variable, rule 1 excludes by role: the blocks of every rule are checked first
    rule = {**RULE, "name": "r2", "exclude": {"all": [{"resources": {"namespaces": ["x"]}}, {"roles": ["n:r"]}]}}
    refused = refused_in_background(_policy({"rules": [RULE, rule]}))
    assert refused is not None and refused.message.endswith(
        "invalid variable used at path: spec/rules[1]/exclude/all[1]/roles ")
    assert refused.field == "spec.rules[1].exclude.all[1].roles"
