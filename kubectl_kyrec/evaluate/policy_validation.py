"""Kyverno's own validation of every policy a run loaded, before anything is evaluated: what its admission
webhook refuses (so the policy never exists in a cluster) and its CLI skips.

- the CEL kinds: every expression compiles (kk: each kind's compiler, pkg/cel/policies/*/compiler; the
  admission webhook's validators in pkg/cel/policies/*/validate.go run them), autogen variants included;
  a CEL PolicyException's too, on its own (kk: pkg/validation/exception);
- the classic kinds: evaluate/classic/engine.py kyverno_refusals (variables, background mode, kinds)
  and the CEL of `validate.cel` rules (kk: pkg/validation/policy/validate.go; the CLI compiles them before
  it evaluates).

A policy that fails leaves its list for `PolicySet.errors`, each problem at the line of its field, so every
command refuses it the same way (exit 3, `file:line: Kind "name": <field>: <message>`) whether or not its
own work would have compiled it (`diff` and `coverage` evaluate only what they compare), and the others
still run. Parse errors (load/policy/policies.py) are already there.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.load.run_inputs.sources import Inputs
from kubectl_kyrec.model import Document

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import Environments
    from kubectl_kyrec.cel.generator_lib import GeneratorSink
    from kubectl_kyrec.load.policy.deleting import DeletingPolicy
    from kubectl_kyrec.load.registry import Registry

T = TypeVar("T")


def validate_policies(policies: PolicySet, now: datetime.datetime, envs: Environments | None = None,
                      generating: tuple[Environments, GeneratorSink] | None = None,
                      registry: Registry | None = None) -> PolicySet:
    """The set without the policies Kyverno would refuse, their problems added to its errors (located).

    `envs` and `generating` (generating_environments'): the run's own environments, when it evaluates the
    policies next: an environment compiles a text once, so the run evaluates the programs compiled here
    instead of compiling every expression again. Without them, environments of their own (no cluster data:
    nothing is evaluated here). `registry`: the run's `--registry`, which an ImageValidatingPolicy's
    functions are bound to, so that the run gets the policy compiled here."""
    from kubectl_kyrec.cel.compiler import collecting_errors
    from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
    from kubectl_kyrec.cel.environment import Environments
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.exceptions import compile_exceptions
    from kubectl_kyrec.evaluate.validating.engine import compile_validating_policy

    if policies.validated:
        return policies
    errors: list[InputError] = []
    warnings: list[InputError] = []
    context = LibraryContext(now=now, provider=EmptyProvider())
    if envs is None:
        envs = Environments(library_factory(context))

    def kept(items: Sequence[T], check: Callable[[T], Any]) -> list[T]:
        out = []
        for item in items:
            with collecting_errors() as found:
                try:
                    check(item)
                except InputError as exc:
                    found.append(exc)
                except Exception:
                    # null in place of a bad expression may trip what follows: the errors found say enough
                    if not found:
                        raise
            if not found:
                out.append(item)
                continue
            # one error per field: an autogen variant repeats its policy's expressions
            fields: set[str] = set()
            for error in found:
                if (error.field or error.message) not in fields:
                    fields.add(error.field or error.message)
                    errors.append(policies.locate(error))
        return out

    exc_env, exc_check = envs.get("PolicyException")
    exceptions = kept(policies.exceptions, lambda e: compile_exceptions([e], exc_env, exc_check))
    compile_generating = _generating_compiler(policies, context, generating, exceptions, now)
    out = dataclasses.replace(
        policies, exceptions=exceptions, errors=list(policies.errors), warnings=list(policies.warnings),
        validated=True,
        # JSON, HTTP and Envoy policies are compiled by the payload evaluators, against their own variables
        validating=kept(policies.validating, lambda p: p.mode != "Kubernetes"
                        or compile_validating_policy(p, envs, exceptions, now)),
        admission=kept(policies.admission, lambda p: _compile_admission(p, policies.bindings, envs)),
        generating=kept(policies.generating, compile_generating),
        image_validating=kept(policies.image_validating, lambda p: p.mode != "Kubernetes"
                              or _compile_image_validating(p, envs, exceptions, now, registry)),
        mutating=kept(policies.mutating, lambda p: _compile_mutating(p, envs, exceptions, now)),
        mutating_admission=kept(policies.mutating_admission, lambda p: _compile_mutating_admission(
            p, policies.mutating_bindings, envs)),
        deleting=kept(policies.deleting, lambda p: _schedule(p, _compile_deleting(p, envs, exceptions, now))),
        classic=[p for p in policies.classic if not _classic_refused(p, envs, policies, errors, warnings)],
        others=kept(policies.others, _cleanup_schedule))
    out.errors.extend(errors)
    out.warnings.extend(warnings)
    return out


def _generating_compiler(policies: PolicySet, context: Any, generating: tuple[Environments, GeneratorSink] | None,
                         exceptions: Any, now: datetime.datetime) -> Callable[[Any], Any]:
    """What compiles each GeneratingPolicy of the set, in `generating`'s environments (else in environments of
    its own, built once here). Without GeneratingPolicies none is built, nor is their engine (its CEL
    templates and downstreams) imported: an eval of other kinds never uses them."""
    if not policies.generating:
        return lambda policy: None
    from kubectl_kyrec.evaluate.generating.engine import compile_generating_policy, generating_environments

    envs, _ = generating if generating is not None else generating_environments(context)
    return lambda policy: compile_generating_policy(policy, envs, exceptions, now)


# Imported when a set holds such a policy: image verification brings the cosign, notary and X.509 code
# (35 ms of a start-up, measured with bench/apply_prewrite.py) that a run of other kinds (apply's
# GeneratingPolicies) never uses.
def _compile_image_validating(policy: Any, envs: Environments, exceptions: Any, now: datetime.datetime,
                              registry: Registry | None) -> Any:
    from kubectl_kyrec.evaluate.image_validating.engine import compile_image_validating_policy

    return compile_image_validating_policy(policy, envs, exceptions, now, registry)


def _compile_deleting(policy: Any, envs: Environments, exceptions: Any, now: datetime.datetime) -> Any:
    # imported when a set holds a DeletingPolicy: its engine and cron parser are ~87M instructions of an
    # apply's start-up (bench/RESULTS.md, imports) that a run of other kinds never uses
    from kubectl_kyrec.evaluate.deleting.engine import compile_deleting_policy

    return compile_deleting_policy(policy, envs, exceptions, now)


def _compile_admission(policy: Any, bindings: Any, envs: Environments) -> Any:
    # imported when a set holds a ValidatingAdmissionPolicy, as the MutatingAdmissionPolicies' engine below
    from kubectl_kyrec.evaluate.validating_admission.engine import compile_admission_policies

    return compile_admission_policies([policy], bindings, envs)


def _compile_mutating_admission(policy: Any, bindings: Any, envs: Environments) -> Any:
    # imported when a set holds a MutatingAdmissionPolicy: its engine, the mutating engine and the typed
    # objects are ~16 ms of an apply's imports (python -X importtime) that a run of other kinds never uses
    from kubectl_kyrec.evaluate.mutating_admission.engine import compile_mutating_admission_policy

    return compile_mutating_admission_policy(policy, bindings, envs)


def _compile_mutating(policy: Any, envs: Environments, exceptions: Any, now: datetime.datetime) -> Any:
    from kubectl_kyrec.evaluate.mutating.engine import autogen_variants, compile_mutating_policy

    return [compile_mutating_policy(v, envs, exceptions, now) for v in (policy, *autogen_variants(policy))]


def _classic_refused(policy: Any, envs: Any, policies: PolicySet, errors: list[InputError],
                     warnings: list[InputError]) -> bool:
    """Whether Kyverno refuses the classic policy (its problems added to `errors`); an accepted one's
    warnings (classic/policy_warnings.py) are added to `warnings`."""
    from kubectl_kyrec.cel.compiler import collecting_errors
    from kubectl_kyrec.classic.policy_warnings import policy_warnings
    from kubectl_kyrec.evaluate.classic.engine import kyverno_refusals
    from kubectl_kyrec.evaluate.classic.validate_cel import compile_cel_rule

    found = kyverno_refusals(policy)
    if not found:
        for rule in policy.rules:
            if rule.type == "validate" and rule.validate_kind == "cel":
                with collecting_errors() as bad:
                    try:
                        compile_cel_rule(policy, rule, envs)
                    except InputError as exc:
                        bad.append(exc)
                    except Exception:
                        if not bad:     # null in place of a bad expression may trip what follows
                            raise
                found.extend(bad)
    errors.extend(policies.locate(e) for e in found)
    if not found:
        warnings.extend(policies.locate(w) for w in policy_warnings(policy))
    return bool(found)


def validated_inputs(inputs: Inputs, now: datetime.datetime, envs: Environments | None = None,
                     generating: tuple[Environments, GeneratorSink] | None = None,
                     registry: Registry | None = None) -> Inputs:
    """`inputs` with their policies validated (validate_policies): every command calls it once it has read
    them, so each refuses an invalid policy alike."""
    return dataclasses.replace(inputs, policies=validate_policies(inputs.policies, now, envs, generating, registry))


def _schedule(policy: DeletingPolicy, compiled: Any) -> Any:
    """kk: pkg/cel/policies/dpol/validate.go: the schedule parses with the deleting controller's own parser
    (supercronic's cronexpr), or the admission webhook refuses the policy. Checked after the expressions were
    compiled (`compiled`, handed back), in Kyverno's order."""
    from kubectl_kyrec.golang.cronexpr import CronError, parse_cron

    try:
        parse_cron(policy.schedule)
        return compiled
    except CronError as exc:
        path = "spec.schedule"
        raise InputError(f"{policy.meta.label}: {path}: Invalid value: {json.dumps(policy.schedule)}: schedule "
                         f"spec in the deletingPolicy is not in proper cron format: {exc}", policy.meta.source,
                         path) from None


def _cleanup_schedule(doc: Document) -> None:
    """kk: api/kyverno/v2 cleanup_policy_types.go ValidateSchedule: a CleanupPolicy's or ClusterCleanupPolicy's
    schedule parses with robfig/cron's ParseStandard (kyrec evaluates neither kind, but the cluster would
    refuse the policy)."""
    from kubectl_kyrec.golang.robfig_cron import CronSpecError, parse_standard
    from kubectl_kyrec.load.policy.policies import unevaluated_kind
    from kubectl_kyrec.load.schema import policy_label

    if unevaluated_kind(doc) not in ("CleanupPolicy", "ClusterCleanupPolicy"):
        return
    spec = doc.obj.get("spec")
    schedule = spec.get("schedule") if isinstance(spec, dict) else None
    if not isinstance(schedule, str):
        return      # a missing or mistyped schedule is the schema's to report
    try:
        parse_standard(schedule)
    except CronSpecError:
        path = "spec.schedule"
        raise InputError(f"{policy_label(doc.kind, doc.name)}: {path}: Invalid value: {json.dumps(schedule)}: "
                         "schedule spec in the cleanupPolicy is not in proper cron format", doc.source, path) from None
