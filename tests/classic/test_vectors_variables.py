"""Kyverno's variable substitution and variable-regex tests (substitution.json, variable-regex.json), every
case, against classic/variables and classic/json_context."""

from __future__ import annotations

import re
from typing import Any

from kubectl_kyrec.classic import variables
from kubectl_kyrec.classic.go_values import deep_equal
from kubectl_kyrec.classic.json_context import EvalContext
from kubectl_kyrec.golang.fmt import sprint
from tests.classic.vectors import case_id, error_matches, load, report

# Cases kyrec does not reproduce, with the reason. A fixed miss or a new miss fails the test.
EXPECTED_MISSES_SUBSTITUTION: dict[str, str] = {}
EXPECTED_MISSES_REGEX: dict[str, str] = {}


def _pointer(document: Any, path: str) -> Any:
    node = document
    for part in path.strip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def run_substitution(case: dict[str, Any]) -> str | None:
    ctx = EvalContext(case.get("context") or {})
    try:
        got = variables.substitute_all(ctx, case["document"])
    except variables.SubstitutionError as exc:
        if "error" in case and case["error"] is not False and error_matches(case, str(exc)):
            return None
        return f"error {exc}"
    if case.get("error") not in (None, False):
        return f"no error, got {got!r}"
    if "checks" in case:
        for check in case["checks"]:
            value = _pointer(got, check["path"])
            if not deep_equal(value, check["value"]):
                return f"{check['path']}: got {value!r}"
        return None
    if "result" in case:
        want = case["result"]
        if "note" in case and "fmt.Sprintf" in case["note"]:
            return None if sprint(got) == want else f"got {got!r}"
        return None if deep_equal(got, want) else f"got {got!r}"
    return None


def _go_template(template: str, m: re.Match[str]) -> str:
    return re.sub(r"\$\{(\d+)\}", lambda g: m.group(int(g.group(1))) or "", template)


def run_regex(case: dict[str, Any]) -> str | None:
    fn, text = case["function"], case["input"]
    if fn == "ReplaceAllVars":
        got: Any = variables.replace_all_vars(text, lambda _s: case["replacement"])
    elif fn == "IsVariable":
        got = variables.is_variable(text)
    elif fn == "IsReference":
        got = variables.is_reference(text)
    elif fn == "RegexVariables.FindAllString":
        got = [m.group(0) for m in variables.REGEX_VARIABLES.finditer(text)]
    elif fn == "RegexVariables.ReplaceAllString":
        got = variables.REGEX_VARIABLES.sub(lambda m: _go_template(case["replacement"], m), text)
    else:
        return f"unknown function {fn}"
    return None if got == case["result"] else f"got {got!r}"


def _check(name: str, runner: Any, expected: dict[str, str]) -> None:
    cases = load(name)
    failures = {}
    for i, case in enumerate(cases):
        why = runner(case)
        if why is not None:
            failures[case_id(i, case)] = why
    report(name, len(cases), failures)
    unexpected = {k: v for k, v in failures.items() if k not in expected}
    fixed = [k for k in expected if k not in failures]
    assert not unexpected, unexpected
    assert not fixed, f"expected misses now pass: {fixed}"


def test_substitution_vectors() -> None:
    _check("substitution.json", run_substitution, EXPECTED_MISSES_SUBSTITUTION)


def test_variable_regex_vectors() -> None:
    _check("variable-regex.json", run_regex, EXPECTED_MISSES_REGEX)
