"""`kubectl kyrec lint`: every problem in text, JSON, SARIF and GitHub annotations; exit 3 / 0."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

TYPO = Path(__file__).parents[1] / "load" / "schema_typo.yaml"
EXAMPLES = Path(__file__).parents[2] / "testdata" / "examples" / "policies"


def test_lint_text_lists_every_problem_and_exits_3() -> None:
    result = CliRunner().invoke(cli, ["lint", "-p", str(TYPO)])
    assert result.exit_code == 3
    assert result.stdout.splitlines() == [
        f'{TYPO}:6: ValidatingPolicy "check-labels": spec.failurePolicy: Unsupported value: "Sometimes": '
        'supported values: "Ignore", "Fail"',
        f'{TYPO}:13: ValidatingPolicy "check-labels": strict decoding error: unknown field "spec.validation"; '
        'did you mean "validations"?',
        f'{TYPO}:15: ValidatingPolicy "check-labels": spec.variables: Invalid value: "string": spec.variables in '
        'body must be of type array: "string"',
        "1 policy document(s) checked: 3 error(s)",
    ]


def test_lint_of_valid_policies_exits_0() -> None:
    result = CliRunner().invoke(cli, ["lint", str(EXAMPLES)])
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith(": 0 error(s)\n")


def test_lint_json_sarif_github() -> None:
    runner = CliRunner()
    doc = json.loads(runner.invoke(cli, ["lint", "-p", str(TYPO), "-o", "json"]).stdout)
    assert doc["kind"] == "LintResult" and doc["summary"] == {"policies": 1, "errors": 3, "warnings": 0}
    assert [(p["line"], p["field"]) for p in doc["problems"]] == [
        (6, "spec.failurePolicy"), (13, "spec.validation"), (15, "spec.variables")]
    sarif = json.loads(runner.invoke(cli, ["lint", "-p", str(TYPO), "-o", "sarif"]).stdout)
    results = sarif["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results] == [6, 13, 15]
    assert len({r["partialFingerprints"]["kyrecFinding/v1"] for r in results}) == 3
    github = runner.invoke(cli, ["lint", "-p", str(TYPO), "-o", "github"]).stdout
    assert github.count("::error file=") == 3 and "line=13" in github


def test_warnings_fail_only_with_strict() -> None:
    """Kyverno's warnings (PolicySet.warnings) keep exit 0, and make it 1 with --strict; errors are 3."""
    from kubectl_kyrec.errors import ExitCode
    from kubectl_kyrec.model import Source
    from kubectl_kyrec.run.lint import LintProblem, LintResult

    warning = LintProblem(Source("p.yaml", 3), 'ClusterPolicy "p": deprecated', "spec.x", "warning")
    error = LintProblem(Source("p.yaml", 4), 'ClusterPolicy "p": refused', "spec.y")
    assert LintResult([warning], 1).exit_code is ExitCode.CLEAN
    assert LintResult([warning], 1, strict=True).exit_code is ExitCode.FINDINGS
    assert LintResult([warning, error], 1, strict=True).exit_code is ExitCode.INPUT
    assert warning.line == 'p.yaml:3: warning: ClusterPolicy "p": deprecated'
