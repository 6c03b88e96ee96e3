"""Small consistencies a new user runs into (issue 27): `kubectl kyrec` alone is help, a filter that names
nothing is an input error whichever filter it is, a --context that names nothing is a usage error, and
`test --help` lists only what `test` uses."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
POLICIES, RESOURCES = str(EXAMPLES / "policies"), str(EXAMPLES / "resources")


def test_no_arguments_prints_the_help_and_exits_0() -> None:
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0, result.output
    assert result.stdout == CliRunner().invoke(cli, ["--help"]).stdout
    assert "Commands:" in result.stdout and "eval" in result.stdout


def test_a_mistyped_kind_is_exit_3_like_a_mistyped_policy_name() -> None:
    for flag, value in (("--kind", "podz"), ("--policy-name", "no-such-policy")):
        for command in ("eval", "diff"):
            args = [command, "-p", POLICIES, "-r", RESOURCES, flag, value]
            if command == "diff":
                args += ["--state", str(EXAMPLES / "resources" / "workloads.yaml")]
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 3, (command, flag, result.stderr)
            assert result.stderr.startswith(f"error: {flag} {value}: ")


def test_a_context_the_kubeconfig_lacks_is_a_usage_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "one",
        "contexts": [{"name": "one", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {}}]}))
    for command in ("diff", "coverage"):
        result = CliRunner().invoke(cli, [command, "-p", POLICIES, "--kubeconfig", str(kubeconfig),
                                          "--context", "nope"])
        assert result.exit_code == 2, (command, result.stderr)
        assert result.stderr.startswith("error: --context nope: no such context in the kubeconfig")


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
