"""Small consistencies a new user runs into (issue 27): `kubectl kyrec` alone is help, a filter that names
nothing is an input error whichever filter it is, a --context that names nothing is a usage error, and
`test --help` lists only what `test` uses."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
POLICIES, RESOURCES = str(EXAMPLES / "policies"), str(EXAMPLES / "resources")


def test_test_help_lists_only_flags_test_uses() -> None:
    text = CliRunner().invoke(cli, ["test", "--help"]).stdout
    for flag in ("--kubeconfig", "--context", "--namespace", "--all-namespaces", "--as", "--request-timeout"):
        assert flag not in text, flag
    for flag in ("--file-name", "--output", "--fail-only", "--now", "--exit-code"):
        assert flag in text, flag
    # still accepted, as everywhere (a kubectl habit in a script keeps parsing)
    result = CliRunner().invoke(cli, ["test", str(ROOT / "testdata" / "testrun" / "passing-suite"), "-n", "x"])
    assert result.exit_code == 0, result.output
    # the commands that read a cluster still list them
    assert "--context" in CliRunner().invoke(cli, ["diff", "--help"]).stdout
