"""The mutating kinds of a Kyverno test suite, run as Kyverno's CLI runs them, and their patched
resources compared as the CLI compares them.

kk: cmd/cli/kubectl-kyverno/processor/policy_processor.go ApplyPoliciesOnResource: for each resource,
the MutatingAdmissionPolicies first (each seeing the previous one's output), then every MutatingPolicy
(mutateExisting ones aside) through the mpol engine in load order, on a CREATE request; each MutatingPolicy
response carries the resource after all of them (`reps.PatchedResource`), a MutatingAdmissionPolicy's
the resource after it. commands/test/compare.go getAndCompareResource: the expected document with the
same apiVersion, kind, namespace and name, both sides tidied (resource.Tidy), equal or not.

With targetResources, each resource's mutateExisting MutatingPolicies then mutate the targets
(evaluate/mutating/mutate_existing.py), with `resource.*` seeing the targets too (kk 111e07bb: the CLI adds them to
its FakeContextProvider for that pass).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field

from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.classic.mutator import TargetChange
from kubectl_kyrec.evaluate.mutating.engine import mutating_engine, with_object
from kubectl_kyrec.evaluate.mutating.mutate_existing import TargetDiscoveryError, mutate_targets
from kubectl_kyrec.evaluate.mutating_admission.engine import mutating_admission_engine
from kubectl_kyrec.evaluate.namespaces import namespace_objects
from kubectl_kyrec.evaluate.pipeline import EvalOptions, subject_context
from kubectl_kyrec.evaluate.subjects import KindLookup, as_admitted, make_subject
from kubectl_kyrec.model import EvalError, Obj, Ref, Result, Subject
from kubectl_kyrec.testsuite.suite import LoadedSuite


@dataclass
class SuiteMutations:
    results: list[Result] = field(default_factory=list)
    # (policy name, subject) -> the resource the CLI compares with the row's patchedResources
    patched: dict[tuple[str, Ref], Obj] = field(default_factory=dict)
    errors: list[EvalError] = field(default_factory=list)
    # mutateExisting MutatingPolicies: each trigger's target changes
    existing: dict[Ref, list[TargetChange]] = field(default_factory=dict)


def suite_mutations(loaded: LoadedSuite, subjects: Sequence[Subject], *, kinds: KindLookup,
                    envs: Environments, now: datetime.datetime,
                    target_envs: Environments | None = None) -> SuiteMutations:
    """`envs`: the suite's (rows.run_suite); `target_envs`: those of the mutateExisting pass, whose
    `resource.*` also sees the targetResources (`envs` without them)."""
    out = SuiteMutations()
    policies = loaded.policies
    if not policies.mutating and not policies.mutating_admission:
        return out
    mpol, errors = mutating_engine(policies, envs, now, fixed_order=True)
    maps, map_errors = mutating_admission_engine(policies, envs, params=tuple(loaded.param_objects), in_cli=True)
    for error in [*errors, *map_errors]:
        out.errors.append(EvalError(error.message, error.source))
    if errors:
        # one MutatingPolicy that does not compile fails the CLI's whole run (NewProvider)
        mpol = None
    existing = None
    targets: list[Subject] = []
    if mpol is not None and loaded.target_objects and any(p.mutate_existing for p in policies.mutating):
        existing, _ = mutating_engine(policies, target_envs or envs, now, fixed_order=True)
        targets = [make_subject(as_admitted(d.obj), d.source, kinds)[0] for d in loaded.target_objects]
    state = [*loaded.values.namespaces, *loaded.param_objects, *loaded.cluster_objects]
    options = EvalOptions(now=now, operation="CREATE", user_info=loaded.user_info,
                          namespace_labels=loaded.values.namespace_labels)
    namespaces = namespace_objects([*state, *loaded.resources], options.namespace_labels)
    for subject in subjects:
        if subject.obj is None or not subject.resource:
            continue
        ctx = subject_context(subject, namespaces, options)
        if maps is not None:
            step = maps.mutate(ctx)
            out.results.extend(step.results)
            for name, obj in maps.last_outputs.items():
                out.patched[(name, subject.ref)] = obj
            if step.obj is not None:
                ctx = with_object(ctx, dict(step.obj))
        if mpol is not None:
            step = mpol.mutate(ctx)
            out.results.extend(step.results)
            final = dict(step.obj) if step.obj is not None else None
            for cp in mpol.compiled:
                if final is not None:
                    out.patched[(cp.policy.meta.name, subject.ref)] = final
            if existing is not None:
                try:
                    out.existing[subject.ref] = mutate_targets(existing.compiled, ctx, final or dict(ctx.request.obj
                                                                                                  or {}), targets)
                except TargetDiscoveryError as exc:
                    failed = EvalError(f"failed to discover CEL targets: {exc.message}", exc.source)
                    if failed not in out.errors:
                        out.errors.append(failed)
    return out
