"""The GeneratingPolicies of a run over its triggers (shared by eval, diff and the report checks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime

    from kubectl_kyrec.evaluate.admission_chain import Admission
    from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
    from kubectl_kyrec.load.policy.policies import PolicySet
    from kubectl_kyrec.load.run_inputs.selection import Selection
    from kubectl_kyrec.load.run_inputs.sources import Inputs
    from kubectl_kyrec.model import Document, Subject
    from kubectl_kyrec.recording import Trace


def subject_filter(selection: Selection) -> Callable[[Subject], bool]:
    """-n, --kind and -l over triggers (a Namespace passes -n for itself)."""
    from kubectl_kyrec.run.select import holds_object

    if not selection.namespace and not selection.kinds and selection.selector is None:
        # no filter: every trigger is kept, without reading its ref and labels (asked of each trigger, twice
        # in `diff` and `apply`: 6,000 questions for 3,000 creates, bench/apply_prewrite.py)
        return _keep_every

    def keep(subject: Subject) -> bool:
        ref = subject.ref
        return holds_object(selection, ref.kind, ref.namespace, ref.name,
                            (subject.obj.get("metadata") or {}).get("labels") or {})

    return keep


def _keep_every(subject: Subject) -> bool:
    return True


def generate_for_inputs(inputs: Inputs, policies: PolicySet | None = None, *, now: datetime.datetime,
                        selection: Selection, recorder: Trace | None = None,
                        admissions: Sequence[Admission] = ()) -> GeneratingOutcome:
    """Every generating policy of `policies` (default: the inputs') over the triggers: -r, else the state;
    `recorder` (explain's): what the GeneratingPolicy engine did (evaluate/generating/engine.py run_generating).
    Evaluated in the run's environments (providers.environments_for), where the policy validation compiled
    the policies already. `admissions`: what eval's admission chain made of the -r manifests: each
    trigger is then the object admitted, and one whose admitted object is not known is decided over the
    objects it may be (evaluate/generating/admitted.py)."""

    policies = policies if policies is not None else inputs.policies
    keep = subject_filter(selection)
    if not admissions:
        return _generate(inputs, policies, inputs.subjects, now=now, selection=selection, keep=keep,
                         recorder=recorder)
    from kubectl_kyrec.evaluate.generating.admitted import AdmittedTriggers

    admitted = AdmittedTriggers(inputs.subjects, admissions)
    outcome = _generate(inputs, policies, admitted.triggers, now=now, selection=selection, keep=keep,
                        recorder=recorder)
    # the triggers whose admitted object is not known, on each other object they may be admitted as
    passes = [_generate(inputs, policies, triggers, now=now, selection=selection, keep=admitted.pass_filter(k, keep))
              for k, triggers in enumerate(admitted.passes)]
    admitted.decide(outcome, passes)
    return outcome


def _generate(inputs: Inputs, policies: PolicySet, triggers: Sequence[Document], *, now: datetime.datetime,
              selection: Selection, keep: Callable[[Subject], bool], recorder: Trace | None = None
              ) -> GeneratingOutcome:
    from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome

    if not policies.generating and not policies.classic:
        # nothing generates: the engine (its CEL templates and downstreams) is not even imported
        return GeneratingOutcome()
    from kubectl_kyrec.evaluate.generating.engine import GenerateOptions, run_generating
    from kubectl_kyrec.run.providers import environments_for, state_lookups

    values = inputs.values
    options = GenerateOptions(now=now, operation=values.request_operation, user_info=values.user_info,
                              user_info_known=values.given_user_info, namespace_labels=values.namespace_labels,
                              namespaces=values.namespaces,
                              selection=selection, state_lookups=state_lookups(inputs.state))
    if policies.generating:
        envs, sink = environments_for(inputs, now).generating
        outcome = run_generating(policies.generating, triggers, inputs.state.objects, kinds=inputs.kinds,
                                 envs=envs, sink=sink, options=options, exceptions=policies.exceptions,
                                 trigger_filter=keep, locate=policies.locate, recorder=recorder)
    else:
        outcome = GeneratingOutcome()   # without GeneratingPolicies, no CEL environment (nor its index of the state)
    if policies.classic:
        # classic generate rules (ClusterPolicy/Policy) beside the GeneratingPolicies
        from kubectl_kyrec.evaluate.classic.engine import refused_by_kyverno
        from kubectl_kyrec.evaluate.classic.generate_triggers import merge, run_classic_generate
        from kubectl_kyrec.model import EvalError

        for policy in policies.classic:
            refused = refused_by_kyverno(policy)
            if refused is not None and any(r.type == "generate" for r in policy.rules):
                located = policies.locate(refused)
                outcome.errors.append(EvalError(located.message, located.source))
        # the run's --registry is its provider's (run/providers.py validated_for_run)
        registry = environments_for(inputs, now).provider.registry
        merge(outcome, run_classic_generate(policies.classic, triggers, inputs.state.objects,
                                            kinds=inputs.kinds, options=options,
                                            exceptions=policies.classic_exceptions, trigger_filter=keep,
                                            registry=registry))
    return outcome
