"""`kubectl kyrec test`: run Kyverno CLI test suites (`kyverno-test.yaml`) unchanged (run.test)."""

from __future__ import annotations

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import (
    OutputFormat,
    emit_errors,
    emit_notices,
    exit_with,
    handle_errors,
    kubectl_flags,
    parse_now,
    parse_outputs,
    registry_access,
)
from kubectl_kyrec.errors import UsageError

SUITE_FORMATS = (OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.JSON, OutputFormat.YAML, OutputFormat.JUNIT,
                OutputFormat.SARIF, OutputFormat.GITHUB)


@click.command("test")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--file-name", default="kyverno-test.yaml", show_default=True,
              help="Name of the test files to look for below the paths.")
@click.option("--strict", is_flag=True,
              help="Decide rows as a cluster would, not as Kyverno's CLI does: vacuous rows fail "
                   "(see docs/compatibility.md).")
# the default since issue 27; kept so that scripts written for the old default still run
@click.option("--compat", type=click.Choice(["kyverno"]), hidden=True)
@flags.outputs(SUITE_FORMATS)
@click.option("--fail-only", is_flag=True, help="Show failing rows only.")
@click.option("--require-tests", is_flag=True,
              help="Exit 3 when no test file is found below the paths (default: a notice, exit 0).")
@click.option("--allow-not-evaluated", is_flag=True,
              help="Rows kyrec cannot evaluate (policy kinds or rules it does not evaluate) do not fail the run.")
@flags.registry
@flags.insecure_registry
@flags.registry_config
@flags.now
@flags.exit_code
@kubectl_flags(hidden=True)       # test never reads a cluster: the flags parse, its help does not list them
@handle_errors
def test_command(paths: tuple[str, ...], file_name: str, strict: bool, compat: str | None, outputs: tuple[str, ...],
                 fail_only: bool, require_tests: bool, allow_not_evaluated: bool, registry: bool,
                 insecure_registries: tuple[str, ...], registry_config: str | None, now_text: str | None,
                 exit_code_flag: bool, **kube: object) -> None:
    """Run every Kyverno test file below PATH... and check each row.

    A row is one (results entry, resource), decided as Kyverno's own `kyverno test` decides it; --strict
    decides it as a cluster would (a resource the policy gave no response for fails, not-matched). Either
    way, a warning names each row the other way decides differently, and each vacuous row (passed by
    Kyverno's CLI without checking anything: no response, a rule or resource that does not exist, a fail
    met by skip), which --strict fails. Exit 1 when a row fails or could not be evaluated (a policy kind
    or rule kyrec does not evaluate; --allow-not-evaluated accepts those), 3 when a test file cannot be
    loaded (or, with --require-tests, when there is none), 0 otherwise (no test file found: a notice).

    \b
    Example:
      kubectl kyrec test policies/ -o junit=test-results.xml
    """
    from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun, files_only_summary, nonzero_counts, test_findings
    from kubectl_kyrec.cli.terminal import output_width
    from kubectl_kyrec.render import suite_output
    from kubectl_kyrec.render.dispatch import OutputSpec, write_outputs
    from kubectl_kyrec.run.test import TestRunOptions, run_test
    from kubectl_kyrec.testsuite.row_types import Mode

    if strict and compat:
        raise UsageError("--strict and --compat kyverno contradict each other")
    if compat:
        click.echo("notice: --compat kyverno is deprecated: Kyverno's CLI verdict is the default", err=True)
    specs = parse_outputs(list(outputs), SUITE_FORMATS)
    now = parse_now(now_text)
    options = TestRunOptions(now=now, mode=Mode.STRICT if strict else Mode.KYVERNO,
                             file_name=file_name, require_tests=require_tests,
                             allow_not_evaluated=allow_not_evaluated, fail_only=fail_only,
                             registry=registry_access(registry, insecure_registries, registry_config, now))
    run = run_test(options, paths)
    emit_notices(run.notices)
    emit_errors(run.errors)
    for line in suite_output.warning_lines(run.runs):
        click.echo(f"warning: {line}", err=True)
    if run.not_evaluated and not allow_not_evaluated:
        # the one thing that fails a run whose table shows no failing row: said where the exit code is read
        click.echo(f"notice: {run.not_evaluated} row(s) not evaluated (kinds or rules kyrec does not evaluate) fail "
                   "the run; --allow-not-evaluated accepts them", err=True)

    def table(spec: OutputSpec) -> str:
        return suite_output.render_table(run.runs, fail_only=fail_only, wide=spec.format is OutputFormat.WIDE,
                                         width=output_width(spec.path))

    def ci(spec: OutputSpec) -> str:
        findings = [f for f in test_findings(run) if not (fail_only and f.outcome == "pass")]
        return CiRun.prepare("test", findings, CiOptions()).render(spec.format.value)

    write_outputs(run, specs, {OutputFormat.TABLE: table, OutputFormat.WIDE: table,
                               **dict.fromkeys((OutputFormat.JUNIT, OutputFormat.SARIF, OutputFormat.GITHUB), ci)})
    summary = suite_output.suite_summary(run.runs, run.load_errors)
    files_only_summary("kyrec test", nonzero_counts({"passed": summary["passed"], "failed": summary["failed"],
                                                     "not evaluated": summary["notEvaluated"],
                                                     "warning(s)": len(suite_output.all_warnings(run.runs)),
                                                     "test file(s) not loaded": summary["errors"]},
                                                    ("passed", "failed")), specs)
    exit_with(run.exit_code, exit_code_flag)
