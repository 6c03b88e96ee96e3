"""`kubectl kyrec convert`: ClusterPolicies/Policies to the CEL kinds, and the proof (run/convert.py)."""

from __future__ import annotations

import datetime

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import exit_with, handle_errors, registry_access
from kubectl_kyrec.errors import UsageError


@click.command("convert")
@click.option("-p", "--policy", "policy_paths", multiple=True, metavar="PATH",
              help="ClusterPolicy/Policy, CleanupPolicy and PolicyException files or directories; repeatable.")
@click.option("-o", "--output-dir", "out_dir", metavar="DIR",
              help="Write each converted policy to DIR/<policy name>.yaml.")
@click.option("--verify", is_flag=True, help="Evaluate original and converted policies on -r/--state resources "
                                             "and variants of them; exit 1 on any verdict or mutated-object "
                                             "difference.")
@click.option("-r", "--resource", "resource_paths", multiple=True, metavar="PATH",
              help="Resources to verify on (with --verify); repeatable.")
@click.option("--state", "state_paths", multiple=True, metavar="FILE",
              help="A captured cluster state (kubectl kyrec capture) to verify on; repeatable.")
@flags.crd
@flags.registry
@flags.insecure_registry
@flags.registry_config
@handle_errors
def convert_command(policy_paths: tuple[str, ...], out_dir: str | None, verify: bool,
                    resource_paths: tuple[str, ...], state_paths: tuple[str, ...], crd_paths: tuple[str, ...],
                    registry: bool, insecure_registries: tuple[str, ...], registry_config: str | None) -> None:
    """Convert ClusterPolicies and Policies to ValidatingPolicies, MutatingPolicies and GeneratingPolicies,
    CleanupPolicies to DeletingPolicies and PolicyExceptions to CEL PolicyExceptions, as Kyverno's migration
    guide maps them.

    A policy with any construct that has no exact CEL counterpart is not written: stderr names the field and
    why. A documented substitute is written with a comment naming the difference. Exit 1 when any policy
    could not be converted or, with --verify, when a verdict or a mutated object differs; 3 on bad input.

    \b
    Example:
      kubectl kyrec convert -p policies/ -o cel-policies/
      kubectl kyrec convert -p policies/ -o cel-policies/ --verify -r manifests/
      kubectl kyrec convert -p policies/ -o cel-policies/ --crd crds/   # rules on custom kinds
      kubectl kyrec convert -p policies/ -o out/ --verify -r pods/ --registry   # verifyImages, both sides
    """
    from kubectl_kyrec.run.convert import run_convert

    if not policy_paths:
        raise UsageError("convert needs policies: -p PATH")
    if verify and not (resource_paths or state_paths):
        raise UsageError("--verify needs resources: -r PATH or --state FILE")
    if (resource_paths or state_paths) and not verify:
        raise UsageError("-r/--state are for --verify")
    if registry and not verify:
        raise UsageError("--registry is for --verify")
    # a signing certificate is checked at the wall clock's time, as eval's default --now
    access = registry_access(registry, insecure_registries, registry_config,
                             datetime.datetime.now(datetime.timezone.utc))
    result = run_convert(policy_paths, out_dir, resource_paths if verify else (), state_paths if verify else (),
                         crd_paths, access)
    for conv in result.conversions:
        if conv.refusals:
            for refusal in conv.refusals:
                click.echo(f"{conv.kind} {conv.name!r} not converted: {refusal}", err=True)
        else:
            click.echo(f"{conv.kind} {conv.name!r}: {conv.status}")
            for s in conv.substitutes:
                click.echo(f"  difference: {s}")
    for target in result.suites_written:
        click.echo(f"test suite written: {target}")
    for difference in result.suite_differences:
        click.echo(f"  difference: {difference}")
    for refusal in result.suite_refusals:
        click.echo(f"test suite not converted: {refusal}", err=True)
    for d in result.differences:
        click.echo(d.line())
    if verify:
        undecided = sum(d.undecided for d in result.differences)
        click.echo(f"verified {result.subjects} subject(s): {sum(d.verdict for d in result.differences)} verdict "
                   "difference(s)" + (f", {undecided} undetermined on both sides (not verified)" if undecided
                                      else ""))
    exit_with(result.exit_code)
