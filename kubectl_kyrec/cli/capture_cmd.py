"""`kubectl kyrec capture`: write the state an offline run needs (run.capture)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import OutputFormat, OutputSpec, exit_with, handle_errors, kubectl_flags
from kubectl_kyrec.errors import UsageError

if TYPE_CHECKING:
    from kubectl_kyrec.run.capture_state import CaptureResult


def capture_target(value: str | None) -> str | None:
    """The file `-o` names (None: stdout), by the `-o FORMAT[=FILE]` rule of every other command: `json`
    is stdout, `json=FILE` the file. A value without `=` that is no format name is a file, as the examples
    have always written it (`-o state.json`). Any other format is refused: a capture is one JSON List, and
    `-o yaml=state.yaml` writing JSON, or `-o json=state.json` writing a file named `json=state.json`,
    would each surprise the reader."""
    from kubectl_kyrec.cli.common import OutputFormat

    if value is None:
        return None
    name, equals, path = value.partition("=")
    formats = {f.value for f in OutputFormat}
    if not equals and value.strip().lower() not in formats:
        return value
    if name.strip().lower() != "json":
        shown = name.strip() if equals else value.strip()
        raise UsageError(f"-o {value}: capture writes one JSON List; {shown!r} is not available "
                         "(-o json=FILE or -o FILE writes a file, -o json or no -o stdout)")
    if equals and not path:
        raise UsageError(f"-o {value}: no file after '=' (-o json=FILE)")
    return path or None


@click.command("capture")
@flags.live_policy
@flags.exception
@click.option("--downstreams", "only_downstreams", is_flag=True, help="Leave reports out.")
@click.option("--producer", type=click.Choice(["kyverno", "kubescape"]), default="kyverno", show_default=True,
              help="Whose reads to make: kyverno (the policies' reads) or kubescape (the reads of "
                   "`coverage --producer kubescape`: both LISTs of the vulnerability summaries, the manifests, "
                   "Pods and their owners).")
@click.option("--kind", "kinds", multiple=True, metavar="KIND[,KIND...]",
              help="Capture only these resource types (repeatable, or comma-separated; kubectl's names: plural, "
                   "singular, short name, kind.group), each recorded as listed even when it has no objects: what "
                   "kyrec advises when a state lacks a kind.")
@click.option("--include-secret-values", is_flag=True,
              help="Write Secret values in clear (default: salted digests, which offline drift checks compare).")
@click.option("-o", "--output", "output_path", metavar="[json=]FILE",
              help="Write the JSON List to FILE (-o json=FILE, as other commands write, or -o FILE) instead of "
                   "stdout.")
@kubectl_flags
@handle_errors
def capture_command(policy_paths: tuple[str, ...], exception_paths: tuple[str, ...], only_downstreams: bool,
                    producer: str, kinds: tuple[str, ...], include_secret_values: bool, output_path: str | None,
                    **kube: object) -> None:
    """Capture the cluster state a later offline run needs.

    Makes the LISTs `diff --live` with the same policies would make and writes them as one JSON List that
    records which kinds and scopes were listed, with managedFields kept:
    `kubectl kyrec capture -p policies/ > state.json`, then `kubectl kyrec diff -p policies/ --state
    state.json` answers as `diff --live` did. It also lists the RBAC objects (ClusterRoles, Roles and their
    bindings), so that the offline run can tell whether Kyverno's own service accounts may do what a
    finding needs, where the live run asks the cluster.

    Secret values (data, stringData, the last-applied annotation) are written as salted SHA-256 digests:
    an offline diff still finds a Secret that changed, and the file holds no value. --include-secret-values
    writes them as the cluster holds them (for policies that read them), with a warning.

    With --producer kubescape it makes the reads of `coverage --producer kubescape` instead. With --kind it
    lists only the kinds named (all namespaces, or -n's), and records each as listed even when the cluster
    has none of it, so that a later run knows the kind is empty rather than never read: the file of `kubectl
    kyrec capture --kind limitranges -A -o more-state.json`, given to diff beside the first capture, completes
    a state that lacked them (kubectl get's empty List cannot: it names no kind).

    \b
    Example:
      kubectl kyrec capture -p policies/ -o state.json && kubectl kyrec diff -p policies/ --state state.json
      kubectl kyrec capture --producer kubescape -o vulns.json
      kubectl kyrec capture --kind limitranges,resourcequotas -A -o more-state.json
    """
    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.cluster.live_source import live_source
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.run.capture_state import run_capture

    output_path = capture_target(output_path)
    if output_path:
        from kubectl_kyrec.cli.output_targets import check_output_targets

        check_output_targets([(f"-o {output_path}", output_path)],
                             {"policy_paths": policy_paths, "exception_paths": exception_paths})
    if kinds:
        given = [flag for flag, value in (("-p", policy_paths), ("-e", exception_paths),
                                          ("--downstreams", only_downstreams),
                                          ("--producer kubescape", producer == "kubescape")) if value]
        if given:
            raise UsageError(f"{given[0]} cannot be combined with --kind (which captures the named kinds only)")
        from kubectl_kyrec.cluster.live_source import KindsLiveSource, connection_options, terminal_progress
        from kubectl_kyrec.run.capture_state import run_kinds_capture

        kinds_source = KindsLiveSource(connection_options(kube, offline=False), kinds,
                                       namespace=str(kube.get("namespace") or ""), progress=terminal_progress())
        captured = run_kinds_capture(kinds_source, include_secret_values=include_secret_values)
        if captured.secrets:
            click.echo(f"warning: --include-secret-values: the capture holds the values of {captured.secrets} "
                       "Secret(s) in clear; keep it as secret as the cluster's Secrets", err=True)
        _write(captured, output_path)
        exit_with(captured.exit_code, failed_reads=captured.failed_reads)
        return
    if producer == "kubescape":
        given = [flag for flag, value in (("-p", policy_paths), ("-e", exception_paths),
                                          ("--downstreams", only_downstreams),
                                          ("--include-secret-values", include_secret_values)) if value]
        if given:
            raise UsageError(f"{given[0]} is for --producer kyverno")
        from kubectl_kyrec.cluster.live_source import KubescapeLiveSource, connection_options, terminal_progress
        from kubectl_kyrec.run.capture_state import run_kubescape_capture

        ks_source = KubescapeLiveSource(connection_options(kube, offline=False),
                                        namespace=str(kube.get("namespace") or ""), progress=terminal_progress())
        captured = run_kubescape_capture(ks_source)
        _write(captured, output_path)
        exit_with(captured.exit_code, failed_reads=captured.failed_reads)
        return
    files = FileSource(policy_paths=policy_paths, exception_paths=exception_paths, schema=policy_schema_check())
    source = live_source(files, kube, reports=not only_downstreams, downstreams=True, causes=True, rbac_objects=True,
                         offline=False)
    result = run_capture(source, include_secret_values=include_secret_values)
    if result.secrets:
        click.echo(f"warning: --include-secret-values: the capture holds the values of {result.secrets} Secret(s) "
                   "in clear; keep it as secret as the cluster's Secrets", err=True)
    for notice in result.notices:
        click.echo(f"notice: {notice}", err=True)
    _write(result, output_path)
    exit_with(result.exit_code, failed_reads=result.failed_reads)


def _write(result: CaptureResult, output_path: str | None) -> None:
    """The List to stdout or the file; written to a file, the summary line every command prints then."""
    from kubectl_kyrec.cli.ci_outputs import files_only_summary
    from kubectl_kyrec.render.sink import write_stream

    spec = OutputSpec(OutputFormat.JSON, output_path)
    write_stream(spec.path, result.write)
    files_only_summary("kyrec capture", result.counts, [spec])
