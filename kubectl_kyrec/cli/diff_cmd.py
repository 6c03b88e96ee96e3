"""`kubectl kyrec diff`: what the policies say should exist against a state. Read-only.

Two domains: downstreams of generating policies (DESIGN section 4) and policy reports of validating
policies (section 5). Both by default; `--downstreams` or `--reports` narrows to one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from kubectl_kyrec.cli.common import (
    OutputFormat,
    OutputSpec,
    exit_with,
    handle_errors,
    kubectl_flags,
    parse_now,
    parse_outputs,
    write_output,
)
from kubectl_kyrec.errors import ExitCode, UsageError, worst

if TYPE_CHECKING:
    import datetime
    from collections.abc import Mapping, Sequence

    from kubectl_kyrec.cel.environment import LibraryFactory
    from kubectl_kyrec.cli.inputs import Inputs
    from kubectl_kyrec.evaluate.generating import GeneratingOutcome
    from kubectl_kyrec.evaluate.pipeline import EvalOptions
    from kubectl_kyrec.load.generating_policies import GeneratingPolicy
    from kubectl_kyrec.load.policies import PolicySet
    from kubectl_kyrec.model import Document, Result, Subject
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff
    from kubectl_kyrec.reconcile.impact import Impact
    from kubectl_kyrec.reconcile.reports import ReportDiff

DIFF_FORMATS = (OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.YAML, OutputFormat.JSON, OutputFormat.DIFF)


@dataclass
class DiffRun:
    downstreams: DownstreamDiff | None = None
    reports: ReportDiff | None = None
    errors: list[tuple[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def _filter(namespace: str | None, kinds: tuple[str, ...], selector: Mapping[str, Any] | None) -> Any:
    from kubectl_kyrec.evaluate.selectors import matches_selector

    def keep(subject: Subject) -> bool:
        ref = subject.ref
        if namespace and ref.namespace != namespace and not (ref.kind == "Namespace" and ref.name == namespace):
            return False
        if kinds and ref.kind not in kinds:
            return False
        labels = (subject.obj.get("metadata") or {}).get("labels") or {}
        return selector is None or matches_selector(selector, labels)

    return keep


def generate_for_inputs(inputs: Inputs, policies: PolicySet | None = None, *, now: datetime.datetime,
                        policy_names: tuple[str, ...] = (), namespace: str | None = None,
                        kinds: tuple[str, ...] = (), selector: Mapping[str, Any] | None = None) -> GeneratingOutcome:
    """Every generating policy of `policies` (default: the inputs') over the triggers: -r, else the state."""
    from kubectl_kyrec.cel.context import LibraryContext
    from kubectl_kyrec.cli.providers import provider_for
    from kubectl_kyrec.evaluate.generating import GenerateOptions, generating_environments, run_generating

    policies = policies if policies is not None else inputs.policies
    envs, sink = generating_environments(LibraryContext(now=now, provider=provider_for(inputs)))
    values = inputs.values
    options = GenerateOptions(now=now, operation=values.request_operation, user_info=values.user_info,
                              user_info_known=values.given_user_info, namespace_labels=values.namespace_labels,
                              namespaces=values.namespaces,
                              policy_names=policy_names)
    triggers = inputs.resources if inputs.resources else inputs.state
    return run_generating(policies.generating, triggers, inputs.state, kinds=inputs.kinds, envs=envs, sink=sink,
                          options=options, exceptions=policies.exceptions,
                          trigger_filter=_filter(namespace, kinds, selector), locate=policies.locate)


def impact_for(inputs: Inputs, base_policy_paths: Sequence[str], subjects: Sequence[Document], *,
               head_results: Sequence[Result], head_generated: GeneratingOutcome, now: datetime.datetime,
               options: EvalOptions, libraries: LibraryFactory, namespace: str | None = None) -> Impact:
    """`eval --base-policy`: the same resources under the base policies, compared with the head's."""
    from kubectl_kyrec.evaluate.pipeline import run_eval
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.policies import classify
    from kubectl_kyrec.reconcile.impact import compute_impact

    base = classify(load_documents(list(base_policy_paths), stdin=sys.stdin))
    base.exceptions.extend(inputs.policies.exceptions)
    base_outcome = run_eval(base, subjects, inputs.state, kinds=inputs.kinds, libraries=libraries, options=options)
    base_generated = generate_for_inputs(inputs, base, now=now, policy_names=options.policy_names,
                                         namespace=namespace, kinds=options.kinds, selector=options.selector)
    base_results = [*base_outcome.results, *(o.result for o in base_generated.outcomes if o.result is not None)]
    return compute_impact(base_results, head_results, base_generated, head_generated)


def cluster_policies(state: Sequence[Document]) -> dict[str, GeneratingPolicy]:
    """The generating policies a state captured from the cluster holds, by name (unreadable ones left out)."""
    from kubectl_kyrec.errors import InputError
    from kubectl_kyrec.load.generating_policies import parse_generating_policy

    out: dict[str, GeneratingPolicy] = {}
    for doc in state:
        if doc.kind in ("GeneratingPolicy", "NamespacedGeneratingPolicy") and \
                doc.api_version.startswith("policies.kyverno.io/"):
            try:
                out[doc.name] = parse_generating_policy(doc)
            except InputError:
                continue
    return out


def evaluation_notices(outcome: GeneratingOutcome) -> list[str]:
    """Triggers whose downstreams could not be worked out: each failure, and a count per policy of those
    needing request data (their owned downstreams are `undetermined`; nothing is reported missing)."""
    from kubectl_kyrec.evaluate.generating import TriggerStatus

    notices = []
    needs: dict[str, int] = {}
    for o in outcome.outcomes:
        if o.status is TriggerStatus.ERROR:
            notices.append(f"{o.policy.key}: {o.trigger.ref.display()}: {o.message}")
        elif o.status is TriggerStatus.NEEDS_REQUEST:
            needs[o.policy.key] = needs.get(o.policy.key, 0) + 1
    notices.extend(f"{policy}: the downstreams of {count} trigger(s) depend on request.userInfo; give it with "
                   "--values to evaluate them" for policy, count in needs.items())
    return notices


def run_downstreams(inputs: Inputs, *, now: datetime.datetime, policy_names: tuple[str, ...],
                    complete: bool, namespace: str | None, kinds: tuple[str, ...],
                    selector: dict[str, Any] | None) -> tuple[GeneratingOutcome, DownstreamDiff]:
    from kubectl_kyrec.reconcile.downstreams import StateIndex, diff_downstreams

    outcome = generate_for_inputs(inputs, now=now, policy_names=policy_names, namespace=namespace, kinds=kinds,
                                  selector=selector)
    trigger_uids = {s.ref.uid for s in outcome.triggers} if inputs.resources else None
    names = {d.name for d in inputs.policies.generating}
    diff = diff_downstreams(outcome, StateIndex.build(d.obj for d in inputs.state), complete_policy_set=complete,
                            trigger_uids=trigger_uids, namespace=namespace, known_policies=names,
                            cluster_policies=cluster_policies(inputs.state))
    return outcome, diff


def is_report(obj: Mapping[str, Any]) -> bool:
    """A PolicyReport or ClusterPolicyReport of either report API."""
    from kubectl_kyrec.expect.reports import REPORT_KINDS

    return obj.get("kind") in REPORT_KINDS.get(str(obj.get("apiVersion", "")), ())


def run_reports(inputs: Inputs, *, now: datetime.datetime, policy_names: tuple[str, ...], report_api: str | None,
                kyverno_config: str | None, namespace: str | None, kinds: tuple[str, ...],
                selector: dict[str, Any] | None, all_policies: bool = False,
                generating: GeneratingOutcome | None = None
                ) -> tuple[ReportDiff | None, list[tuple[str, Any]], list[str]]:
    """The report domain of `diff`: the same comparison `coverage` makes.

    `generating`: the downstream domain's evaluation of the GeneratingPolicies, reused for their results.
    """
    from kubectl_kyrec.cli.report_inputs import report_diff_for

    if not (inputs.policies.validating or inputs.policies.admission or inputs.policies.generating):
        return None, [], []
    diff, scope = report_diff_for(inputs, now=now, report_api=report_api, kyverno_config_path=kyverno_config,
                                  all_policies=all_policies, namespace=namespace or "",
                                  policy_names=policy_names, kinds=kinds, selector=selector,
                                  generating=generating)
    return (diff, [(e.message, e.source) for e in scope.outcome.errors],
            [str(n) for n in scope.outcome.notices])


def _color(spec: OutputSpec, color: str) -> bool:
    if color == "always":
        return True
    if color == "never" or spec.path is not None:
        return False
    return sys.stdout.isatty()


def render(run: DiffRun, spec: OutputSpec, *, color: str) -> str:
    from kubectl_kyrec.reconcile.reports import ReportClass
    from kubectl_kyrec.render import diff_output
    from kubectl_kyrec.render.report_diff_table import render_report_diff

    wide = spec.format is OutputFormat.WIDE
    report_diffs = "".join(c.diff for c in run.reports.changes if c.diff) if run.reports is not None else ""
    if report_diffs and _color(spec, color):
        report_diffs = diff_output.colorize(report_diffs)
    if spec.format in (OutputFormat.TABLE, OutputFormat.WIDE):
        report_table = render_report_diff(run.reports, wide=wide) if run.reports is not None else None
        table = diff_output.render_table(run.downstreams, report_table, wide=wide, color=_color(spec, color))
        # like the downstreams' unified diffs, each stale report's results follow the table
        return table + ("\n" + report_diffs if report_diffs else "")
    if spec.format is OutputFormat.DIFF:
        parts = [diff_output.render_unified(run.downstreams, color=_color(spec, color))
                 if run.downstreams is not None else ""]
        parts.append(report_diffs)
        return "".join(parts)
    report_summary = (run.reports.summary() if run.reports is not None
                      else {str(c): 0 for c in ReportClass})
    doc = diff_output.diff_document(
        run.downstreams, run.reports.changes_json() if run.reports is not None else [], report_summary,
        [{"message": m, "location": s.as_location() if s is not None else None} for m, s in run.errors],
        run.notices)
    return diff_output.render_json(doc) if spec.format is OutputFormat.JSON else diff_output.render_yaml(doc)


def exit_code(run: DiffRun) -> ExitCode:
    from kubectl_kyrec.reconcile.reports import ReportClass

    code = ExitCode.INPUT if run.errors else ExitCode.CLEAN
    findings = bool(run.downstreams and run.downstreams.findings)
    if run.reports is not None:
        # orphan reports describe nothing in scope; everything else that is not current is a finding
        findings = findings or any(c.klass not in (ReportClass.CURRENT, ReportClass.ORPHAN) and c.in_scope
                                   for c in run.reports.changes)
    return worst(code, ExitCode.FINDINGS) if findings else code


@click.command("diff")
@click.option("-p", "--policy", "policy_paths", multiple=True, help="Policy files or directories ('-' for stdin).")
@click.option("-r", "--resource", "resource_paths", multiple=True,
              help="Triggers and subjects as manifests (joined to the state by identity); default: the state.")
@click.option("-e", "--exception", "exception_paths", multiple=True, help="PolicyExceptions.")
@click.option("--state", "state_paths", multiple=True, help="The cluster as files (kubectl get -o json/yaml).")
@click.option("--live", is_flag=True, help="Read the cluster (kubeconfig) instead of --state.")
@click.option("--crd", "crd_paths", multiple=True, help="CustomResourceDefinitions for custom kinds.")
@click.option("--values", "values_path", help="Request fields (userInfo, operation) and namespace labels.")
@click.option("--context-file", "context_path", help="Kyverno CLI Context file answering lookups.")
@click.option("--kyverno-config", "kyverno_config", help="Kyverno's ConfigMap (resourceFilters).")
@click.option("--now", "now_text", help="The time for time.now(), expiry and scan age (RFC 3339).")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FORMAT[=FILE]",
              help="table (default), wide, yaml, json, diff; repeatable.")
@click.option("--downstreams", "only_downstreams", is_flag=True, help="Only generated downstreams.")
@click.option("--reports", "only_reports", is_flag=True, help="Only policy reports.")
@click.option("--all-policies", is_flag=True,
              help="The policies given are all there are: downstreams of any other policy are policy-gone.")
@click.option("--policy-name", "policy_names", multiple=True, help="Only these policies (name or ns/name).")
@click.option("--kind", "kinds", multiple=True, help="Only triggers and subjects of this kind.")
@click.option("-l", "--selector", help="Only triggers and subjects with these labels (a=b,c!=d).")
@click.option("--report-api", type=click.Choice(["wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1"]),
              help="API of the reports (default: what the state uses).")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour unified diffs (auto: on a terminal).")
@click.option("--exit-code", "exit_code_flag", type=bool, default=True, show_default=True,
              help="false: findings do not change the exit code.")
@kubectl_flags
@handle_errors
def diff_command(policy_paths: tuple[str, ...], resource_paths: tuple[str, ...], exception_paths: tuple[str, ...],
                 state_paths: tuple[str, ...], live: bool, crd_paths: tuple[str, ...], values_path: str | None,
                 context_path: str | None, kyverno_config: str | None, now_text: str | None,
                 outputs: tuple[str, ...], only_downstreams: bool, only_reports: bool, all_policies: bool,
                 policy_names: tuple[str, ...], kinds: tuple[str, ...], selector: str | None,
                 report_api: str | None, color: str, exit_code_flag: bool, **kube: object) -> None:
    """Compare what the policies should have produced with a cluster state.

    Downstreams are missing, drifted, in-sync, conflict, orphan or undetermined (with a reason); reports
    current, missing, stale, orphan, duplicate or misnamed. Exit 1 on findings Kyverno would act on,
    3 on bad input, 0 when everything is as the policies say.
    """
    from kubectl_kyrec.cli.eval_cmd import parse_selector
    from kubectl_kyrec.cli.inputs import read_inputs

    specs = parse_outputs(list(outputs), DIFF_FORMATS)
    now = parse_now(now_text)
    if live:
        raise UsageError("--live: reading a live cluster is not available in this build; capture the state "
                         "with `kubectl get <kinds> -A -o json > state.json` and pass --state state.json")
    if not state_paths:
        raise UsageError("diff needs a state: --state PATH")
    if not policy_paths:
        raise UsageError("diff needs policies: -p PATH")
    inputs = read_inputs(policy_paths=policy_paths, resource_paths=resource_paths,
                         exception_paths=exception_paths, state_paths=state_paths, crd_paths=crd_paths,
                         values_path=values_path, context_path=context_path)
    namespace = str(kube.get("namespace") or "") or None
    label_selector = parse_selector(selector)
    both = only_downstreams == only_reports
    run = DiffRun(notices=[str(n) for n in inputs.notices])
    outcome = None
    if both or only_downstreams:
        outcome, run.downstreams = run_downstreams(inputs, now=now, policy_names=policy_names,
                                                   complete=all_policies, namespace=namespace, kinds=kinds,
                                                   selector=label_selector)
        run.errors.extend((e.message, e.source) for e in outcome.errors)
        run.notices.extend(str(n) for n in outcome.notices)
        run.notices.extend(evaluation_notices(outcome))
    has_reports = any(is_report(d.obj) for d in inputs.state)
    if both and not has_reports and (inputs.policies.validating or inputs.policies.admission):
        # the default diff compares reports only when the state holds some (a dump without them would
        # make every report "missing"); --reports asks for the comparison regardless
        run.notices.append("the state holds no policy reports: report checks skipped (use --reports to run them)")
    if only_reports or (both and has_reports):
        run.reports, errors, notices = run_reports(inputs, now=now, policy_names=policy_names,
                                                   report_api=report_api, kyverno_config=kyverno_config,
                                                   namespace=namespace, kinds=kinds, selector=label_selector,
                                                   all_policies=all_policies, generating=outcome)
        run.errors.extend(errors)
        run.notices.extend(notices)
    for notice in dict.fromkeys(run.notices):
        click.echo(f"notice: {notice}", err=True)
    for message, source in run.errors:
        click.echo(f"error: {source}: {message}" if source else f"error: {message}", err=True)
    for spec in specs:
        # click strips escape sequences off a pipe unless told the colour is wanted
        write_output(spec, render(run, spec, color=color), color=_color(spec, color))
    exit_with(exit_code(run), exit_code_flag)
