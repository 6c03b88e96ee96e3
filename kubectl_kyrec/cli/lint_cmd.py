"""`kubectl kyrec lint`: check policy files as the cluster would admit them (run/lint.py)."""

from __future__ import annotations

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import OutputFormat, emit_notices, exit_with, handle_errors, parse_now, parse_outputs
from kubectl_kyrec.errors import UsageError

LINT_FORMATS = (OutputFormat.TABLE, OutputFormat.JSON, OutputFormat.YAML, OutputFormat.SARIF, OutputFormat.GITHUB)


@click.command("lint")
@click.option("-p", "--policy", "policy_paths", multiple=True, metavar="PATH",
              help="Policy files or directories ('-' for stdin); repeatable.")
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too (what Kyverno accepts with a warning).")
@click.option("--skip-non-policies", is_flag=True,
              help="Pass over documents that are no policies, in files named explicitly too (a pre-commit hook "
                   "names every changed YAML file); finding no policy is then no error.")
@flags.outputs(LINT_FORMATS)
@click.option("--sarif-root", metavar="DIR", help="Write SARIF paths relative to DIR (the repository root).")
@handle_errors
def lint_command(policy_paths: tuple[str, ...], paths: tuple[str, ...], strict: bool, skip_non_policies: bool,
                 outputs: tuple[str, ...], sarif_root: str | None) -> None:
    """Check every policy document below PATH... as the cluster would admit it, and print every problem.

    Each document is checked against the schema the API server uses (Kyverno's CRDs, Kubernetes' own types
    for ValidatingAdmissionPolicy and MutatingAdmissionPolicy): unknown fields, wrong types, missing
    required fields, unsupported values, the CRDs' CEL rules; then by the checks every kyrec command runs
    before using a policy. eval, diff, explain and test refuse the same policies the same way. Exit 3 when
    a policy would be refused, 1 with --strict when there are warnings only, 0 otherwise.

    \b
    Example:
      kubectl kyrec lint -p policies/ -o sarif=lint.sarif
    """
    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.cli.ci_outputs import CiOptions, CiRun, files_only_summary, nonzero_counts
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.render.dispatch import OutputSpec, write_outputs
    from kubectl_kyrec.run.lint import run_lint

    named = [*policy_paths, *paths]
    if not named:
        raise UsageError("lint needs policies: -p PATH")
    specs = parse_outputs(list(outputs), LINT_FORMATS)
    result = run_lint(FileSource(policy_paths=named, schema=policy_schema_check(),
                                 skip_non_policies=skip_non_policies), now=parse_now(None), strict=strict)
    emit_notices(result.notices)

    def text(spec: OutputSpec) -> str:
        lines = [p.line for p in result.problems]
        counts = nonzero_counts({"error(s)": result.error_count, "warning(s)": result.warning_count}, ("error(s)",))
        lines.append(f"{result.policies} policy document(s) checked: {counts}")
        return "\n".join(lines) + "\n"

    def ci(spec: OutputSpec) -> str:
        return CiRun.prepare("lint", result.findings(), CiOptions(sarif_root=sarif_root)).render(spec.format.value)

    write_outputs(result, specs, {OutputFormat.TABLE: text, OutputFormat.SARIF: ci, OutputFormat.GITHUB: ci})
    files_only_summary("kyrec lint", lambda: nonzero_counts({"error(s)": result.error_count,
                                                             "warning(s)": result.warning_count}, ("error(s)",)),
                       specs)
    exit_with(result.exit_code)
