"""The options several commands take, each declared once: one name, one destination, one help text.

Each is a decorator (`@flags.policy`), so a command keeps its options in the order its help lists them.
Options only one command takes stay in that command's module; the kubectl connection flags, `--jobs` and
the CI flags have their own homes (common.kubectl_flags, common.jobs_flag, ci_outputs.ci_flags).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from kubectl_kyrec.cli.common import OutputFormat

F = TypeVar("F", bound=Callable[..., Any])


def _option(*decls: str, **attrs: Any) -> Callable[[F], F]:
    """A decorator adding the option; a fresh click.Option each time it is applied (one per command)."""

    def decorate(func: F) -> F:
        return click.option(*decls, **attrs)(func)

    return decorate


def state(func: F | None = None, *, hidden: bool = False) -> Any:
    """`--state`; `hidden`: parsed only to be refused (apply works on the live cluster alone)."""
    option = _option("--state", "state_paths", multiple=True, hidden=hidden,
                     help="The cluster as files (kubectl get -o json/yaml).")
    return option if func is None else option(func)


policy = _option("-p", "--policy", "policy_paths", multiple=True,
                 help="Policy files or directories ('-' for stdin); none given: the policies the cluster (or "
                      "--state) holds, as the complete set.")
resource = _option("-r", "--resource", "resource_paths", multiple=True,
                   help="Triggers and subjects as manifests (files, dirs, '-'); default: the objects of the "
                        "cluster or --state.")
# the same flags for the commands that work on the live cluster alone (apply, capture): their help names no
# --state, which they refuse
live_policy = _option("-p", "--policy", "policy_paths", multiple=True,
                      help="Policy files or directories ('-' for stdin); none given: the policies the cluster "
                           "holds, as the complete set.")
live_resource = _option("-r", "--resource", "resource_paths", multiple=True,
                        help="Triggers and subjects as manifests (files, dirs, '-'); default: the objects of the "
                             "cluster.")
kustomize = _option("-k", "--kustomize", "kustomize_dirs", multiple=True, metavar="DIR",
                    help="A kustomization: its rendered objects are resources, as -r reads them (kustomize build "
                         "when on PATH, else kubectl kustomize).")
exception = _option("-e", "--exception", "exception_paths", multiple=True,
                    help="PolicyExceptions (applied whatever their namespace).")
crd = _option("--crd", "crd_paths", multiple=True, help="CustomResourceDefinitions for custom kinds.")
values = _option("--values", "values_path",
                 help="Request fields, namespace labels and the requesting user (Kyverno CLI Values or UserInfo).")
context_file = _option("--context-file", "context_path",
                       help="Kyverno CLI Context file answering resource/image lookups.")
kyverno_config = _option("--kyverno-config", "kyverno_config_path",
                         help="Kyverno's ConfigMap (resourceFilters); default: the state's, else Kyverno's defaults.")
skip_resource_filters = _option(
    "--skip-resource-filters", type=bool, default=True, show_default=True,
    help="Kyverno's reports controller --skipResourceFilters: true (a default install) writes reports whatever "
         "the ConfigMap's resourceFilters say; false applies them.")
report_api = _option("--report-api", type=click.Choice(["wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1"]),
                     help="API of the reports (default: what the state uses).")
no_mutate = _option("--no-mutate", is_flag=True,
                    help="Validate the manifests as written: no API-server defaults, no mutating policies first.")
registry = _option("--registry", "registry", is_flag=True,
                   help="Verify images against the registries their references name (cosign signatures and "
                        "attestations with public keys); without it kyrec contacts no registry and such "
                        "results are undetermined (needs-registry).")
insecure_registry = _option("--insecure-registry", "insecure_registries", multiple=True, metavar="HOST[:PORT]",
                            help="With --registry: call this registry over plain HTTP (loopback always is).")
registry_config = _option("--registry-config", "registry_config", metavar="FILE",
                          help="With --registry: a docker config file (config.json) whose `auths` or "
                               "credential helpers (`credHelpers`, `credsStore`) give the registries' "
                               "credentials.")
now = _option("--now", "now_text", help="The time for time.now(), exception expiry and scan ages (RFC 3339).")
kind = _option("--kind", "kinds", multiple=True, help="Only triggers and subjects of this kind.")
policy_name = _option("--policy-name", "policy_names", multiple=True,
                      help="Only these policies (name or ns/name).")
selector = _option("-l", "--selector", help="Only triggers and subjects with these labels (a=b,c!=d).")
all_policies = _option("--all-policies", is_flag=True,
                       help="The policies given are all there are: downstreams and report results of any other "
                            "policy are policy-gone or stale.")
only_downstreams = _option("--downstreams", "only_downstreams", is_flag=True, help="Only generated downstreams.")
only_reports = _option("--reports", "only_reports", is_flag=True, help="Only policy reports.")
exit_code = _option("--exit-code", "exit_code_flag", type=bool, default=True, show_default=True,
                    help="false: findings (failing results or rows, gaps) do not change the exit code.")


def outputs(formats: Sequence[OutputFormat]) -> Callable[[F], F]:
    """`-o FORMAT[=FILE]`, repeatable; its help lists `formats`, the first the default (parse_outputs)."""
    names = [f.value for f in formats]
    return _option("-o", "--output", "outputs", multiple=True, metavar="FORMAT[=FILE]",
                   help=f"{names[0]} (default), {', '.join(names[1:])}; repeatable.")
