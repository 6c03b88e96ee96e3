"""`kubectl kyrec convert`: ClusterPolicies/Policies to the CEL kinds, and the proof (run/convert.py)."""

from __future__ import annotations

import datetime

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import exit_with, handle_errors, kubectl_flags, registry_access
from kubectl_kyrec.errors import UsageError


@click.command("convert")
@click.option("-p", "--policy", "policy_paths", multiple=True, metavar="PATH",
              help="ClusterPolicy/Policy, CleanupPolicy and PolicyException files or directories; repeatable.")
@click.option("-o", "--output-dir", "out_dir", metavar="DIR",
              help="Write each converted policy to DIR/<policy name>.yaml.")
@click.option("--verify", is_flag=True, help="Evaluate original and converted policies on -r/--state/--live "
                                             "resources and variants of them; exit 1 on any verdict or "
                                             "mutated-object difference.")
@click.option("-r", "--resource", "resource_paths", multiple=True, metavar="PATH",
              help="Resources to verify on (with --verify); repeatable.")
@click.option("--state", "state_paths", multiple=True, metavar="FILE",
              help="A captured cluster state (kubectl kyrec capture) to verify on; repeatable.")
@click.option("--live", is_flag=True,
              help="Verify on the cluster of the current context (kubeconfig), read as eval --live reads it: its "
                   "objects are the subjects and what both sides look up, as --state of a capture; a read that "
                   "fails exits 5. Never writes to the cluster.")
@flags.crd
@flags.registry
@flags.insecure_registry
@flags.registry_config
@kubectl_flags
@handle_errors
def convert_command(policy_paths: tuple[str, ...], out_dir: str | None, verify: bool,
                    resource_paths: tuple[str, ...], state_paths: tuple[str, ...], live: bool,
                    crd_paths: tuple[str, ...], registry: bool, insecure_registries: tuple[str, ...],
                    registry_config: str | None, **kube: object) -> None:
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
      kubectl kyrec convert -p policies/ --verify --live --context prod -n shop   # on the cluster's objects
      kubectl kyrec convert -p policies/ -o cel-policies/ --crd crds/   # rules on custom kinds
      kubectl kyrec convert -p policies/ -o out/ --verify -r pods/ --registry   # verifyImages, both sides
    """
    from kubectl_kyrec.run.convert import run_convert

    if not policy_paths:
        raise UsageError("convert needs policies: -p PATH")
    if verify and not (resource_paths or state_paths or live):
        raise UsageError("--verify needs resources: -r PATH, --state FILE or --live")
    if (resource_paths or state_paths or live) and not verify:
        raise UsageError("-r/--state/--live are for --verify")
    if live and state_paths:
        raise UsageError("--live and --state exclude each other")
    if registry and not verify:
        raise UsageError("--registry is for --verify")
    # a signing certificate is checked at the wall clock's time, as eval's default --now
    access = registry_access(registry, insecure_registries, registry_config,
                             datetime.datetime.now(datetime.timezone.utc))
    source = None
    if live:                # the cluster as eval --live reads it: the policies' kinds and their context reads
        from kubectl_kyrec.cel.schema_rules import policy_schema_check
        from kubectl_kyrec.cluster.live_source import live_source
        from kubectl_kyrec.load.run_inputs.sources import FileSource

        # skip_non_policies: cleanup policies are none of eval's (run_convert names their kinds to the read)
        source = live_source(FileSource(policy_paths=policy_paths, crd_paths=crd_paths, schema=policy_schema_check(),
                                        skip_non_policies=True), kube, reports=False, downstreams=True)
    result = run_convert(policy_paths, out_dir, resource_paths if verify else (), state_paths if verify else (),
                         crd_paths, access, live=source)
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
        # on a partial read no count may look clean: the line says so, the failed reads follow on stderr
        failed = len(result.failed_reads)
        partial = f" (incomplete: {failed} read{'s' if failed != 1 else ''} failed)" if failed else ""
        click.echo(f"verified {result.subjects} subject(s): {sum(d.verdict for d in result.differences)} verdict "
                   "difference(s)" + (f", {undecided} undetermined on both sides (not verified)" if undecided
                                      else "") + partial)
    exit_with(result.exit_code, failed_reads=result.failed_reads)
