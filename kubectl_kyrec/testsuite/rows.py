"""Run one loaded Kyverno test suite and check each of its rows (docs/semantics/test-suites.md#kyverno-test).
Pure: data in, rows out.

A row is one (results entry, resource). Two ways to decide it (issue 27):

- **kyverno** (the default): Kyverno's own test runner (kk: cmd/cli/kubectl-kyverno/commands/test/output.go
  printTestResult), since suites are written against it: names select resources of any kind, a name list
  matching nothing checks every resource, a resource without a response passes "Excluded" when the policy
  is a ValidatingPolicy with complex matchConstraints (the CLI keeps an empty response only for those) or
  a ValidatingAdmissionPolicy (always kept), and fails "Not found" otherwise; the CEL kinds' responses are
  compared as they are (kk 111e07bb reads no `is<Kind>Policy` flag: command.go isRulelessPolicyKind),
  while a classic entry without a flag looks rules up by name and counts every mismatch as a success when
  it expects `fail`; HTTP/Envoy requests are named by their path joined to the test's directory, as the
  CLI keys them. ValidatingAdmissionPolicies evaluate as the CLI does in this mode
  (evaluate/validating_admission/engine.py VapRunner), and mocked HTTP responses are wrapped as the CLI wraps them.
- **strict** (`--strict`, cluster semantics): the resource must be in the test (`kind` and `ns/name`
  respected) and the policy must have answered for it; a resource the policy gave no response for fails
  `not-matched` (a matchConditions skip is a response).

Every row is decided both ways; where the two verdicts differ, or the CLI's pass checks nothing (a vacuous
row), the suite carries a warning for it, in both modes (testsuite/verdicts.py). Evaluation itself is
Kyverno-in-a-cluster in both modes (integers stay integers; docs/semantics/test-suites.md#kyvernos-cli-offline).
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from kubectl_kyrec.cel.environment import Environments, LibraryFactory
from kubectl_kyrec.cel.generator_lib import GeneratorSink
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.evaluate.subjects import KindLookup
from kubectl_kyrec.evaluate.validating.authz_payloads import AUTHZ_MODES, evaluate_authz_payloads, is_authz_subject
from kubectl_kyrec.evaluate.validating.json_payloads import evaluate_json_payloads
from kubectl_kyrec.evaluate.validating_admission.engine import VapRunner
from kubectl_kyrec.k8s.labels import selector_is_empty
from kubectl_kyrec.load.policy.policies import ValidatingPolicy, unevaluated_kind
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.model import (
    Document,
    EvalError,
    Notice,
    Obj,
    Ref,
    Result,
    Source,
    Subject,
    group_version,
    object_identity,
)
from kubectl_kyrec.testsuite.row_types import (
    EXCLUDED,
    FAIL_MET_BY_SKIP,
    GENERATED_MISMATCH,
    LOAD_ERROR,
    MATCHED_NOTHING,
    MISSING_PATCHED,
    MISSING_RULE,
    NOT_EVALUATED,
    NOT_FOUND,
    NOT_MATCHED,
    OK,
    PATCHED_MISMATCH,
    RESULT_MISMATCH,
    Generated,
    GenerateFn,
    GenerationRun,
    Mode,
    Row,
    SuiteRun,
)
from kubectl_kyrec.testsuite.suite import LoadedSuite, ResourceSpec, TestResultEntry

EVALUATED_KINDS = ("ValidatingPolicy", "GeneratingPolicy", "ValidatingAdmissionPolicy", "MutatingPolicy",
                   "MutatingAdmissionPolicy", "DeletingPolicy", "ImageValidatingPolicy")


@dataclass
class _Evaluation:
    """Everything one operation's run produced, indexed for row lookup."""

    subjects: list[Subject]
    results: dict[tuple[str, Ref], list[Result]]
    generated: dict[tuple[str, Ref], list[Generated]]
    # (mutating policy name, subject) -> the resource Kyverno's CLI compares with patchedResources
    patched: dict[tuple[str, Ref], Obj] = field(default_factory=dict)
    mutated: Any = None         # classic mutate policies' patched resources (testsuite.classic_mutate)
    # mutateExisting MutatingPolicies' target changes, by trigger (evaluate/mutating/mutate_existing.py)
    existing: dict[Ref, list[Any]] = field(default_factory=dict)


@dataclass
class _Context:
    loaded: LoadedSuite
    mode: Mode
    runs: dict[str, _Evaluation]
    policy_errors: dict[str, str]
    validating: dict[str, ValidatingPolicy]
    admission: set[str]
    generating: set[str]
    image_validating: set[str]
    others: dict[str, str]
    deleting: set[str]
    unevaluated: dict[str, str]     # policy name -> a kind kyrec recognises and does not evaluate
    generation_available: bool
    classic: dict[str, Any] = field(default_factory=dict)     # ClusterPolicy/Policy by name
    mutating: set[str] = field(default_factory=set)           # MutatingPolicy names
    mutating_admission: set[str] = field(default_factory=set)
    mutate_existing: set[str] = field(default_factory=set)    # MutatingPolicies that mutate targets


def run_suite(loaded: LoadedSuite, *, kinds: KindLookup, libraries: LibraryFactory, now: datetime.datetime,
              mode: Mode = Mode.KYVERNO, generate: GenerateFn | None = None,
              other_libraries: LibraryFactory | None = None,
              target_libraries: LibraryFactory | None = None, registry: Registry | None = None,
              other_generate: GenerateFn | None = None) -> SuiteRun:
    """Evaluate the suite once per operation its rows need, then decide every row in `mode`, and again in
    the other mode for the suite's warnings (verdicts.entry_warnings).

    `libraries` serve the validating kinds; `generate` (see generating_hook) the generating ones, whose
    rows are load errors without it. `other_libraries` are the other mode's, when they differ (the test
    mocks HTTP responses, which Kyverno's CLI wraps): `libraries` otherwise. `target_libraries`: those of
    the mutateExisting MutatingPolicies' pass on the targetResources (`libraries` by default).
    `other_generate`: the other mode's generation, when it differs (GeneratingPolicies reading image data;
    `generate` otherwise). A policy
    that does not compile fails its rows with `load-error` and is a suite error too.
    """
    from kubectl_kyrec.testsuite.verdicts import entry_warnings

    suite = loaded.suite
    out = SuiteRun(suite.path, suite.name, notices=list(loaded.notices))
    if loaded.error is not None:
        out.errors.append((loaded.error.message, loaded.error.source))
        out.rows = [_unloaded_row(loaded, entry, label) for entry in suite.results
                    for label in (_labels(entry) or ["*"])]
        return out
    policies = loaded.policies
    # one Environments per libraries for the whole suite: every operation, mode and engine evaluates the
    # programs compiled once (an environment compiles a text once, cel/engine.py)
    envs = Environments(libraries)
    other_envs = Environments(other_libraries) if other_libraries is not None else envs
    target_envs = Environments(target_libraries) if target_libraries is not None else None
    ctx = _Context(
        loaded=loaded, mode=mode, runs={}, policy_errors={},
        validating={p.meta.name: p for p in policies.validating},
        admission={p.meta.name for p in policies.admission},
        generating={d.name for d in policies.generating},
        image_validating={p.meta.name for p in policies.image_validating},
        others={d.name: d.kind for d in policies.others if d.name},
        deleting={p.meta.name for p in policies.deleting},
        unevaluated={d.name: kind for d in policies.others if d.name and (kind := unevaluated_kind(d))},
        generation_available=generate is not None,
        classic={p.meta.name: p for p in policies.classic},
        mutating={p.meta.name for p in policies.mutating},
        mutating_admission={p.meta.name for p in policies.mutating_admission},
        mutate_existing={p.meta.name for p in policies.mutating if p.mutate_existing})
    starts = [(p.meta.source, p.meta.name) for p in policies.validating]
    starts.extend((p.meta.source, p.meta.name) for p in policies.mutating)
    starts.extend((p.meta.source, p.meta.name) for p in policies.mutating_admission)
    starts.extend((p.meta.source, p.meta.name) for p in policies.admission)
    starts.extend((p.meta.source, p.meta.name) for p in policies.classic)
    starts.extend((p.meta.source, p.meta.name) for p in policies.image_validating)
    starts.extend((p.meta.source, p.meta.name) for p in policies.deleting)
    # the modes evaluate alike but for ValidatingAdmissionPolicies, mocked HTTP responses and, without
    # --registry, classic imageRegistry context entries (absent in the CLI, needs-registry in a cluster)
    evaluates_alike = not policies.admission and other_libraries is None and not (
        registry is None and any(_reads_image_registry(p.raw) for p in policies.classic))
    other = replace(ctx, mode=mode.other, runs={})
    for operation in sorted({_operation(loaded, e) for e in suite.results}):
        mutated = None
        evaluated = loaded
        if any(r.type == "mutate" for p in policies.classic for r in p.rules):
            from kubectl_kyrec.testsuite.classic_mutate import suite_mutations

            mutated = suite_mutations(loaded, operation, kinds, now, _classic_options(loaded, kinds))
            if mutated.admitted:
                # the CLI validates each resource as its mutate policies left it (ApplyPoliciesOnResource)
                evaluated = replace(loaded, resources=mutated.admitted)
        subjects, results, errors, notices, patched, existing = _evaluate(
            evaluated, operation, mode, kinds=kinds, libraries=libraries, envs=envs, now=now,
            target_envs=target_envs, registry=registry)
        generated: dict[tuple[str, Ref], list[Generated]] = {}
        # the other mode's, when it generates otherwise (None: the same)
        other_generated: dict[tuple[str, Ref], list[Generated]] | None = None
        if generate is not None and policies.generating:
            run = generate(loaded, operation)
            for g in run.outcomes:
                generated.setdefault((g.policy, g.trigger), []).append(g)
            if other_generate is not None:
                other_generated = {}
                for g in other_generate(loaded, operation).outcomes:
                    other_generated.setdefault((g.policy, g.trigger), []).append(g)
            for policy, message, where in run.errors:
                if policy:
                    ctx.policy_errors.setdefault(policy, f"{where}: {message}" if where else message)
                if (message, where) not in out.errors:
                    out.errors.append((message, where))
        if any(r.type == "generate" for p in policies.classic for r in p.rules):
            from kubectl_kyrec.testsuite.classic_generate import suite_generated

            for g in suite_generated(loaded, operation, kinds, now, _classic_options(loaded, kinds)):
                generated.setdefault((g.policy, g.trigger), []).append(g)
                if other_generated is not None:
                    other_generated.setdefault((g.policy, g.trigger), []).append(g)
        for error in errors:
            name = owner_of(error.source, starts)
            text = f"{error.source}: {error.message}" if error.source else error.message
            if name:
                ctx.policy_errors.setdefault(name, text)
            # a policy that does not compile makes the test file unloadable too (exit 3)
            if (error.message, error.source) not in out.errors:
                out.errors.append((error.message, error.source))
        out.notices.extend(n for n in notices if n not in out.notices)
        if mutated is not None:
            results = _with_mutations(results, mutated)
        ctx.runs[operation] = _Evaluation(subjects, results, generated, patched, mutated, existing)
        if evaluates_alike:
            other.runs[operation] = ctx.runs[operation]
        else:
            # generation depends on the mode only where image data is read (other_generated); the other
            # evaluation's errors and notices are this one's, or the CLI's shortcuts: the suite reports its own
            # mode's
            other_subjects, other_results, _, _, other_patched, other_existing = _evaluate(
                evaluated, operation, mode.other, kinds=kinds, libraries=other_libraries or libraries,
                envs=other_envs, now=now, registry=registry, target_envs=target_envs)
            if mutated is not None:
                other_results = _with_mutations(other_results, mutated)
            other.runs[operation] = _Evaluation(other_subjects, other_results,
                                                generated if other_generated is None else other_generated,
                                                other_patched, mutated, other_existing)
    for entry in suite.results:
        rows = _entry_rows(ctx, entry)
        out.rows.extend(rows)
        missing = _missing_names(entry, ctx.runs[_operation(loaded, entry)].subjects)
        if missing and loaded.target_objects:
            # a mutate-existing entry names its targets (targetResources), which are not resources
            targets = {(d.namespace, d.name) for d in loaded.target_objects}
            missing = [n for n in missing if not any(n == name or n == f"{ns}/{name}" for ns, name in targets)]
        out.warnings.extend(entry_warnings(entry, mode, rows, _entry_rows(other, entry), missing))
    return out


def _evaluate(loaded: LoadedSuite, operation: str, mode: Mode, *, kinds: KindLookup, libraries: LibraryFactory,
              envs: Environments, now: datetime.datetime, target_envs: Environments | None = None,
              registry: Registry | None = None
              ) -> tuple[list[Subject], dict[tuple[str, Ref], list[Result]], list[EvalError], list[Notice],
                         dict[tuple[str, Ref], Obj], dict[Ref, list[Any]]]:
    """One operation's validating and mutating results (resources, JSON and HTTP/Envoy payloads), by
    policy name and subject, with the run's errors and notices, the mutated resources, and the
    mutateExisting MutatingPolicies' target changes by trigger. `envs`: the suite's over `libraries`,
    `target_envs` those of the mutateExisting pass (run_suite)."""
    policies = loaded.policies
    state = [*loaded.values.namespaces, *loaded.param_objects, *loaded.cluster_objects]
    options = EvalOptions(now=now, operation=operation, user_info=loaded.user_info,
                          namespace_labels=loaded.values.namespace_labels,
                          vap_runner=VapRunner.CLI if mode is Mode.KYVERNO else VapRunner.SCAN,
                          vap_params=tuple(loaded.param_objects),
                          payload_modes=(("JSON",) if loaded.payloads else ()) + (
                              AUTHZ_MODES if loaded.authz_payloads else ()),
                          classic=dataclasses.replace(_classic_options(loaded, kinds, mode), registry=registry)
                          if policies.classic else None, registry=registry)
    outcome = run_eval(policies, loaded.resources, state, kinds=kinds, libraries=libraries, options=options,
                       envs=envs)
    subjects = list(outcome.subjects)
    all_results = list(outcome.results)
    errors = list(outcome.errors)
    if loaded.payloads:
        payload_run = evaluate_json_payloads(policies, loaded.payloads, libraries=libraries, now=now, envs=envs)
        subjects.extend(payload_run.subjects)
        all_results.extend(payload_run.results)
        errors.extend(e for e in payload_run.errors if e not in errors)
    if loaded.authz_payloads:
        authz_run = evaluate_authz_payloads(policies, loaded.authz_payloads, libraries=libraries, now=now)
        subjects.extend(authz_run.subjects)
        all_results.extend(authz_run.results)
        errors.extend(e for e in authz_run.errors if e not in errors)
    if policies.deleting:
        from kubectl_kyrec.testsuite.deleting import suite_deletions

        deletions, deleting_errors = suite_deletions(loaded, outcome.subjects, envs=envs, now=now)
        all_results.extend(deletions)
        errors.extend(e for e in deleting_errors if e not in errors)
    patched: dict[tuple[str, Ref], Obj] = {}
    existing: dict[Ref, list[Any]] = {}
    if policies.mutating or policies.mutating_admission:
        from kubectl_kyrec.testsuite.mutating import suite_mutations

        mutations = suite_mutations(loaded, outcome.subjects, kinds=kinds, envs=envs, now=now,
                                    target_envs=target_envs)
        all_results.extend(mutations.results)
        errors.extend(e for e in mutations.errors if e not in errors)
        patched = mutations.patched
        existing = dict(mutations.existing)
    results: dict[tuple[str, Ref], list[Result]] = {}
    for r in all_results:
        results.setdefault((_name_part(r.policy), r.subject), []).append(r)
    return subjects, results, errors, list(outcome.notices), patched, existing


def _with_mutations(results: dict[tuple[str, Ref], list[Result]], mutated: Any
                    ) -> dict[tuple[str, Ref], list[Result]]:
    """The validating results with the classic mutate rules' added (the CLI's mutate responses come first)."""
    out = {key: list(found) for key, found in results.items()}
    for key, found in mutated.results.items():
        out[key] = [*found, *out.get(key, [])]
    return out


def _unloaded_row(loaded: LoadedSuite, entry: TestResultEntry, label: str) -> Row:
    unsupported = [k for k in entry.flags if k not in EVALUATED_KINDS]
    if unsupported:
        # kyrec would not have evaluated it anyway; the file's load error is reported on its own
        return _row(loaded, entry, label, entry.kind, "", True, NOT_EVALUATED,
                    f"kyrec does not evaluate {', '.join(unsupported)} policies")
    return _row(loaded, entry, label, entry.kind, "", False, LOAD_ERROR,
                f"the test's inputs could not be loaded: {loaded.error}")


def owner_of(where: Source | None, starts: Sequence[tuple[Source, str]]) -> str:
    """The policy a load error belongs to: the last policy document starting at or before its line."""
    if where is None:
        return ""
    best = ""
    best_line = -1
    for start, name in starts:
        if start.file == where.file and best_line < start.line <= max(where.line, 1):
            best, best_line = name, start.line
    return best


def _operation(loaded: LoadedSuite, entry: TestResultEntry) -> str:
    # the row's operation, then globalValues request.operation, then CREATE (kk: processor/operation.go)
    return entry.operation or loaded.values.operation or "CREATE"


def _name_part(policy: str) -> str:
    return policy.rsplit("/", 1)[-1]


def _labels(entry: TestResultEntry) -> list[str]:
    return [*entry.resources, *(s.display() for s in entry.resource_specs)]


def _row(loaded: LoadedSuite, entry: TestResultEntry, resource: str, kind: str, actual: str, passed: bool,
         reason: str, message: str = "", diff: str | None = None, vacuous: str = "") -> Row:
    return Row(file=loaded.suite.path, test=loaded.suite.name, policy=entry.policy, kind=kind,
               resource=resource, expected=entry.result, actual=actual, passed=passed, reason=reason,
               message=message, location=entry.source, diff=diff, rule=entry.rule, vacuous=vacuous)


def _display(subject: Subject) -> str:
    ref = subject.ref
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


# ---------------------------------------------------------------------------------------------------------
# which resources a results entry names


def _name_matches(name: str, subject: Subject, mode: Mode) -> bool:
    ref = subject.ref
    if not ref.kind:
        if mode is Mode.KYVERNO and is_authz_subject(subject):
            # Kyverno's CLI keys an HTTP/Envoy request by its path joined to the test's directory
            # (commands/test/test.go GetFullPaths): a name as written selects nothing there
            return subject.source is not None and name == subject.source.file
        # a JSON payload is named as the test names it, a path perhaps
        return name == ref.name
    namespace, _, plain = name.rpartition("/")
    if ref.name != plain:
        return False
    if not namespace:
        return True
    # the CLI puts every resource without a namespace, cluster-scoped ones too, in `default`
    actual = ref.namespace or ("default" if mode is Mode.KYVERNO else "")
    return namespace == actual


def _spec_matches(spec: ResourceSpec, subject: Subject, mode: Mode) -> bool:
    ref = subject.ref
    group, version = group_version(ref.api_version)
    if (spec.group, spec.version) != (group, version) or spec.name != ref.name:
        return False
    if mode is Mode.STRICT and spec.kind and spec.kind != ref.kind:
        return False
    actual = ref.namespace or ("default" if mode is Mode.KYVERNO else "")
    return spec.namespace == actual


def _strict_targets(entry: TestResultEntry, subjects: Sequence[Subject]
                    ) -> Iterable[tuple[str, Subject | None, str]]:
    def of_kind(found: Sequence[Subject]) -> list[Subject]:
        return [s for s in found if not entry.kind or s.ref.kind == entry.kind]

    if not entry.resources and not entry.resource_specs:
        # an entry that names no resource checks every one (of its kind), as Kyverno means it to
        every = of_kind(subjects)
        if not every:
            yield "*", None, f"the entry names no resource and the test has no {entry.kind or 'resource'}"
        yield from ((_display(s), s, "") for s in every)
        return
    for name in entry.resources:
        named = [s for s in subjects if _name_matches(name, s, Mode.STRICT)]
        hits = of_kind(named)
        if hits:
            yield from ((name, s, "") for s in hits)
        elif named:
            kinds = ", ".join(sorted({s.ref.kind for s in named}))
            yield name, None, f"no {entry.kind} named {name!r} in the test (only {kinds})"
        else:
            yield name, None, f"no resource named {name!r} in the test"
    for spec in entry.resource_specs:
        hits = of_kind([s for s in subjects if _spec_matches(spec, s, Mode.STRICT)])
        if hits:
            yield from ((spec.display(), s, "") for s in hits)
        else:
            yield spec.display(), None, f"no resource {spec.display()} in the test"


def _missing_names(entry: TestResultEntry, subjects: Sequence[Subject]) -> list[str]:
    """The names and resourceSpecs of the entry that select nothing, even as Kyverno's CLI selects (any
    kind, cluster-scoped resources in `default`): the CLI drops them silently, or checks every resource
    when none of them selects anything."""
    names = [n for n in entry.resources if not any(_name_matches(n, s, Mode.KYVERNO) for s in subjects)]
    specs = [s.display() for s in entry.resource_specs
             if not any(_spec_matches(s, subject, Mode.KYVERNO) for subject in subjects)]
    return names + specs


def _kyverno_targets(entry: TestResultEntry, subjects: Sequence[Subject]) -> list[Subject]:
    """printTestResult: any kind; duplicates kept; resourceSpecs only beside resources; none -> all."""
    found: list[Subject] = []
    if entry.resources:
        for name in entry.resources:
            found.extend(s for s in subjects if _name_matches(name, s, Mode.KYVERNO))
        for spec in entry.resource_specs:
            found.extend(s for s in subjects if _spec_matches(spec, s, Mode.KYVERNO))
    return found or list(subjects)


# ---------------------------------------------------------------------------------------------------------
# deciding one row


def _entry_rows(ctx: _Context, entry: TestResultEntry) -> list[Row]:
    loaded = ctx.loaded
    evaluation = ctx.runs[_operation(loaded, entry)]
    unsupported = [k for k in entry.flags if k not in EVALUATED_KINDS]
    problem = _policy_problem(ctx, entry, unsupported)
    if problem is not None and problem[0] == NOT_EVALUATED:
        # whatever the entry names (targetResources, payloads...), each row is not evaluated
        return [_row(loaded, entry, label, entry.kind, "", True, NOT_EVALUATED, problem[1])
                for label in (_labels(entry) or ["*"])]
    if problem is None and entry.policy_name in ctx.classic and evaluation.mutated is not None \
            and _classic_existing_rule(ctx.classic[entry.policy_name], entry.rule):
        return _existing_rows(ctx, evaluation, entry)
    if problem is None and entry.policy_name in ctx.mutate_existing and loaded.target_objects:
        return _existing_rows(ctx, evaluation, entry)
    if ctx.mode is Mode.STRICT:
        rows = []
        for label, subject, missing in _strict_targets(entry, evaluation.subjects):
            kind = subject.ref.kind if subject is not None else entry.kind
            resource = _display(subject) if subject is not None else label
            if subject is None:
                rows.append(_row(loaded, entry, resource, kind, "", False, NOT_FOUND, missing))
            elif problem is not None:
                rows.append(_row(loaded, entry, resource, kind, "", False, problem[0], problem[1]))
            else:
                rows.append(_strict_row(ctx, evaluation, entry, subject))
        return rows
    rows = []
    for subject in _kyverno_targets(entry, evaluation.subjects):
        resource, kind = _display(subject), subject.ref.kind
        if problem is not None and problem[0] == LOAD_ERROR:
            rows.append(_row(loaded, entry, resource, kind, "", False, problem[0], problem[1]))
        else:
            rows.append(_kyverno_row(ctx, evaluation, entry, subject))
    return rows


def _policy_problem(ctx: _Context, entry: TestResultEntry, unsupported: list[str]) -> tuple[str, str] | None:
    name = entry.policy_name
    if name in ctx.unevaluated and not (name in ctx.validating or name in ctx.admission
                                        or name in ctx.generating or name in ctx.deleting
                                        or name in ctx.image_validating):
        return NOT_EVALUATED, f"kyrec does not evaluate {ctx.unevaluated[name]} policies"
    if unsupported:
        return NOT_EVALUATED, f"kyrec does not evaluate {', '.join(unsupported)} policies"
    if name in ctx.policy_errors:
        return LOAD_ERROR, ctx.policy_errors[name]
    if name in ctx.generating and not ctx.generation_available:
        return LOAD_ERROR, "generating policies not supported yet"
    if (name in ctx.validating or name in ctx.admission or name in ctx.generating or name in ctx.classic
            or name in ctx.mutating or name in ctx.mutating_admission or name in ctx.deleting
            or name in ctx.image_validating):
        return None
    if name in ctx.others:
        return LOAD_ERROR, f"policy {name!r} is a {ctx.others[name]}, which kyrec does not evaluate"
    return NOT_FOUND, f"policy {name!r} is not among the test's policies"


def _compare(entry: TestResultEntry, results: Sequence[Result]) -> tuple[str, bool, str]:
    actual = ",".join(dict.fromkeys(r.result for r in results))
    passed = all(r.result == entry.result for r in results)
    message = "; ".join(dict.fromkeys(r.message for r in results if r.message))
    return actual, passed, message


def _strict_row(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject) -> Row:
    name = entry.policy_name
    resource, kind = _display(subject), subject.ref.kind
    if name in ctx.generating:
        return _generating_row(ctx, evaluation, entry, subject)
    results = evaluation.results.get((name, subject.ref), [])
    if name in ctx.classic:
        if _classic_generate_rule(ctx.classic[name], entry.rule):
            return _generating_row(ctx, evaluation, entry, subject)
        unevaluated = _classic_unevaluated(ctx.classic[name], entry.rule)
        if unevaluated:
            return _row(ctx.loaded, entry, resource, kind, "", True, NOT_EVALUATED, unevaluated)
        # a classic policy answers per rule; `kyverno test` accepts the base name for autogen rules
        wanted = (entry.rule, f"autogen-{entry.rule}", f"autogen-cronjob-{entry.rule}")
        results = [r for r in results if r.rule in wanted]
    if not results:
        return _row(ctx.loaded, entry, resource, kind, "", False, NOT_MATCHED,
                    f"policy {name!r} gave no response for {kind} {resource} (not matched)")
    actual, passed, message = _compare(entry, results)
    # (a classic policy's rows are checked against what its mutate rules made: _patched_check)
    mismatch = _patched_mismatch(ctx, evaluation, entry, subject) if name not in ctx.classic else None
    if mismatch is not None and mismatch is not _ABSENT:
        return _row(ctx.loaded, entry, resource, kind, actual, False, PATCHED_MISMATCH, *mismatch)
    patched = _patched_check(ctx, evaluation, entry, subject) if passed else None
    if patched is not None and patched[0] != OK:
        return _row(ctx.loaded, entry, resource, kind, actual, False, patched[0], patched[1], patched[2])
    return _row(ctx.loaded, entry, resource, kind, actual, passed, OK if passed else RESULT_MISMATCH, message)


def is_complex(policy: ValidatingPolicy) -> bool:
    """matchConstraints for which Kyverno's CLI keeps an empty response (docs/semantics/test-suites.md#kyverno-test,
    #16293)."""
    mc = policy.match_constraints
    if mc is None:
        return False
    return (not selector_is_empty(mc.namespace_selector) or not selector_is_empty(mc.object_selector)
            or bool(mc.exclude_resource_rules) or len(mc.resource_rules) > 1
            or any(r.resource_names for r in mc.resource_rules))


def _kyverno_row(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject) -> Row:
    name = entry.policy_name
    resource, kind = _display(subject), subject.ref.kind
    if name in ctx.generating:
        return _generating_row(ctx, evaluation, entry, subject)
    results = evaluation.results.get((name, subject.ref), [])
    if name in ctx.classic:
        if _classic_generate_rule(ctx.classic[name], entry.rule):
            return _generating_row(ctx, evaluation, entry, subject)
        unevaluated = _classic_unevaluated(ctx.classic[name], entry.rule)
        if unevaluated:
            return _row(ctx.loaded, entry, resource, kind, "", True, NOT_EVALUATED, unevaluated)
    # the CEL kinds are "ruleless": every rule response is checked as it is (command.go isRulelessPolicyKind)
    ruleless = (bool(entry.flags) or name in ctx.validating or name in ctx.admission or name in ctx.mutating
                or name in ctx.mutating_admission or name in ctx.deleting or name in ctx.image_validating)
    if results and (name in ctx.mutating or name in ctx.mutating_admission):
        return _kyverno_mutating_row(ctx, evaluation, entry, subject, results)
    if ruleless:
        checked = results
    else:
        # without a flag the CLI looks rules up by name, and a rule response that does not match what
        # the row expects still counts as a success when the row expects `fail`
        wanted = (entry.rule, f"autogen-{entry.rule}", f"autogen-cronjob-{entry.rule}")
        checked = [r for r in results if r.rule in wanted]
    if checked:
        actual, passed, message = _compare(entry, checked)
        patched = _patched_check(ctx, evaluation, entry, subject)
        if patched is not None and patched[0] == MISSING_PATCHED:
            # checkResult's "not found in manifest": the CLI makes no row, and checks nothing
            return _row(ctx.loaded, entry, resource, kind, actual, True, OK, patched[1], vacuous=MISSING_PATCHED)
        if patched is not None and patched[0] != OK:
            # a mismatch fails the row, unless it expects `fail` (output.go: ok || result == fail)
            return _row(ctx.loaded, entry, resource, kind, actual, entry.result == "fail", patched[0],
                        patched[1], patched[2])
        vacuous = ""
        if not ruleless and entry.result == "fail" and not passed:
            passed = True
            vacuous = FAIL_MET_BY_SKIP if actual == "skip" else ""
        reason = OK if passed else RESULT_MISMATCH
        return _row(ctx.loaded, entry, resource, kind, actual, passed, reason, message, vacuous=vacuous)
    policy = ctx.validating.get(name)
    # the CLI keeps every ValidatingAdmissionPolicy and classic policy response, empty ones too
    # (policy_processor.go): no rule answering is "Excluded"
    # ... and every MutatingPolicy response (mpol engine.go Handle appends one per policy, empty too)
    if (results or (policy is not None and is_complex(policy)) or name in ctx.admission or name in ctx.classic
            or name in ctx.mutating):
        missing_rule = name in ctx.classic and not _has_rule(ctx.classic[name], entry.rule)
        return _row(ctx.loaded, entry, resource, kind, "", True, EXCLUDED, "Excluded",
                    vacuous=MISSING_RULE if missing_rule else MATCHED_NOTHING)
    return _row(ctx.loaded, entry, resource, kind, "", False, NOT_FOUND, "Not found")


_ABSENT: Any = object()     # the patchedResources hold no document for the resource


def _patched_mismatch(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject
                      ) -> tuple[str, str | None] | Any | None:
    """checkResult's patchedResources step for a mutating policy's row: None when the patched resource
    equals the expected one (or the row names none); _ABSENT when the file holds no document for it ("not
    found in manifest"); else (message, diff)."""
    if not entry.patched_resources:
        return None
    actual = evaluation.patched.get((entry.policy_name, subject.ref), subject.obj)
    expected_docs = ctx.loaded.patched.get(entry.index)
    if expected_docs is None:
        return (ctx.loaded.entry_errors.get(entry.index, "cannot load patched resources"), None)
    found, message, diff = compare_patched(actual, expected_docs)
    if not found:
        return _ABSENT
    return (message, diff) if message else None


def _cli_namespaced(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The CLI reads every resource document, a cluster-scoped one too, into namespace `default` when it
    names none (kk: cmd/cli/kubectl-kyverno/resource/resource.go YamlToUnstructured): the resources it
    mutates and the expected patched ones alike."""
    meta = dict(obj.get("metadata") or {})
    if meta.get("namespace"):
        return dict(obj)
    meta["namespace"] = "default"
    return {**obj, "metadata": meta}


def _kyverno_mutating_row(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject,
                          checked: Sequence[Result]) -> Row:
    """printTestResult for a mutating policy's responses: the patched resource first, then the result. A
    MutatingAdmissionPolicy row goes through the classic branch (output.go: not among the ruleless kinds
    there), where any mismatch counts as a success when the row expects `fail`."""
    resource, kind = _display(subject), subject.ref.kind
    actual, passed, message = _compare(entry, checked)
    lenient = entry.policy_name in ctx.mutating_admission and entry.result == "fail"
    mismatch = _patched_mismatch(ctx, evaluation, entry, subject)
    if mismatch is _ABSENT:
        return _row(ctx.loaded, entry, resource, kind, actual, True, EXCLUDED,
                    "not found in manifest: the CLI skips the row", vacuous=MATCHED_NOTHING)
    if mismatch is not None:
        text, diff = mismatch
        return _row(ctx.loaded, entry, resource, kind, actual, lenient, OK if lenient else PATCHED_MISMATCH,
                    text, diff)
    if not passed and lenient:
        return _row(ctx.loaded, entry, resource, kind, actual, True, OK, message, vacuous=FAIL_MET_BY_SKIP
                    if actual == "skip" else "")
    return _row(ctx.loaded, entry, resource, kind, actual, passed, OK if passed else RESULT_MISMATCH, message)


def _classic_options(loaded: LoadedSuite, kinds: KindLookup, mode: Mode = Mode.KYVERNO) -> Any:
    """Kyverno's CLI runs without registry access unless `--registry` is given: imageRegistry context
    entries stay absent. A cluster reads the registry, which kyrec offline cannot: in strict mode those
    entries make the rule undetermined (needs-registry), as `eval` says of them."""
    from kubectl_kyrec.testsuite.classic_options import suite_options

    options = suite_options(loaded, kinds)
    if mode is Mode.STRICT and options.sources is not None:
        options = replace(options, sources=replace(options.sources, registry=True))
    return options


def _reads_image_registry(value: Any) -> bool:
    """Whether a classic policy has an imageRegistry context entry anywhere (rules, foreach, nested)."""
    if isinstance(value, Mapping):
        if isinstance(value.get("imageRegistry"), Mapping):
            return True
        return any(_reads_image_registry(v) for v in value.values())
    if isinstance(value, list):
        return any(_reads_image_registry(v) for v in value)
    return False


def _has_rule(policy: Any, rule: str) -> bool:
    """Whether a classic policy has the rule, or the rule is an autogen variant of one it has."""
    names = {r.name for r in policy.rules}
    return rule in names or any(rule == f"{prefix}{n}" for n in names for prefix in ("autogen-", "autogen-cronjob-"))


def _classic_generate_rule(policy: Any, rule: str) -> bool:
    return any(r.name == rule and r.type == "generate" for r in policy.rules)


def _patched_check(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject
                   ) -> tuple[str, str, str | None] | None:
    """The check of a classic mutate row's patchedResources: None when there is none to make, else
    (OK | MISSING_PATCHED | PATCHED_MISMATCH | LOAD_ERROR, message, diff)."""
    mutated = evaluation.mutated
    name = entry.policy_name
    if not entry.patched_resources or mutated is None or name not in ctx.classic:
        return None
    rule = entry.rule
    for prefix in ("autogen-cronjob-", "autogen-"):
        if rule.startswith(prefix) and (name, rule) not in mutated.rule_types:
            rule = rule[len(prefix):]
    if mutated.rule_types.get((name, rule)) != "mutate":
        return None
    if entry.index in ctx.loaded.entry_errors:
        return LOAD_ERROR, ctx.loaded.entry_errors[entry.index], None
    actual = mutated.patched.get((name, subject.ref))
    if actual is None:
        return None
    found, message, diff = compare_patched(actual, ctx.loaded.patched.get(entry.index, []))
    if not found:
        return MISSING_PATCHED, message, None
    if message:
        return PATCHED_MISMATCH, message, diff
    return OK, "", None


def _classic_existing_rule(policy: Any, rule: str) -> bool:
    return any(r.name == rule and r.type == "mutate" and (r.raw.get("mutate") or {}).get("targets")
               for r in policy.rules)


def _existing_rows(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry) -> list[Row]:
    """A mutate-existing rule's rows (kk: output.go printTestResult over responses.Trigger and
    responses.Target). The CLI keys a target by what any policy's rule patched on it (test.go: every
    response whose rule has that patched target, whatever the entry's policy), checks the patched target
    against `patchedResources` and that rule's result; a trigger's rows compare the trigger itself, which
    the file seldom holds ("not found in manifest": no row), and pass "Excluded" when the rule gave it no
    response. `--strict`: one row per target this policy's rule patched (or the entry names), its result
    and patched object both checked; a named trigger is checked by its rule responses' results.

    A mutateExisting MutatingPolicy's entry reads the same maps (kk 111e07bb: its target responses join
    the classic ones in responses.Target), every rule response of the policy checked (ruleless). Its
    triggers are every resource (the admission pass answers each one: `_kyverno_row`/`_strict_row`); the
    target responses it also files under the trigger carry an empty PatchedResource, which a
    patchedResources file never holds (no row), and are checked by result without one."""

    loaded = ctx.loaded
    name = entry.policy_name
    classic = name in ctx.classic
    existing: dict[Ref, list[Any]] = {}
    for found_by in (evaluation.mutated.existing if evaluation.mutated is not None else {}, evaluation.existing):
        for ref, found in found_by.items():
            existing.setdefault(ref, []).extend(found)
    changes = [c for found in existing.values() for c in found]
    own = {ref: [c for c in found if c.policy.rsplit("/", 1)[-1] == name and (not classic or c.rule in (
               entry.rule, f"autogen-{entry.rule}", f"autogen-cronjob-{entry.rule}"))]
           for ref, found in existing.items()}
    target_docs = {_target_key(d.obj): d.obj for d in loaded.target_objects}
    patched_on = {key: [c for c in changes if c.result == "pass" and c.after is not None
                        and _target_key(c.after) == key] for key in target_docs}
    patched_on = {k: v for k, v in patched_on.items() if v}

    def named(key: tuple[str, str, str, str]) -> bool:
        for text in entry.resources:
            namespace, _, plain = text.rpartition("/")
            if plain == key[3] and (not namespace or namespace == (key[2] or "default")):
                return True
        return False

    triggers = [s for s in evaluation.subjects if s.ref in own or (not classic and s.resource)]
    target_keys = list(patched_on) if ctx.mode is Mode.KYVERNO else \
        [k for k in target_docs if any(_target_key(c.before) == k for found in own.values() for c in found
                                       if c.before is not None)]
    chosen_targets = [k for k in target_keys if named(k)]
    chosen_triggers = [s for s in triggers if named(_target_key(s.obj))]
    if not entry.resources or not (chosen_targets or chosen_triggers):
        chosen_targets, chosen_triggers = target_keys, triggers
    rows: list[Row] = []
    expected = loaded.patched.get(entry.index, [])
    for key in chosen_targets:
        resource = f"{key[2]}/{key[3]}" if key[2] else key[3]
        found = patched_on.get(key, []) if ctx.mode is Mode.KYVERNO else \
            [c for cs in own.values() for c in cs if c.before is not None and _target_key(c.before) == key]
        if not found:
            rows.append(_row(loaded, entry, resource, key[1], "", False, NOT_MATCHED,
                             f"rule {entry.rule!r} changed nothing on {key[1]} {resource}"))
            continue
        actual = ",".join(dict.fromkeys(c.result for c in found))
        passed, reason, message, diff = True, OK, "; ".join(dict.fromkeys(c.message for c in found)), None
        for change in found:
            if entry.patched_resources and change.after is not None:
                hit, text, delta = compare_patched(change.after, expected)
                if not hit or text:
                    passed, reason, message, diff = False, (PATCHED_MISMATCH if hit else MISSING_PATCHED), text, delta
                    break
            if change.result != entry.result:
                passed, reason, message = False, RESULT_MISMATCH, change.message
                break
        if ctx.mode is Mode.KYVERNO and not passed and entry.result == "fail" and classic:
            passed = True
        rows.append(_row(loaded, entry, resource, key[1], actual, passed, reason, message, diff))
    for subject in chosen_triggers:
        resource, kind = _display(subject), subject.ref.kind
        found = own.get(subject.ref, [])
        if not classic:
            rows.extend(_mutate_existing_trigger_rows(ctx, evaluation, entry, subject, found))
            continue
        if ctx.mode is Mode.STRICT:
            if not found:
                rows.append(_row(loaded, entry, resource, kind, "", False, NOT_MATCHED,
                                 f"policy {name!r} gave no response for {kind} {resource} (not matched)"))
                continue
            actual = ",".join(dict.fromkeys(c.result for c in found))
            passed = all(c.result == entry.result for c in found)
            rows.append(_row(loaded, entry, resource, kind, actual, passed, OK if passed else RESULT_MISMATCH,
                             "; ".join(dict.fromkeys(c.message for c in found))))
            continue
        if not found:
            rows.append(_row(loaded, entry, resource, kind, "", True, EXCLUDED, "Excluded", vacuous=MATCHED_NOTHING))
            continue
        hit, text, delta = compare_patched(subject.obj, expected) if entry.patched_resources else (True, "", None)
        if not hit:
            continue        # "not found in manifest": the CLI makes no row for the trigger
        actual = ",".join(dict.fromkeys(c.result for c in found))
        ok = not text and all(c.result == entry.result for c in found)
        rows.append(_row(loaded, entry, resource, kind, actual, ok or entry.result == "fail",
                         OK if ok else (PATCHED_MISMATCH if text else RESULT_MISMATCH), text or found[0].message,
                         delta))
    if not rows:
        rows.append(_row(loaded, entry, entry.resources[0] if entry.resources else "*", entry.kind, "", True, OK,
                         "Kyverno's CLI makes no row: no target was patched and the triggers are not in "
                         "the patchedResources file", vacuous=MISSING_PATCHED))
    return rows


def _mutate_existing_trigger_rows(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject,
                                  found: Sequence[Any]) -> list[Row]:
    """A mutateExisting MutatingPolicy's rows for a trigger: its admission response's (as any
    MutatingPolicy's), then, in Kyverno's mode and without patchedResources, one per target response the
    CLI filed under the trigger (with patchedResources their empty object is "not found in manifest")."""
    if ctx.mode is Mode.STRICT:
        return [_strict_row(ctx, evaluation, entry, subject)]
    rows = [_kyverno_row(ctx, evaluation, entry, subject)]
    if not entry.patched_resources:
        resource, kind = _display(subject), subject.ref.kind
        for change in found:
            passed = change.result == entry.result
            rows.append(_row(ctx.loaded, entry, resource, kind, change.result, passed,
                             OK if passed else RESULT_MISMATCH, change.message))
    return rows


def _target_key(obj: Any) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), str(meta.get("namespace") or ""),
            str(meta.get("name") or ""))


def _classic_unevaluated(policy: Any, rule: str) -> str:
    """Why kyrec does not check a row of a classic rule ("" when it does)."""
    for prefix in ("autogen-cronjob-", "autogen-"):
        if rule.startswith(prefix) and all(r.name != rule for r in policy.rules):
            rule = rule[len(prefix):]
            break
    for r in policy.rules:
        if r.name == rule and r.type not in ("validate", "mutate", "verifyImages"):
            return f"rule {rule!r} is a {r.type} rule, which kyrec does not evaluate"
    return ""


# ---------------------------------------------------------------------------------------------------------
# generating policies


def generating_hook(*, kinds: KindLookup, libraries: LibraryFactory, sink: GeneratorSink,
                    now: datetime.datetime) -> GenerateFn:
    """A GenerateFn over kyrec's GeneratingPolicy evaluator. `libraries` must bind `sink` as the
    `generator` library (cel.generator_lib.generator_extra).

    A matchConditions skip counts as a response with result `skip` (strict mode needs to tell it from
    no match); a trigger that does not match gives no outcome, as in Kyverno.
    """
    from kubectl_kyrec.evaluate.generating.engine import GenerateOptions, run_generating
    from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus

    envs = Environments(libraries)

    def generate(loaded: LoadedSuite, operation: str) -> GenerationRun:
        options = GenerateOptions(now=now, operation=operation, user_info=loaded.user_info,
                                  user_info_known=True, namespace_labels=loaded.values.namespace_labels)
        state = [*loaded.values.namespaces, *loaded.param_objects, *loaded.cluster_objects]
        outcome = run_generating(loaded.policies.generating, loaded.resources, state, kinds=kinds, envs=envs,
                                 sink=sink, options=options, exceptions=loaded.policies.exceptions,
                                 locate=loaded.policies.locate)
        run = GenerationRun()
        starts = [(d.source, d.name) for d in loaded.policies.generating]
        for error in outcome.errors:
            run.errors.append((owner_of(error.source, starts), error.message, error.source))
        for o in outcome.outcomes:
            skipped = o.status is TriggerStatus.SKIPPED
            if skipped:
                result, message = "skip", "skip"
            elif o.result is not None:
                result, message = o.result.result, o.result.message
            else:
                result, message = "error", o.message
            run.outcomes.append(Generated(o.policy.name, o.trigger.ref, result, message, tuple(o.objects),
                                          skipped))
        return run

    return generate


def _generating_row(ctx: _Context, evaluation: _Evaluation, entry: TestResultEntry, subject: Subject) -> Row:
    name = entry.policy_name
    loaded = ctx.loaded
    resource, kind = _display(subject), subject.ref.kind
    outcomes = [g for g in evaluation.generated.get((name, subject.ref), []) if not g.rule or g.rule == entry.rule]
    if ctx.mode is Mode.KYVERNO:
        return _kyverno_generating_row(ctx, entry, subject, outcomes)
    if not outcomes:
        return _row(loaded, entry, resource, kind, "", False, NOT_MATCHED,
                    f"policy {name!r} gave no response for {kind} {resource} (not matched)")
    if entry.index in loaded.entry_errors:
        return _row(loaded, entry, resource, kind, "", False, LOAD_ERROR, loaded.entry_errors[entry.index])
    actual = ",".join(dict.fromkeys(g.result for g in outcomes))
    message = "; ".join(dict.fromkeys(g.message for g in outcomes if g.message))
    if entry.generated:
        expected_docs = loaded.generated.get(entry.index, [])
        objects = [o for g in outcomes for o in g.objects]
        if not objects:
            return _row(loaded, entry, resource, kind, actual, False, GENERATED_MISMATCH,
                        "the policy generated nothing for this trigger")
        for obj in objects:
            mismatch = compare_generated(obj, expected_docs)
            if mismatch is not None:
                text, diff = mismatch
                return _row(loaded, entry, resource, kind, actual, False, GENERATED_MISMATCH, text, diff)
    passed = all(g.result == entry.result for g in outcomes)
    return _row(loaded, entry, resource, kind, actual, passed, OK if passed else RESULT_MISMATCH, message)


def _kyverno_generating_row(ctx: _Context, entry: TestResultEntry, subject: Subject,
                            outcomes: Sequence[Generated]) -> Row:
    """printTestResult's GeneratingPolicy branch: a row per generated object, each a success when it
    matches or when the entry expects `fail`; a response that generated nothing is "Excluded"; no
    response (no match, false matchConditions) is "Not found"."""
    loaded = ctx.loaded
    resource, kind = _display(subject), subject.ref.kind
    responses = [g for g in outcomes if not g.skipped]
    if not responses:
        return _row(loaded, entry, resource, kind, "", False, NOT_FOUND, "Not found")
    objects = [(g, o) for g in responses for o in g.objects]
    if not objects:
        return _row(loaded, entry, resource, kind, "", True, EXCLUDED, "Excluded")
    actual = ",".join(dict.fromkeys(g.result for g in responses))
    if entry.result == "fail":
        return _row(loaded, entry, resource, kind, actual, True, OK, "a fail row always succeeds in Kyverno")
    if entry.index in loaded.entry_errors:
        return _row(loaded, entry, resource, kind, actual, False, LOAD_ERROR, loaded.entry_errors[entry.index])
    for g, obj in objects:
        if entry.generated:
            mismatch = compare_generated(obj, loaded.generated.get(entry.index, []))
            if mismatch is not None:
                return _row(loaded, entry, resource, kind, actual, False, GENERATED_MISMATCH, *mismatch)
        if g.result != entry.result:
            return _row(loaded, entry, resource, kind, actual, False, RESULT_MISMATCH, g.message)
    return _row(loaded, entry, resource, kind, actual, True, OK)


def tidy(value: Any) -> Any:
    """Kyverno's Tidy: drop nulls, then empty maps and lists, recursively (None when nothing is left)."""
    if isinstance(value, Mapping):
        out = {k: t for k, t in ((k, tidy(v)) for k, v in value.items()) if t is not None}
        return out or None
    if isinstance(value, list):
        items = [t for t in (tidy(v) for v in value) if t is not None]
        return items or None
    return value


def normalize_generated(obj: Mapping[str, Any]) -> Any:
    """Both sides of a generatedResource comparison: no generate.kyverno.io/* labels, managed-by added
    only when absent, then Tidy (kk: cmd/cli/kubectl-kyverno/commands/test/compare.go)."""
    meta = dict(obj.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items()
              if not str(k).startswith("generate.kyverno.io/")}
    labels.setdefault("app.kubernetes.io/managed-by", "kyverno")
    meta["labels"] = labels
    return tidy({**obj, "metadata": meta})


def compare_patched(actual: Mapping[str, Any], expected: Sequence[Document]) -> tuple[bool, str, str | None]:
    """A patched resource against a row's patchedResources, for the mutating kinds and classic mutate rules
    alike: (found, message, diff), found False when the file has no document for the patched resource (the
    CLI then checks nothing); else an empty message when they are equal. Both sides as the CLI reads them
    (a missing namespace is `default`), FixupGenerateLabels and Tidy, numbers as decoded JSON (1 and 1.0
    are one number, a bool is no number). kk: cmd/cli/kubectl-kyverno/commands/test/compare.go
    getAndCompareResource, resource.Compare."""
    got = _cli_namespaced(actual)
    identity = object_identity(got)
    match = next((d for d in expected if object_identity(_cli_namespaced(d.obj)) == identity), None)
    if match is None:
        return False, (f"resource with name {identity[3]} not found in manifest (the patched resource "
                       f"{identity[1]} {identity[2]}/{identity[3]} has no document in the patchedResources "
                       "file; Kyverno's CLI checks nothing)"), None
    want = _numbers(normalize_generated(_cli_namespaced(match.obj)))
    have = _numbers(normalize_generated(got))
    if want == have and _types(want) == _types(have):
        return True, "", None
    diff = "".join(difflib.unified_diff(
        _dump(want).splitlines(keepends=True), _dump(have).splitlines(keepends=True),
        fromfile=f"expected ({match.source})", tofile="patched"))
    return True, "Patched resource didn't match the patched resource in the test result", diff


def _numbers(value: Any) -> Any:
    """JSON compares decoded values: 1 and 1.0 are one number."""
    if isinstance(value, Mapping):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _types(value: Any) -> Any:
    """The value's shape with bools told from numbers (Python's True == 1)."""
    if isinstance(value, Mapping):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__ if isinstance(value, bool) else None


def compare_generated(actual: Obj, expected: Sequence[Document]) -> tuple[str, str | None] | None:
    """None when `actual` equals the expected document with its identity; else (message, diff)."""
    identity = object_identity(actual)
    match = next((d for d in expected if object_identity(d.obj) == identity), None)
    if match is None:
        return (f"generated {identity[1]} {identity[2] + '/' if identity[2] else ''}{identity[3]} has no "
                "document with its apiVersion, kind, namespace and name among the generated resources", None)
    want, got = normalize_generated(match.obj), normalize_generated(actual)
    if want == got:
        return None
    diff = "".join(difflib.unified_diff(
        _dump(want).splitlines(keepends=True), _dump(got).splitlines(keepends=True),
        fromfile=f"expected ({match.source})", tofile="generated"))
    return f"generated {identity[1]} {identity[3]} differs from {match.source}", diff


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=True, default_flow_style=False, allow_unicode=True)
