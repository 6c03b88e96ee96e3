"""`kubectl kyrec capture`: write the state an offline run needs (run.capture)."""

from __future__ import annotations

import click

from kubectl_kyrec.cli.common import OutputFormat, OutputSpec, exit_with, handle_errors, kubectl_flags, write_output
from kubectl_kyrec.errors import ExitCode


@click.command("capture")
@click.option("-p", "--policy", "policy_paths", multiple=True,
              help="Policies whose reads to make; default: the cluster's policies.")
@click.option("-e", "--exception", "exception_paths", multiple=True, help="PolicyExceptions.")
@click.option("--downstreams", "only_downstreams", is_flag=True, help="Leave reports out.")
@click.option("-o", "--output", "output_path", help="Write to this file instead of stdout.")
@kubectl_flags
@handle_errors
def capture_command(policy_paths: tuple[str, ...], exception_paths: tuple[str, ...], only_downstreams: bool,
                    output_path: str | None, **kube: object) -> None:
    """Capture the cluster state a later offline run needs.

    Makes the LISTs `diff --live` with the same policies would make and writes them as one JSON List that
    records which kinds and scopes were listed, with managedFields kept:
    `kubectl kyrec capture -p policies/ > state.json`, then `kubectl kyrec diff -p policies/ --state
    state.json` answers as `diff --live` did.
    """
    from kubectl_kyrec.cluster.exit import live_exit_code
    from kubectl_kyrec.cluster.live_source import live_source
    from kubectl_kyrec.run.capture_state import run_capture
    from kubectl_kyrec.run.inputs import FileSource

    files = FileSource(policy_paths=policy_paths, exception_paths=exception_paths)
    source = live_source(files, kube, reports=not only_downstreams, downstreams=True)
    result = run_capture(source)
    if result.secrets:
        click.echo(f"warning: the capture holds the data of {result.secrets} Secret(s); keep it as secret as "
                   "the cluster's Secrets", err=True)
    write_output(OutputSpec(OutputFormat.JSON, output_path), result.text())
    exit_with(live_exit_code(ExitCode.CLEAN, source))
