"""The admission chain for manifests: defaulting, then mutating admission, then (the caller's) validation.

An API server stores what its admission chain makes of a manifest, not the manifest: it applies its
defaults for built-in kinds first (k8s/defaulting.py), then the mutating admission plugins in its plugin
order (the in-tree MutatingAdmissionPolicy plugin, then the webhooks: Kyverno), and only then do validating
policies see the object. `eval` on manifests runs this chain so that a Pod a mutate rule makes compliant
passes and a Service without `spec.type` is validated as ClusterIP (docs/admission.md). Objects read from
a cluster were admitted already: the chain is for manifests only, and background-scan outputs (reports as
the scan writes them, coverage, `diff`) never mutate.

The chain runs before the subjects are evaluated (in this process, ahead of any fan-out): each subject is
replaced by its admitted object, and what the chain did is kept per subject (`Admission`) for the outputs.

Each mutation engine (a `MutationEngine`) takes the request as the chain has made it so far and answers a
`MutationStep`: the object after its step, and what it changed. The engines run in the API server's plugin
order (the in-tree MutatingAdmissionPolicy plugin before the MutatingAdmissionWebhook plugin, which calls
Kyverno), and within Kyverno's webhooks in Kyverno's order (docs/admission.md#mutation-order); the chain
feeds each step's object to the next engine, and the last object to validation.

An engine never guesses an order it cannot know: where the outcome depends on an order Kyverno does not
fix (it ranges over a Go map), the step says so in `undetermined` (reason `order-dependent`), and the
chain reports the subject's validation results as undetermined rather than pick one of the outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from kubectl_kyrec.cel.decl import needs_registry
from kubectl_kyrec.errors import KIND_NOT_CAPTURED, READ_FAILED, lookup_unread
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.model import UNDETERMINED, Obj, Result, Source, Subject
from kubectl_kyrec.recording import Trace

# the report sources of mutation results: an error of one of these policies with failurePolicy Fail denies
# the request (reconcile/impact.py)
MUTATION_SOURCES = frozenset({"KyvernoMutatingPolicy", "MutatingAdmissionPolicy"})

# why a subject's admitted object cannot be known offline
ORDER_DEPENDENT = "order-dependent"
NEEDS_REGISTRY = "needs-registry"
# an apply configuration sets a list whose merge depends on the kind's OpenAPI schema, which kyrec lacks
NEEDS_SCHEMA = "needs-schema"


def registry_reason(where: str, error: str | None) -> str | None:
    """The `undetermined` reason of an evaluation `error` that came from a read only a registry answers
    (image.GetMetadata offline where a cluster would read the registry: eval, diff, test --strict), the same
    words whatever the policy kind; None for any other error, which stays Kyverno's."""
    if not needs_registry(error):
        return None
    return f"{NEEDS_REGISTRY}: {where} needs a registry: {error}"


def unread_reason(reason: str, where: str, error: str) -> str:
    """The message of an `undetermined` result that rests on a lookup the state read from a cluster cannot
    answer (cel/decl.py LookupUnread): `reason` (read-failed, kind-not-captured) first, as every undetermined
    result gives its reason. Kyverno reads what it looks up, so the error is kyrec's, not the policy's
    (docs/architecture.md, partial reads)."""
    return f"{reason}: {where} rests on a lookup the cluster read cannot answer: {error}"


def unread_of(result: Result) -> str | None:
    """The reason (read-failed, kind-not-captured) of an `undetermined` result that rests on a lookup the state
    could not answer (its message starts with it: unread_reason), else None."""
    if result.result != UNDETERMINED:
        return None
    reason = result.message.partition(":")[0]
    return reason if reason in (READ_FAILED, KIND_NOT_CAPTURED) else None


def undetermined_reason(where: str, error: str | None) -> str | None:
    """The `undetermined` message of an evaluation `error` of a CEL policy that kyrec, not the policy, made:
    a read only a registry answers (registry_reason), or a lookup the state read from a cluster cannot
    answer (unread_reason; past the CEL boundary only the error's text says so). None for any other error,
    which stays Kyverno's. One rule for every CEL kind."""
    registry = registry_reason(where, error)
    if registry is not None or error is None:
        return registry
    reason = lookup_unread(error)
    return None if reason is None else unread_reason(reason, where, error)


@dataclass(frozen=True)
class Mutation:
    """One policy's (or classic rule's) change to the object: the JSON patch from its input to its output."""

    policy: str                     # `name`, or `ns/name` for a namespaced policy
    policy_kind: str                # MutatingPolicy, MutatingAdmissionPolicy, ClusterPolicy, Policy, ...
    rule: str                       # a classic rule's name; a MutatingAdmissionPolicy's binding; "" otherwise
    patch: tuple[Mapping[str, Any], ...]
    location: Source | None = None  # the policy's file:line

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "kind": self.policy_kind}
        if self.rule:
            out["rule"] = self.rule
        out["patch"] = [dict(op) for op in self.patch]
        return out


@dataclass
class MutationStep:
    """An engine's answer for one request.

    `obj`: the object after every policy of the engine that applied (the input object when none did).
    `mutations`: each applying policy's change, in the order applied; a policy that matched and changed
    nothing gives none. `results`: the per policy (rule) outcomes Kyverno reports for mutation (pass when
    applied, skip, error, fail), with the same fields as validation results. `undetermined`: reasons the
    admitted object cannot be known (ORDER_DEPENDENT, NEEDS_REGISTRY, ...), each a short sentence naming
    the policies concerned.
    """

    obj: Mapping[str, Any] | None
    mutations: list[Mutation] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    undetermined: list[str] = field(default_factory=list)
    # the other objects an order the engine does not know gives (one of `undetermined` says so)
    orders: OrderCandidates | None = None
    # how the API server calls this stage again in its reinvocation round; None: a webhook with
    # reinvocationPolicy Never (docs/admission.md, "Reinvocation"); how to run,
    # not part of the answer
    reinvocation: Reinvocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Reinvocation:
    """How a stage runs in the API server's reinvocation round (k8s.io/apiserver pkg/admission/reinvocation.go:
    after the mutating plugins ran once and any of them changed the object, the whole chain is admitted once
    more). `run`: the stage's step on the object as it is then. `webhook`: False for an in-tree plugin (the
    MutatingAdmissionPolicy plugin), which is always called again and picks what it re-runs itself (`run`
    holds only its policies with reinvocationPolicy IfNeeded); True for a webhook, called again only when a
    later stage changed the object after it (webhook/mutating/dispatcher.go, reinvocationcontext.go)."""

    run: Callable[[SubjectContext], MutationStep]
    webhook: bool


@dataclass(frozen=True)
class OrderCandidates:
    """The objects the orders an engine tried give besides the step's own (each once): `reason` is the
    ORDER_DEPENDENT entry of the step's `undetermined` they account for, `tried` how many orders were
    tried (the engine's own included)."""

    reason: str
    alternatives: tuple[Obj, ...]
    tried: int


class MutationEngine(Protocol):
    """One stage of mutating admission (an engine over its compiled policies)."""

    def mutate(self, ctx: SubjectContext) -> MutationStep:
        """The step for the request `ctx` makes (ctx.request.obj is the object as the chain has it so
        far; ctx.request.old_obj is the stored object for UPDATE and DELETE)."""
        ...


def mutation_of(policy: str, policy_kind: str, rule: str, before: Any, after: Any,
                location: Source | None = None) -> Mutation | None:
    """The Mutation from `before` to `after`, or None when the policy changed nothing."""
    ops = make_patch(before, after)
    if not ops:
        return None
    return Mutation(policy, policy_kind, rule, tuple(ops), location)


def chain_steps(steps: Sequence[MutationStep]) -> tuple[list[Mutation], list[Result], list[str]]:
    """Every step's mutations, results and undetermined reasons, in order."""
    mutations = [m for s in steps for m in s.mutations]
    results = [r for s in steps for r in s.results]
    reasons = [u for s in steps for u in s.undetermined]
    return mutations, results, reasons


Defaulter = Callable[[Obj], Obj]


@dataclass(frozen=True)
class Admission:
    """What the chain made of one subject: the object as the API server would store it (None for a
    DELETE), the request's operation, each mutation in order, and why the stored object cannot be known
    (`undetermined`; validation results of the subject are undetermined then)."""

    subject: Subject                # the admitted subject (its `obj` is the stored object)
    operation: str
    mutations: tuple[Mutation, ...] = ()
    undetermined: tuple[str, ...] = ()
    defaulted: bool = False         # the API server's defaults changed the manifest
    # the object after the defaults, before any mutation (`explain` shows what the defaults set)
    before_mutations: Obj | None = field(default=None, repr=False, compare=False)
    # when the only unknown is an order Kyverno does not fix: the other objects the orders tried admit
    # (the subject's own is `subject.obj`) and how many orders were tried; validation is then decided on
    # each (order_resolved)
    alternatives: tuple[Obj, ...] = field(default=(), repr=False, compare=False)
    orders_tried: int = 0

    @property
    def changed(self) -> bool:
        return self.defaulted or bool(self.mutations)


@dataclass
class ChainOutcome:
    subjects: list[Subject] = field(default_factory=list)       # in the order given, each as admitted
    admissions: list[Admission] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)         # the mutation engines' own results


class AdmissionChain:
    """Defaulting (when `default` is given) and then each engine, in the order given."""

    def __init__(self, engines: Sequence[MutationEngine], default: Defaulter | None) -> None:
        self.engines = list(engines)
        self.default = default
        # explain's, when set to {}: per engine that records (a true `records` attribute: its `mutate` takes a
        # recorder), in the chain's order (each is first called on the first subject, in order), per subject (by id
        # of its Ref), what it recorded in the last call for the subject, the one whose step the chain kept (the
        # objects other orders give come first, the subject's own last)
        self.traces: dict[int, dict[int, Trace]] | None = None

    def admit(self, subjects: Sequence[Subject], context_of: Callable[[Subject], SubjectContext],
              operation: str = "CREATE") -> ChainOutcome:
        """Each subject through the chain; `context_of` makes the request a subject stands for (with its
        namespace), as validation will; `operation`: the request's unless the subject says (`--old`)."""
        out = ChainOutcome()
        for subject in subjects:
            admitted, admission, results = self._admit_one(subject, context_of, subject.operation or operation)
            out.subjects.append(admitted)
            out.admissions.append(admission)
            out.results.extend(results)
        return out

    def _admit_one(self, subject: Subject, context_of: Callable[[Subject], SubjectContext], operation: str
                   ) -> tuple[Subject, Admission, list[Result]]:
        if operation == "DELETE":
            # nothing is stored: the request carries the stored object as oldObject, unmutated
            return subject, Admission(subject, operation), []
        obj: Obj = subject.obj
        defaulted = False
        if self.default is not None:
            obj = self.default(obj)
            defaulted = obj != subject.obj
        current = replace(subject, obj=obj) if defaulted else subject
        mutations: list[Mutation] = []
        results: list[Result] = []
        reasons: list[str] = []
        # the objects other orders admit, each carried through the engines after the one that found it
        alternatives: list[Obj] = []
        resolvable: list[str] = []      # the reasons those alternatives account for
        tried = 1
        complete = True                 # every alternative went through the later engines without an unknown
        ran: list[tuple[MutationEngine, MutationStep, bool]] = []
        for engine in self.engines:
            moved: list[Obj] = []
            for alt in alternatives:
                alt_step = self._mutate(engine, context_of(replace(current, obj=alt)))
                complete = complete and not alt_step.undetermined
                moved.append(dict(alt_step.obj) if alt_step.obj is not None else alt)
            alternatives = moved
            step = self._mutate(engine, context_of(current))
            results.extend(step.results)
            mutations.extend(step.mutations)
            reasons.extend(step.undetermined)
            if step.orders is not None:
                resolvable.append(step.orders.reason)
                alternatives.extend(dict(a) for a in step.orders.alternatives)
                tried *= step.orders.tried
            ran.append((engine, step, step.obj is not None and step.obj != current.obj))
            if step.obj is not None and step.obj is not current.obj:
                current = replace(current, obj=dict(step.obj))
        again = self._reinvoke(ran, current, context_of)
        for step in again:
            mutations.extend(step.mutations)
            reasons.extend(step.undetermined)
            if step.obj is not None and step.obj != current.obj:
                current = replace(current, obj=dict(step.obj))
                # the other orders' objects were not carried through the reinvocation round
                complete = False
        found: list[Obj] = []
        if complete and reasons and all(r in resolvable for r in reasons):
            found = [a for i, a in enumerate(alternatives) if a != current.obj and a not in alternatives[:i]]
        admission = Admission(current, operation, tuple(mutations), tuple(reasons), defaulted, obj,
                              tuple(found), tried if found else 0)
        return current, admission, results


    def _mutate(self, engine: MutationEngine, ctx: SubjectContext) -> MutationStep:
        if self.traces is None or not getattr(engine, "records", False):
            return engine.mutate(ctx)
        trace = self.traces.setdefault(id(engine), {})[id(ctx.subject.ref)] = Trace()
        return engine.mutate(ctx, trace)        # type: ignore[call-arg]

    @staticmethod
    def _reinvoke(ran: Sequence[tuple[MutationEngine, MutationStep, bool]], current: Subject,
                  context_of: Callable[[Subject], SubjectContext]) -> list[MutationStep]:
        """The steps of the API server's reinvocation round (at most one), given each stage's first step and
        whether it changed the object: none when no stage changed it (reinvocation.go ShouldReinvoke). The
        webhooks follow webhook/mutating/dispatcher.go: a webhook with IfNeeded is called again when a
        later webhook changed the object after it, or when the in-tree plugins' second run changed the
        object since the webhooks' last output; a webhook called again that changes the object makes the
        IfNeeded webhooks called after it in the first round run again too."""
        if not any(changed for _, _, changed in ran):
            return []
        hooks = [step.reinvocation for _, step, _ in ran]
        previously: list[int] = []      # previouslyInvokedReinvocableWebhooks
        again: set[int] = set()         # reinvokeWebhooks
        for i, (_, _, changed) in enumerate(ran):
            hook = hooks[i]
            if hook is not None and not hook.webhook:
                continue
            if changed:
                again.update(previously)
                previously = []
            if hook is not None:
                previously.append(i)
        last_output = current.obj
        steps: list[MutationStep] = []
        webhooks_started = False
        for i, hook in enumerate(hooks):
            webhook = hook is None or hook.webhook
            if webhook and not webhooks_started:
                webhooks_started = True
                if current.obj != last_output:
                    # the in-tree plugins' second run changed the object
                    again.update(previously)
                    previously = []
            if hook is None or (webhook and i not in again):
                continue
            step = hook.run(context_of(current))
            steps.append(step)
            if step.obj is None or step.obj == current.obj:
                continue
            current = replace(current, obj=dict(step.obj))
            if webhook:
                again.update(previously)
                previously = []
        return steps


def undetermined_by_admission(results: Sequence[Result], admissions: Sequence[Admission]) -> list[Result]:
    """`results` with every result about a subject whose stored object cannot be known turned
    undetermined, the reason in its message: validating such a subject would pick one of its possible
    objects at random."""
    reasons: dict[int, str] = {}
    for a in admissions:
        if a.undetermined:
            reasons[id(a.subject.ref)] = "; ".join(dict.fromkeys(a.undetermined))
    if not reasons:
        return list(results)
    out = []
    for r in results:
        reason = reasons.get(id(r.subject))
        if reason is None:
            out.append(r)
        else:
            out.append(r._replace(result=UNDETERMINED,
                                  message=f"the admitted object is not known ({reason}); the policy would "
                                          f"have said: {r.result}" + (f" ({r.message})" if r.message else "")))
    return out


def order_resolved(results: Sequence[Result], admission: Admission,
                   on_alternatives: Sequence[Sequence[Result]]) -> list[Result]:
    """The validation `results` of a subject whose admitted object depends only on an order Kyverno does not
    fix, given the results of the same policies on each other object those orders admit: a verdict every
    object agrees on stands; one that differs is undetermined (ORDER_DEPENDENT), saying how many orders were
    tried and what each object gave."""
    def key(r: Result) -> tuple[str, str, str, str]:
        return r.policy, r.source, r.rule, r.binding

    others = [{key(r): r for r in alt} for alt in on_alternatives]
    reason = "; ".join(dict.fromkeys(admission.undetermined))
    out = []
    for r in results:
        verdicts = [r.result, *((o[key(r)].result if key(r) in o else "no result") for o in others)]
        if all(v == r.result for v in verdicts):
            out.append(r)
            continue
        seen = ", ".join(dict.fromkeys(verdicts))
        out.append(r._replace(result=UNDETERMINED, message=(
            f"{ORDER_DEPENDENT}: the policy gives {seen} on the {len(verdicts)} objects that "
            f"{admission.orders_tried} orders of the mutations admit ({reason}); in load order: {r.result}"
            + (f" ({r.message})" if r.message else ""))))
    return out


def _identity(subject: Subject) -> tuple[str, str, str, str]:
    # one object across API versions of its group (apps/v1beta2 and apps/v1 Deployment are one object)
    group = subject.ref.api_version.rpartition("/")[0]
    return group, subject.ref.kind, subject.ref.namespace, subject.ref.name


def paired_with_old(subjects: Sequence[Subject], old: Sequence[Subject], default: Defaulter | None
                    ) -> list[Subject]:
    """The requests a change makes (`eval --old`): a manifest with an old one is an UPDATE whose oldObject is
    the old manifest as stored (defaulted), one without is a CREATE, and an old manifest with no new one is
    a DELETE of it as stored; the deletions follow the manifests, in the old manifests' order."""
    by_identity = {_identity(s): s for s in old}
    out: list[Subject] = []
    for subject in subjects:
        before = by_identity.pop(_identity(subject), None)
        if before is None:
            out.append(replace(subject, operation="CREATE"))
        else:
            stored = default(before.obj) if default is not None else before.obj
            out.append(replace(subject, operation="UPDATE", old_obj=stored))
    for before in by_identity.values():
        stored = default(before.obj) if default is not None else before.obj
        out.append(replace(before, obj=stored, operation="DELETE"))
    return out
