"""DeletingPolicy evaluation, step for step as Kyverno's dpol engine and deleting controller.

kk: pkg/cel/policies/dpol/compiler/compiler.go (the CEL environment: object, namespaceObject, variables,
the Kyverno libraries), compiler/policy.go Evaluate (exceptions first: a matching one keeps the object;
then every condition: all true deletes, a false one keeps, errors combine), engine/engine.go Handle
(matchConstraints with every rule's operations made `*`; a nil matchConstraints matches nothing; an
object without apiVersion or kind, a JSON payload, skips matching), engine/provider.go (exceptions whose
policyRefs name the policy and its kind; expiresAt is not looked at), and pkg/controllers/deleting/
controller.go: which objects a run looks at and when the run happens.

The controller's run (`candidates` here): for each resource rule, every (group, version, resource) it
names literally (admissionpolicy.GetGVRs: `*` is not expanded, so LISTing it fails and nothing of it is
looked at; nor are subresources), LISTed with the objectSelector as a label selector, in the policy's
namespace for a NamespacedDeletingPolicy (which skips cluster-scoped resources); objects Kyverno's
resourceFilters name are skipped; each one left goes through Handle, and a match is deleted with the
policy's deletionPropagationPolicy.

When: the policy runs at `Next(status.lastExecutionTime or metadata.creationTimestamp)` of its schedule
(kyverno/api deleting_policy.go GetExecutionTime); when that time has passed the controller runs it at once
(reconcile: `time.Now().After(executionTime)`). Times are UTC, as in Kyverno's container.
"""

from __future__ import annotations

import datetime
import enum
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.admission_chain import undetermined_reason
from kubectl_kyrec.evaluate.exceptions import CompiledException, applicable, compile_exceptions, conditions_hold
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NONE,
    NOT_MATCHED,
    conditions_node,
    constraints_node,
    exception_node,
    matched,
    result_node,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.namespaces import namespace_object, namespace_objects
from kubectl_kyrec.evaluate.request import RequestInfo, build_request
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext, make_subjects
from kubectl_kyrec.golang.cronexpr import CronError, parse_cron
from kubectl_kyrec.k8s.labels import SelectorError, matches_selector, selector_is_empty
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policy.deleting import DeletingPolicy
from kubectl_kyrec.load.policy.policies import PolicyException, PolicySet
from kubectl_kyrec.load.policy.vocabulary import MatchResources, ResourceRule
from kubectl_kyrec.model import UNDETERMINED, Document, EvalError, Notice, Result, Subject, group_version, new_result
from kubectl_kyrec.recording import Step, Trace

SOURCE = "KyvernoDeletingPolicy"


class DeletionStatus(enum.StrEnum):
    DELETE = "delete"          # matched, no exception, every condition true: the run deletes it
    NO_MATCH = "no-match"      # matchConstraints do not select it
    KEEP = "keep"              # a condition is false
    EXEMPT = "exempt"          # a PolicyException's conditions hold
    ERROR = "error"            # matching or a condition failed: the run leaves it (and reports the error)
    # a condition (or an exception's) reads image data only a registry gives (image.GetMetadata offline where
    # a cluster reads the registry): whether the run deletes it is not known
    NEEDS_REGISTRY = "needs-registry"
    # a condition (or an exception's) rests on a lookup the state read from a cluster cannot answer (its LIST
    # failed, or the kind was never listed there): whether the run deletes it is not known
    READ_FAILED = "read-failed"
    KIND_NOT_CAPTURED = "kind-not-captured"
    OTHER_VERSION = "other-version"   # held at another version than Kyverno LISTs: not evaluated


# the statuses whose result is undetermined (kyrec cannot decide), each named for its reason
UNDECIDED = frozenset({DeletionStatus.NEEDS_REGISTRY, DeletionStatus.READ_FAILED, DeletionStatus.KIND_NOT_CAPTURED})


@dataclass(frozen=True)
class CompiledDeletingPolicy:
    policy: DeletingPolicy
    env: Environment
    conditions: tuple[Program, ...]
    exceptions: tuple[CompiledException, ...]

    @functools.cached_property
    def match_any_operation(self) -> MatchResources | None:
        """The matchConstraints as a deletion run matches them (`any_operation`), made once."""
        constraints = self.policy.match_constraints
        return any_operation(constraints) if constraints is not None else None


@dataclass(frozen=True)
class DeletionOutcome:
    policy: DeletingPolicy
    subject: Subject
    status: DeletionStatus
    message: str = ""
    exceptions: tuple[str, ...] = ()        # the exceptions that keep it (EXEMPT)

    @property
    def deletes(self) -> bool:
        return self.status is DeletionStatus.DELETE

    def result(self) -> Result:
        """The CLI's response (kk: cmd/cli/kubectl-kyverno/commands/test/test.go applyDeletingPolicies): rule
        named for the policy, `pass` "resource matched" when it would be deleted, `fail` "resource did not
        match" otherwise (an exception, a false condition or no match alike), `error` with the error."""
        meta = self.policy.meta
        if self.status is DeletionStatus.ERROR:
            status, message = "error", self.message
        elif self.status in UNDECIDED:
            status, message = UNDETERMINED, self.message
        elif self.deletes:
            status, message = "pass", "resource matched"
        else:
            status, message = "fail", "resource did not match"
        return new_result(meta.key, SOURCE, meta.name, status, message, self.subject.ref, True,
                          meta.category, meta.severity, {}, (), self.subject.source, meta.source, "")


def compile_deleting_policy(policy: DeletingPolicy, envs: Environments, exceptions: Sequence[PolicyException],
                            now: datetime.datetime) -> CompiledDeletingPolicy:
    """Compile conditions, variables and the exceptions naming the policy, in Kyverno's order; InputError
    (file:line, field) on the first bad one (the CLI then fails: `failed to compile policy`; the admission
    webhook refuses the policy).

    The dpol compiler compiles the conditions before it declares the variables (compiler.go Compile), so a
    condition cannot read `variables.<name>` in Kyverno: "undefined field '<name>'" (v1.17.2's CLI says so);
    the variables are compiled after, their errors refuse the policy all the same, and nothing reads them."""
    meta = policy.meta
    env, check_env = envs.get(meta.kind, meta.namespace)
    label = meta.label
    compiler = PolicyCompiler(env, check_env, [], meta.source, label)
    conditions = tuple(compiler.compile(c.expression, f"spec.conditions[{i}].expression", ("bool",))
                       for i, c in enumerate(policy.conditions))
    PolicyCompiler(env, check_env, [VariableDecl(v.name, v.expression) for v in policy.variables], meta.source,
                   label)
    exc_env, exc_check = envs.get("PolicyException")
    candidates = applicable(exceptions, meta.name, meta.kind, now, check_expiry=False)
    return CompiledDeletingPolicy(policy, env, conditions,
                                  tuple(compile_exceptions(candidates, exc_env, exc_check)))


def compile_deleting_policies(policies: PolicySet, envs: Environments, now: datetime.datetime,
                              holds: Callable[[str], bool] = lambda key: True
                              ) -> tuple[list[CompiledDeletingPolicy], list[EvalError]]:
    """The DeletingPolicies `holds` picks (by key), each compiled (compile_deleting_policy); one that does not
    compile is an error at its file:line instead, as Kyverno's CLI refuses it."""
    compiled, errors = [], []
    for policy in policies.deleting:
        if not holds(policy.meta.key):
            continue
        try:
            compiled.append(compile_deleting_policy(policy, envs, policies.exceptions, now))
        except InputError as exc:
            located = policies.locate(exc)
            errors.append(EvalError(located.message, located.source))
    return compiled, errors


def any_operation(constraints: MatchResources) -> MatchResources:
    """engine.go matchPolicy: a deletion is no admission request, so every rule's operations become `*`."""
    def widen(rules: tuple[ResourceRule, ...]) -> tuple[ResourceRule, ...]:
        return tuple(ResourceRule(r.api_groups, r.api_versions, ("*",), r.resources, r.resource_names, r.scope)
                     for r in rules)

    return MatchResources(widen(constraints.resource_rules), widen(constraints.exclude_resource_rules),
                          constraints.namespace_selector, constraints.object_selector, constraints.match_policy,
                          constraints.raw)


def evaluate_object(cp: CompiledDeletingPolicy, ctx: SubjectContext, recorder: Trace | None = None
                    ) -> DeletionOutcome:
    """engine.go Handle + compiler/policy.go Evaluate for one object (or JSON payload).

    `recorder` (explain's): the explain nodes of each decision as it is taken (matchConstraints, each
    exception with the values of its conditions, the conditions with theirs), then whether the next run
    deletes the object and the result."""
    outcome = _evaluate_object(cp, ctx, recorder)
    if recorder is not None:
        verdict, why = _VERDICTS.get(outcome.status, ("keeps", outcome.message))
        said = outcome.status is DeletionStatus.ERROR or outcome.status in UNDECIDED
        recorder.add("next run", verdict, outcome.message if said else why)
        recorder.node(result_node(outcome.result()))
    return outcome


_VERDICTS = {
    DeletionStatus.DELETE: ("deletes", "matched, no exception, every condition true: the next run deletes it"),
    DeletionStatus.NO_MATCH: ("keeps", "not matched: the policy never looks at it"),
    DeletionStatus.KEEP: ("keeps", "a condition is not true"),
    DeletionStatus.EXEMPT: ("keeps", "a PolicyException exempts it"),
    DeletionStatus.ERROR: ("keeps", "the evaluation failed: the run leaves it and reports the error"),
    DeletionStatus.NEEDS_REGISTRY: ("undetermined", "it depends on image data only a registry gives"),
    DeletionStatus.READ_FAILED: ("undetermined", "it rests on a lookup whose LIST failed"),
    DeletionStatus.KIND_NOT_CAPTURED: ("undetermined", "it rests on a lookup of a kind not read"),
}


def _evaluate_object(cp: CompiledDeletingPolicy, ctx: SubjectContext, recorder: Trace | None) -> DeletionOutcome:
    policy = cp.policy
    obj = ctx.subject.obj

    def outcome(status: DeletionStatus, message: str = "", exceptions: tuple[str, ...] = ()) -> DeletionOutcome:
        return DeletionOutcome(policy, ctx.subject, status, message, exceptions)

    if obj.get("apiVersion") and obj.get("kind"):
        constraints = cp.match_any_operation
        if constraints is None:
            if recorder is not None:
                recorder.node(constraints_node(None, ctx, decided=(NOT_MATCHED, "")))
            return outcome(DeletionStatus.NO_MATCH)
        try:
            matched_constraints = matches_constraints(constraints, ctx.request, ctx.namespace_obj)
        except MatchError as failure:
            if recorder is not None:
                recorder.node(constraints_node(constraints, ctx, decided=(ERROR, str(failure))))
            return outcome(DeletionStatus.ERROR, str(failure))
        if recorder is not None:
            where = f" in namespace {ctx.request.namespace}" if ctx.request.namespace else " (cluster-scoped)"
            recorder.node(constraints_node(constraints, ctx, decided=(
                matched(matched_constraints), f"{ctx.subject.ref.api_version} {ctx.request.resource} "
                f"{ctx.subject.ref.name!r}{where}; every rule's operations count as *: a deletion is no "
                "admission request")))
        if not matched_constraints:
            return outcome(DeletionStatus.NO_MATCH)
    activation = ctx.activation(cp.env)
    matched_keys: list[str] = []
    exceptions = recorder.add("exceptions", NONE if not cp.exceptions else NOT_MATCHED) \
        if recorder is not None else None
    for exc in cp.exceptions:
        exc_activation = ctx.activation(exc.env)
        ok, error = conditions_hold(exc.conditions, exc_activation, False)
        if exceptions is not None:
            exceptions.children.append(exception_node(exc, ok, exc_activation, "no matchConditions: every object"))
            exceptions.outcome = MATCHED if ok else exceptions.outcome
        if error is not None:
            return _failed(outcome, "a PolicyException", error)
        if ok:
            matched_keys.append(exc.key)
    if matched_keys:
        return outcome(DeletionStatus.EXEMPT, f"exempted by policy exception: {', '.join(matched_keys)}",
                       tuple(matched_keys))
    if recorder is not None:
        recorder.node(conditions_node(policy.conditions, cp.conditions, activation, "the object is kept",
                                      "conditions"))
    ok, error = conditions_hold(cp.conditions, activation, False)
    if error is not None:
        return _failed(outcome, "a condition", error)
    return outcome(DeletionStatus.DELETE if ok else DeletionStatus.KEEP)


def _failed(outcome: Callable[[DeletionStatus, str], DeletionOutcome], where: str, error: str) -> DeletionOutcome:
    """The run's error, or the undetermined status the other kinds' reason names (undetermined_reason: only a
    registry could have answered, or a lookup the state read cannot): no deletion is decided either way."""
    reason = undetermined_reason(where, error)
    if reason is None:
        return outcome(DeletionStatus.ERROR, error)
    # the message starts with the reason, which names the status
    return outcome(DeletionStatus(reason.partition(":")[0]), reason)


def subject_context(subject: Subject, namespaces: Mapping[str, Mapping[str, Any]] | None) -> SubjectContext:
    """The context Handle evaluates in: the object alone (no request, no oldObject), and the namespace of a
    namespaced object (`namespaces` None: a JSON payload, which has none)."""
    if namespaces is None:
        request = RequestInfo(obj=subject.obj, old_obj=None, group="", version="", kind="", resource="",
                              subresource="", namespace="", name=subject.ref.name, operation="",
                              namespaced=False)
        return SubjectContext(subject, request, None, payload=True)
    # the operation is moot: matching widens every rule's operations to `*`; `payload` leaves `request`
    # unbound, as Evaluate does
    request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced)
    ns_obj = namespace_object(request.namespace, namespaces) if request.namespace and subject.namespaced else None
    return SubjectContext(subject, request, ns_obj, payload=True)


# ---- when the next run is ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class NextRun:
    at: datetime.datetime | None      # None: the schedule never fires again (or does not parse: `error`)
    due: bool = False                 # the scheduled time has passed: the controller runs it at once
    error: str = ""


def next_run(policy: DeletingPolicy, now: datetime.datetime, cluster: tuple[str, str] = ("", ""),
             recorder: Trace | None = None) -> NextRun:
    """kyverno/api GetExecutionTime: Next(lastExecutionTime, else creationTimestamp) of the schedule. Without
    either (a manifest not yet applied) the policy would be created now: Next(now). `cluster`: the
    (creationTimestamp, status.lastExecutionTime) of the policy as the cluster has it, for a manifest that
    lacks them. `recorder` (explain's): the schedule's node."""
    run = _next_run(policy, now, cluster)
    if recorder is not None:
        recorder.node(_schedule_node(policy, run))
    return run


def _schedule_node(policy: DeletingPolicy, run: NextRun) -> Step:
    if run.error:
        return Step("schedule", ERROR, f"{policy.schedule!r}: {run.error}")
    if run.at is None:
        return Step("schedule", "never", f"{policy.schedule!r} fires no more")
    at = run.at.strftime("%Y-%m-%dT%H:%M:%SZ")
    since = ("status.lastExecutionTime" if policy.last_execution_time
             else "creationTimestamp" if policy.meta.creation_timestamp else "now (a manifest not yet applied)")
    return Step("schedule", f"next run {at}", f"{policy.schedule!r} after {since}" +
                ("; due: the controller runs it at once" if run.due else ""))


def _next_run(policy: DeletingPolicy, now: datetime.datetime, cluster: tuple[str, str]) -> NextRun:
    try:
        expr = parse_cron(policy.schedule)
    except CronError as exc:
        return NextRun(None, error=f"failed to get the policy execution time: {exc}")
    created = policy.meta.creation_timestamp or cluster[0]
    last = policy.last_execution_time or (cluster[1] if not policy.meta.creation_timestamp else "")
    reference = parse_rfc3339(last) if last else None
    if reference is None:
        reference = parse_rfc3339(created) if created else None
    utc = datetime.UTC
    at = expr.next_after((reference or now).astimezone(utc))
    if at is None:
        return NextRun(None)
    return NextRun(at, due=at <= now)


# ---- a whole run over a state -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ListedResource:
    """One LIST the controller makes for a policy: a (group, version, resource) in a scope."""

    group: str
    version: str
    resource: str
    namespace: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def listed_resources(policy: DeletingPolicy) -> tuple[list[ListedResource], list[str]]:
    """GetGVRs, and the controller's skips: (the LISTs the run makes, why others are not made). A `*`,
    a subresource or an empty group or version list LISTs nothing."""
    constraints = policy.match_constraints
    if constraints is None:
        return [], []
    out: list[ListedResource] = []
    skipped: list[str] = []
    namespace = policy.meta.namespace if policy.namespaced else ""
    for rule in constraints.resource_rules:
        if not rule.api_groups or not rule.api_versions:
            continue
        for group in rule.api_groups:
            for version in rule.api_versions:
                for resource in rule.resources:
                    if "*" in (group, version, resource) or "/" in resource:
                        skipped.append(f"{group or 'core'}/{version}/{resource}: Kyverno LISTs it as written, "
                                       "which fails for a wildcard or a subresource")
                        continue
                    item = ListedResource(group, version, resource, namespace)
                    if item not in out:
                        out.append(item)
    return out, skipped


@dataclass(frozen=True)
class DeleteOptions:
    now: datetime.datetime
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Kyverno's resourceFilters (kyverno ConfigMap): (kind, namespace, name, apiVersion) -> skipped
    filtered: Any = None


@dataclass
class DeletingOutcome:
    """Every (policy, object) the policies' next runs look at, and when each policy runs."""

    policies: list[DeletingPolicy] = field(default_factory=list)
    outcomes: list[DeletionOutcome] = field(default_factory=list)
    runs: dict[str, NextRun] = field(default_factory=dict)                  # by policy key
    lists: dict[str, list[ListedResource]] = field(default_factory=dict)    # by policy key
    errors: list[EvalError] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    # policies whose run cannot happen (no matchConstraints): key -> why
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def deletions(self) -> list[DeletionOutcome]:
        return [o for o in self.outcomes if o.deletes]


def _list_of(subject: Subject, lists: Sequence[ListedResource]) -> tuple[ListedResource | None, bool]:
    """The LIST that returns the object, and whether it returns it at the version the state holds."""
    group, version = group_version(subject.ref.api_version)
    found = None
    for lst in lists:
        if (group, subject.resource) != (lst.group, lst.resource):
            continue
        if lst.namespace and subject.ref.namespace != lst.namespace:
            continue
        if lst.version == version:
            return lst, True
        found = found or lst
    return found, False


def run_deleting(policies: Sequence[DeletingPolicy], state: Sequence[Document], *, kinds: KindLookup,
                 envs: Environments, options: DeleteOptions, exceptions: Sequence[PolicyException] = (),
                 cluster_times: Mapping[str, tuple[str, str]] | None = None,
                 locate: Callable[[InputError], InputError] | None = None) -> DeletingOutcome:
    """Each policy's next run over the objects of `state`, as the deleting controller would make it.

    `cluster_times`: (creationTimestamp, status.lastExecutionTime) of the policies as the cluster has them,
    by key (for manifests that lack them). `locate` moves an error to the line of the field it names.
    Objects are the state's own: Kyverno LISTs each resource at the version the rule names; an object the
    state holds only at another version of its kind is OTHER_VERSION, not evaluated.
    """
    out = DeletingOutcome()
    subjects = make_subjects([d for d in state if d.obj.get("metadata")], kinds).subjects
    namespaces = namespace_objects(state, options.namespace_labels)
    for policy in policies:
        out.policies.append(policy)
        key = policy.key
        run = next_run(policy, options.now, (cluster_times or {}).get(key, ("", "")))
        out.runs[key] = run
        if run.error:
            out.errors.append(EvalError(f"{policy.meta.kind} {key}: {run.error}", policy.source))
            continue
        if policy.match_constraints is None:
            out.refused[key] = "matchConstraints is required"
            out.errors.append(EvalError(f"{policy.meta.kind} {key}: matchConstraints is required (Kyverno's "
                                        "deleting controller does not run it)", policy.source))
            continue
        try:
            cp = compile_deleting_policy(policy, envs, exceptions, options.now)
        except InputError as exc:
            located = locate(exc) if locate is not None else exc
            out.errors.append(EvalError(located.message, located.source))
            continue
        selector_error = _selector_error(policy.match_constraints)
        if selector_error is not None:
            # metav1.LabelSelectorAsSelector fails before any LIST: the run does nothing (controller.go)
            out.refused[key] = selector_error
            out.errors.append(EvalError(f"{policy.meta.kind} {key}: spec.matchConstraints.objectSelector: "
                                        f"{selector_error}", policy.source))
            continue
        lists, skipped = listed_resources(policy)
        out.lists[key] = lists
        out.notices.extend(Notice(f"{key}: {text}", policy.source) for text in skipped)
        seen: set[str] = set()
        for subject in subjects:
            lst, same_version = _list_of(subject, lists)
            if subject.ref.uid in seen or lst is None:
                continue
            if policy.namespaced and not subject.namespaced:
                continue
            if not _selected(policy.match_constraints, subject):
                continue
            ref = subject.ref
            if options.filtered is not None and options.filtered(ref.kind, ref.namespace, ref.name,
                                                                 ref.api_version):
                continue
            seen.add(ref.uid)
            if not same_version:
                # a LIST at another version returns the object converted: what the policy sees is not known
                out.outcomes.append(DeletionOutcome(
                    policy, subject, DeletionStatus.OTHER_VERSION,
                    f"the state holds it as {ref.api_version}; Kyverno LISTs it as {lst.api_version}"))
                continue
            out.outcomes.append(evaluate_object(cp, subject_context(subject, namespaces)))
    return out


def _selector_error(constraints: MatchResources) -> str | None:
    if selector_is_empty(constraints.object_selector):
        return None
    try:
        matches_selector(constraints.object_selector, {})
    except SelectorError as exc:
        return str(exc)
    return None


def _selected(constraints: MatchResources, subject: Subject) -> bool:
    """The LIST's label selector (the objectSelector, checked to parse first): an object it leaves out is
    never seen."""
    if selector_is_empty(constraints.object_selector):
        return True
    labels = (subject.obj.get("metadata") or {}).get("labels") or {}
    return matches_selector(constraints.object_selector, labels)
