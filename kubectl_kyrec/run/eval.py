"""`eval`: policies x resources -> results, downstreams, expected reports, and what a change does."""

from __future__ import annotations

import dataclasses
import datetime
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import ExitCode, FailedRead, worst
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import EvalError, Result, ResultPairs, Subject
from kubectl_kyrec.run.unreadable import failed_reads, with_failed_reads

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import Environments, LibraryFactory
    from kubectl_kyrec.evaluate.admission_chain import Admission
    from kubectl_kyrec.evaluate.classic.mutate_existing_preview import TargetPreview
    from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
    from kubectl_kyrec.evaluate.pipeline import EvalOptions
    from kubectl_kyrec.load.policy.policies import PolicySet
    from kubectl_kyrec.load.run_inputs.sources import Inputs, InputSource
    from kubectl_kyrec.model import Document
    from kubectl_kyrec.reconcile.impact import AdmissionSide, Impact
    from kubectl_kyrec.render.items import Items
    from kubectl_kyrec.render.result_spill import ResultSpill

FAIL_ON = {"error": ("error",), "fail": ("error", "fail"), "warn": ("error", "fail", "warn"), "never": ()}


@dataclass(frozen=True)
class EvalRunOptions:
    now: datetime.datetime
    selection: Selection = Selection()      # -n, --kind, -l, --policy-name
    report_api: str = "wgpolicyk8s.io/v1alpha2"
    fail_on: str = "fail"
    fail_on_actions: tuple[str, ...] = ()
    base_policy_paths: tuple[str, ...] = ()
    # with base_policy_paths: only what the policy change introduces fails the run (`--only-changes`), not
    # the results that fail before and after it
    only_changes: bool = False
    json_paths: tuple[str, ...] = ()        # payloads for JSON-mode ValidatingPolicies (`--json`)
    http_paths: tuple[str, ...] = ()        # check requests for HTTP-mode ones (`--http-payload`)
    envoy_paths: tuple[str, ...] = ()       # and for Envoy-mode ones (`--envoy-payload`)
    jobs: int = 1                           # processes to evaluate in (`--jobs`)
    # manifests go through the admission chain (defaulting, mutation) before validation; `--no-mutate`: not
    mutate: bool = True
    old_paths: tuple[str, ...] = ()         # `--old`: the manifests before the change
    old_ref: str | None = None              # `--old-ref`: the -r paths as a git ref holds them
    resource_paths: tuple[str, ...] = ()    # the -r paths, which `--old-ref` reads at the ref
    registry: Registry | None = None        # `--registry`: image verification against real registries


@dataclass
class EvalResult:
    results: list[Result]
    # every result with whether the background scan would report it: what `reports` are built from
    report_pairs: Sequence[tuple[Result, bool]]
    generated: GeneratingOutcome
    errors: list[EvalError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    impact: Impact | None = None
    exit_code: ExitCode = ExitCode.CLEAN
    # with --base-policy: whether what the change introduces fails the run (Impact.introduced), and whether
    # only that counts (--only-changes) or the failing results too
    change_fails: bool = False
    only_changes: bool = False
    # why `results` is empty, for the table (never "no policy matched" when a filter or an error is why)
    empty_reason: str = "No policy matched any resource."
    now: datetime.datetime | None = None
    report_api: str = "wgpolicyk8s.io/v1alpha2"
    # the reads that failed, live or as a capture recorded them (counted in exit_code, shown by every output)
    failed_reads: list[FailedRead] = field(default_factory=list)
    # what admission made of each manifest (defaults, mutations), in subject order; empty when the subjects
    # were read from a cluster or with --no-mutate
    admissions: list[Admission] = field(default_factory=list)
    # what Kyverno accepts with a warning (PolicySet.warning_lines): printed as `warning:` lines, never an exit code
    warnings: list[str] = field(default_factory=list)
    # the results, when the run handed them on (run_eval's `on_results`) to be spilled there rather than kept
    # in `results`; `report_pairs` then holds only the pairs the run kept apart (a GeneratingPolicy's)
    handed: ResultSpill | None = None
    # with --state/--live: what mutate-existing rules would change on existing targets
    # (evaluate/classic/mutate_existing_preview.py)
    target_changes: list[TargetPreview] = field(default_factory=list)
    # every admission went to run_eval's `on_admissions` as it was decided (the manifests were read as they were
    # evaluated): `admissions` holds only the mutated ones, without objects (the table's MUTATED rows), and the
    # documents' `admission` is read back from where they went (`handed`)
    admissions_handed: bool = False
    _reports: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def reports(self) -> list[dict[str, Any]]:
        """The expected PolicyReports, built on first use (lazily: only `-o reports`, `-o json` and `-o yaml`
        ask for them, and those write them one at a time through `report_items`)."""
        if self._reports is None:
            self._reports = list(self.report_items())
        return self._reports

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        from kubectl_kyrec.render.eval_output import eval_parts

        return "EvalResult", eval_parts(self)

    def report_items(self) -> Items:
        """The reports as a document part: each built when written."""
        from kubectl_kyrec.expect.reports import ExpectedReports
        from kubectl_kyrec.render.items import Items

        if self._reports is not None:
            held = self._reports
            return Items(len(held), lambda start, stop: held[start:stop], shared=True)
        now = self.now or datetime.datetime.now(datetime.timezone.utc)
        if self.handed is not None:
            from kubectl_kyrec.render.result_spill import spilled_report_items

            return spilled_report_items(self.handed, self.report_pairs, now, self.report_api)
        reports = ExpectedReports(self.report_pairs, now, self.report_api)
        # the reports share their entries and timestamp, and are never changed
        return Items(len(reports), lambda start, stop: (reports[i] for i in range(start, stop)), shared=True)


def counts_as_failure(results: Sequence[Result], fail_on: str, actions: Sequence[str]) -> bool:
    """Kyverno's CLI counts every vpol `fail` whatever its validationActions; `--fail-on-actions` narrows."""
    statuses = FAIL_ON[fail_on]
    return any(r.result in statuses and (not actions or set(actions) & set(r.validation_actions))
               for r in results)


def run_eval(options: EvalRunOptions, source: InputSource,
             on_subject: Callable[[Subject], None] | None = None,
             on_total: Callable[[int], None] | None = None,
             on_results: Callable[[ResultPairs], object] | None = None,
             on_admissions: Callable[[Sequence[Admission]], object] | None = None) -> EvalResult:
    """`on_subject`: called once per subject as it is evaluated, `on_total` with how many there are (progress
    on a terminal). `on_results`: handed every result in order, a chunk at a time as they are decided, for an
    output that keeps only what it needs of them (the table, a spill: render/result_spill.py); the run then
    keeps none (`results` is empty, `report_pairs` holds only a GeneratingPolicy's, which reports join to
    their triggers': no --base-policy) and its exit code is counted on the way. `on_admissions`: with
    `on_results`, for an output that prints every admission with its object (`-o json|yaml`): when the
    manifests are read as they are evaluated, handed each slice's admissions as they are decided
    (`admissions_handed`; `admissions` then holds only the mutated ones, without their objects)."""
    if on_results is not None and options.base_policy_paths:
        raise ValueError("--base-policy compares every result: they cannot be handed on and dropped")
    from kubectl_kyrec.evaluate.pipeline import run_eval as evaluate
    from kubectl_kyrec.expect.report_scope import generating_pairs, mutate_existing_pairs
    from kubectl_kyrec.run.capture import run_gaps
    from kubectl_kyrec.run.generate import generate_for_inputs
    from kubectl_kyrec.run.providers import validated_for_run
    from kubectl_kyrec.run.select import (
        check_policy_names,
        nothing_selected,
        resolve_kinds,
        with_namespaces_left_out,
    )

    now = options.now
    inputs = source.read()
    if inputs.state_stream is not None and (on_results is None or options.old_paths or options.old_ref is not None
                                            or _reads_triggers(inputs) or not _kinds_known(options.selection.kinds,
                                                                                           inputs)):
        # the same reasons as -r's below; the state is read whole before anything is built over it
        inputs.materialize()
    check_policy_names(options.selection.policy_names, inputs.policies)
    # the policy validation compiles in the run's own environments, which then evaluate what it compiled
    inputs, run_envs = validated_for_run(inputs, now, options.registry)
    libraries, envs = run_envs.libraries, run_envs.envs
    old = _old_manifests(options)
    if inputs.resource_stream is not None and (on_results is None or old is not None or _reads_triggers(inputs)):
        # generation reads every trigger after the evaluation, --old pairs every manifest, and a run whose
        # results are kept keeps its subjects too: the -r documents are read whole
        inputs.materialize()
    kind_names = options.selection.kinds
    if inputs.resource_stream is not None and kind_names and not _kinds_known(kind_names, inputs):
        inputs.materialize()        # a --kind only the resources' own kinds resolve
    selection = dataclasses.replace(options.selection,
                                    kinds=resolve_kinds(kind_names, inputs.kinds, inputs.subjects))
    namespace = selection.namespace
    subjects: Sequence[Document] | Iterator[Document] = inputs.subjects
    read: _Counted | int = len(inputs.subjects)
    streamed = inputs.resource_stream if inputs.resource_stream is not None else inputs.state_stream
    if streamed is not None:
        # read as they are evaluated (evaluate/pipeline.py run_eval), counted on the way
        read = stream = _Counted(streamed)
        subjects = (d for d in stream if d.namespace == namespace) if namespace else iter(stream)
        if on_total is not None and not selection.text():
            on_total(inputs.resource_count)     # what the files hold: the pipeline knows the count at the end only
    elif namespace:
        subjects = [d for d in subjects if d.namespace == namespace]
    if old is not None and namespace:
        old = tuple(d for d in old if d.namespace == namespace)
    eval_options = options_for_run(inputs, now, selection, mutate=options.mutate, registry=options.registry,
                                   # the base policies may hold ClusterPolicies/Policies too
                                   classic=bool(inputs.policies.classic or options.base_policy_paths),
                                   report_api=options.report_api,
                                   payload_modes=(("JSON",) if options.json_paths else ())
                                   + (("HTTP",) if options.http_paths else ())
                                   + (("Envoy",) if options.envoy_paths else ()), jobs=options.jobs, old=old)
    if namespace and isinstance(subjects, list):
        # -n narrows what is evaluated, not the cluster: the Namespaces among the resources label their namespaces
        eval_options = with_namespaces_left_out(eval_options, subjects, inputs.subjects)

    def counted(some: Sequence[Result]) -> bool:
        return counts_as_failure(some, options.fail_on, options.fail_on_actions)

    handed_failing = False

    def hand_on(pairs: ResultPairs) -> None:
        nonlocal handed_failing
        assert on_results is not None
        handed_failing = handed_failing or counted(pairs.results)
        on_results(pairs)

    outcome = evaluate(inputs.policies, subjects, inputs.state.objects, kinds=inputs.kinds, libraries=libraries,
                       options=eval_options, on_subject=on_subject, on_total=on_total,
                       on_results=hand_on if on_results is not None else None, envs=envs,
                       on_admissions=on_admissions if on_results is not None else None,
                       expected=inputs.resource_count if streamed is not None else 0)
    # generating policies: their results join the others, their downstreams are listed; Kyverno generates from
    # the trigger as admitted (evaluate/generating/admitted.py)
    generated = generate_for_inputs(inputs, now=now, selection=selection, admissions=outcome.admissions)
    results = [*outcome.results, *(o.result for o in generated.outcomes if o.result is not None)]
    target_changes, preview_notices = _target_changes(inputs, outcome.subjects, outcome.admissions, eval_options, envs)
    payload_errors: list[EvalError] = []
    if options.json_paths:
        payload_results, payload_errors = _json_payloads(options, inputs.policies, libraries)
        # a payload is no Kubernetes object: its results are listed, never put in a PolicyReport
        results.extend(payload_results)
    if options.http_paths or options.envoy_paths:
        authz_results, authz_errors = _authz_payloads(options, inputs.policies, libraries)
        results.extend(authz_results)
        payload_errors.extend(authz_errors)
    if on_results is not None:
        # the last few (generating policies', payloads'), handed on like the rest
        if results:
            hand_on(ResultPairs(results, bytearray(len(results))))
        results = []
    report_pairs: Sequence[tuple[Result, bool]] = outcome.pairs
    # Kyverno reports a GeneratingPolicy's result, and a mutate-existing rule's, in the trigger's report too
    # (after the others: handed on, they are the only ones kept)
    later = [*generating_pairs(generated), *mutate_existing_pairs(target_changes)]
    if later:
        report_pairs = ResultPairs(list(outcome.pairs.results), bytearray(outcome.pairs.reportable))
        report_pairs.extend(later)
    # a policy Kyverno refuses is reported by the validate evaluator and by the generate run alike: once
    errors = list(dict.fromkeys([*policy_errors(inputs.policies), *outcome.errors, *generated.errors,
                                 *payload_errors]))
    impact = None
    if options.base_policy_paths:
        assert isinstance(subjects, Sequence)       # never a stream (on_results is refused above)
        impact, base_errors = impact_for(inputs, options.base_policy_paths, subjects, head_results=results,
                                         head_generated=generated, now=now, options=eval_options,
                                         head_admissions=outcome.admissions)
        errors.extend(base_errors)
    notices = [str(n) for n in [*inputs.notices, *outcome.notices, *generated.notices, *preview_notices]]
    if old is not None:
        operations = Counter(a.operation for a in outcome.admissions) if outcome.admissions else \
            Counter(s.operation for s in outcome.subjects)
        notices.append("requests the change makes: " + ", ".join(f"{operations[op]} {op}" for op in
                                                                  ("CREATE", "UPDATE", "DELETE") if operations[op]))
    gaps = run_gaps(inputs, namespace or "")
    if gaps:
        notices.append(gaps)
    if inputs.policies.deleting:
        # a DeletingPolicy answers no admission request: what it deletes is the state's business
        notices.append(f"{len(inputs.policies.deleting)} DeletingPolicy(ies) not evaluated by eval: `diff` lists "
                       "what their next scheduled runs delete, `test` checks their rows")
    empty_reason = EvalResult.empty_reason
    filters = options.selection.text()      # as typed: the kinds before they were resolved
    if filters and not outcome.subject_count and not generated.triggers:
        empty_reason = nothing_selected(filters, read if isinstance(read, int) else read.count)
        notices.append(empty_reason)
    elif errors:
        empty_reason = f"No results: {len(errors)} error(s), reported on standard error."
    elif target_changes:
        empty_reason = "No admission result; what mutate-existing rules change on existing targets follows."
    code = ExitCode.INPUT if errors else ExitCode.CLEAN
    # with --base-policy, what the change introduces fails the run too; the results that fail before and after
    # it still do, unless --only-changes asks about the change alone
    change_fails = impact is not None and impact.introduced(results, counted)
    only_changes = impact is not None and options.only_changes
    if change_fails or (not only_changes and (handed_failing or counted(results))):
        code = worst(code, ExitCode.FINDINGS)
    reads = failed_reads(inputs.state)
    return EvalResult(results, report_pairs, generated, errors, notices, impact, with_failed_reads(code, reads),
                      change_fails, only_changes, empty_reason, now, options.report_api, reads, outcome.admissions,
                      inputs.policies.warning_lines(), target_changes=target_changes,
                      admissions_handed=streamed is not None and eval_options.admit and on_results is not None
                      and on_admissions is not None)


def options_for_run(inputs: Inputs, now: datetime.datetime, selection: Selection, *, mutate: bool,
                    registry: Registry | None, classic: bool, **more: Any) -> EvalOptions:
    """The evaluation's options for a run over `inputs` (eval's and explain's alike): the request, user and
    namespaces the values give; `mutate`: the manifests are validated as admission would store them (objects
    read from a cluster were admitted already); `classic`: the run holds ClusterPolicies/Policies; `more`:
    the rest of EvalOptions."""
    from kubectl_kyrec.evaluate.pipeline import EvalOptions

    values = inputs.values
    classic_options = None
    if classic:
        # imported only for ClusterPolicies/Policies: the classic engine takes a tenth of a second to import,
        # on every run
        from kubectl_kyrec.evaluate.classic.engine import ClassicOptions

        # classic match/exclude on roles/clusterRoles/subjects: decided only when --values says who asks
        from kubectl_kyrec.run.providers import state_lookups

        classic_options = ClassicOptions(roles=values.roles, cluster_roles=values.cluster_roles,
                                         user_info_known=values.given_user_info, registry=registry,
                                         state_lookups=state_lookups(inputs.state))
    return EvalOptions(now=now, operation=values.request_operation, classic=classic_options,
                       user_info=values.user_info, namespace_labels=values.namespace_labels,
                       namespaces=values.namespaces, selection=selection,
                       admit=mutate and inputs.resources_named, registry=registry, **more)


def _target_changes(inputs: Inputs, subjects: Sequence[Subject], admissions: Sequence[Admission],
                    options: EvalOptions, envs: Environments) -> tuple[list[TargetPreview], list[str]]:
    """What the run's mutate-existing rules would change on the state's objects: for the -r manifests as
    admitted, else (the state's objects are the triggers) for the policies being applied."""
    if not _previews_targets(inputs):
        return [], []
    from kubectl_kyrec.evaluate.classic.mutate_existing_preview import mutate_existing_preview

    return mutate_existing_preview(inputs.policies, subjects, admissions, inputs.state.objects, inputs.kinds, options,
                                   envs, manifests=inputs.resources_named,
                                   state_given=bool(inputs.state.objects or inputs.state.listed),
                                   listed=inputs.state.is_listed)


class _Counted:
    """The documents of a stream, counted as they are read."""

    def __init__(self, docs: Iterator[Document]) -> None:
        self.docs = docs
        self.count = 0

    def __iter__(self) -> Iterator[Document]:
        for doc in self.docs:
            self.count += 1
            yield doc


def _reads_triggers(inputs: Inputs) -> bool:
    """Whether the run reads every trigger after the evaluation: it generates (GeneratingPolicies, classic
    generate rules: run/generate.py generate_for_inputs) or previews mutate-existing rules (_target_changes,
    which reads the admitted objects)."""
    return bool(inputs.policies.generating) or any(r.type == "generate" for p in inputs.policies.classic
                                                   for r in p.rules) or _previews_targets(inputs)


def _previews_targets(inputs: Inputs) -> bool:
    return any((r.raw.get("mutate") or {}).get("targets") for p in inputs.policies.classic for r in p.rules) \
        or any(p.mutate_existing for p in inputs.policies.mutating)


def _kinds_known(names: Sequence[str], inputs: Inputs) -> bool:
    """Whether the kind table resolves every --kind name (run/select.py resolve_kinds) without the resources."""
    return all(inputs.kinds.resolve(name) for name in names)


def _old_manifests(options: EvalRunOptions) -> tuple[Document, ...] | None:
    """The objects before the change (`--old` or `--old-ref`), policies left out; None without either."""
    from kubectl_kyrec.load.policy.policies import is_policy_document
    from kubectl_kyrec.load.run_inputs.old_manifests import read_old_paths, read_old_ref

    if options.old_ref is not None:
        docs = read_old_ref(options.old_ref, options.resource_paths)
    elif options.old_paths:
        docs = read_old_paths(options.old_paths)
    else:
        return None
    return tuple(d for d in docs if not is_policy_document(d))


def _json_payloads(options: EvalRunOptions, policies: PolicySet, libraries: LibraryFactory
                   ) -> tuple[list[Result], list[EvalError]]:
    from kubectl_kyrec.evaluate.validating.json_payloads import evaluate_json_payloads
    from kubectl_kyrec.load.run_inputs.payloads import load_payloads

    payloads = [p for path in options.json_paths for p in load_payloads(path, path)]
    outcome = evaluate_json_payloads(policies, payloads, libraries=libraries, now=options.now,
                                     policy_names=options.selection.policy_names)
    return outcome.results, outcome.errors


def _authz_payloads(options: EvalRunOptions, policies: PolicySet, libraries: LibraryFactory
                    ) -> tuple[list[Result], list[EvalError]]:
    from kubectl_kyrec.evaluate.validating.authz_payloads import evaluate_authz_payloads
    from kubectl_kyrec.load.run_inputs.authz_requests import ENVOY, HTTP, load_authz_payload

    payloads = [load_authz_payload(path, path, mode)
                for mode, paths in ((HTTP, options.http_paths), (ENVOY, options.envoy_paths))
                for path in dict.fromkeys(paths)]
    outcome = evaluate_authz_payloads(policies, payloads, libraries=libraries, now=options.now,
                                      policy_names=options.selection.policy_names)
    return outcome.results, outcome.errors


def policy_errors(policies: PolicySet) -> list[EvalError]:
    """The policies that did not parse, each at its file:line (one entry per bad policy)."""
    return [EvalError(e.message, e.source) for e in policies.located_errors()]


def impact_for(inputs: Inputs, base_policy_paths: Sequence[str], subjects: Sequence[Document], *,
               head_results: Sequence[Result], head_generated: GeneratingOutcome, now: datetime.datetime,
               options: EvalOptions, head_admissions: Sequence[Admission] = ()) -> tuple[Impact, list[EvalError]]:
    """`eval --base-policy`: the same resources under the base policies, compared with the head's, and
    the base policies that did not parse. Compiled and evaluated in the head's environments
    (providers.environments_for), which compiled the expressions the base shares with the head already."""
    from kubectl_kyrec.cel.schema_rules import policy_schema_check
    from kubectl_kyrec.evaluate.pipeline import run_eval as evaluate
    from kubectl_kyrec.evaluate.policy_validation import validate_policies
    from kubectl_kyrec.load.documents import load_documents_with_lines
    from kubectl_kyrec.load.policy.policies import classify
    from kubectl_kyrec.reconcile.impact import compute_impact
    from kubectl_kyrec.run.generate import generate_for_inputs
    from kubectl_kyrec.run.providers import environments_for

    located = load_documents_with_lines(list(base_policy_paths), stdin=sys.stdin)
    base = classify([d.document for d in located], {d.document.source: d.lines for d in located},
                    schema=policy_schema_check())
    base.exceptions.extend(inputs.policies.exceptions)
    run_envs = environments_for(inputs, now)
    base = validate_policies(base, now, run_envs.envs, run_envs.generating, options.registry)
    base_outcome = evaluate(base, subjects, inputs.state.objects, kinds=inputs.kinds, libraries=run_envs.libraries,
                            options=options, envs=run_envs.envs)
    base_generated = generate_for_inputs(inputs, base, now=now, selection=options.selection,
                                         admissions=base_outcome.admissions)
    base_results = [*base_outcome.results, *(o.result for o in base_generated.outcomes if o.result is not None)]
    admission = None
    if options.admit:
        admission = (admission_side(base_outcome.results, base_outcome.admissions, base),
                     admission_side(head_results, head_admissions, inputs.policies))
    return (compute_impact(base_results, head_results, base_generated, head_generated, admission),
            policy_errors(base))


def admission_side(results: Sequence[Result], admissions: Sequence[Admission], policies: PolicySet
                   ) -> AdmissionSide:
    """One side of `--base-policy`'s admission comparison."""
    from kubectl_kyrec.evaluate.admission_chain import MUTATION_SOURCES
    from kubectl_kyrec.reconcile.impact import AdmissionSide

    stored = {a.subject.ref.uid: (a.subject.ref, a.operation, None if a.operation == "DELETE" else a.subject.obj,
                                  a.subject.source) for a in admissions}
    return AdmissionSide(results, stored, policies.failure_policies(), MUTATION_SOURCES)
