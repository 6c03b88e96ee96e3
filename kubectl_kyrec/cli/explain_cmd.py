"""`kubectl kyrec explain`: why a policy did (or did not) apply to a resource, as a tree of decisions."""

from __future__ import annotations

import functools
from typing import Any

import click

import kubectl_kyrec.cli.flags as flags
from kubectl_kyrec.cli.common import (
    OutputFormat,
    emit_warnings,
    exit_with,
    handle_errors,
    kubectl_flags,
    parse_now,
    parse_outputs,
    registry_access,
    report_run,
    selection_of,
)
from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.render.dispatch import write_outputs

EXPLAIN_FORMATS = (OutputFormat.TABLE, OutputFormat.JSON, OutputFormat.YAML)


@click.command("explain")
@click.argument("subject_arg", metavar="[KIND/NAME]", required=False)
@click.option("--subject", "subject_opt", metavar="KIND/NAME", help="The resource to explain (-n for its namespace).")
@flags.policy
@flags.resource
@flags.exception
@flags.state
@click.option("--live", is_flag=True, help="Read the cluster of the current context (kubeconfig) as the state.")
@flags.crd
@flags.values
@flags.context_file
@flags.no_mutate
@flags.registry
@flags.insecure_registry
@flags.registry_config
@flags.now
@flags.outputs(EXPLAIN_FORMATS)
@flags.policy_name
@flags.kind
@flags.selector
@kubectl_flags
@handle_errors
def explain_command(subject_arg: str | None, subject_opt: str | None, policy_paths: tuple[str, ...],
                    resource_paths: tuple[str, ...], exception_paths: tuple[str, ...], state_paths: tuple[str, ...],
                    live: bool, crd_paths: tuple[str, ...], values_path: str | None, context_path: str | None,
                    no_mutate: bool, registry: bool, insecure_registries: tuple[str, ...],
                    registry_config: str | None, now_text: str | None,
                    outputs: tuple[str, ...], policy_names: tuple[str, ...],
                    kinds: tuple[str, ...], selector: str | None, **kube: object) -> None:
    """Explain why policies did (or did not) apply to resources: for each policy and resource, the tree of
    decisions (match constraints, exceptions, conditions, variables, each validation's value) and the
    result `eval` gives. `-o json` gives the same tree.

    \b
    Example:
      kubectl kyrec explain -p policy.yaml -r pod.yaml
      kubectl kyrec explain -p policies/ --state cluster.yaml pod/nginx -n default
    """
    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.render import explain_output
    from kubectl_kyrec.run.explain import ExplainOptions, parse_subject, run_explain

    if subject_arg and subject_opt:
        raise UsageError("give the subject once: KIND/NAME or --subject KIND/NAME")
    if live and state_paths:
        raise UsageError("--live and --state exclude each other")
    if not policy_paths and not live and not state_paths:
        raise UsageError("explain needs policies: -p PATH")
    if not resource_paths and not state_paths and not live:
        raise UsageError("explain needs resources: -r PATH, --state PATH or --live")
    specs = parse_outputs(list(outputs), EXPLAIN_FORMATS)
    source: Any = FileSource(policy_paths=policy_paths, resource_paths=resource_paths,
                             exception_paths=exception_paths, state_paths=state_paths, crd_paths=crd_paths,
                             values_path=values_path, context_path=context_path,
                             schema=policy_schema_check())
    subject = subject_arg or subject_opt or ""
    if live:
        from kubectl_kyrec.cluster.live_source import live_source

        # the subject's kind is read though no policy matches it: its trees then say so, as offline
        source = live_source(source, kube, reports=False, downstreams=True,
                             kinds=(parse_subject(subject)[0],) if subject else ())
    elif not policy_paths:
        # as eval: a state that holds policies (a capture) needs no -p
        from kubectl_kyrec.run.state_policies import StatePoliciesSource

        source = StatePoliciesSource(source, "explain needs policies: -p PATH")
    now = parse_now(now_text)
    options = ExplainOptions(now=now, selection=selection_of(kube, selector, policy_names, kinds),
                             subject=subject, mutate=not no_mutate,
                             registry=registry_access(registry, insecure_registries, registry_config, now))
    run = run_explain(options, source)
    emit_warnings(run.warnings)
    report_run(run)
    write_outputs(run, specs, {OutputFormat.TABLE: lambda spec: functools.partial(explain_output.write_text,
                                                                                  run.explanations)})
    exit_with(run.exit_code, True, run.failed_reads)
