"""Classic PolicyExceptions whose conditions error (kk: pkg/engine/utils/exceptions.go MatchesException).

Kyverno reads an exception's conditions with pkg/utils/conditions CheckAnyAllConditions (every `all`
condition, then the `any` ones; an empty `any` is true) and, when the conditions of an exception that matches
the request error, MatchesException returns nil: none of the rule's exceptions applies, not even one that
matched. Each case below is a `kubectl-kyverno apply policy.yaml -r pod.yaml -e <exceptions>` run with
Kyverno's CLI v1.17.2; the docstrings give its summary line. `{{ divide(`1`, `0`) }}` is a condition key
whose substitution errors (division by zero).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source

NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)

_POLICY = {
    "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "require-team"},
    "spec": {"validationFailureAction": "Audit", "background": True, "rules": [{
        "name": "check-team", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"message": "label team is required",
                     "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]},
}
_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}

_ERRORS = {"key": "{{ divide(`1`, `0`) }}", "operator": "Equals", "value": 1}
_TRUE = {"key": "{{ divide(`2`, `2`) }}", "operator": "Equals", "value": 1}
_NOT_WEB = {"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "not-web"}


_MUTATE = {
    "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "add-team"},
    "spec": {"rules": [{
        "name": "add-label", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"team": "core"}}}}}]},
}


def _exception(name: str, conditions: dict[str, Any] | None, policy: str = "require-team",
               rule: str = "check-team") -> dict[str, Any]:
    spec: dict[str, Any] = {"exceptions": [{"policyName": policy, "ruleNames": [rule]}],
                            "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}}
    if conditions is not None:
        spec["conditions"] = conditions
    return {"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
            "metadata": {"name": name, "namespace": "shop"}, "spec": spec}


GOOD = _exception("a-good", None)                                      # matches, no conditions
BAD = _exception("b-bad", {"all": [_ERRORS]})                          # matches, its condition errors
TRUE = _exception("e-true", {"all": [_TRUE]})                          # matches, its condition is true
# a field the pod lacks: the substitution errors too (preconditions do not soften it to null here)
MISSING = _exception("g-missing", {"all": [{"key": "{{ request.object.metadata.labels.nope }}",
                                            "operator": "Equals", "value": "x"}]})
# the `any` condition errors, but the `all` one is read first and is false: no error is reached
HIDDEN = _exception("c-order", {"any": [_ERRORS], "all": [_NOT_WEB]})
EMPTY_ANY = _exception("d-emptyany", {"any": []})


def _eval(tmp_path: Path, exceptions: list[dict[str, Any]], policy: dict[str, Any] = _POLICY) -> dict[str, Any]:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_POD))
    args = ["eval", "-p", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "pod.yaml"), "-o", "json"]
    for i, exc in enumerate(exceptions):
        path = tmp_path / f"exception-{i}.yaml"
        path.write_text(yaml.safe_dump(exc))
        args += ["-e", str(path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.output
    [row] = json.loads(result.stdout)["results"]
    return dict(row)


@pytest.mark.parametrize("exceptions", [[GOOD, BAD], [BAD, GOOD], [TRUE, BAD], [GOOD, MISSING]],
                         ids=["good-then-erroring", "erroring-then-good", "true-then-erroring", "missing-field"])
def test_an_erroring_exception_drops_every_exception_of_the_rule(tmp_path: Path,
                                                                 exceptions: list[dict[str, Any]]) -> None:
    """Kyverno CLI v1.17.2, -e a-good,b-bad / b-bad,a-good / e-true,b-bad / a-good,g-missing: `fail: 1,
    skip: 0` (and -e a-good alone, or e-true alone: `skip: 1`). kyrec skipped the rule for the exception that
    matched."""
    row = _eval(tmp_path, exceptions)
    assert row["result"] == "fail"
    assert "exceptions" not in row["properties"]


def test_an_exception_that_matches_alone_still_applies(tmp_path: Path) -> None:
    """Kyverno CLI v1.17.2, -e a-good: `skip: 1` (the control for the cases above)."""
    row = _eval(tmp_path, [GOOD])
    assert (row["result"], row["properties"]["exceptions"]) == ("skip", "a-good")


def test_conditions_are_read_all_before_any(tmp_path: Path) -> None:
    """Kyverno CLI v1.17.2, -e c-order,a-good: `skip: 1`: c-order's false `all` condition is read before its
    erroring `any` one (CheckAnyAllConditions), so nothing errors and a-good applies. EvaluateConditions'
    order (`any` first) would reach the error and drop both."""
    row = _eval(tmp_path, [HIDDEN, GOOD])
    assert (row["result"], row["properties"]["exceptions"]) == ("skip", "a-good")


def test_an_empty_any_is_true(tmp_path: Path) -> None:
    """Kyverno CLI v1.17.2, -e d-emptyany: `skip: 1` (CheckAnyAllConditions: len(any) == 0 is true, where
    EvaluateConditions makes an empty `any` false)."""
    row = _eval(tmp_path, [EMPTY_ANY])
    assert (row["result"], row["properties"]["exceptions"]) == ("skip", "d-emptyany")


def test_a_mutate_rule_is_applied_when_an_exception_errors(tmp_path: Path) -> None:
    """Kyverno CLI v1.17.2, add-team's mutate rule with -e a-good: `skip: 1`; with -e a-good,b-bad (both
    naming add-team/add-label): `pass: 1` (the pod is mutated). The mutate handler calls MatchesException too."""
    exceptions = [_exception("a-good", None, "add-team", "add-label"),
                  _exception("b-bad", {"all": [_ERRORS]}, "add-team", "add-label")]
    assert _eval(tmp_path, exceptions[:1], _MUTATE)["result"] == "skip"
    assert _eval(tmp_path, exceptions, _MUTATE)["result"] == "pass"


def test_a_generate_rule_generates_when_an_exception_errors() -> None:
    """The generate handler and the background scan call the same MatchesException (kk:
    pkg/engine/background.go filterRule), so an erroring exception drops a-good there too and the ConfigMap is
    generated. (Kyverno's CLI v1.17.2 cannot show it: `apply` of a generate rule with -e panics in
    MatchesException (a nil pointer dereference).)"""
    policy = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "gen-cm"},
              "spec": {"rules": [{
                  "name": "cm", "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
                  "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "team",
                               "namespace": "{{ request.object.metadata.name }}", "synchronize": False,
                               "data": {"data": {"team": "core"}}}}]}}

    def exception(name: str, conditions: dict[str, Any] | None) -> dict[str, Any]:
        exc = _exception(name, conditions, "gen-cm", "cm")
        exc["spec"]["match"] = {"any": [{"resources": {"kinds": ["Namespace"]}}]}
        return exc

    def run(exceptions: list[dict[str, Any]]) -> Any:
        policies = classify([Document(d, Source("test.yaml", i + 1))
                             for i, d in enumerate([policy, *exceptions])])
        trigger = Document({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
                           Source("ns.yaml", 1))
        [outcome] = run_classic_generate(
            policies.classic, [trigger], [], kinds=KindTable(), exceptions=policies.classic_exceptions,
            options=GenerateOptions(now=NOW, user_info_known=True)).outcomes
        return outcome

    good = exception("a-good", None)
    assert run([good]).status == TriggerStatus.EXEMPT
    generated = run([good, exception("b-bad", {"all": [_ERRORS]})])
    assert generated.status == TriggerStatus.GENERATED
    assert [o["metadata"]["name"] for o in generated.objects] == ["team"]


def test_explain_says_no_exception_applies(tmp_path: Path) -> None:
    """explain shows the exceptions step as none (not a-good's match alone) when b-bad's conditions error."""
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(_POLICY))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_POD))
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(GOOD))
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(BAD))
    args = ["explain", "-p", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "pod.yaml")]
    alone = CliRunner().invoke(cli, [*args, "-e", str(tmp_path / "good.yaml")])
    assert "exceptions: considered" in alone.stdout
    both = CliRunner().invoke(cli, [*args, "-e", str(tmp_path / "good.yaml"), "-e", str(tmp_path / "bad.yaml")])
    assert "exceptions: none  (a selected exception's conditions error: none of the rule's exceptions applies)" \
        in both.stdout
    assert "result: fail" in both.stdout
