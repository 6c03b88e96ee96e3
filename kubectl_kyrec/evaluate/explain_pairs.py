"""The pure middle of `explain`: eval's own run (pipeline.py `run_eval`) with a recorder, a tree per policy x subject.

A manifest's first tree is what admission made of it, read from the chain's own record (`explain_chain`): the API
server's defaults, each mutating policy that answered (results and JSON patch), and why the stored object may not
be known (`undetermined`): `explain` validates what `eval` does, the manifest as the API server would store it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.cel.environment import Environments, LibraryFactory
from kubectl_kyrec.evaluate.admission_chain import Admission, ChainOutcome
from kubectl_kyrec.evaluate.deleting.engine import (
    CompiledDeletingPolicy,
    compile_deleting_policies,
    evaluate_object,
    next_run,
)
from kubectl_kyrec.evaluate.deleting.engine import subject_context as deleting_context
from kubectl_kyrec.evaluate.explain import NONE, Explanation, patch_nodes, record, recorded, result_node
from kubectl_kyrec.evaluate.pipeline import CompiledRun, EvalOptions, Pairs, run_eval, subject_context
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.model import Document, EvalError, Notice, Obj, Ref, Result, Subject
from kubectl_kyrec.recording import Step, Trace

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.generating.outcomes import TriggerOutcome


# the policyKind of a manifest's admission tree (it has no policy of its own)
ADMISSION = "Admission"
# the order of a subject's trees after the ValidatingPolicies' and admission policies' (evaluate_policies)
_SHOWN = {"ImageValidatingPolicy": 1, "NamespacedImageValidatingPolicy": 1, "ClusterPolicy": 2, "Policy": 2}


def explain_pairs(policies: PolicySet, resources: Sequence[Document], state: Sequence[Document], *,
                  kinds: KindLookup, libraries: LibraryFactory, options: EvalOptions,
                  generate: Callable[[Sequence[Admission]], Sequence[TriggerOutcome]] = lambda _: (),
                  envs: Environments | None = None) -> ExplainOutcome:
    """eval's run (pipeline.py run_eval) with explain's recorder. `generate`: the run's generation
    (run/generate.py, as eval runs it) on the admissions of this very chain, returning the outcomes of its
    classic generate rules, whose results their policies' trees end in; `envs`: as run_eval's."""
    envs = envs if envs is not None else Environments(libraries)
    out = ExplainOutcome(policies, options, envs, generate)
    outcome = run_eval(policies, resources, state, kinds=kinds, libraries=libraries, options=options, envs=envs,
                       recorder=out)
    out.errors, out.notices = outcome.errors, outcome.notices
    if out.run is not None and (classic := out.run.classic) is not None:
        # a trigger of the generate run beyond the subjects (the Namespace itself under -n, which the run
        # keeps as eval's does): the trees of its generate rules, those of the policies that gave results
        noticed, explained, trace = len(classic.notices), {s.ref for s in outcome.subjects}, Trace()
        for ref in [ref for ref in out.generated_for if ref not in explained]:
            classic.explain(subject_context(out.triggers[ref], out.namespaces, options), trace,
                            out.generated_for[ref], rule_types=("generate",))
        out.explanations.extend(e for e in recorded(trace) if e.results)
        out.notices.extend(classic.notices[noticed:])
    return out


class ExplainOutcome:
    """The trees, errors and notices of explain's run; its recorder (pipeline.py RunRecorder) as it runs: each
    subject's trees in order (its admission, the mutating kinds' as the chain recorded them, then each policy's,
    then the DeletingPolicies')."""

    def __init__(self, policies: PolicySet, options: EvalOptions, envs: Environments,
                 generate: Callable[[Sequence[Admission]], Sequence[TriggerOutcome]]) -> None:
        self.policies, self.options, self.envs, self.generate = policies, options, envs, generate
        self.explanations: list[Explanation] = []
        self.errors: list[EvalError] = []
        self.notices: list[Notice] = []
        # the admission chain's recordings (AdmissionChain.traces): per engine, in the chain's order, per subject
        self.traces: dict[int, dict[int, Trace]] = {}
        self.run: CompiledRun | None = None
        self.namespaces: Mapping[str, Mapping[str, Any]] = {}
        self.deleting: list[CompiledDeletingPolicy] = []
        # per subject (by id of its Ref): the manifest as written, its admission, the chain's results for it
        self.admissions: dict[int, tuple[Obj, Admission, list[Result]]] = {}
        self.generated_for: dict[Ref, list[Result]] = {}
        self.triggers: dict[Ref, Subject] = {}

    def start(self, run: CompiledRun, namespaces: Mapping[str, Mapping[str, Any]], notices: list[Notice],
              errors: list[EvalError]) -> None:
        self.run, self.namespaces = run, namespaces
        self.deleting, failed = compile_deleting_policies(self.policies, self.envs, self.options.now,
                                                          self.options.selection.holds_policy)
        errors.extend(failed)
        if not self.options.admit and (self.policies.mutating or self.policies.mutating_admission):
            # as in eval: a mutating policy answers at admission, and these subjects are not admitted
            notices.append(Notice("MutatingPolicies and MutatingAdmissionPolicies are explained on manifests "
                                  "admitted as eval admits them; these subjects are not (objects read from a "
                                  "cluster, or --no-mutate)"))

    def admitted(self, written: Sequence[Subject], chained: ChainOutcome | None) -> None:
        for w, a in zip(written, chained.admissions if chained is not None else ()):
            self.admissions[id(w.ref)] = (w.obj, a, [])
        for r in chained.results if chained is not None else ():
            self.admissions[id(r.subject)][2].append(r)
        # generation starts from the triggers as this chain admitted them (evaluate/generating/admitted.py)
        for o in self.generate(chained.admissions if chained is not None else []):
            self.triggers[o.trigger.ref] = o.trigger
            if o.result is not None:
                self.generated_for.setdefault(o.trigger.ref, []).append(o.result)

    def evaluate(self, ctx: SubjectContext, evaluate: Callable[[Trace, Sequence[Result]], Pairs]) -> Pairs:
        subject = ctx.subject
        if (admitted := self.admissions.get(id(subject.ref))) is not None:
            original, admission, mine = admitted
            # (the defaults alone are no policy's doing: listed in eval -o json, not given a tree of their own)
            if admission.mutations or mine or admission.undetermined or admission.operation == "DELETE":
                self.explanations.append(explain_chain(original, admission, mine))
        # one recording of the subject, read back once: the mutating kinds' trees as the admission chain's calls
        # recorded them, then each policy's as eval evaluates it; a classic mutate rule's results are the
        # admission chain's, a generate rule's the generate run's
        trace = Trace()
        for by_subject in self.traces.values():
            if (mutated := by_subject.get(id(subject.ref))) is not None:
                trace.root.children.extend(mutated.root.children)
        start = len(trace.root.children)
        pairs = evaluate(trace, [*(admitted[2] if admitted else ()), *self.generated_for.get(subject.ref, ())])
        # shown as they always were: the ImageValidatingPolicies after the admission policies eval runs after them
        trace.root.children[start:] = sorted(trace.root.children[start:], key=lambda t: _SHOWN.get(t.data[0].kind, 0))
        deleting_ctx = deleting_context(subject, self.namespaces)
        for dp in self.deleting:
            results = record(trace, dp.policy.meta, subject.ref)
            next_run(dp.policy, self.options.now, recorder=trace)
            results.append(evaluate_object(dp, deleting_ctx, trace).result())
        self.explanations.extend(recorded(trace))
        return pairs


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

