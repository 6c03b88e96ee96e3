"""Classic policies x one subject -> results, step for step as Kyverno's engine (kk: pkg/engine/validation.go,
engine.go invokeRuleHandler, handlers/validation).

Per rule of autogen's ComputeRules for the resource's kind: match/exclude; a rule without a validate
handler gives no response (mutate and generate; a verifyImages rule none of the resource's images matches
gives none either, one that some image matches is `undetermined`: it needs the registry); the rule's
context entries (lazily loaded) and preconditions (`preconditions not met[; msg]`); reportProperties
substituted; kyverno.io/v2 PolicyExceptions (`rule is skipped due to policy exceptions<ns/name>`); then the
handler: podSecurity > cel > resource (deny > pattern/anyPattern > foreach). `applyRules: One` stops after
the first pass or fail. With Enforce on UPDATE, `allowExistingViolations` (default true) turns "the old
object fails too" into a skip.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.classic.autogen import can_autogen, compute_rules, compute_rules_every_controller
from kubectl_kyrec.classic.context_loader import ContextLoader, ContextSources
from kubectl_kyrec.classic.core_adapter import Core
from kubectl_kyrec.classic.manifests import evaluate as evaluate_manifests
from kubectl_kyrec.classic.match import (
    RequestFacts,
    exception_match_state,
    match_state,
    matches_resources,
    rule_matches,
    user_info_paths,
)
from kubectl_kyrec.classic.podsecurity import EXISTING_VIOLATIONS, ChecksMemo, PssException
from kubectl_kyrec.classic.podsecurity import evaluate as evaluate_pss
from kubectl_kyrec.classic.request import images
from kubectl_kyrec.classic.validate import FAIL, PASS, SKIP, Response, error, join_non_empty, root_validator
from kubectl_kyrec.classic.variables import REGEX_VARIABLES
from kubectl_kyrec.classic.verify_images import attesting_references
from kubectl_kyrec.classic.verify_images import evaluate as evaluate_verify_images
from kubectl_kyrec.errors import EngineError, InputError
from kubectl_kyrec.evaluate.admission_chain import NEEDS_REGISTRY, ORDER_DEPENDENT, unread_reason
from kubectl_kyrec.evaluate.classic.explain import cel_nodes, record_policy
from kubectl_kyrec.evaluate.classic.validate_cel import (
    CompiledCel,
    cel_activations,
    compile_cel_rule,
    evaluate_cel_rule,
)
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.load.policy.classic import ClassicException, ClassicPolicy, ClassicRule
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.model import UNDETERMINED, Document, Notice, Result
from kubectl_kyrec.recording import Trace

_ACTIONS = {"Enforce": ("Deny",), "Audit": ("Audit",)}


@dataclass(frozen=True)
class ClassicOptions:
    """What the classic engine needs beyond EvalOptions."""

    roles: tuple[str, ...] = ()
    cluster_roles: tuple[str, ...] = ()
    # variables added to every resource's context (the CLI's globalValues and per-resource values):
    # (policy name, resource name) -> values; ("", "") holds the global ones
    resource_values: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    sources: ContextSources | None = None          # None: the state answers (see ClassicEvaluator)
    cli: bool = False                              # evaluate as Kyverno's CLI does (kyrec test)
    # who makes the request was given (a UserInfo): rules matching on roles/clusterRoles/subjects are
    # decided; otherwise they are undetermined (the CLI always has a RequestInfo, empty when not given)
    user_info_known: bool = False
    # `--registry`: verifyImages asks the registries image references name (classic/verify_images.py)
    registry: Registry | None = None
    # how the state answers a lookup of a kind it was not given (run/providers.py state_lookups): the
    # cluster's refusal, and, for objects read from a cluster, a kind it did not list; None: not found
    state_lookups: tuple[Any, Any] | None = None


@dataclass
class _Compiled:
    policy: ClassicPolicy
    cel: dict[str, CompiledCel] = field(default_factory=dict)
    broken: bool = False
    needs_context: bool = True      # some rule reads the JSON context (all but plain CEL rules do)


def matching_exceptions(exceptions: Sequence[ClassicException], core: Any, policy_key: str, rule_name: str,
                        facts: RequestFacts, ctx: Any) -> list[ClassicException]:
    """The kyverno.io/v2 PolicyExceptions that exempt the request from the rule (kk: GetPolicyExceptions +
    pkg/engine/utils/exceptions.go MatchesException): named for the policy and rule, matching the request,
    their conditions (CheckAnyAllConditions: `all` before `any`) true in the request's JSON context `ctx`.
    When the conditions of one that matches cannot be evaluated, MatchesException returns nil: none of the
    rule's exceptions applies, not even one that matched before it (docs/semantics/exceptions.md). The
    validate, mutate and generate handlers and the background scan alike."""
    matched = []
    for exc in exceptions:
        if not exc.contains(policy_key, rule_name) or not matches_resources(exc.match, facts):
            continue
        if exc.conditions is not None:
            if ctx is None:
                continue        # cannot happen: needs_context holds when an exception has conditions
            try:
                ok = core.check_any_all_conditions(ctx, exc.conditions, f"exception {exc.key} conditions")
            except EngineError:
                return []
            if not ok:
                continue
        matched.append(exc)
    return matched


def request_json_context(engine: Any, resource: Any, old: Any, user: Mapping[str, Any], obj: Mapping[str, Any],
                         operation: str, options: ClassicOptions) -> Any:
    """The JSON context a classic rule reads for a request (kk: NewContextFromRaw and the policyContext
    builder's additions): request.object `resource` (and oldObject), userInfo with the run's roles, the
    service account, the namespace and the images of `obj`, the operation. The validating and mutating
    evaluators alike."""
    from kubectl_kyrec.classic.json_context import EvalContext

    ctx = EvalContext(engine=engine)
    ctx.add_resource(resource)
    if old is not None:
        ctx.add_old_resource(old)
    info: dict[str, Any] = {"userInfo": {k: v for k, v in user.items() if v not in (None, "", [], {})}}
    if options.roles:
        info["roles"] = list(options.roles)
    if options.cluster_roles:
        info["clusterRoles"] = list(options.cluster_roles)
    ctx.add_user_info(info)
    ctx.add_service_account(str(user.get("username") or ""))
    ctx.add_namespace(str((obj.get("metadata") or {}).get("namespace") or ""))
    found = images(obj)
    if found is not None:
        ctx.add_json({"images": found})
    ctx.add_operation(operation)
    return ctx


class ClassicEvaluator:
    """Evaluates every classic policy of a run against one subject at a time."""

    def __init__(self, policies: Sequence[ClassicPolicy], exceptions: Sequence[ClassicException], *,
                 state: Sequence[Document], envs: Environments, now: datetime.datetime,
                 sources: ContextSources, options: ClassicOptions | None = None) -> None:
        self.options = options or ClassicOptions()
        self.state = state
        # `--registry`: imageRegistry context entries are fetched (the loader enabled, as Kyverno's CLI does)
        self.sources = sources if self.options.registry is None else \
            dataclasses.replace(sources, registry=True, image_registry=self.options.registry)
        self.exceptions = list(exceptions)
        self.core = Core()
        self.now = now
        self._engine: Any = None
        self._pss_memo: ChecksMemo = {}
        self.errors: list[InputError] = []        # policies that do not compile (the field's path kept)
        self.notices: list[Notice] = []
        self._noticed: dict[tuple[str, str], Notice] = {}     # by (policy, rule): one notice each
        # explain's run (`explain`): the results of the other engines its trees end in, the rule types shown
        self._explaining: tuple[Sequence[Result], tuple[str, ...]] = ((), ())
        self.compiled: list[_Compiled] = []
        for policy in policies:
            c = _Compiled(policy)
            refused = kyverno_refusals(policy)
            if refused:
                self.errors.extend(refused)
                continue
            for rule in policy.rules:
                if rule.type == "validate" and rule.validate_kind == "cel":
                    try:
                        c.cel[rule.name] = compile_cel_rule(policy, rule, envs)
                    except InputError as exc:
                        self.errors.append(exc)
                        c.broken = True
                        break
            if not c.broken:
                c.needs_context = (any(e.conditions is not None for e in exceptions)
                                   or any(_reads_context(policy, r) for r in policy.rules)
                                   or any(k[0] == policy.meta.name for k in sources.rule_values))
                self.compiled.append(c)
        self._envs = envs
        # the imageReferences of the run's signature-checking verifyImages entries, worked out on first need
        self._attesting: tuple[str, ...] | None = None

    # -----------------------------------------------------------------------------------------------------

    def evaluate(self, sctx: SubjectContext) -> list[tuple[Result, bool]]:
        """(result, reportable by the background scan) for every classic rule answering for the subject."""

        req = sctx.request
        # podSecurity rules of one level check the subject's pod once (podsecurity.evaluate's memo)
        self._pss_memo = {}
        facts = self.request_facts(sctx)
        obj, user = facts.obj, facts.user_info
        context: list[Any] = []

        def make_context() -> Any:
            # built on first need: CEL-only policies never read the JSON context
            if not context:
                if self._engine is None:
                    from kubectl_kyrec.classic.jmespath_eval import Engine

                    self._engine = Engine(now=lambda: self.now)
                context.append(request_json_context(self._engine, req.obj, req.old_obj, user, obj, req.operation,
                                                    self.options))
            return context[0]

        out: list[tuple[Result, bool]] = []
        for compiled in self.compiled:
            policy = compiled.policy
            if policy.meta.kind == "Policy" and policy.meta.namespace != req.namespace:
                continue
            values = {**self.options.resource_values.get(("", ""), {}),
                      **self.options.resource_values.get((policy.meta.name, sctx.subject.ref.name), {})}
            disabled = "reports.kyverno.io/disabled" in policy.meta.labels
            if not values and not compiled.needs_context:
                for result in self._policy(compiled, sctx, facts, None):
                    out.append((result, policy.background and not disabled and result.result != UNDETERMINED))
                continue
            ctx = make_context()
            if not values:
                # rules that add to the context checkpoint themselves; the policy adds nothing
                for result in self._policy(compiled, sctx, facts, ctx):
                    out.append((result, policy.background and not disabled and result.result != UNDETERMINED))
                continue
            ctx.checkpoint()
            try:
                for key, value in values.items():
                    ctx.add_variable(key, value)
                policy_facts = self._values_operation(values, facts, ctx)
                for result in self._policy(compiled, sctx, policy_facts, ctx):
                    out.append((result, policy.background and not disabled and result.result != UNDETERMINED))
            finally:
                ctx.restore()
        if self.core.trace is not None:
            # explain's run: each policy's tree, from the steps its rules recorded above, ending in its results
            results = [*(r for r, _ in out), *self._explaining[0]]
            for compiled in self.compiled:
                record_policy(compiled.policy, sctx, facts, results, self.core.trace, self.exceptions,
                              self._explaining[1])
        return out

    def explain(self, sctx: SubjectContext, recorder: Trace, others: Sequence[Result] = (),
                rule_types: Sequence[str] = ()) -> list[tuple[Result, bool]]:
        """`evaluate`, recording each policy's tree under `recorder` (Trace.tree), ending in its results and in
        `others` (the admission chain's for mutate rules, the generate run's for generate rules); `rule_types`:
        only rules of these types are shown and evaluated (a generate trigger no other rule is evaluated on)."""
        self.core.trace, self._explaining = recorder, (others, tuple(rule_types))
        try:
            return self.evaluate(sctx)
        finally:
            self.core.trace, self._explaining = None, ((), ())

    def request_facts(self, sctx: SubjectContext) -> RequestFacts:
        """What match/exclude blocks read of the subject's request (`explain` shows them the same)."""
        req = sctx.request
        obj = req.obj if req.obj is not None else (req.old_obj or {})
        ns_labels = None
        if sctx.namespace_obj is not None:
            ns_labels = (sctx.namespace_obj.get("metadata") or {}).get("labels") or {}
        facts = RequestFacts(obj=obj, group=req.group, version=req.version, kind=req.kind,
                             subresource=req.subresource, operation=req.operation, namespace_labels=ns_labels,
                             roles=self.options.roles, cluster_roles=self.options.cluster_roles,
                             user_info=dict(req.user_info))
        return dataclasses.replace(facts, user_known=self.options.cli or self.options.user_info_known
                                   or facts.has_user_info)

    @staticmethod
    def _values_operation(values: Mapping[str, Any], facts: RequestFacts, ctx: Any) -> RequestFacts:
        """The CLI's values may set `request.operation` per resource: UPDATE makes the resource its own
        oldObject, DELETE makes it the oldObject of an empty request (kk: processor makePolicyContext)."""
        op = values.get("request.operation")
        if not isinstance(op, str) or op.upper() == facts.operation or op.upper() not in ("UPDATE", "DELETE"):
            return facts
        op = op.upper()
        ctx.add_old_resource(facts.obj)
        if op == "DELETE":
            ctx.add_resource(None)
        ctx.add_operation(op)
        return dataclasses.replace(facts, operation=op)

    def _policy(self, compiled: _Compiled, sctx: SubjectContext, facts: RequestFacts, ctx: Any) -> list[Result]:
        policy = compiled.policy
        results: list[Result] = []
        namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
        trace = self.core.trace
        for rule in compute_rules(policy, facts.kind):
            if trace is not None:
                if self._explaining[1] and rule.type not in self._explaining[1]:
                    continue
                trace.rule(policy.meta.key, rule.name)    # explain: the steps that follow are this rule's
            applies = match_state(rule.raw.get("match") or {}, rule.raw.get("exclude"), facts, namespace, trace)
            if applies is False:
                continue
            if rule.type == "verifyImages":
                if ctx is None or not self._adds_to_context(policy, rule):
                    responses = self._verify_images(compiled, rule, sctx, facts, ctx)
                else:
                    ctx.checkpoint()
                    try:
                        responses = self._verify_images(compiled, rule, sctx, facts, ctx)
                    finally:
                        ctx.restore()
                results.extend(self._result(policy, rule, sctx, r, dict(rule.report_properties)) for r in responses)
                continue
            if rule.type != "validate":
                continue        # mutate and generate rules have no validate handler: no response
            if ctx is None or not self._adds_to_context(policy, rule):
                # nothing of the rule's own lands in the context: no checkpoint (a deep copy) needed
                response, properties = self._rule(compiled, rule, sctx, facts, ctx)
            else:
                ctx.checkpoint()
                try:
                    response, properties = self._rule(compiled, rule, sctx, facts, ctx)
                finally:
                    ctx.restore()
            if response is None:
                continue
            if applies is None:
                response = _depends_on_user(rule, response)
            elif not policy.background and not facts.user_known and response.status not in (SKIP, UNDETERMINED):
                # admission-only: an exception that matches on users may or may not spare this request
                pending = self._user_exceptions(policy, rule, facts, ctx)
                if pending:
                    response = Response(UNDETERMINED, (
                        f"PolicyException {', '.join(e.key for e in pending)} applies depending on the requesting "
                        "user, which is not given (pass a UserInfo with --values); if it does not: "
                        f"{response.status}: {response.message}"))
            results.append(self._result(policy, rule, sctx, response, properties))
            if policy.apply_rules == "One" and response.status in (PASS, FAIL):
                break
        return results

    def _adds_to_context(self, policy: ClassicPolicy, rule: ClassicRule) -> bool:
        """Whether evaluating the rule adds to the JSON context (context entries, the CLI's rule values)."""
        sources, name = self.sources, policy.meta.name
        return bool(rule.raw.get("context")) or any(
            sources.values_of(table, name, rule.name) is not None for table in (sources.rule_values,
                                                                                sources.foreach_values))

    def _rule(self, compiled: _Compiled, rule: ClassicRule, sctx: SubjectContext, facts: RequestFacts,
              ctx: Any) -> tuple[Response | None, dict[str, str]]:
        policy = compiled.policy
        properties = dict(rule.report_properties)
        if ctx is None:
            # a CEL or podSecurity rule with nothing that reads the JSON context (see _Compiled.needs_context)
            matched = self._exceptions(policy, rule, facts, ctx)
            if rule.validate_kind == "podSecurity":
                return self._pss(compiled, rule, sctx, facts, ctx, matched, properties)
            if matched:
                properties["exceptions"] = ",".join(e.meta.name for e in matched)
                keys = ", ".join(e.key for e in matched)
                return Response(SKIP, f"rule is skipped due to policy exceptions{keys}"), properties
            return self._cel(compiled, rule, sctx), properties
        loader: Any = _NO_LOADER
        if self._adds_to_context(policy, rule) or rule.validate.get("foreach"):
            loader = ContextLoader(self.core, self.sources, policy.meta.name,
                                   policy.meta.namespace if policy.meta.kind == "Policy" else "", rule.name)
            try:
                loader(rule.raw.get("context") or [], ctx)
            except EngineError as exc:
                return error("failed to load context", exc), properties
        try:
            ok, msg = self.core.conditions(ctx, rule.raw.get("preconditions"), "preconditions")
        except EngineError as exc:
            return self._undetermined(policy, rule, loader) or \
                error("failed to evaluate preconditions", exc), properties
        if not ok:
            return Response(SKIP, join_non_empty(["preconditions not met", msg], "; ")), properties
        if properties:
            try:
                substituted = self.core.substitute(ctx, properties)
                properties = {str(k): str(v) for k, v in substituted.items()}
            except EngineError:
                pass        # Kyverno logs the failure and keeps the properties as written
        matched = self._exceptions(policy, rule, facts, ctx)
        if matched and rule.validate_kind != "podSecurity":
            keys = ", ".join(e.key for e in matched)
            properties["exceptions"] = ",".join(e.meta.name for e in matched)
            return Response(SKIP, f"rule is skipped due to policy exceptions{keys}"), properties
        kind = rule.validate_kind
        if kind == "manifests":
            return evaluate_manifests(rule.validate.get("manifests") or {}, facts.obj, facts.operation), properties
        if kind == "podSecurity":
            return self._pss(compiled, rule, sctx, facts, ctx, matched, properties)
        if kind == "cel":
            return self._cel(compiled, rule, sctx), properties
        validator = root_validator(self.core, rule.name, rule.validate, loader)
        response = validator.validate(ctx)
        undetermined = self._undetermined(policy, rule, loader)
        if undetermined is not None:
            return undetermined, properties
        response = self._existing_violations(compiled, rule, sctx, facts, ctx, response)
        return response, properties

    def _verify_images(self, compiled: _Compiled, rule: ClassicRule, sctx: SubjectContext, facts: RequestFacts,
                       ctx: Any) -> list[Response]:
        """A verifyImages rule offline (classic/verify_images.py; kk: engine.go invokeRuleHandler around
        handlers/mutation/mutate_image.go and handlers/validation/validate_image.go): no image matching its
        imageReferences, no response; then context, preconditions and exceptions as for any rule; then what
        the two handlers decide without a registry, or `undetermined` (needs-registry) when they need one."""
        policy = compiled.policy
        if facts.operation == "DELETE":
            return []
        old = sctx.request.old_obj if facts.operation == "UPDATE" else None
        if self._attesting is None:
            self._attesting = attesting_references(r.raw for c in self.compiled for r in c.policy.rules
                                                   if r.type == "verifyImages")
        outcome = evaluate_verify_images(rule.raw, facts.obj, old, policy.meta.name, rule.name, self._attesting,
                                         self.options.registry, ctx)
        if outcome is None:
            return []
        if ctx is not None and (rule.raw.get("context") or rule.raw.get("preconditions")):
            loader = ContextLoader(self.core, self.sources, policy.meta.name,
                                   policy.meta.namespace if policy.meta.kind == "Policy" else "", rule.name)
            try:
                loader(rule.raw.get("context") or [], ctx)
            except EngineError as exc:
                return [error("failed to load context", exc)]
            try:
                ok, msg = self.core.conditions(ctx, rule.raw.get("preconditions"))
            except EngineError as exc:
                return [self._undetermined(policy, rule, loader) or error("failed to evaluate preconditions", exc)]
            if not ok:
                return [Response(SKIP, join_non_empty(["preconditions not met", msg], "; "))]
        matched = self._exceptions(policy, rule, facts, ctx)
        if matched:
            return [Response(SKIP, f"rule is skipped due to policy exceptions{', '.join(e.key for e in matched)}")]
        if outcome.needs_registry:
            images = ", ".join(outcome.needs_registry)
            return [Response(UNDETERMINED, f"{NEEDS_REGISTRY}: verifyImages: Kyverno checks {images} against the "
                                           f"registry ({outcome.what}), which kyrec reads only with --registry")]
        if outcome.order_dependent:
            return [Response(UNDETERMINED, f"{ORDER_DEPENDENT}: verifyImages: {outcome.order_dependent}")]
        return [Response(status, message) for status, message in outcome.responses]

    def _pss(self, compiled: _Compiled, rule: ClassicRule, sctx: SubjectContext, facts: RequestFacts, ctx: Any,
             matched: list[ClassicException], properties: dict[str, str]) -> tuple[Response | None, dict[str, str]]:
        """kk validatePssHandler: nothing on DELETE; with Enforce on UPDATE and allowExistingViolations (default
        true), an old object that fails too turns the failure into a skip."""
        if facts.operation == "DELETE":
            return None, properties
        spec = rule.validate.get("podSecurity") or {}
        outcome = evaluate_pss(rule.name, spec, facts.obj, _pss_exceptions(matched), self._pss_memo)
        response = outcome.response
        policy = compiled.policy
        # kk: the rule's failureAction, else the policy's validationFailureAction (no overrides here)
        action = str(rule.validate.get("failureAction") or policy.validation_failure_action)
        # the CLI's `request.operation: UPDATE` value makes the resource its own old object
        old = sctx.request.old_obj if sctx.request.old_obj is not None else facts.obj
        if response.status != FAIL or action.lower() != "enforce" or facts.operation != "UPDATE" or old is None \
                or rule.validate.get("allowExistingViolations") is False:
            return response, {**properties, **outcome.properties}
        old_facts = dataclasses.replace(facts, obj=old, operation="CREATE")
        namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
        if not rule_matches(rule.raw.get("match") or {}, rule.raw.get("exclude"), old_facts, namespace):
            return response, {**properties, **outcome.properties}
        prior = evaluate_pss(rule.name, spec, old, _pss_exceptions(self._exceptions(policy, rule, old_facts, ctx)),
                             self._pss_memo)
        if prior.response.status == FAIL:
            return Response(SKIP, EXISTING_VIOLATIONS), properties
        return response, {**properties, **outcome.properties}

    @property
    def envs(self) -> Environments:
        return self._envs

    def _cel(self, compiled: _Compiled, rule: ClassicRule, sctx: SubjectContext) -> Response:
        cel = compiled.cel.get(rule.name)
        if cel is None:
            # an autogen rule: its rewritten expressions are compiled the first time it is needed
            try:
                cel = compile_cel_rule(compiled.policy, rule, self._envs)
            except InputError as exc:
                return error("Error while creating composited compiler", exc.message)
            compiled.cel[rule.name] = cel
        activations, problem = cel_activations(cel, sctx, self.state, self.options.cli)
        if self.core.trace is not None:
            # explain shows the expressions' values in the activations the rule is evaluated in
            self.core.trace.add("cel", "evaluated").children.extend(
                cel_nodes(compiled.policy, rule, cel, activations, problem, self._envs))
        return evaluate_cel_rule(cel, rule, activations, problem)

    def _existing_violations(self, compiled: _Compiled, rule: ClassicRule, sctx: SubjectContext,
                             facts: RequestFacts, ctx: Any, response: Response | None) -> Response | None:
        """kk: validate(): Enforce + UPDATE + allowExistingViolations: the old object failing too is a skip."""
        policy = compiled.policy
        if sctx.request.operation != "UPDATE" or sctx.request.old_obj is None:
            return response
        if policy.failure_action(rule, facts.obj.get("metadata", {}).get("namespace") or "",
                                 facts.namespace_labels) != "Enforce":
            return response
        if rule.validate.get("allowExistingViolations") is False:
            return response
        if response is None or response.status != FAIL:
            return response
        old = sctx.request.old_obj
        old_facts = RequestFacts(obj=old, group=facts.group, version=facts.version, kind=facts.kind,
                                 subresource=facts.subresource, operation="CREATE",
                                 namespace_labels=facts.namespace_labels)
        namespace = policy.meta.namespace if policy.meta.kind == "Policy" else ""
        if not rule_matches(rule.raw.get("match") or {}, rule.raw.get("exclude"), old_facts, namespace):
            return response
        ctx.checkpoint()
        try:
            ctx.add_resource(old)
            ctx.add_operation("CREATE")
            # kk newValidator: the old object's validator checks the rule's preconditions again (as a CREATE)
            validator = root_validator(self.core, rule.name, rule.validate, lambda entries, c: None)
            validator = dataclasses.replace(validator, conditions=rule.raw.get("preconditions"))
            opened = self.core.trace.open("the old object (allowExistingViolations)") \
                if self.core.trace is not None else None
            prior = validator.validate(ctx)
            if self.core.trace is not None and opened is not None:
                self.core.trace.close(opened, "no response" if prior is None else prior.status)
        finally:
            ctx.restore()
        if prior is not None and prior.status == FAIL:
            return Response(SKIP, "skipping the rule evaluation as pre-existing violations are allowed")
        return response

    def _undetermined(self, policy: ClassicPolicy, rule: ClassicRule, loader: ContextLoader) -> Response | None:
        """A rule that read a context entry kyrec cannot answer: shown as undetermined, never reported."""
        if not loader.unanswerable:
            return None
        return Response(UNDETERMINED, unanswerable_message(loader))

    def _exceptions(self, policy: ClassicPolicy, rule: ClassicRule, facts: RequestFacts,
                    ctx: Any) -> list[ClassicException]:
        return matching_exceptions(self.exceptions, self.core, policy.meta.key, rule.name, facts, ctx)

    def _user_exceptions(self, policy: ClassicPolicy, rule: ClassicRule, facts: RequestFacts,
                         ctx: Any) -> list[ClassicException]:
        """The exceptions for the rule that would match if the (unknown) user were the right one: none when
        one that matches whoever the user is has conditions that error (MatchesException then drops them all,
        matching_exceptions)."""
        out = []
        for exc in self.exceptions:
            state = exception_match_state(exc.match, facts) if exc.contains(policy.meta.key, rule.name) else False
            if state is False:
                continue
            if exc.conditions is not None:
                try:
                    ok = ctx is not None and self.core.check_any_all_conditions(
                        ctx, exc.conditions, f"exception {exc.key} conditions")
                except EngineError:
                    if state is True:
                        return []
                    ok = False
                if not ok:
                    continue
            if state is None:
                out.append(exc)
        return out

    def _notice(self, policy: ClassicPolicy, rule: ClassicRule, text: str) -> None:
        key = (policy.meta.key, rule.name)
        if key not in self._noticed:
            notice = Notice(f"{policy.meta.kind} {policy.meta.key!r} rule {rule.name!r}: {text}",
                            policy.meta.source)
            self._noticed[key] = notice
            self.notices.append(notice)

    def noticed(self) -> list[tuple[tuple[str, str], Notice]]:
        """The notices given so far, with their keys (what a worker process hands back)."""
        return list(self._noticed.items())

    def merge_noticed(self, noticed: Sequence[tuple[tuple[str, str], Notice]]) -> None:
        """Notices a worker gave on later subjects: each key's first one, as evaluating here would keep."""
        for key, notice in noticed:
            if key not in self._noticed:
                self._noticed[key] = notice
                self.notices.append(notice)

    def _result(self, policy: ClassicPolicy, rule: ClassicRule, sctx: SubjectContext, response: Response,
                properties: Mapping[str, str]) -> Result:
        namespace = sctx.request.namespace
        labels = (sctx.namespace_obj.get("metadata") or {}).get("labels") if sctx.namespace_obj else None
        actions = _ACTIONS[policy.failure_action(rule, namespace, labels)]
        return make_result(policy.meta, policy.source_kind, sctx, rule.name, response.status, response.message,
                           properties, actions, policy.background)


def _pss_exceptions(matched: Sequence[ClassicException]) -> list[PssException]:
    return [PssException(e.key, e.meta.name, e.pod_security) for e in matched]


def _user_info_field(block: Mapping[str, Any]) -> str:
    """kk: userInfoDefined: the first of roles, clusterRoles, subjects the block sets."""
    return next((k for k in ("roles", "clusterRoles", "subjects") if block.get(k)), "")


_REFUSED = ("only select variables are allowed in background mode. Set "
            "spec.background=false to disable background mode for this policy rule: ")
# kk: ForbiddenUserVariables (the `.` in request.userInfo is any character there too)
_USER_VARIABLES = tuple(re.compile(p) for p in (r"[^\.](serviceAccountName)\b", r"[^\.](serviceAccountNamespace)\b",
                                                r"[^\.](request.userInfo)\b", r"[^\.](request.roles)\b",
                                                r"[^\.](request.clusterRoles)\b"))


def refused_by_kyverno(policy: ClassicPolicy) -> InputError | None:
    """The first of kyverno_refusals, or None."""
    refusals = kyverno_refusals(policy)
    return refusals[0] if refusals else None


def kyverno_refusals(policy: ClassicPolicy) -> list[InputError]:
    """What Kyverno's policy validation refuses beyond the CRD's schema, in its order (kk:
    pkg/validation/policy/validate.go Validate: the variables first, then the kinds, then each rule's
    checks). Kyverno stops at the first; each variable problem is listed here, so all are shown at once.
    Each error reads `Kind "name": <field>: <Kyverno's message>` and names its field. Worked out once per
    policy: the load-time validation and each classic engine of the run ask."""
    cached = _REFUSALS.get(id(policy))
    if cached is not None and cached[0] is policy:
        return list(cached[1])
    refusals = _kyverno_refusals(policy)
    _REFUSALS[id(policy)] = (policy, tuple(refusals))
    return refusals


# by id(policy), with the policy kept so that its id is not reused while the entry lives
_REFUSALS: dict[int, tuple[ClassicPolicy, tuple[InputError, ...]]] = {}


def _kyverno_refusals(policy: ClassicPolicy) -> list[InputError]:
    from kubectl_kyrec.classic.mutate import LABELS_REFUSED, label_values_refused
    from kubectl_kyrec.classic.variable_checks import variable_problems
    from kubectl_kyrec.classic.verify_images import refused_digest_mutation
    from kubectl_kyrec.classic.wildcard_kinds import refused_wildcard

    refused = refused_in_background(policy)
    if refused is not None:
        return [refused]
    problems = variable_problems(policy)
    if problems:
        return problems
    mutates = any(r.type == "mutate" for r in policy.rules)
    for rule in compute_rules_every_controller(policy) if mutates else ():
        # kk: Validate's per-rule checks over ComputeRules(policy, ""), autogen rules included, after the
        # background ones (isLabelAndAnnotationsString)
        if rule.type == "mutate" and label_values_refused(rule.raw):
            path = f"spec.rules[{rule.index}].mutate"
            return [InputError(f"{policy.meta.label}: {path}: {LABELS_REFUSED}", policy.meta.source, path)]
    wildcard = refused_wildcard(policy)
    if wildcard is not None:
        return [wildcard]
    digest = refused_digest_mutation(policy)      # the rule checks after the kinds' (verifyImages)
    return [digest] if digest is not None else []


def refused_in_background(policy: ClassicPolicy) -> InputError | None:
    """kk: pkg/validation/policy/background.go containsUserVariables: a background policy whose match or
    exclude names roles/clusterRoles/subjects, or that uses a user variable (`request.userInfo`,
    `request.roles`, `serviceAccountName`, ...) anywhere, is refused (the admission webhook rejects it, the
    CLI skips it), because the background scan has no user. Policies with a mutate-existing rule may use
    the variables."""
    if not policy.background:
        return None
    refused = _user_match_exclude(policy)
    if refused is not None or any((r.raw.get("mutate") or {}).get("targets") is not None for r in policy.rules):
        return refused
    annotations = (policy.raw.get("metadata") or {}).get("annotations")
    raw = dict(policy.raw)
    if isinstance(annotations, Mapping) and "kubectl.kubernetes.io/last-applied-configuration" in annotations:
        raw["metadata"] = {**raw["metadata"], "annotations": {
            **annotations, "kubectl.kubernetes.io/last-applied-configuration": ""}}
    # the policy as JSON text, as Kyverno scans it (escaping differences cannot make a user variable)
    for found in REGEX_VARIABLES.finditer(json.dumps(raw, default=str)):
        variable = found.group(2)
        if any(banned.search(variable) for banned in _USER_VARIABLES):
            return InputError(f"{policy.meta.label}: {_REFUSED}variable {variable} is not allowed ",
                              policy.meta.source)
    return None


def _user_match_exclude(policy: ClassicPolicy) -> InputError | None:
    """kk: hasUserMatchExclude over ComputeRules(policy, "")."""
    rules = policy.rules
    if can_autogen(policy):
        # ComputeRules(policy, "") drops rules named autogen-*; the generated ones come last and copy
        # their source rule's blocks, so the source is always found first
        rules = tuple(r for r in rules if not r.name.startswith("autogen-"))
    for idx, rule in enumerate(rules):
        for part, order in (("match", ("any", "all")), ("exclude", ("all", "any"))):
            block = rule.raw.get(part)
            if not isinstance(block, Mapping):
                continue
            found = [(f"{part}/{k}", f"{part}.{k}") for k in [_user_info_field(block)] if k]
            for sub in order:
                for i, b in enumerate(block.get(sub) or []):
                    k = _user_info_field(b) if isinstance(b, Mapping) else ""
                    if k:
                        found.append((f"{part}/{sub}[{i}]/{k}", f"{part}.{sub}[{i}].{k}"))
            if found:
                path, field_name = found[0]
                where = f"spec.rules[{rule.index}].{field_name}"
                return InputError(f"{policy.meta.label}: {where}: {_REFUSED}invalid variable used at path: "
                                  f"spec/rules[{idx}]/{path} ", policy.meta.source, where)
    return None


def _depends_on_user(rule: ClassicRule, response: Response) -> Response:
    """The rule applies or not depending on who makes the request, which was not given: undetermined,
    with what the rule gives when it does apply."""
    fields = [*user_info_paths(rule.raw.get("match"), "match"), *user_info_paths(rule.raw.get("exclude"), "exclude")]
    return Response(UNDETERMINED, f"whether the rule applies depends on the requesting user ({', '.join(fields)}), "
                                  "which is not given (pass a UserInfo with --values); if it applies: "
                                  f"{response.status}: {response.message}")


class _NoLoader:
    """The loader of a rule with no context entries and no values anywhere: nothing to load."""

    unanswerable = ""
    unanswerable_reason = ""

    def __call__(self, entries: Sequence[Any], ctx: Any) -> None:
        return None


_NO_LOADER = _NoLoader()


def _reads_context(policy: ClassicPolicy, rule: ClassicRule) -> bool:
    if rule.type == "verifyImages":
        # attestation conditions read the request's context beside the statement (classic/verify_images.py)
        return bool(rule.raw.get("context") or rule.raw.get("preconditions") or any(
            isinstance(entry, Mapping) and any(isinstance(a, Mapping) and a.get("conditions")
                                               for a in entry.get("attestations") or [])
            for entry in rule.raw.get("verifyImages") or []))
    if rule.type != "validate":
        return False
    if rule.validate_kind not in ("cel", "podSecurity") or rule.raw.get("context") or rule.raw.get("preconditions"):
        return True
    return bool(rule.report_properties)



class _Deferred:
    """An object built on first use: indexing a whole state for context lookups costs as much as a
    diff's classification, and most policies have no context entry that would read it."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build: Callable[[], Any] | None = build
        self._target: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._build is not None:
            self._target, self._build = self._build(), None
        return getattr(self._target, name)


def classic_sources(state: Sequence[Document], kinds: Any, options: ClassicOptions | None) -> ContextSources:
    """The context sources of every classic path (validate, mutate, mutate-existing previews, generate,
    the background scan of expected reports): a test's own sources, else the state's, answering a lookup
    of a kind it was not given as `options.state_lookups` says (one rule, so that a lookup the read did not
    cover is the same error on every path, never "not found" on one of them)."""
    options = options if options is not None else ClassicOptions()
    return options.sources if options.sources is not None else state_sources(state, kinds, options.state_lookups)


def state_sources(state: Sequence[Document], kinds: Any, lookups: tuple[Any, Any] | None) -> ContextSources:
    """Context sources for `eval`/`diff`: the state stands for the cluster (configMap, apiCall.urlPath,
    GlobalContextEntries of kind kubernetesResource); `lookups`: ClassicOptions.state_lookups (None: what the
    state does not hold is not found, as in Kyverno's CLI)."""
    from kubectl_kyrec.cel.context import ObjectsProvider

    resource_of, kind_of = kinds.resource_of, kinds.kind_of
    refused, unread = lookups or (None, None)
    provider = _Deferred(lambda: ObjectsProvider([d.obj for d in state], resource_of, None, kind_of=kind_of,
                                                 refused=refused, unread=unread))
    entries = {d.name: d.obj for d in state
               if d.kind == "GlobalContextEntry" and d.api_version.startswith("kyverno.io/")}

    def global_entry(name: str) -> Any:
        entry = entries.get(name)
        if entry is None:
            return None
        res = (entry.get("spec") or {}).get("kubernetesResource") or {}
        if not res:
            return None
        group, version = str(res.get("group") or ""), str(res.get("version") or "")
        api_version = f"{group}/{version}" if group else version
        listed = provider.list_resources(api_version, str(res.get("resource") or ""),
                                         str(res.get("namespace") or ""), None)
        return listed.get("items") or []

    return ContextSources(cluster=provider, state_global_entries=global_entry, implicit_namespaces=True)


def unanswerable_message(loader: ContextLoader) -> str:
    """Why a rule that read a context entry kyrec cannot answer is undetermined, and what answers it: a
    registry read gets `needs-registry` as image verification does (one reason whatever the rule type), a
    lookup the state read from a cluster cannot answer its reason (read-failed, kind-not-captured) as every
    CEL kind gives it (admission_chain.py unread_reason)."""
    if loader.unanswerable_reason:
        return unread_reason(loader.unanswerable_reason, "a context entry", loader.unanswerable)
    if loader.unanswerable_needs_registry:
        return f"{NEEDS_REGISTRY}: {loader.unanswerable}, which kyrec reads only with --registry"
    return (f"{loader.unanswerable}, which kyrec cannot answer offline (give it with --values or a test's "
            "apiCallResponses)")
