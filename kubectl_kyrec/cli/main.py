"""The `kubectl kyrec` command group and its table of commands. The entry points, `kubectl-kyrec` (the
plugin) and `kubectl_complete-kyrec` (kubectl's completion protocol), are cli/console.py's, which imports
this module once its SIGINT handler is in place.

Commands are imported only when they run, so `--help`, `--version` and `version` never load the CEL
engine or the Kubernetes client.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

import click

from kubectl_kyrec import __version__

# command name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "eval": ("kubectl_kyrec.cli.eval_cmd", "eval_command",
             "Evaluate policies against resources offline: results, downstreams, expected reports."),
    "explain": ("kubectl_kyrec.cli.explain_cmd", "explain_command",
                "Explain why a policy did (or did not) apply to a resource: its decisions as a tree."),
    "diff": ("kubectl_kyrec.cli.diff_cmd", "diff_command",
             "Compare what policies should have produced with a cluster state (read-only)."),
    "coverage": ("kubectl_kyrec.cli.coverage_cmd", "coverage_command",
                 "Check that every subject in scope has exactly one current policy report."),
    "lint": ("kubectl_kyrec.cli.lint_cmd", "lint_command",
             "Check policy files as the cluster would admit them: schema, Kyverno's checks; every problem."),
    "test": ("kubectl_kyrec.cli.suite_cmd", "test_command",
             "Run Kyverno CLI test suites (kyverno-test.yaml) unchanged."),
    "completion": ("kubectl_kyrec.cli.completion_cmd", "completion_command",
                   "Print a shell completion script (bash, zsh, fish)."),
    "version": ("kubectl_kyrec.cli.main", "version_command",
                "Print the versions of kyrec, its CEL engine and the Kyverno APIs it understands."),
    "apply": ("kubectl_kyrec.cli.apply_cmd", "apply_command",
              "Correct drift on the live cluster: server-side apply as kyverno-generate, guarded deletes."),
    "convert": ("kubectl_kyrec.cli.convert_cmd", "convert_command",
                "Convert ClusterPolicies/Policies to ValidatingPolicies, and verify they decide the same."),
    "capture": ("kubectl_kyrec.cli.capture_cmd", "capture_command",
                "Write the cluster state an offline run needs (the LISTs a live diff makes), as one JSON List."),
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

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                            list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            # as kubectl answers `kubectl gett`: the command meant, when one is close
            import difflib

            typed = args[0] if args else ""
            close = difflib.get_close_matches(typed, self.list_commands(ctx), n=2)
            if not close or typed.startswith("-"):
                raise
            raise click.UsageError(f"No such command '{typed}'. Did you mean "
                                   + " or ".join(f"'{name}'" for name in close) + "?", ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # short help from the table, so listing commands imports none of them
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# invoke_without_command: `kubectl kyrec` alone prints the help and exits 0, as `kubectl` alone does (click
# otherwise treats a group without a command as a usage error, exit 2)
@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(__version__, "--version", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _top_help() -> str:
    """The group's help, its kinds from the one table of what kyrec evaluates (load/policy/policies.py)."""
    from kubectl_kyrec.load.policy.policies import evaluated_policy_kinds

    return ("kyrec: what Kyverno should have produced, and whether your cluster has it.\n\n"
            f"Evaluates Kyverno's policies offline ({', '.join(evaluated_policy_kinds())}, with their "
            "bindings and PolicyExceptions), and compares the expected downstream objects and policy reports "
            "with a cluster state.\n\n"
            "\b\nExample:\n"
            "  kubectl kyrec eval -p policies/ -r manifests/\n"
            "  kubectl kyrec diff -p policies/ --state state.json\n"
            "  kubectl kyrec eval --help        # each command's flags and examples\n")


cli.help = _top_help()


# The Kyverno behaviour kyrec reproduces: the source docs/semantics/README.md cites (kyverno/kyverno main, August 2026,
# after v1.19). Bump both together when kyrec follows a newer release.
KYVERNO_RELEASE = "v1.19"
KYVERNO_SOURCE = "kyverno/kyverno@111e07bbec (main, 2026-08)"


def version_info() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        engine = dist_version("cel-expr-python")
    except PackageNotFoundError:
        engine = "not installed"
    apis = read_apis()
    return {
        "kyrec": __version__,
        "kyverno": {"release": KYVERNO_RELEASE, "source": KYVERNO_SOURCE},
        "celEngine": f"cel-expr-python {engine}",
        "kyvernoAPIs": list(apis),
        "kinds": {api: list(kinds) for api, kinds in apis.items()},
    }


def read_apis() -> dict[str, tuple[str, ...]]:
    """Every apiVersion kyrec reads -> the kinds it reads there: the policies (load/policy/policies.py's table),
    the reports it compares, the UpdateRequests its causes read and the Kyverno CLI's files."""
    from kubectl_kyrec.expect.reports import REPORT_KINDS
    from kubectl_kyrec.load.policy.policies import policy_apis

    apis = dict(policy_apis())
    apis.update(REPORT_KINDS)
    apis["reports.kyverno.io/v1"] = ("EphemeralReport", "ClusterEphemeralReport")
    # reconcile/causes.py UPDATE_REQUEST_APIS (not imported here: `version` loads no evaluation code)
    for api in ("kyverno.io/v2", "kyverno.io/v1beta1"):
        apis[api] = (*apis.get(api, ()), "UpdateRequest")
    apis["cli.kyverno.io/v1alpha1"] = ("Test", "Values", "UserInfo", "Context")
    return apis


@click.command("version")
@click.option("-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True,
              help="text, json or yaml.")
def version_command(output: str) -> None:
    """Print the versions of kyrec, its CEL engine, the Kyverno release it follows and the APIs it reads.

    \b
    Example:
      kubectl kyrec version -o yaml
    """
    import json

    info = version_info()
    if output == "json":
        click.echo(json.dumps(info, indent=2))
        return
    if output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(info, sort_keys=False), nl=False)
        return
    click.echo(f"kyrec {info['kyrec']}")
    click.echo(f"Kyverno: behaves as release {KYVERNO_RELEASE} ({KYVERNO_SOURCE})")
    click.echo(f"CEL engine: {info['celEngine']}")
    from kubectl_kyrec.cli.terminal import table_width
    from kubectl_kyrec.render.fit import wrap_counts

    # the API versions make a long line: wrapped to the width as the tables' counts are, one line each
    width = table_width()
    click.echo("Kyverno APIs and the kinds read:")
    for api, kinds in info["kinds"].items():
        click.echo(wrap_counts(f"  {api}:", kinds, width).replace("\n  ", "\n      "))


def prog_name(environ: dict[str, str] | None = None) -> str:
    """`kubectl kyrec` when kubectl started us, `kubectl-kyrec` when the user typed that.

    kubectl execs a plugin without telling it (no environment variable, same argv[0] as a direct run), but
    the shell that started the command records its path in `$_` and kubectl passes the environment on: it
    names kubectl for `kubectl kyrec ...` and kubectl-kyrec for `kubectl-kyrec ...`. When `$_` names
    neither (a script, `python -m`), the plugin spelling is the documented one.
    """
    env = os.environ if environ is None else environ
    last = os.path.basename(env.get("_", ""))
    return "kubectl-kyrec" if last == "kubectl-kyrec" else "kubectl kyrec"
