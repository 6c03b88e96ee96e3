"""Entry points: `kubectl-kyrec` (the plugin) and `kubectl_complete-kyrec` (kubectl's completion protocol).

Commands are imported only when they run, so `--help`, `--version` and `version` never load the CEL
engine or the Kubernetes client.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from kubectl_kyrec import __version__

# command name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "eval": ("kubectl_kyrec.cli.eval_cmd", "eval_command",
             "Evaluate policies against resources offline: results, downstreams, expected reports."),
    "diff": ("kubectl_kyrec.cli.diff_cmd", "diff_command",
             "Compare what policies should have produced with a cluster state (read-only)."),
    "apply": ("kubectl_kyrec.cli.apply_cmd", "apply_command",
              "Correct drift on the live cluster: server-side apply as kyverno-generate, guarded deletes."),
    "capture": ("kubectl_kyrec.cli.capture_cmd", "capture_command",
                "Write the cluster state an offline run needs (the LISTs a live diff makes), as one JSON List."),
    "coverage": ("kubectl_kyrec.cli.coverage_cmd", "coverage_command",
                 "Check that every subject in scope has exactly one current policy report."),
    "test": ("kubectl_kyrec.cli.test_cmd", "test_command",
             "Run Kyverno CLI test suites (kyverno-test.yaml) unchanged."),
    "completion": ("kubectl_kyrec.cli.completion_cmd", "completion_command",
                   "Print a shell completion script (bash, zsh, fish)."),
    "version": ("kubectl_kyrec.cli.main", "version_command",
                "Print the versions of kyrec, its CEL engine and the Kyverno APIs it understands."),
}


class LazyGroup(click.Group):
    """A group whose subcommands live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name][0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not self._available(name):
            return None
        module, attr, _ = COMMANDS[name]
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # short help from the table, so listing commands imports none of them
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="kubectl-kyrec", message="%(prog)s %(version)s")
def cli() -> None:
    """kyrec: what Kyverno should have produced, and whether your cluster has it.

    Evaluates Kyverno ValidatingPolicies, GeneratingPolicies, ValidatingAdmissionPolicies and CEL
    PolicyExceptions offline, and compares the expected downstream objects and policy reports with a
    cluster state.
    """


@click.command("version")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
def version_command(output: str) -> None:
    """Print versions."""
    import json
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        engine = dist_version("cel-expr-python")
    except PackageNotFoundError:
        engine = "not installed"
    info: dict[str, Any] = {
        "kyrec": __version__,
        "celEngine": f"cel-expr-python {engine}",
        "kyvernoAPIs": ["policies.kyverno.io/v1", "policies.kyverno.io/v1beta1", "policies.kyverno.io/v1alpha1",
                        "admissionregistration.k8s.io/v1", "wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1",
                        "reports.kyverno.io/v1", "cli.kyverno.io/v1alpha1"],
    }
    if output == "json":
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"kyrec {info['kyrec']}")
    click.echo(f"CEL engine: {info['celEngine']}")
    click.echo("Kyverno APIs: " + ", ".join(info["kyvernoAPIs"]))


def main() -> None:
    cli(prog_name="kubectl-kyrec")


def complete() -> None:
    """`kubectl_complete-kyrec`: kubectl (>= 1.26) runs it with the words typed after `kubectl kyrec`."""
    from kubectl_kyrec.cli.completion_cmd import complete_words

    words = sys.argv[1:]
    if words and words[0] in ("__complete", "__completeNoDesc"):
        words = words[1:]
    for line in complete_words(words):
        click.echo(line)
