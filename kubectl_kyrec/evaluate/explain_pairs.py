"""The pure middle of `explain`: policies x subjects -> one decision tree per pair, made as `run_eval`
(pipeline.py) makes its results: the same subjects, requests, namespaces and compiled policies.

For a manifest, the first tree is what admission made of it before its policies were evaluated
(`explain_chain`): `explain` validates what `eval` validates, the manifest as the API server would store it,
and this tree says how it got there: the API server's defaults (each field they set), then each mutating
policy that answered (its results, and the JSON patch of what it changed), and why the stored object may
not be known (`undetermined`). Read from the chain's own record: it decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubectl_kyrec.cel.environment import Environments, LibraryFactory
from kubectl_kyrec.evaluate.admission_chain import Admission, MutationEngine
from kubectl_kyrec.evaluate.deleting.engine import (
    compile_deleting_policies,
    evaluate_object,
    next_run,
)
from kubectl_kyrec.evaluate.deleting.engine import subject_context as deleting_context
from kubectl_kyrec.evaluate.explain import NONE, Explanation, patch_nodes, record, recorded, result_node
from kubectl_kyrec.evaluate.namespaces import namespace_objects
from kubectl_kyrec.evaluate.pipeline import (
    EvalOptions,
    admission_chain,
    compile_run,
    evaluate_policies,
    select_subjects,
    subject_context,
)
from kubectl_kyrec.evaluate.subjects import KindLookup
from kubectl_kyrec.evaluate.validating.engine import candidate_variants
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.model import Document, EvalError, Notice, Obj, Ref, Result, Subject
from kubectl_kyrec.recording import Step, Trace

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.generating.engine import TriggerOutcome


# the policyKind of a manifest's admission tree (it has no policy of its own)
ADMISSION = "Admission"
# the order of a subject's trees after the ValidatingPolicies' and admission policies' (evaluate_policies)
_SHOWN = {"ImageValidatingPolicy": 1, "NamespacedImageValidatingPolicy": 1, "ClusterPolicy": 2, "Policy": 2}


@dataclass
class ExplainOutcome:
    explanations: list[Explanation] = field(default_factory=list)
    errors: list[EvalError] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)


def explain_pairs(policies: PolicySet, resources: Sequence[Document], state: Sequence[Document], *,
                  kinds: KindLookup, libraries: LibraryFactory, options: EvalOptions,
                  namespaces_from: Sequence[Document] | None = None,
                  generate: Callable[[Sequence[Admission]], Sequence[TriggerOutcome]] = lambda _: (),
                  envs: Environments | None = None) -> ExplainOutcome:
    """`namespaces_from`: the documents whose Namespaces label the namespaces, when `resources` were
    narrowed to a picked subject (default: `resources`, as in run_eval); `generate`: the run's generation
    (run/generate.py, as eval runs it) on the admissions of this very chain, returning the outcomes of its
    classic generate rules, whose results their policies' trees end in; `envs`: the run's environments over
    `libraries`, which compiled the policies already."""
    out = ExplainOutcome()
    if envs is None:
        envs = Environments(libraries)
    run = compile_run(policies, state, kinds, envs, options, out.notices, out.errors, "not explained")
    classic = run.classic
    deleting, errors = compile_deleting_policies(policies, envs, options.now, options.selection.holds_policy)
    out.errors.extend(errors)
    subjects, notices = select_subjects(resources, state, kinds, options.selection)
    out.notices.extend(notices)
    namespaces = namespace_objects([*state, *(resources if namespaces_from is None else namespaces_from),
                                    *options.namespaces], options.namespace_labels)
    chained = None
    # what the chain's mutating engines record for each subject (AdmissionChain.traces): their policies' trees
    traces: dict[int, dict[int, Trace]] = {}
    engines: list[MutationEngine] = []
    if not options.admit and (policies.mutating or policies.mutating_admission):
        # as in eval: a mutating policy answers at admission, and these subjects are not admitted
        out.notices.append(Notice("MutatingPolicies and MutatingAdmissionPolicies are explained on manifests "
                                  "admitted as eval admits them; these subjects are not (objects read from a "
                                  "cluster, or --no-mutate)"))
    if options.admit:
        # the objects eval validates: the manifests as admission would store them, and how they got there
        chain = admission_chain(policies, envs, options, state, kinds, out.notices, out.errors)
        chain.traces, engines = traces, chain.engines
        chained = chain.admit(subjects, lambda s: subject_context(s, namespaces, options), options.operation)
        written = subjects
        subjects = chained.subjects
    generated_for: dict[Ref, list[Result]] = {}
    triggers: dict[Ref, Subject] = {}
    # generation starts from the triggers as this chain admitted them (evaluate/generating/admitted.py)
    for o in generate(chained.admissions if chained is not None else []):
        triggers[o.trigger.ref] = o.trigger
        if o.result is not None:
            generated_for.setdefault(o.trigger.ref, []).append(o.result)
    # the mutation results of each subject, grouped once (by its Ref, which the results share)
    mutation_results: dict[int, list[Result]] = {}
    for r in chained.results if chained is not None else ():
        mutation_results.setdefault(id(r.subject), []).append(r)
    for index, subject in enumerate(subjects):
        mine = mutation_results.get(id(subject.ref), [])
        if chained is not None:
            admitted_as = chained.admissions[index]
            # (the defaults alone are no policy's doing: listed in eval -o json, not given a tree of their own)
            if admitted_as.mutations or mine or admitted_as.undetermined or admitted_as.operation == "DELETE":
                out.explanations.append(explain_chain(written[index].obj, admitted_as, mine))
        ctx = subject_context(subject, namespaces, options)
        # one recording of the subject, read back once: the mutating kinds' trees as the admission chain's calls
        # recorded them, then the calls eval makes (pipeline.py), each recording its policy's tree
        trace = Trace()
        for engine in engines:
            if (mutated := traces.get(id(engine), {}).get(id(subject.ref))) is not None:
                trace.root.children.extend(mutated.root.children)
        # eval's evaluation of the subject (each policy, not only those whose variants may match), recording the
        # trees; a classic mutate rule's results are the admission chain's, a generate rule's the generate run's
        start = len(trace.root.children)
        evaluate_policies(ctx, [(cp, candidate_variants(cp, ctx.request)) for cp in run.validating], run,
                          state=state, kinds=kinds, options=options, recorder=trace,
                          others=[*mine, *generated_for.get(subject.ref, ())])
        # shown as they always were: the ImageValidatingPolicies after the admission policies eval runs after them
        trace.root.children[start:] = sorted(trace.root.children[start:], key=lambda t: _SHOWN.get(t.data[0].kind, 0))
        if deleting:
            deleting_ctx = deleting_context(subject, namespaces)
            for dp in deleting:
                results = record(trace, dp.policy.meta, subject.ref)
                next_run(dp.policy, options.now, recorder=trace)
                results.append(evaluate_object(dp, deleting_ctx, trace).result())
        out.explanations.extend(recorded(trace))
    if classic is not None:
        # a trigger of the generate run beyond the subjects (the Namespace itself under -n, which the run
        # keeps as eval's does): the trees of its generate rules, those of the policies that gave results
        explained = {s.ref for s in subjects}
        trace = Trace()
        for ref in [ref for ref in generated_for if ref not in explained]:
            classic.explain(subject_context(triggers[ref], namespaces, options), trace, generated_for[ref],
                            rule_types=("generate",))
        out.explanations.extend(e for e in recorded(trace) if e.results)
        out.notices.extend(classic.notices)
    return out



def explain_chain(original: Obj, admission: Admission, results: Sequence[Result]) -> Explanation:
    """`original`: the manifest as written; `results`: the mutation engines' results for the subject."""
    subject = admission.subject
    root = Step(f"admission {admission.operation}")
    if admission.operation == "DELETE":
        root.children.append(Step("stored object", NONE, "a DELETE stores nothing: nothing is defaulted or mutated"))
        return Explanation("", ADMISSION, subject.ref, root, [])
    defaults = Step("API-server defaults", "applied" if admission.defaulted else NONE)
    if admission.defaulted and admission.before_mutations is not None:
        defaults.children.extend(patch_nodes(make_patch(original, admission.before_mutations)))
    root.children.append(defaults)
    by_policy: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        by_policy.setdefault((r.source, r.policy), []).append(r)
    for (source, policy), found in by_policy.items():
        node = Step(f"{source} {policy}")
        for m in admission.mutations:
            if m.policy == policy:
                node.children.extend(patch_nodes(m.patch, f"rule {m.rule}: " if m.rule else ""))
        node.children.extend(result_node(r) for r in found)
        root.children.append(node)
    for reason in admission.undetermined:
        root.children.append(Step("stored object", "undetermined", reason))
    return Explanation("", ADMISSION, subject.ref, root, list(results))

