"""The pure middle of `eval`: policies x subjects -> results and expected reports.

No files, no network, no printing: everything comes in as loaded documents and goes out as data.
"""

from __future__ import annotations

import datetime
import itertools
import marshal
import os
import pickle
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, Protocol

from kubectl_kyrec.cel.environment import Environments, LibraryFactory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.admission_chain import (
    Admission,
    AdmissionChain,
    ChainOutcome,
    MutationEngine,
    order_resolved,
    paired_with_old,
    undetermined_by_admission,
)
from kubectl_kyrec.evaluate.explain import NONE, record, result_node
from kubectl_kyrec.evaluate.fan_out import SliceCounts, fan_out, fan_out_stream
from kubectl_kyrec.evaluate.namespaces import namespace_object, namespace_objects
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext, make_subjects
from kubectl_kyrec.evaluate.validating import engine as validating_engine
from kubectl_kyrec.evaluate.validating.engine import (
    CompiledValidatingPolicy,
    KindPlan,
    candidate_variants,
    compile_validating_policy,
    evaluate_validating,
)
from kubectl_kyrec.evaluate.validating_admission.engine import (
    CompiledAdmissionPolicy,
    VapRunner,
    compile_admission_policies,
)
from kubectl_kyrec.evaluate.validating_admission.engine import evaluate_admission as evaluate_vap
from kubectl_kyrec.k8s.labels import matches_selector
from kubectl_kyrec.load.policy.policies import PolicySet
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import (
    UNDETERMINED,
    WGPOLICY,
    Document,
    EvalError,
    Notice,
    Ref,
    Result,
    ResultPairs,
    Source,
    Subject,
)
from kubectl_kyrec.recording import Step, Trace

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.classic.engine import ClassicEvaluator, ClassicOptions
    from kubectl_kyrec.evaluate.image_validating.engine import CompiledImageValidatingPolicy


@dataclass(frozen=True)
class EvalOptions:
    now: datetime.datetime
    operation: str = "CREATE"
    user_info: Mapping[str, Any] = field(default_factory=dict)
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    namespaces: tuple[Document, ...] = ()       # Namespace objects a values file adds to the cluster
    selection: Selection = Selection()      # subjects by kind and labels, policies by name
    report_api: str = WGPOLICY
    # ValidatingAdmissionPolicy: Kyverno's scan (default) or its CLI, with the test's paramResources
    vap_runner: VapRunner = VapRunner.SCAN
    vap_params: tuple[Document, ...] = ()
    # evaluation modes whose payloads the caller evaluates (JSON with --json/jsonPayloads): no notice for them
    payload_modes: tuple[str, ...] = ()
    classic: ClassicOptions | None = None   # values, mocks, roles; None: the state answers
    # processes the subjects are evaluated in (evaluate/fan_out.py), for runs of PARALLEL_PAIRS pairs or more
    jobs: int = 1
    # the subjects are manifests to be admitted: defaulting and mutation first (evaluate/admission_chain.py);
    # False for objects read from a cluster (stored already) and for `--no-mutate`
    admit: bool = False
    # `eval --old`: the manifests before the change; the subjects become the requests the change makes
    # (CREATE, UPDATE with oldObject, DELETE). None: every subject is a request of `operation`
    old: tuple[Document, ...] | None = None
    # `--registry`: image verification asks the registries image references name (load/registry.py);
    # None: offline, the results that need one are undetermined (needs-registry)
    registry: Registry | None = None


@dataclass
class EvalOutcome:
    results: list[Result] = field(default_factory=list)
    subjects: list[Subject] = field(default_factory=list)
    errors: list[EvalError] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    policy_count: int = 0
    # every result with whether the background scan would report it (the input of `reports`); its
    # `results` list is `results`
    pairs: ResultPairs = field(default_factory=ResultPairs)
    now: datetime.datetime | None = None
    report_api: str = WGPOLICY
    # what the admission chain made of each subject (EvalOptions.admit), in subject order
    admissions: list[Admission] = field(default_factory=list)
    # how many subjects were evaluated: len(subjects), or, of resources read as they are evaluated (run_eval),
    # the count alone (their subjects are not kept, and of their admissions only those that mutated, without
    # their objects: what the table's MUTATED rows show)
    subject_count: int = 0


def reportable(result: Result, background: bool, disabled: bool) -> bool:
    """Would the background scan put this result in a report?"""
    if disabled or not background:
        return False
    # a matchConditions skip (rule "" and message "skip") is dropped by the scan
    return not (result.result == "skip" and result.rule == "" and result.message == "skip")



# below this many (subject, policy) pairs a second process costs more than it saves (forking a process
# of a few hundred MiB and shipping its results back take some 20 ms)
PARALLEL_PAIRS = 20_000

# a worker evaluates at most this many (subject, policy) pairs, then ends and another takes the next slice:
# what cel-expr-python never frees (fan_out) then grows with this, not with the run (about 15 MiB at
# 100,000 pairs of the 24 corpus Pod policies)
WORKER_PAIRS = 100_000

class AdmissionPairs(ResultPairs):
    """The admission chain's own results (the mutations'), never reported. A whole run hands every subject's
    on before any validation result, a stream each slice's before that slice's validation results: an output
    that writes results in the whole run's order puts these ahead of the rest (render/result_spill.py)."""

    __slots__ = ()


class _SliceAnswer:
    """One slice of the subjects, evaluated as it is read: `chunks`, its (result, reportable) pairs a few
    thousand at a time (each of whole subjects), then, once they are all read, `noticed`: the classic notices
    it raised (with their keys); `count`: how many subjects it holds."""

    __slots__ = ("chunks", "count", "noticed", "told")

    def __init__(self, count: int) -> None:
        self.count = count
        self.chunks: Iterator[ResultPairs] = iter(())
        self.noticed: list[tuple[Any, Notice]] = []
        self.told = False       # its subjects were told to `on_subject` as they were evaluated (in this process)


def compile_selected(policies: PolicySet, envs: Environments, options: EvalOptions, notices: list[Notice],
                     errors: list[EvalError], passed_over: str
                     ) -> tuple[list[CompiledValidatingPolicy], list[CompiledAdmissionPolicy]]:
    """The selected ValidatingPolicies and admission policies of the run, compiled once; a policy of a
    payload mode is noted (`passed_over`: what the command does with it) unless the run evaluates that
    mode's payloads, and a policy that does not compile is an error at its file:line."""
    compiled: list[CompiledValidatingPolicy] = []
    for policy in policies.validating:
        if not options.selection.holds_policy(policy.meta.key):
            continue
        if policy.mode != "Kubernetes":
            if policy.mode in options.payload_modes:
                continue
            notices.append(Notice(f"{policy.meta.kind} {policy.meta.name!r}: evaluation mode {policy.mode} "
                                  f"applies to payloads, not Kubernetes resources; {passed_over}",
                                  policy.meta.source))
            continue
        try:
            compiled.append(compile_validating_policy(policy, envs, policies.exceptions, options.now))
        except InputError as exc:
            located = policies.locate(exc)
            errors.append(EvalError(located.message, located.source))
    admission: list[CompiledAdmissionPolicy] = []
    try:
        admission = [a for a in compile_admission_policies(policies.admission, policies.bindings, envs)
                     if options.selection.holds_policy(a.policy.meta.key)]
    except InputError as exc:
        located = policies.locate(exc)
        errors.append(EvalError(located.message, located.source))
    return compiled, admission


def compile_image_validating(policies: PolicySet, envs: Environments, options: EvalOptions,
                             notices: list[Notice], errors: list[EvalError]) -> list[CompiledImageValidatingPolicy]:
    """The selected ImageValidatingPolicies of the run, compiled once; a JSON-mode one is noted and passed
    over (kyrec evaluates no JSON payload with them yet), one that does not compile is an error."""
    compiled: list[CompiledImageValidatingPolicy] = []
    if not policies.image_validating:
        return compiled
    # imported only then: the engine's image verification (cosign, Notary, cryptography's x509) is about a
    # sixth of the start-up of a run without ImageValidatingPolicies
    from kubectl_kyrec.evaluate.image_validating.engine import compile_image_validating_policy

    for policy in policies.image_validating:
        if not options.selection.holds_policy(policy.meta.key):
            continue
        if policy.mode != "Kubernetes":
            notices.append(Notice(f"{policy.meta.kind} {policy.meta.name!r}: evaluation mode {policy.mode} "
                                  "applies to payloads, not Kubernetes resources; kyrec does not evaluate "
                                  "JSON payloads with ImageValidatingPolicies (skipped)", policy.meta.source))
            continue
        try:
            compiled.append(compile_image_validating_policy(policy, envs, policies.exceptions, options.now,
                                                            options.registry))
        except InputError as exc:
            located = policies.locate(exc)
            errors.append(EvalError(located.message, located.source))
    return compiled


@dataclass(frozen=True)
class CompiledRun:
    """The selected policies of a run, compiled once: what each subject is evaluated with (evaluate_policies)."""

    validating: list[CompiledValidatingPolicy]
    admission: list[CompiledAdmissionPolicy]
    images: list[CompiledImageValidatingPolicy]
    classic: ClassicEvaluator | None

    @property
    def count(self) -> int:
        classic = len(self.classic.compiled) if self.classic is not None else 0
        return len(self.validating) + len(self.admission) + len(self.images) + classic


def compile_run(policies: PolicySet, state: Sequence[Document], kinds: KindLookup, envs: Environments,
                options: EvalOptions, notices: list[Notice], errors: list[EvalError], passed_over: str) -> CompiledRun:
    """compile_selected, compile_image_validating and classic_evaluator, a policy that does not compile an error
    at its file:line; `passed_over`: what the command does with a policy of a payload mode."""
    validating, admission = compile_selected(policies, envs, options, notices, errors, passed_over)
    images = compile_image_validating(policies, envs, options, notices, errors)
    classic = classic_evaluator(policies, state, kinds, envs, options)
    for error in classic.errors if classic is not None else ():
        located = policies.locate(error)
        errors.append(EvalError(located.message, located.source))
    return CompiledRun(validating, admission, images, classic)


def run_eval(policies: PolicySet, resources: Sequence[Document] | Iterator[Document], state: Sequence[Document], *,
             kinds: KindLookup, libraries: LibraryFactory, options: EvalOptions,
             on_subject: Callable[[Subject], None] | None = None,
             on_total: Callable[[int], None] | None = None,
             on_results: Callable[[ResultPairs], object] | None = None,
             envs: Environments | None = None,
             on_admissions: Callable[[Sequence[Admission]], object] | None = None,
             recorder: RunRecorder | None = None, expected: int = 0) -> EvalOutcome:
    """`on_subject`: called once per subject evaluated; `on_total`: told how many there will be, once the
    filters have chosen them (a progress line's total and estimate). `on_results`: handed the results in
    order, a chunk at a time as they are decided, instead of the outcome's `results` and `pairs` (left empty),
    so that a caller that keeps only some of them never holds them all. `envs`: environments over `libraries`
    that already compiled the policies (their validation's), so nothing is compiled twice.

    `resources` as an iterator (eval's -r, issue 36): read a slice at a time, each slice selected, admitted
    and evaluated (in a worker with `jobs`) while the next is read, and dropped once its results are handed
    on: the outcome keeps no subject or admission (`subject_count` says how many), and `on_total` is not
    called (how many there are is known at the end only). The caller vouches that the iterator holds no
    Namespace but the state's (the namespaces are the state's and the options': eval's --state read as it is
    evaluated keeps its Namespaces in `state`), and there is no `old`. `on_admissions`: handed each slice's
    admissions whole (the objects as stored) before the slice is dropped, for an output that prints them
    (`-o json`'s `admission`); a stream only (a whole run's are the outcome's `admissions`).

    `recorder` (explain's, RunRecorder): the run's steps told to it, each subject evaluated by it, with every
    engine recording; the subjects then a Sequence, evaluated in this process, on no other mutation order.

    `expected`: how many documents the iterator holds (0: not known), which sizes its slices
    (stream_slice_sizes)."""
    out = EvalOutcome(notices=list(policies.notices), now=options.now, report_api=options.report_api)
    if envs is None:
        envs = Environments(libraries)
    run = compile_run(policies, state, kinds, envs, options, out.notices, out.errors,
                      "skipped" if recorder is None else "not explained")
    compiled, classic = run.validating, run.classic
    out.policy_count = run.count

    streamed = not isinstance(resources, Sequence)
    if streamed and options.old is not None:
        raise ValueError("--old pairs every manifest with its old one: the manifests cannot be read as a stream")
    subjects: list[Subject] = []
    if not isinstance(resources, Sequence):
        namespaces = namespace_objects([*state, *options.namespaces], options.namespace_labels)
    else:
        subjects, notices = select_subjects(resources, state, kinds, options.selection)
        out.notices.extend(notices)
        namespaces = namespace_objects([*state, *resources, *options.namespaces], options.namespace_labels)
    # where the subjects' notices go (before the admission chain's), for a stream's found on the way
    subject_notices_at = len(out.notices)
    chain_results: list[tuple[Result, bool]] = []
    if recorder is not None:
        recorder.start(run, namespaces, out.notices, out.errors)
    chain = admission_chain(policies, envs, options, state, kinds, out.notices, out.errors) \
        if options.admit else None
    if recorder is not None and chain is not None:
        chain.traces = recorder.traces
    if options.old is not None:
        old_subjects, _ = select_subjects(options.old, state, kinds, options.selection)
        subjects = paired_with_old(subjects, old_subjects, chain.default if chain is not None else None)
    if chain is not None and not streamed:
        written = subjects
        chained = chain.admit(subjects, lambda s: subject_context(s, namespaces, options), options.operation)
        subjects = chained.subjects
        out.admissions = chained.admissions
        # a mutation's result here is admission's; Kyverno's background scan reports mutating policies its
        # own way (a rule that would still change the stored object fails: reports controller scanner.go
        # ScanResource), which kyrec does not model: the expected reports leave them out (docs/compatibility.md)
        chain_results = [(r, False) for r in chained.results if options.selection.holds_policy(r.policy)]
        if recorder is not None:
            recorder.admitted(written, chained)
    elif recorder is not None:
        recorder.admitted(subjects, None)
    out.subjects.extend(subjects)
    out.subject_count = len(subjects)
    if on_total is not None and not streamed:
        on_total(len(out.subjects))
    # which policies can apply depends on the request's kind and operation only: decide it once per kind
    by_kind: dict[tuple[str, str, str, str, str, bool], KindPlan] = {}
    parent = os.getpid()

    # a worker's progress reaches this process's progress line through shared counts, every 64 subjects
    counts = SliceCounts() if on_subject is not None and not streamed else None

    def evaluate_slice(subjects: Sequence[Subject]) -> _SliceAnswer:
        answer = _SliceAnswer(len(subjects))

        def chunks() -> Iterator[ResultPairs]:
            pairs = ResultPairs()
            tick = on_subject if os.getpid() == parent else None     # a worker tells through `counts`
            answer.told = tick is not None
            for done, subject in enumerate(subjects, 1):
                if counts is not None and not done & 63:
                    if tick is not None:
                        for index in counts.news():
                            tick(out.subjects[index])
                    else:
                        counts.advance(done)
                if tick is not None:
                    tick(subject)
                pairs.extend(evaluate_subject(subject))
                # a chunk ends with a subject: the admission step below decides on a subject's results together
                if len(pairs) >= _CHUNK:
                    yield pairs
                    pairs = ResultPairs()
            if pairs:
                yield pairs
            answer.noticed = classic.noticed() if classic is not None else []

        answer.chunks = chunks()
        return answer

    def evaluate_subject(subject: Subject, explained: bool = True) -> list[tuple[Result, bool]]:
        ctx = subject_context(subject, namespaces, options)
        if recorder is not None and explained:
            def evaluate(trace: Trace, others: Sequence[Result]) -> Pairs:
                # explain's: a tree for every ValidatingPolicy, whichever of its variants may match
                pairs = evaluate_policies(ctx, [(cp, candidate_variants(cp, ctx.request)) for cp in compiled], run,
                                          state=state, kinds=kinds, options=options, recorder=trace, others=others)
                # admission decides of the verdicts as in eval's run (per subject), the trees ending in its verdicts
                return pairs if admitted is None else admitted.recorded(pairs, trace)
            return recorder.evaluate(ctx, evaluate)
        request = ctx.request
        key = (request.group, request.version, request.resource, request.subresource, request.operation,
               bool(request.namespace))
        if key not in by_kind:
            by_kind[key] = KindPlan((cp, cands) for cp in compiled if (cands := candidate_variants(cp, request)))
        return evaluate_policies(ctx, by_kind[key], run, state=state, kinds=kinds, options=options)

    evaluators = run.count
    jobs = options.jobs if len(out.subjects) * evaluators >= PARALLEL_PAIRS and recorder is None else 1

    def waiting() -> None:
        if counts is not None and on_subject is not None:
            for index in counts.news():
                on_subject(out.subjects[index])

    def admitted_of(admissions: Sequence[Admission]) -> _Admitted | None:
        if not admissions:
            return None
        # a subject whose admitted object only an order Kyverno does not fix leaves open: validation is
        # decided on each object the orders admit too (in this process: they are few)
        on_alternatives = {id(a.subject.ref): [[r for r, _ in evaluate_subject(replace(a.subject, obj=alt), False)]
                                               for alt in a.alternatives]
                           for a in admissions if a.alternatives}
        return _Admitted(admissions, on_alternatives)

    # (explain's run decides it per subject as it records, evaluate_subject)
    admitted = admitted_of(out.admissions)
    # the results go to `on_results` a chunk at a time, as they are decided (and are not kept here), or
    # into the outcome; the mutation results first, in either case
    kept = ResultPairs()
    give: Callable[[ResultPairs], object] = on_results if on_results is not None else kept.extend
    if chain_results:
        first = AdmissionPairs()
        first.extend(chain_results)
        give(first)

    def consume_steps(answer: _SliceAnswer, admitted: _Admitted | None = admitted if recorder is None else None
                      ) -> Iterator[None]:
        # a step per chunk handed on: a stream starts its next slice between them (fan_out_stream)
        for chunk in answer.chunks:
            if admitted is not None:
                if isinstance(chunk, EncodedPairs):
                    chunk.record = None         # admission may change its results in place
                chunk = admitted.apply(chunk)
            give(chunk)
            yield
        if classic is not None:
            classic.merge_noticed(answer.noticed)      # a worker's; this process's own are there already

    def consume(answer: _SliceAnswer) -> None:
        for _ in consume_steps(answer):
            pass

    if not isinstance(resources, Sequence):
        subject_notices: list[Notice] = []
        uids = state_uids(state)
        _evaluate_stream(resources, _StreamSteps(
            select=lambda docs, seen: select_subjects(docs, state, kinds, options.selection, uids=uids,
                                                      unknown_seen=seen),
            admit=(lambda picked: chain.admit(picked, lambda s: subject_context(s, namespaces, options),
                                              options.operation)) if chain is not None else None,
            holds=options.selection.holds_policy, admitted_of=admitted_of, evaluate=evaluate_slice, give=give,
            consume=consume_steps, on_subject=on_subject, on_admissions=on_admissions,
            known_namespaces=frozenset((d.api_version, d.name) for d in state if d.kind == "Namespace")),
            out, subject_notices, evaluators=evaluators, jobs=options.jobs, expected=expected)
        out.notices[subject_notices_at:subject_notices_at] = subject_notices
        out.results = kept.results
        out.pairs = kept
        if classic is not None:
            out.notices.extend(classic.notices)
        return out
    # with workers, this process evaluates nothing itself: the memory cel-expr-python never frees (fan_out)
    # dies with the workers, and this process holds only what `on_results` keeps
    fan_out(out.subjects, evaluate_slice, jobs=jobs, encode=_encode_slice, decode=_SliceDecoder(out.subjects),
            counts=counts, here=False, waiting=waiting, consume=consume,
            slice_max=max(1, WORKER_PAIRS // max(1, evaluators)))
    if counts is not None and on_subject is not None:
        for index in counts.news(final=True):           # the workers' subjects not told yet
            on_subject(out.subjects[index])
    out.results = kept.results
    out.pairs = kept
    if classic is not None:
        out.notices.extend(classic.notices)
    return out


# one subject's (result, reportable) pairs
Pairs = list[tuple[Result, bool]]


class RunRecorder(Protocol):
    """What run_eval tells `explain` (evaluate/explain_pairs.py) of its run, in its order: `start`, the run's
    compiled policies and namespaces (its notices and errors to add to), `traces` the admission chain's
    (AdmissionChain.traces), `admitted` the subjects as written and as admitted (None: not admitted), then
    `evaluate` each subject: `evaluate` the subject's evaluate_policies, given the
    recorder's trace and the subject's results of the other engines (`others`)."""

    traces: dict[int, dict[int, Trace]]

    def start(self, run: CompiledRun, namespaces: Mapping[str, Mapping[str, Any]], notices: list[Notice],
              errors: list[EvalError]) -> None: ...

    def admitted(self, written: Sequence[Subject], chained: ChainOutcome | None) -> None: ...

    def evaluate(self, ctx: SubjectContext, evaluate: Callable[[Trace, Sequence[Result]], Pairs]) -> Pairs: ...


def evaluate_policies(ctx: SubjectContext, validating: Sequence[tuple[CompiledValidatingPolicy, Any]],
                      run: CompiledRun, *, state: Sequence[Document], kinds: KindLookup, options: EvalOptions,
                      recorder: Trace | None = None, others: Sequence[Result] = ()) -> list[tuple[Result, bool]]:
    """One subject's (result, reportable) of every policy of `run`, in eval's order; `validating`: the run's
    ValidatingPolicies with the variants that may match the request (candidate_variants). `recorder`
    (explain's): each policy's tree recorded as it is evaluated (evaluate/explain.py `record`), the classic
    trees ending in `others` too (the subject's results of the admission chain and the generate run)."""
    pairs: list[tuple[Result, bool]] = []
    ref = ctx.subject.ref
    if recorder is None:
        # eval's path, once per (subject, policy): no tree to start, the kind's variants flattened once
        # (KindPlan), each evaluated as evaluate_validating would (a namespaced policy sees its own namespace)
        append = pairs.append
        namespace = ctx.request.namespace
        evaluate = validating_engine.evaluate_variant
        steps = validating.steps if isinstance(validating, KindPlan) else KindPlan(validating).steps
        for cp, cv, rules_by_kind, fixed in steps:
            own_namespace = fixed.own_namespace
            if own_namespace is not None and namespace != own_namespace:
                continue
            result = evaluate(cp, cv, ctx, rules_by_kind)
            if result is not None:
                append((result, reportable(result, fixed.background, fixed.disabled)))
    else:
        for cp, candidates in validating:
            results = record(recorder, cp.policy.meta, ref)
            results.extend(evaluate_validating(cp, ctx, candidates, recorder))
            for result in results:
                pairs.append((result, reportable(result, cp.policy.background, cp.fixed.disabled)))
    if run.images:
        # (imported with the policies' compiling, compile_image_validating)
        from kubectl_kyrec.evaluate.image_validating.engine import evaluate_image_validating
    for ip in run.images:
        disabled = "reports.kyverno.io/disabled" in ip.policy.meta.labels
        results = record(recorder, ip.policy.meta, ref)
        results.extend(evaluate_image_validating(ip, ctx, recorder))
        for result in results:
            # the background scan runs the cluster-scoped kind only (kk: report/utils/scanner.go
            # AsImageValidatingPolicy); undetermined is never reported
            scanned = ip.policy.background and ip.policy.meta.kind == "ImageValidatingPolicy"
            pairs.append((result, result.result != UNDETERMINED and reportable(result, scanned, disabled)))
    for ap in run.admission:
        results = record(recorder, ap.policy.meta, ref)
        results.extend(evaluate_vap(ap, ctx, state=state, kinds=kinds, runner=options.vap_runner,
                                    params=options.vap_params, recorder=recorder))
        for result in results:
            pairs.append((result, reportable(result, True, False)))
    if run.classic is not None:
        pairs.extend(run.classic.evaluate(ctx) if recorder is None else run.classic.explain(ctx, recorder, others))
    return pairs


@dataclass(frozen=True)
class _StreamSteps:
    """run_eval's steps, as `_evaluate_stream` applies them to each slice of a stream."""

    select: Callable[[Sequence[Document], set[tuple[str, str]]], tuple[list[Subject], list[Notice]]]
    admit: Callable[[Sequence[Subject]], Any] | None        # the admission chain's ChainOutcome of a slice
    holds: Callable[[str], bool]                            # the policy names selected (--policy-name)
    admitted_of: Callable[[Sequence[Admission]], _Admitted | None]
    evaluate: Callable[[Sequence[Subject]], _SliceAnswer]
    give: Callable[[ResultPairs], object]
    consume: Callable[[_SliceAnswer, _Admitted | None], Iterator[None]]      # a step per chunk handed on
    on_subject: Callable[[Subject], None] | None
    on_admissions: Callable[[Sequence[Admission]], object] | None = None
    # the state's Namespaces (apiVersion, name): the stream of a state read as it is evaluated holds them too
    known_namespaces: frozenset[tuple[str, str]] = frozenset()


@dataclass
class _Slice:
    """One slice of a stream, selected and admitted: what its worker evaluates, the admission chain's own
    results (handed on first) and what admission decides of the validation results."""

    subjects: list[Subject]
    first: ResultPairs
    admitted: _Admitted | None


def _evaluate_stream(resources: Iterator[Document], steps: _StreamSteps, out: EvalOutcome, notices: list[Notice],
                     *, evaluators: int, jobs: int, expected: int = 0) -> None:
    """run_eval's resources read as they are evaluated: WORKER_PAIRS worth of documents at a time are selected,
    admitted and handed to a worker (fan_out_stream) while the next are read; each slice's results are handed
    on in order (its admission chain's results, then its validation results, as a whole run orders them per
    subject) and the slice is dropped. `notices`: the subjects' notices (unknown kinds), found on the way."""
    sizes = stream_slice_sizes(expected, evaluators, jobs)
    read_all = False
    unknown_seen: set[tuple[str, str]] = set()

    def slices() -> Iterator[_Slice]:
        nonlocal read_all
        docs = iter(resources)
        while not read_all:
            size = next(sizes)
            chunk = list(itertools.islice(docs, size))
            read_all = len(chunk) < size
            for doc in chunk:
                # what the caller vouched for (run_eval's docstring)
                if doc.kind == "Namespace" and (doc.api_version, doc.name) not in steps.known_namespaces:
                    raise ValueError("a Namespace among the resources read as a stream")
            picked, noticed = steps.select(chunk, unknown_seen)
            del chunk
            notices.extend(noticed)
            if not picked:
                continue
            first = AdmissionPairs()
            admitted = None
            if steps.admit is not None:
                chained = steps.admit(picked)
                picked = chained.subjects
                # admission's results, never reported (see run_eval)
                first.extend((r, False) for r in chained.results if steps.holds(r.policy))
                admitted = steps.admitted_of(chained.admissions)
                if steps.on_admissions is not None:
                    steps.on_admissions(chained.admissions)
                out.admissions.extend(replace(a, subject=replace(a.subject, obj={}, old_obj=None),
                                              before_mutations=None, alternatives=())
                                      for a in chained.admissions if a.mutations)
                del chained         # not held by this frame while the next slice is read
            out.subject_count += len(picked)
            yield _Slice(picked, first, admitted)

    def consume(piece: _Slice, answer: _SliceAnswer) -> Iterator[None]:
        if piece.first:
            steps.give(piece.first)
        yield from steps.consume(answer, piece.admitted)
        if steps.on_subject is not None and not answer.told:
            for subject in piece.subjects:
                steps.on_subject(subject)

    stream = slices()
    held = [head] if (head := next(stream, None)) is not None else []
    # a run that fits one small slice is evaluated here, as run_eval's below PARALLEL_PAIRS
    small = read_all and (not held or len(held[0].subjects) * evaluators < PARALLEL_PAIRS)
    del head

    def pieces() -> Iterator[_Slice]:
        if held:
            yield held.pop()
        yield from stream

    fan_out_stream(pieces(), lambda piece: steps.evaluate(piece.subjects), jobs=1 if small else jobs,
                   encode=_encode_slice, decode=lambda piece, file: _SliceDecoder(piece.subjects)(file),
                   consume=consume)


def stream_slice_sizes(expected: int, evaluators: int, jobs: int) -> Iterator[int]:
    """How many documents each slice of a stream takes (_evaluate_stream): at most WORKER_PAIRS pairs' worth.
    With `expected` (how many the files hold; 0: not known) and workers, the expected documents are cut into
    slices within one of each other in size, their number a multiple of `jobs`, so that the workers end
    together rather than one of them evaluating a last, shorter slice alone while the other cores wait
    (10,000 Pods x 24 policies were slices of 4,166, 4,166 and 1,668 Pods on two workers); any documents
    beyond `expected` then go at most WORKER_PAIRS' worth at a time."""
    most = max(1, WORKER_PAIRS // max(1, evaluators))
    if jobs > 1 and expected * evaluators >= PARALLEL_PAIRS:
        # (a run below PARALLEL_PAIRS stays one slice, evaluated in this process)
        count = jobs * -(-expected // (jobs * most))
        yield from (expected * (i + 1) // count - expected * i // count for i in range(count))
    yield from itertools.repeat(most)


class _Admitted:
    """What admission decides of the validation results, a chunk of whole subjects at a time: those of a
    subject whose stored object is not known made undetermined (never reported) but for the verdicts every
    object an unfixed order admits agrees on (`on_alternatives`: per subject, the results on each other
    object), and none of a deleted object reported (it has no report once deleted)."""

    def __init__(self, admissions: Sequence[Admission], on_alternatives: Mapping[int, list[list[Result]]]) -> None:
        self.deleted = {id(a.subject.ref) for a in admissions if a.operation == "DELETE"}
        self.unknown = {id(a.subject.ref): a for a in admissions if a.undetermined and not a.alternatives}
        self.ordered = {id(a.subject.ref): a for a in admissions if a.alternatives}
        self.on_alternatives = on_alternatives

    def apply(self, pairs: ResultPairs) -> ResultPairs:
        unknown, deleted = self.unknown, self.deleted
        if unknown:
            mine = {id(r.subject): unknown[id(r.subject)] for r in pairs.results if id(r.subject) in unknown}
            if mine:
                validated = undetermined_by_admission(pairs.results, list(mine.values()))
                pairs = ResultPairs(validated, bytearray(ok and id(r.subject) not in unknown
                                                         for r, (_, ok) in zip(validated, pairs)))
        if self.ordered:
            by_subject: dict[int, list[int]] = {}
            for i, r in enumerate(pairs.results):
                if id(r.subject) in self.ordered:
                    by_subject.setdefault(id(r.subject), []).append(i)
            for ref, indexes in by_subject.items():
                resolved = order_resolved([pairs.results[i] for i in indexes], self.ordered[ref],
                                          self.on_alternatives.get(ref, []))
                for i, r in zip(indexes, resolved):
                    pairs.results[i] = r
                    pairs.reportable[i] = bool(pairs.reportable[i]) and r.result != UNDETERMINED
        if deleted:
            pairs = ResultPairs(pairs.results, bytearray(ok and id(r.subject) not in deleted for r, ok in pairs))
        return pairs

    def recorded(self, pairs: Pairs, trace: Trace) -> Pairs:
        """`apply` to one subject's pairs in explain's run, recorded where the policies' trees under `trace` say
        their results (evaluate/explain.py `record`): a result decided again says the verdict eval gives, what
        the policy gave kept under it, labelled as given on the object kyrec admitted (ON_UNKNOWN_OBJECT)."""
        final = self.apply(ResultPairs([r for r, _ in pairs], bytearray(ok for _, ok in pairs)))
        again = {id(r): f for (r, _), f in zip(pairs, final.results) if f is not r}
        for root in trace.root.children:
            for node, result in zip([n for n in _result_nodes(root) if n.outcome != NONE], root.data[2]):
                if (verdict := again.get(id(result))) is not None:
                    node.children.append(Step(ON_UNKNOWN_OBJECT, node.outcome, node.detail))
                    node.outcome, node.detail = verdict.result, result_node(verdict).detail
            root.data[2][:] = [again.get(id(r), r) for r in root.data[2]]
        return list(final)


# what a policy gave on the object kyrec admitted, where the object the cluster would store is not known
ON_UNKNOWN_OBJECT = "on the object kyrec could admit"


def _result_nodes(node: Step) -> list[Step]:
    return [node] if node.name == "result" else [n for child in node.children for n in _result_nodes(child)]


def admission_chain(policies: PolicySet, envs: Environments, options: EvalOptions, state: Sequence[Document],
                    kinds: KindLookup, notices: list[Notice], errors: list[EvalError]) -> AdmissionChain:
    """The run's admission chain: the API server's defaults, then its mutating admission in the API server's
    plugin order (docs/admission.md, "Mutation order"): the in-tree MutatingAdmissionPolicy plugin, then the
    webhooks, Kyverno's in the order of their names (`mpol.*` for MutatingPolicies before `mutate.*` for
    ClusterPolicy/Policy mutate rules). A policy that does not compile is an error at its file:line."""
    from kubectl_kyrec.k8s.defaulting import default_object

    engines: list[MutationEngine] = []
    failed: list[InputError] = []
    # every mutating policy of the run, whatever --policy-name picks: the stored object is the cluster's
    # admission of it, and the selection narrows the results shown (run_eval), not the object validated.
    # Each engine is imported only for a set holding its kind (either is None without one): the mutating
    # engines and their typed objects are of no use to a run of other kinds
    if policies.mutating_admission:
        from kubectl_kyrec.evaluate.mutating_admission.engine import mutating_admission_engine

        admission, bad = mutating_admission_engine(policies, envs, params=[*options.vap_params, *state])
        failed.extend(bad)
        if admission is not None:
            engines.append(admission)
    if policies.mutating:
        from kubectl_kyrec.evaluate.mutating.engine import mutating_engine

        mutating, bad = mutating_engine(policies, envs, options.now)
        failed.extend(bad)
        if mutating is not None:
            engines.append(mutating)
    classic = [p for p in policies.classic if any(r.type == "mutate" for r in p.rules)]
    if classic:
        # imported only then: the classic engine takes a tenth of a second to import
        from kubectl_kyrec.evaluate.classic.engine import ClassicOptions, classic_sources
        from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator

        settings = options.classic if options.classic is not None else ClassicOptions()
        sources = classic_sources(state, kinds, settings)
        engines.append(ClassicMutator(classic, policies.classic_exceptions, state=state, now=options.now,
                                      sources=sources, options=settings))
    errors.extend(EvalError(e.message, e.source) for e in failed)
    return AdmissionChain(engines, default=default_object)


def state_uids(state: Sequence[Document]) -> dict[tuple[str, str, str, str], str]:
    """The uid of each object of the state that has one, by (apiVersion, kind, namespace, name)."""
    return {(d.api_version, d.kind, d.namespace, d.name): str((d.obj.get("metadata") or {}).get("uid"))
            for d in state if (d.obj.get("metadata") or {}).get("uid")}


def select_subjects(resources: Sequence[Document], state: Sequence[Document], kinds: KindLookup,
                    selection: Selection, *, uids: Mapping[tuple[str, str, str, str], str] | None = None,
                    unknown_seen: set[tuple[str, str]] | None = None) -> tuple[list[Subject], list[Notice]]:
    """The subjects a run evaluates (uids from the state, --kind and -l applied), and the notices making
    them raised; `eval` and `explain` alike. `uids` (state_uids) and `unknown_seen` (make_subjects): kept
    by the caller across the slices of a stream."""
    subject_set = make_subjects(resources, kinds, uid_from=state_uids(state) if uids is None else uids,
                                unknown_seen=unknown_seen)
    subjects = []
    for subject in subject_set.subjects:
        if selection.kinds and subject.ref.kind not in selection.kinds:
            continue
        labels = (subject.obj.get("metadata") or {}).get("labels") or {}
        if selection.selector is not None and not matches_selector(selection.selector, labels):
            continue
        subjects.append(subject)
    return subjects, list(subject_set.notices)


def subject_context(subject: Subject, namespaces: Mapping[str, Mapping[str, Any]], options: EvalOptions
                    ) -> SubjectContext:
    """The admission request a subject makes, with its namespace: what every policy kind is evaluated on."""
    request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced,
                            operation=subject.operation or options.operation, user_info=options.user_info,
                            old_obj=subject.old_obj)
    ns_obj = None
    if request.namespace and subject.namespaced:
        ns_obj = namespace_object(request.namespace, namespaces)
    return SubjectContext(subject, request, ns_obj)


def classic_evaluator(policies: PolicySet, state: Sequence[Document], kinds: KindLookup, envs: Environments,
                       options: EvalOptions) -> ClassicEvaluator | None:
    """The evaluator of the run's ClusterPolicies/Policies (evaluate/classic/engine.py on the classic
    engine), or None without any: imported only then, as the classic engine takes a tenth of a second to."""
    selected = [p for p in policies.classic if options.selection.holds_policy(p.meta.key)]
    if not selected:
        return None
    from kubectl_kyrec.evaluate.classic.engine import ClassicEvaluator, ClassicOptions, classic_sources

    classic = options.classic if options.classic is not None else ClassicOptions()
    sources = classic_sources(state, kinds, classic)
    return ClassicEvaluator(selected, policies.classic_exceptions, state=state, envs=envs, now=options.now,
                            sources=sources, options=classic)


# A worker's slice crosses the pipe as plain tuples through marshal: pickle spends about 10 us on each
# Result (its dataclass reduction runs in Python), as much as evaluating it did. Objects the worker shared
# (a subject's Ref, a policy's properties) are written once and shared again on the way back. The rows go
# in records of _CHUNK results, each read back and decoded before the next: this process never holds a
# worker's whole answer as bytes, nor all of its rows at once, beside the results made from them.
# A record is its codec's byte and its length, then its bytes: read whole and decoded from memory, since
# marshal.load from a file object calls the file's readinto for every string and number it reads (at 20
# rows a result, about as long as decoding the record itself took).
_MARSHAL, _PICKLE = b"m", b"p"
_HEADER = struct.Struct("<cQ")
_CHUNK = 4096


def _dumps(value: Any) -> bytes:
    try:
        kind, data = _MARSHAL, marshal.dumps(value)
    except ValueError:      # a str subclass somewhere (marshal takes exact types only)
        kind, data = _PICKLE, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(kind, len(data)) + data


_END = object()


def _load(file: BinaryIO) -> Any:
    """The next record of `file`; _END at the end of the file."""
    header = file.read(_HEADER.size)
    if not header:
        return _END
    kind, size = _HEADER.unpack(header)
    return (marshal.loads if kind == _MARSHAL else pickle.loads)(file.read(size))


def _read_raw(file: BinaryIO) -> bytes | None:
    """The next record of `file` as its bytes, header included (a worker's, kept to be spilled as it is:
    EncodedPairs); None at the end of the file."""
    header = file.read(_HEADER.size)
    if not header:
        return None
    return header + file.read(_HEADER.unpack(header)[1])


def _loads(raw: bytes) -> Any:
    kind = raw[:1]
    data = memoryview(raw)[_HEADER.size:]
    return marshal.loads(data) if kind == _MARSHAL else pickle.loads(data)


class EncodedPairs(ResultPairs):
    """A chunk of a worker's answer, decoded, with the record it was read from (`record`: its bytes as
    encode_pairs wrote them): a spill that stores the same records writes them as they are
    (render/result_spill.py ResultSpill.add), not encoded again. None once the results were changed."""

    __slots__ = ("record",)

    def __init__(self, results: list[Result], reportable: bytearray, record: bytes | None) -> None:
        super().__init__(results, reportable)
        self.record = record


def _encode_slice(answer: _SliceAnswer) -> Iterator[bytes]:
    """A record (encode_pairs's, a list) per chunk as the worker evaluates it, then a tuple: the notices
    and the count."""
    for pairs in answer.chunks:
        yield encode_pairs(pairs)
    yield _dumps(([(key, n.message, _source_row(n.source)) for key, n in answer.noticed], answer.count))


def _source_row(value: Source | None) -> tuple[str, int, str] | None:
    return None if value is None else (value.file, value.line, value.via)


def _distinct(column: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """The distinct objects of `column` by identity, in order of their first, and each entry's index among
    them (made by C-level iteration: a column has an entry per result)."""
    by_id = dict(zip(map(id, column), column))
    index = dict(zip(by_id, range(len(by_id))))
    return list(by_id.values()), list(map(index.__getitem__, map(id, column)))


def encode_pairs(pairs: ResultPairs) -> bytes:
    """A chunk of results as one record (read back by `PairsReader`): a worker's answer, or an output's spill
    (render/result_spill.py). The record is columnar: each of Result's fields as a list, the Refs,
    properties and Sources as tables of their distinct values (by identity: the results of a chunk share
    them, and are alive while it is written) with a column of indexes into them, and the reportable flags
    as bytes. Both ways go without a Python step per result, which a row per result took (twice a result's
    evaluation time, in a run whose output reads the spill twice)."""
    results = pairs.results
    columns: list[Sequence[Any]] = list(zip(*results)) if results else [()] * len(Result._fields)
    refs, columns[5] = _distinct(columns[5])
    props, columns[9] = _distinct(columns[9])
    sources, at = _distinct([*columns[11], *columns[12]])
    columns[11], columns[12] = at[:len(results)], at[len(results):]
    # a list: a worker's answer ends with a tuple (_encode_slice)
    return _dumps([columns,
                   [(r.api_version, r.kind, r.namespace, r.name, r.uid, r.synthetic) for r in refs],
                   [dict(p) for p in props],
                   [_source_row(s) for s in sources],
                   bytes(pairs.reportable)])


class _SliceDecoder:
    """`_encode_slice`'s records back to a slice, on the subjects' own Ref and Source objects (as the results
    of a slice evaluated here hold them). Their index is made once, for every worker's answer, and what the
    workers shared (a policy's properties, a message) is shared across records and workers alike."""

    def __init__(self, subjects: Sequence[Subject]) -> None:
        self.subjects = subjects
        self._shared: _Shared | None = None

    def __call__(self, file: BinaryIO) -> _SliceAnswer:
        if self._shared is None:
            shared = self._shared = _Shared()
            for s in self.subjects:
                r = s.ref
                shared.refs[(r.api_version, r.kind, r.namespace, r.name, r.uid, r.synthetic)] = r
                if s.source is not None:
                    shared.sources[(s.source.file, s.source.line, s.source.via)] = s.source
        return _decode_slice(self._shared, file)


# the messages and properties shared across records are kept up to this many each (a run whose messages
# all differ would otherwise keep every one)
_SHARED_MAX = 20_000


@dataclass
class _Shared:
    refs: dict[tuple[Any, ...], Ref] = field(default_factory=dict)
    sources: dict[tuple[str, int, str] | None, Source | None] = field(default_factory=lambda: {None: None})
    # the Sources the results made (a field's line), apart from the subjects' own, kept up to _SHARED_MAX
    made: dict[tuple[str, int, str], Source] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    props: dict[tuple[tuple[str, str], ...], dict[str, str]] = field(default_factory=dict)


def _decode_slice(shared: _Shared, file: BinaryIO) -> _SliceAnswer:
    """The worker's answer, read a record at a time as its chunks are iterated."""
    answer = _SliceAnswer(0)

    def chunks() -> Iterator[ResultPairs]:
        while True:
            raw = _read_raw(file)
            if raw is None:         # the worker's file ends before its notices (as marshal.load said)
                raise EOFError("a worker's answer ended early")
            record = _loads(raw)
            if type(record) is tuple:
                notices, answer.count = record
                answer.noticed = [(key, Notice(message, _shared_source(shared, at))) for key, message, at in notices]
                return
            pairs = _decode_pairs(shared, record)
            yield EncodedPairs(pairs.results, pairs.reportable, raw)

    answer.chunks = chunks()
    return answer


def _shared_source(shared: _Shared, row: tuple[str, int, str] | None) -> Source | None:
    found = shared.sources.get(row, False)
    if found is False:
        assert row is not None
        made = shared.made
        found = made.get(row)
        if found is None:
            found = made[row] = Source(*row)
    return found        # type: ignore[return-value]


def _decode_pairs(shared: _Shared, record: list[Any]) -> ResultPairs:
    """`encode_pairs`'s record back: what it shares made (or found) once per record, the Results made from its
    columns without a Python step per result."""
    columns, ref_rows, props_rows, source_rows, flags = record
    refs, messages, props = shared.refs, shared.messages, shared.props
    for kept in (shared.made, messages, props):
        if len(kept) > _SHARED_MAX:
            kept.clear()
    ref_table = []
    for row in ref_rows:
        ref = refs.get(row)
        if ref is None:
            ref = refs[row] = Ref(*row)
        ref_table.append(ref)
    props_table = [props.setdefault(tuple(p.items()), p) for p in props_rows]
    source_table = [_shared_source(shared, row) for row in source_rows]
    (policy, kind, rule, status, message, ref_at, scored, category, severity, props_at, actions, location,
     policy_location, binding) = columns
    results = list(map(partial(tuple.__new__, Result), zip(  # type: ignore[arg-type]
        policy, kind, rule, status, map(messages.setdefault, message, message), map(ref_table.__getitem__, ref_at),
        scored, category, severity, map(props_table.__getitem__, props_at), actions,
        map(source_table.__getitem__, location), map(source_table.__getitem__, policy_location), binding)))
    return ResultPairs(results, bytearray(flags))


class PairsColumns(NamedTuple):
    """One `encode_pairs` record as it was written, no Result made: each of Result's fields a column (in
    Result._fields' order; `subject`, `properties`, `location` and `policy_location` as indexes into the
    tables), the tables of the distinct Refs, properties and Sources, and the reportable flags. What an output
    that writes every result as text reads (render/result_entries.py): a Result per result only to take its
    fields apart again cost about as much as writing it."""

    columns: list[Sequence[Any]]
    refs: list[Ref]
    properties: list[dict[str, str]]
    sources: list[Source | None]
    reportable: bytes


def read_columns(file: BinaryIO) -> PairsColumns | None:
    """The next `encode_pairs` record of `file` as its columns; None at the end of the file."""
    record = _load(file)
    if record is _END:
        return None
    columns, ref_rows, props_rows, source_rows, flags = record
    return PairsColumns(columns, [Ref(*row) for row in ref_rows], props_rows,
                        [None if row is None else Source(*row) for row in source_rows], flags)


class PairsReader:
    """`encode_pairs`'s records back, one at a time from a file, on Refs and Sources of their own: what they
    share is shared again (a subject's Ref within a record; messages, properties and locations across records,
    up to _SHARED_MAX each)."""

    def __init__(self) -> None:
        self._shared = _Shared()

    def read(self, file: BinaryIO) -> ResultPairs | None:
        """The next record's results; None at the end of the file."""
        record = _load(file)
        if record is _END:
            return None
        shared = self._shared
        # no subject index here: a record's subjects are its own (a chunk holds whole subjects)
        shared.refs.clear()
        return _decode_pairs(shared, record)
