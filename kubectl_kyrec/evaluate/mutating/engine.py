"""MutatingPolicy / NamespacedMutatingPolicy evaluation, as Kyverno's mpol engine runs them.

kk: pkg/cel/policies/mpol/compiler/compiler.go (what is compiled, with which libraries) and policy.go
Evaluate (order: exceptions, matchConditions, then the mutations in order, each seeing the object the
previous one produced); pkg/cel/policies/mpol/engine/engine.go handlePolicy (results: no response when
matchConstraints do not match; `skip` when matchConditions are false; `error` "failed to evaluate policy:
..."; `pass` "success"; an exception's pass/skip) and Handle (policies in the provider's order, each seeing
the previous policy's output). The patchers are Kubernetes' (k8s.io/apiserver
pkg/admission/plugin/policy/mutating/patch: json_patch.go, smd.go), followed in
cel/typed_objects.py, k8s/json_patch.py and k8s/structured_merge.py.

Order across policies: Kyverno's CLI (and `kyrec test`) applies them in the order the policies were
loaded (engine.NewProvider keeps the slice order). The admission webhook's provider ranges over a Go map
(engine/reconciler.go Fetch over `map[string][]Policy`): no order is fixed. The engine built with
`fixed_order=False` applies the policies in load order too, and where the admitted object depends on that
order (another order gives another object) it says so: `undetermined` ORDER_DEPENDENT naming them.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.engine import CompileError, Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.typed_objects import (
    TypedValueError,
    builds_only_literals,
    decode_json_patch,
    decode_object,
    nested_literal,
    rewrite_typed_literals,
)
from kubectl_kyrec.errors import EngineError, InputError
from kubectl_kyrec.evaluate.admission_chain import (
    NEEDS_SCHEMA,
    ORDER_DEPENDENT,
    Mutation,
    MutationStep,
    OrderCandidates,
    mutation_of,
    undetermined_reason,
)
from kubectl_kyrec.evaluate.autogen import autogen_targets
from kubectl_kyrec.evaluate.exceptions import CompiledException, applicable, compile_exceptions, conditions_hold
from kubectl_kyrec.evaluate.explain import (
    ERROR,
    MATCHED,
    NOT_MATCHED,
    conditions_node,
    constraints_node,
    exception_node,
    one_line,
    patch_nodes,
    request_text,
    result_node,
    variables_node,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.k8s.json_patch import PatchError, TestFailed, apply_patch, make_patch
from kubectl_kyrec.k8s.list_keys import known_list_spec
from kubectl_kyrec.k8s.structured_merge import MergeError, NeedsSchema, apply_configuration
from kubectl_kyrec.load.policy.mutating import MutatingPolicy
from kubectl_kyrec.load.policy.mutating import Mutation as MutationSpec
from kubectl_kyrec.load.policy.policies import PolicyException, PolicySet
from kubectl_kyrec.load.policy.vocabulary import NamedExpression
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import UNDETERMINED, Obj, Result
from kubectl_kyrec.recording import Step, Trace

SOURCE = "KyvernoMutatingPolicy"
# a policy errored in admission: which patches Kyverno's webhook still returns depends on its webhook calls
WEBHOOK_ERROR = "webhook-error"
# beyond this many applying policies the orders are not all tried: neighbours are swapped instead
_ALL_ORDERS_UP_TO = 4


@dataclass(frozen=True)
class CompiledMutation:
    patch_type: str
    program: Program
    expression: str = ""        # as written, for explain
    # the expression reads nothing but literals (typed_objects.builds_only_literals): a nested map or list
    # in its result is certainly one the patcher refuses
    literal_only: bool = False


def compile_mutation(patch_type: str, program: Program, text: str) -> CompiledMutation:
    try:
        literal_only = builds_only_literals(rewrite_typed_literals(text))
    except CompileError:
        literal_only = False
    return CompiledMutation(patch_type, program, text, literal_only)


@dataclass(frozen=True)
class CompiledMutatingPolicy:
    policy: MutatingPolicy
    env: Environment
    conditions: tuple[Program, ...]
    mutations: tuple[CompiledMutation, ...]
    exceptions: tuple[CompiledException, ...]
    # a mutateExisting policy's spec.targetMatchConditions and targetMatchConstraints.expression
    target_conditions: tuple[Program, ...] = ()
    target_expression: Program | None = None
    # the policy's compiler, for the variables explain shows (never for decisions)
    compiler: PolicyCompiler | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return self.policy.meta.key


def _compile(compiler: PolicyCompiler, text: str, path: str, expect: tuple[str, ...] = ()) -> Program:
    try:
        rewritten = rewrite_typed_literals(text)
    except CompileError as exc:
        raise compiler._error(path, exc.message, exc.line, exc.column) from None
    return compiler.compile(rewritten, path, expect)


_TEMPLATE_PATHS = {"defaults": ("spec.template.spec", "spec.template.metadata"),
                   "cronjobs": ("spec.jobTemplate.spec.template.spec", "spec.jobTemplate.spec.template.metadata")}
_WRAPPERS = {
    "defaults": ("Object{spec: Object.spec{template: Object.spec.template{", "}}}"),
    "cronjobs": ("Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec"
                 "{template: Object.spec.jobTemplate.spec.template{", "}}}}}"),
}


def pod_to_template_expression(expression: str, config: str) -> str:
    """kk: pkg/cel/policies/mpol/autogen/autogen.go convertPodToTemplateExpression, text for text: plain
    substring replacements (so `oldObject.spec` moves too, through `Object.spec`), then an expression that
    starts with `Object{` has its first literal's content wrapped in the template's Object path."""
    spec, metadata = _TEMPLATE_PATHS[config]
    expression = expression.replace("object.spec", "object." + spec)
    expression = expression.replace("Object.spec", "Object." + spec)
    for root in ("object", "Object"):
        for part in ("labels", "annotations"):
            expression = expression.replace(f"{root}.metadata.{part}", f"{root}.{metadata}.{part}")
    content = expression.strip()
    if content.startswith("Object{"):
        content = content[len("Object{"):]
        depth, end = 1, 0
        for i, ch in enumerate(content):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end > 0:
            wrapper, closing = _WRAPPERS[config]
            return wrapper + content[:end] + closing + content[end + 1:]
    return expression


def autogen_variants(policy: MutatingPolicy) -> list[MutatingPolicy]:
    """The pod-controller copies of a MutatingPolicy on pods (kk: pkg/cel/policies/mpol/autogen Autogen,
    generateRuleForControllers), in Kyverno's order (replacement sets sorted: cronjobs, defaults), with the
    matchConstraints the other CEL kinds' copies get (evaluate/autogen.py autogen_targets: the namespaceSelector
    kept, #16476). Only matchConditions and ApplyConfiguration expressions are rewritten; JSONPatch
    expressions and variables are kept as written."""
    out = []
    for target in autogen_targets(policy.match_constraints, policy.autogen_controllers):
        config = target.ref
        conditions = tuple(NamedExpression(m.name, pod_to_template_expression(m.expression, config) if m.expression
                                           else m.expression) for m in policy.match_conditions)
        mutations = tuple(MutationSpec(m.patch_type, pod_to_template_expression(m.expression, config))
                          if m.patch_type == "ApplyConfiguration" else m for m in policy.mutations)
        out.append(dataclasses.replace(policy, match_constraints=target.match, match_conditions=conditions,
                                       mutations=mutations))
    return out


def compile_mutating_policy(policy: MutatingPolicy, envs: Environments, exceptions: Sequence[PolicyException],
                            now: datetime.datetime) -> CompiledMutatingPolicy:
    """Compile every expression once; raises InputError (file:line, field) on the first bad one."""
    env, check_env = envs.get(policy.meta.kind, policy.meta.namespace)
    label = policy.meta.label
    variables = []
    for v in policy.variables:
        try:
            variables.append(VariableDecl(v.name, rewrite_typed_literals(v.expression)))
        except CompileError as exc:
            raise InputError(f"{label}: spec.variables: {exc.message}", policy.meta.source) from None
    compiler = PolicyCompiler(env, check_env, variables, policy.meta.source, label)
    conditions = tuple(_compile(compiler, m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                       for i, m in enumerate(policy.match_conditions))
    mutations = []
    for i, m in enumerate(policy.mutations):
        path = "applyConfiguration" if m.patch_type == "ApplyConfiguration" else "jsonPatch"
        mutations.append(compile_mutation(m.patch_type, _compile(compiler, m.expression,
                                                                 f"spec.mutations[{i}].{path}.expression"),
                                          m.expression))
    target_conditions = tuple(_compile(compiler, m.expression, f"spec.targetMatchConditions[{i}].expression",
                                       ("bool",)) for i, m in enumerate(policy.target_match_conditions))
    target_expression = None
    if policy.target_expression:
        # compiler.go Compile: the output type must be a map (checked when it runs here: see
        # evaluate/mutating/mutate_existing.py)
        target_expression = _compile(compiler, policy.target_expression, "spec.targetMatchConstraints.expression")
    exc_env, exc_check = envs.get("PolicyException")
    # kk: mpol engine/provider.go NewProvider: refs by name and kind; expiry is not looked at
    candidates = applicable(exceptions, policy.meta.name, policy.meta.kind, now, check_expiry=False)
    return CompiledMutatingPolicy(policy, env, conditions, tuple(mutations),
                                  tuple(compile_exceptions(candidates, exc_env, exc_check)),
                                  target_conditions, target_expression, compiler)


@dataclass
class PolicyOutcome:
    """One policy's answer for one request: its results (none when it did not match) and, when it
    applied, the object after its mutations."""

    results: list[Result]
    obj: Obj | None = None
    undetermined: str = ""


class MutationFailure(EngineError):
    pass


def run_mutations(mutations: Sequence[CompiledMutation], env: Environment, ctx: SubjectContext,
                  extra: Mapping[str, Any] | None = None, *, deduced: bool = False,
                  recorder: Trace | None = None) -> Obj:
    """The object after every mutation in order, each evaluated on the previous one's output (mpol
    policy.go Evaluate; mutating/dispatcher.go for MutatingAdmissionPolicy). Raises MutationFailure with
    the patcher's error text, NeedsSchema where the merge cannot be known. `deduced`: merge without the
    kind's schema (structured_merge.apply_configuration). `recorder`: the "mutations" node, each mutation
    with the JSON patch of what it changed, up to the one that failed."""
    # no copy: every patcher returns a new object and leaves its input as it was (k8s/json_patch.py,
    # k8s/structured_merge.py), so the request's object is never changed
    obj: Obj = dict(ctx.request.obj or {})
    kind = str(obj.get("kind", ""))
    node = recorder.add("mutations", "applied") if recorder is not None else None
    for i, mutation in enumerate(mutations):
        if node is None:
            obj = _mutated(mutation, env, ctx, obj, kind, extra, deduced)
            continue
        name = f"[{i}] {mutation.patch_type}"
        try:
            after = _mutated(mutation, env, ctx, obj, kind, extra, deduced)
        except MutationFailure as exc:
            node.children.append(Step(name, ERROR, str(exc)))
            node.outcome = f"[{i}] failed"
            raise
        except NeedsSchema as exc:
            node.children.append(Step(name, "undetermined", f"sets {exc.path}, a list whose merge needs the "
                                                            "kind's schema"))
            node.outcome = f"[{i}] undetermined"
            raise
        patch = make_patch(obj, after)
        node.children.append(Step(name, "changed" if patch else "no change", one_line(mutation.expression),
                                  patch_nodes(patch)))
        obj = after
    return obj


def _mutated(mutation: CompiledMutation, env: Environment, ctx: SubjectContext, obj: Obj, kind: str,
             extra: Mapping[str, Any] | None, deduced: bool) -> Obj:
    """`obj` after one mutation, evaluated on the request `ctx` makes with `obj` as its object (`obj` itself
    when a JSON Patch test fails)."""
    outcome = mutation.program.evaluate(with_object(ctx, obj).activation(env, extra=extra))
    if not outcome.ok:
        raise MutationFailure(str(outcome.error))
    try:
        if mutation.patch_type == "JSONPatch":
            ops = decode_json_patch(outcome.value)
            try:
                return apply_patch(obj, ops)
            except TestFailed:
                return obj          # the object as it was (json_patch.go Patch: jsonpatch.ErrTestFailed)
            except PatchError as exc:
                raise MutationFailure(f"JSON Patch: {exc}") from None
        patch = decode_object(outcome.value)
        nested = None if deduced else nested_literal(outcome.value, kind, _keyed_list)
        if nested is not None:
            # the patcher's typed conversion refuses a literal there, and takes a map read from the request
            # (typed_objects.py); which one it is, only an expression of literals tells
            if mutation.literal_only:
                raise MutationFailure(f"error applying patch: failed to convert patch object to typed object: "
                                      f"{nested}")
            raise NeedsSchema(nested.split(":")[0].lstrip("."),
                              "a map or list inside a map or list below a typed literal: the patcher refuses "
                              "it if the expression built it, takes it if it read it from the request")
        try:
            return apply_configuration(obj, patch, kind, deduced=deduced)
        except MergeError as exc:
            raise MutationFailure(f"error applying patch: {exc}") from None
    except TypedValueError as exc:
        raise MutationFailure(str(exc)) from None


def _keyed_list(kind: str, path: tuple[str, ...]) -> bool:
    spec = known_list_spec(kind, path)
    return spec is not None and spec.type == "map"


def with_object(ctx: SubjectContext, obj: Obj) -> SubjectContext:
    """The request `ctx` makes, with `obj` as the object (the attributes record rebuilt around the
    patched object, as mpol engine.go Handle does between policies)."""
    if ctx.request.obj is obj:
        return ctx
    return ctx.with_request(dataclasses.replace(ctx.request, obj=obj))


def _result(cp: CompiledMutatingPolicy, ctx: SubjectContext, rule: str, status: str, message: str,
            properties: Mapping[str, str] | None = None) -> Result:
    policy = cp.policy
    return make_result(policy.meta, SOURCE, ctx, rule, status, message, properties or {}, (), policy.background)


def exceptions_matched(cp: CompiledMutatingPolicy, ctx: SubjectContext) -> tuple[list[CompiledException], str]:
    """mpol policy.go matchExceptions, quirks included: an exception counts once for each of its
    conditions that is true before the first false one, and only while no condition has failed; one
    with no conditions never counts. Errors are joined as multierr does."""
    matched: list[CompiledException] = []
    errors: list[str] = []
    for exc in cp.exceptions:
        activation = ctx.activation(exc.env)
        for program in exc.conditions:
            outcome = program.evaluate(activation)
            if not outcome.ok:
                errors.append(str(outcome.error))
                continue
            if not isinstance(outcome.value, bool):
                errors.append(f"type conversion error from '{type(outcome.value).__name__}' to 'bool'")
                continue
            if not outcome.value:
                break
            if not errors:
                matched.append(exc)
    return matched, "; ".join(errors)


def evaluate_mutating(cp: CompiledMutatingPolicy, ctx: SubjectContext, *, target: bool = False,
                      recorder: Trace | None = None) -> PolicyOutcome:
    """mpol engine.go handlePolicy for one policy on the request `ctx` makes.

    `target`: the policy mutating an existing target (`object`), as Kyverno's CLI runs a mutateExisting
    policy on a targetResource (kk 111e07bb: processor/policy_processor.go, engine.go Evaluate with no
    matcher, compiler/policy.go EvaluateTarget): no matchConstraints and no namespace check (the caller
    picked the target), spec.targetMatchConditions in place of matchConditions.
    `recorder` (explain's): the explain nodes of what it decided, under the step the caller opened."""
    return _evaluate_mutating(cp, ctx, target, recorder)


def _evaluate_mutating(cp: CompiledMutatingPolicy, ctx: SubjectContext, target: bool,
                       recorder: Trace | None) -> PolicyOutcome:
    policy = cp.policy
    if not target:
        if policy.meta.kind == "NamespacedMutatingPolicy" and ctx.request.namespace != policy.meta.namespace:
            if recorder is not None:
                recorder.add("namespace", NOT_MATCHED, f"a NamespacedMutatingPolicy of {policy.meta.namespace!r} "
                                                       f"on a request in {ctx.request.namespace or 'no namespace'!r}")
            return PolicyOutcome([])        # engine/predicate.go NamespacedPolicy
        try:
            if not matches_constraints(policy.match_constraints, ctx.request, ctx.namespace_obj):
                if recorder is not None:
                    recorder.node(constraints_node(policy.match_constraints, ctx,
                                                   decided=(NOT_MATCHED, request_text(ctx.request))))
                return PolicyOutcome([])
        except MatchError as exc:
            if recorder is not None:
                recorder.node(constraints_node(policy.match_constraints, ctx,
                                               decided=(ERROR, f"failed to execute matching: {exc}")))
            return PolicyOutcome([_result(cp, ctx, "match", "error", f"failed to execute matching: {exc}")])
        if recorder is not None:
            recorder.node(constraints_node(policy.match_constraints, ctx, decided=(MATCHED, request_text(ctx.request))))
    if cp.exceptions:
        matched, error = exceptions_matched(cp, ctx)
        if recorder is not None:
            node = recorder.add("exceptions", ERROR if error else MATCHED if matched else NOT_MATCHED, error)
            node.children.extend(exception_node(ce, any(e is ce for e in matched), ctx.activation(ce.env),
                                                "no matchConditions: never counts (mpol policy.go matchExceptions)")
                                 for ce in cp.exceptions)
        if error:
            return _failed(cp, ctx, "a PolicyException", error)
        if matched:
            keys = ", ".join(e.exception.meta.key for e in matched)
            names = ",".join(e.exception.meta.name for e in matched)
            # the highest polex.kyverno.io/priority wins, the first one otherwise (engine.go handlePolicy)
            selected = matched[0]
            best = 0
            for e in matched:
                if e.exception.priority > best:
                    best, selected = e.exception.priority, e
            verdict = "pass" if selected.exception.report_result == "pass" else "skip"
            word = "passed" if verdict == "pass" else "skipped"
            return PolicyOutcome([_result(cp, ctx, "exception", verdict,
                                          f"rule is {word} due to policy exception: {keys}",
                                          {"exceptions": names})])
    env = cp.env
    conditions = cp.target_conditions if target else cp.conditions
    activation = None
    if recorder is not None:
        # the bindings the conditions are evaluated with: their values and the variables' are shown
        activation = ctx.activation(env)
        recorder.node(conditions_node(policy.match_conditions, cp.conditions, activation,
                                      "the policy skips the request"))
        if policy.variables and cp.compiler is not None:
            recorder.node(variables_node(cp.compiler, policy.variables, activation))
    if conditions:
        ok, failed = conditions_hold(conditions, activation if activation is not None else ctx.activation(env),
                                     policy.failure_policy == "Ignore")
        if failed is not None:
            return _failed(cp, ctx, "a matchCondition", failed)
        if not ok:
            return PolicyOutcome([_result(cp, ctx, "", "skip", "skip")])
    try:
        obj = run_mutations(cp.mutations, env, ctx, recorder=recorder)
    except MutationFailure as exc:
        return _failed(cp, ctx, "a mutation", str(exc))
    except NeedsSchema as exc:
        return PolicyOutcome([], undetermined=f"{NEEDS_SCHEMA}: MutatingPolicy {policy.meta.key!r} sets "
                                              f"{exc.path}, {exc.reason}")
    return PolicyOutcome([_result(cp, ctx, "", "pass", "success")], obj)


def _failed(cp: CompiledMutatingPolicy, ctx: SubjectContext, where: str, error: str) -> PolicyOutcome:
    """The policy's `error` result, or, when the error came from a read only a registry answers
    (image.GetMetadata offline where a cluster reads the registry) or from a lookup the state read from a
    cluster cannot answer, `undetermined` with the reason the other kinds give (undetermined_reason): the
    mutation is not applied, and the admitted object is not known (the chain then makes the
    subject's validation undetermined, as for any unknown admitted object)."""
    reason = undetermined_reason(where, error)
    if reason is None:
        return PolicyOutcome([_result(cp, ctx, "evaluation", "error", f"failed to evaluate policy: {error}")])
    return PolicyOutcome([_result(cp, ctx, "evaluation", UNDETERMINED, reason)],
                         undetermined=str(undetermined_reason(f"MutatingPolicy {cp.policy.meta.key!r}: {where}",
                                                              error)))


def _recorded(cp: CompiledMutatingPolicy, ctx: SubjectContext, recorder: Trace, tree: Step) -> PolicyOutcome:
    """evaluate_mutating, recording the node of the policy (or of its autogen copy) under its tree, ending in
    its result."""
    copy = len(tree.children)
    if copy:
        tree.detail = "a Pod policy is also run on the pod controllers, as rewritten copies"
    constraints = cp.policy.match_constraints
    kinds = ", ".join(r for rule in (constraints.resource_rules if constraints else ()) for r in rule.resources)
    node = recorder.open(f"autogen copy for {kinds or 'none'}" if copy else "policy")
    outcome = evaluate_mutating(cp, ctx, recorder=recorder)
    tree.data[2].extend(outcome.results)
    result = outcome.results[0] if outcome.results else None
    said = result.result if result is not None else "undetermined" if outcome.undetermined else NOT_MATCHED
    if copy and said == NOT_MATCHED and node.children[-1].name == "matchConstraints":
        # one line: its rules are the policy's, retargeted to kinds the subject is not
        node.children.clear()
        recorder.close(node, NOT_MATCHED, f"the subject is a {ctx.subject.ref.kind}")
        return outcome
    if outcome.undetermined:
        recorder.add("admitted object", "undetermined", outcome.undetermined)
        recorder.node(result_node(result, "no result"))
    else:
        recorder.node(result_node(result))
    recorder.close(node, said)
    return outcome


@dataclass
class _Run:
    obj: Obj | None
    mutations: list[Mutation]
    results: list[Result]
    undetermined: list[str]
    changed: list[str]        # keys of the policies that changed the object


def _run_in_order(compiled: Sequence[CompiledMutatingPolicy], ctx: SubjectContext,
                  recorder: Trace | None = None) -> _Run:
    """`recorder`: a tree per policy (Trace.tree), its autogen copies under it, each as it saw the request."""
    obj: Obj | None = ctx.request.obj
    run = _Run(obj, [], [], [], [])
    tree: Step | None = None
    for cp in compiled:
        step_ctx = with_object(ctx, obj) if obj is not None else ctx
        if recorder is None:
            outcome = evaluate_mutating(cp, step_ctx)
        else:
            if tree is None or tree.data[0].key != cp.key:
                # a policy's autogen copies follow it (mutating_engine)
                tree = recorder.tree(f"{cp.policy.meta.kind} {cp.key}", (cp.policy.meta, ctx.subject.ref, []))
            outcome = _recorded(cp, step_ctx, recorder, tree)
        run.results.extend(outcome.results)
        if outcome.undetermined:
            run.undetermined.append(outcome.undetermined)
        if outcome.obj is not None:
            mutation = mutation_of(cp.key, cp.policy.meta.kind, "", obj, outcome.obj, cp.policy.meta.source)
            if mutation is not None:
                run.mutations.append(mutation)
                run.changed.append(cp.key)
            obj = outcome.obj
    run.obj = obj
    return run


class MutatingPolicyEngine:
    """The MutationEngine of the run's MutatingPolicies (mpol engine.go Handle)."""

    def __init__(self, compiled: Sequence[CompiledMutatingPolicy], *, fixed_order: bool) -> None:
        self.compiled = tuple(compiled)
        self.fixed_order = fixed_order

    # its mutate takes explain's recorder (AdmissionChain.traces)
    records = True

    def mutate(self, ctx: SubjectContext, recorder: Trace | None = None) -> MutationStep:
        """`recorder` (explain's): the run in load order, whose results the step holds, is recorded (the
        other orders tried are not)."""
        run = _run_in_order(self.compiled, ctx, recorder)
        undetermined = list(run.undetermined)
        if not self.fixed_order:
            failed = sorted({r.policy for r in run.results if r.result == "error"})
            if failed and run.mutations:
                # handler.go admissionResponse: an error in a webhook call answers success with no patch at
                # all, dropping the other policies' patches of that call; which policies share a call
                # depends on Kyverno's webhook grouping (docs/admission.md), not modelled here
                undetermined.append(f"{WEBHOOK_ERROR}: MutatingPolicies {', '.join(failed)} failed, and Kyverno's "
                                    "webhook then drops every patch of the webhook call holding them")
            if len(run.changed) > 1:
                reason, alternatives, tried = self._order_dependence(ctx, run)
                if reason:
                    undetermined.append(reason)
                    return MutationStep(run.obj, run.mutations, run.results, undetermined,
                                        OrderCandidates(reason, tuple(alternatives), tried))
        # no `reinvocation`: Kyverno registers its MutatingPolicy webhooks without a reinvocationPolicy
        # (pkg/controllers/webhook/controller.go buildForJSONPoliciesMutation), which the API server
        # defaults to Never, whatever the policies' own spec.reinvocationPolicy says
        return MutationStep(run.obj, run.mutations, run.results, undetermined)

    def _order_dependence(self, ctx: SubjectContext, run: _Run) -> tuple[str, list[Obj], int]:
        """ORDER_DEPENDENT naming the policies whose order changes the admitted object ("" when none does),
        the other objects the orders tried give (each once), and how many orders were tried (load order
        included). A policy and its autogen copies are one entry of the reconciler's map: they move
        together."""
        groups: dict[str, list[CompiledMutatingPolicy]] = {}
        for cp in self.compiled:
            groups.setdefault(cp.key, []).append(cp)
        changed = [key for key in groups if key in run.changed]
        rest = [cp for key, cps in groups.items() if key not in run.changed for cp in cps]
        if len(changed) <= _ALL_ORDERS_UP_TO:
            orders = list(itertools.permutations(changed))[1:]
        else:
            orders = [tuple(changed[:i] + [changed[i + 1], changed[i]] + changed[i + 2:])
                      for i in range(len(changed) - 1)]
        differing: set[str] = set()
        alternatives: list[Obj] = []
        for order in orders:
            # the policies that changed nothing keep their place after those that did: they could only
            # change the outcome by matching a mutated object, which the permutation then also shows
            other = _run_in_order([*(cp for key in order for cp in groups[key]), *rest], ctx)
            if other.obj != run.obj:
                differing.update(order)
                if other.obj is not None and other.obj not in alternatives:
                    alternatives.append(other.obj)
        if not differing:
            return "", [], len(orders) + 1
        names = ", ".join(sorted(differing))
        return (f"{ORDER_DEPENDENT}: MutatingPolicies {names} give different objects in different orders, "
                "and Kyverno's webhook applies them in Go map order"), alternatives, len(orders) + 1


def mutating_engine(policies: PolicySet, envs: Environments, now: datetime.datetime,
                    selection: Selection | None = None, *, fixed_order: bool = False
                    ) -> tuple[MutatingPolicyEngine | None, list[InputError]]:
    """The engine of the selected MutatingPolicies (at admission, mutateExisting ones are left out), or
    None without any; with the errors of those that do not compile
    (each located at its file:line; the others still run).

    `fixed_order`: apply in load order and never report ORDER_DEPENDENT (Kyverno's CLI, `kyrec test`);
    False for admission, whose order Kyverno leaves to a Go map."""
    compiled: list[CompiledMutatingPolicy] = []
    errors: list[InputError] = []
    for policy in policies.mutating:
        if selection is not None and not selection.holds_policy(policy.meta.key):
            continue
        # the CLI's provider hands every policy to Handle, mutateExisting ones too (kk 111e07bb: mpol
        # engine/provider.go staticProvider.Fetch(ctx, false): "a mutate-existing policy still runs on
        # admission by default"; v1.17.2 left them out); admission keeps those with admission enabled,
        # and leaves the mutateExisting ones to their targets (not modelled at admission)
        if not fixed_order and (policy.mutate_existing or not policy.admission):
            continue
        try:
            # the policy, then its autogen copies under the same name (provider.go NewProvider)
            for variant in (policy, *autogen_variants(policy)):
                compiled.append(compile_mutating_policy(variant, envs, policies.exceptions, now))
        except InputError as exc:
            errors.append(policies.locate(exc))
    if not compiled:
        return None, errors
    return MutatingPolicyEngine(compiled, fixed_order=fixed_order), errors

