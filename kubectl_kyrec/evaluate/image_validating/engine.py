"""ImageValidatingPolicy evaluation, step for step as Kyverno's ivpol engine, offline.

kk: pkg/cel/policies/ivpol/engine/engine.go handleMutation (what the CLI and the background scan call:
rule names and messages), pkg/imageverification/evaluator/policy.go Evaluate (the order), compiler.go (the
environment), pkg/cel/compiler/images.go (the default image extractors) and provider.go (autogen).

Per subject and variant (the policy, then its autogen copies under the same name):
1. matchConstraints (an error: rule `match`);
2. matchConditions: false, or an error under failurePolicy Ignore, gives no response at all (not a skip);
   an error under Fail is an `evaluation` error;
3. the policy's CEL PolicyExceptions (the policy as written only): one matching skips (rule `exception`);
4. the images: the default extractors of the request's resource (pods, pod controllers, cronjobs) and the
   policy's `images`, bound as `images`; `attestors` and `attestations` bound by name;
5. Kyverno fetches every image a `matchImageReferences` entry matches from its registry *before* any
   validation, and a fetch that fails fails the policy. kyrec has no registry: unless the image data of
   each such image is supplied (a Kyverno CLI context file's `images`, the same data `image.GetMetadata`
   answers from), the result is `undetermined` (NEEDS_REGISTRY), with what the validations give when the
   fetch succeeds;
6. validations in order, the first false a `fail` (rule: the policy's name) with its message and the
   auditAnnotations; one whose value needs a registry or a signature check (verifyImageSignatures, ...;
   cel/kyverno_imageverify.py) is `undetermined`; all true: `pass`, "success".

Only one response per policy name is kept (Kyverno keys them by name; the last variant to answer wins).
`validationConfigurations` are not read: Kyverno v1.17.2's evaluation does not read them either.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
from kubectl_kyrec.cel.decl import CelFunctionError
from kubectl_kyrec.cel.engine import Activation, CompileError, Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.cel.kyverno_image import image_library
from kubectl_kyrec.cel.kyverno_imageverify import imageverify_library
from kubectl_kyrec.errors import InputError, lookup_unread
from kubectl_kyrec.evaluate.admission_chain import NEEDS_REGISTRY, undetermined_reason, unread_reason
from kubectl_kyrec.evaluate.autogen import autogen_targets
from kubectl_kyrec.evaluate.exceptions import CompiledException, applicable, compile_exceptions, conditions_hold
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
    ERROR,
    MATCHED,
    NONE,
    NOT_EVALUATED,
    NOT_MATCHED,
    conditions_node,
    constraints_node,
    exception_node,
    one_line,
    outcome_node,
    request_text,
    result_node,
    show,
)
from kubectl_kyrec.evaluate.match import MatchError, matches_constraints, may_match
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import (
    CompiledValidation,
    evaluate_audit_annotations,
    make_result,
    validation_message,
)
from kubectl_kyrec.golang.glob import GlobError, compile_glob
from kubectl_kyrec.load.policy.image_validating import ImageValidatingPolicy
from kubectl_kyrec.load.policy.policies import PolicyException
from kubectl_kyrec.load.policy.vocabulary import MatchResources
from kubectl_kyrec.load.registry import Registry, RegistryError, parse_image
from kubectl_kyrec.model import UNDETERMINED, Result
from kubectl_kyrec.recording import Step, Trace

# kk: pkg/cel/compiler/images.go, by the request's (group, version, resource)
_SPEC_PATHS = {
    "pods": "spec",
    "controllers": "spec.template.spec",
    "cronjobs": "spec.jobTemplate.spec.template.spec",
}
_DEFAULT_EXTRACTORS = {
    ("", "v1", "pods"): "pods",
    **{("batch", "v1", r): "controllers" for r in ("jobs",)},
    **{("apps", "v1", r): "controllers" for r in ("deployments", "statefulsets", "daemonsets", "replicasets")},
    ("batch", "v1", "cronjobs"): "cronjobs",
}
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _default_extractor(path: str, name: str) -> str:
    return f"(object != null ? object : oldObject).{path}.?{name}.orValue([]).map(e, e.image)"


@dataclass(frozen=True)
class CompiledImageVariant:
    name: str                                         # "" for the policy as written, else its autogen copy
    match_constraints: MatchResources
    conditions: tuple[Program, ...]
    extractors: tuple[tuple[str, Program], ...]       # the policy's `images`
    validations: tuple[CompiledValidation, ...]
    audit_annotations: tuple[tuple[str, Program], ...]
    exceptions: tuple[CompiledException, ...]


@dataclass
class CompiledImageValidatingPolicy:
    policy: ImageValidatingPolicy
    env: Environment
    variants: tuple[CompiledImageVariant, ...]
    defaults: Mapping[str, tuple[tuple[str, Program], ...]]      # default extractors by resource family
    references: tuple[Any, ...]                                  # compiled globs (re.Pattern) or Programs
    registry: Registry | None = None                             # `--registry`: None offline
    _probes: dict[str, Program] = field(default_factory=dict)
    _blank: Activation | None = None

    @property
    def source_kind(self) -> str:
        return self.policy.source_kind

    def matches_image(self, image: str) -> bool:
        """kk: matching.MatchImage: no references match every image; raises CelFunctionError."""
        if not self.references:
            return True
        for ref in self.references:
            if isinstance(ref, Program):
                outcome = ref.evaluate(_REFERENCE_ENV.activation({"ref": image}))
                if not outcome.ok:
                    raise CelFunctionError(str(outcome.error))
                if not isinstance(outcome.value, bool):
                    raise CelFunctionError(f"type conversion error from '{type(outcome.value).__name__}' to 'bool'")
                if outcome.value:
                    return True
            elif ref.fullmatch(image) is not None:
                return True
        return False

    def supplied_data(self, image: str) -> Any:
        """The image data the run was given for `image` (what `image.GetMetadata` answers from), or None;
        asked through that function, as the provider behind it is the libraries' own."""
        probe = self._probes.get(image)
        if probe is None:
            probe = self._probes[image] = self.env.compile(f"image.GetMetadata({json.dumps(image)})")
        if self._blank is None:
            self._blank = self.env.activation({})      # the probes read no variable
        outcome = probe.evaluate(self._blank)
        return outcome.value if outcome.ok else None


# kk: compiler.NewMatchImageEnv: the base environment, `ref` and the image library
_REFERENCE_ENV = Environment([*kubernetes_libraries(), image_library()], ("ref",))


def _compile_references(policy: ImageValidatingPolicy) -> tuple[Any, ...]:
    out: list[Any] = []
    for i, ref in enumerate(policy.match_image_references):
        path = f"spec.matchImageReferences[{i}]"
        if ref.glob:
            try:
                out.append(compile_glob(ref.glob))
            except GlobError as exc:
                raise _error(policy, f"{path}.glob", f"Invalid value: {ref.glob!r}: {exc}") from None
            continue
        try:
            program = _REFERENCE_ENV.compile(ref.expression)
        except CompileError as exc:
            raise _error(policy, f"{path}.expression", exc.message) from None
        if program.result_type not in ("bool", "dyn"):
            raise _error(policy, f"{path}.expression", "output is expected to be of type bool")
        out.append(program)
    return tuple(out)


def _attestation_types(policy: ImageValidatingPolicy, kind: str = "intoto") -> dict[str, str]:
    """The type of each attestation of `kind` by name: spec.attestations[].intoto.type (the in-toto predicate
    type) or spec.attestations[].referrer.type (an OCI 1.1 referrer's artifact type)."""
    out = {}
    for item in (policy.raw.get("spec") or {}).get("attestations") or []:
        typed = item.get(kind) if isinstance(item, Mapping) else None
        if isinstance(typed, Mapping) and isinstance(typed.get("type"), str):
            out[str(item.get("name"))] = typed["type"]
    return out


def _error(policy: ImageValidatingPolicy, path: str, message: str) -> InputError:
    return InputError(f"{policy.meta.label}: {path}: {message}", policy.meta.source,
                      field=path)


def compile_image_validating_policy(policy: ImageValidatingPolicy, envs: Environments,
                                    exceptions: Sequence[PolicyException], now: datetime.datetime,
                                    registry: Registry | None = None) -> CompiledImageValidatingPolicy:
    """Compile every expression once; raises InputError (file:line, field, column) on the first bad one.
    `registry`: the run's `--registry` access (None: offline, NEEDS_REGISTRY where Kyverno asks one).

    The policy's functions are bound to it, so it compiles in environments of its own: compiled once per
    `envs` (Environments.bound_to) for the same exceptions, time and registry."""
    candidates = applicable(exceptions, policy.meta.name, policy.meta.kind, now)
    return envs.bound_to(policy, (registry, now, *candidates),
                         lambda: _compile_image_validating(policy, envs, candidates, registry))


def _compile_image_validating(policy: ImageValidatingPolicy, envs: Environments,
                              candidates: Sequence[PolicyException],
                              registry: Registry | None) -> CompiledImageValidatingPolicy:
    references = _compile_references(policy)
    holder: list[CompiledImageValidatingPolicy] = []

    def matches(image: str) -> bool:
        return holder[0].matches_image(image)

    def supplied(image: str) -> Any:
        return holder[0].supplied_data(image)

    library = imageverify_library(matches, frozenset(policy.attestations), supplied, registry=registry,
                                  predicate_types=_attestation_types(policy),
                                  referrer_types=_attestation_types(policy, "referrer"))
    env, check_env = envs.extended(policy.meta.kind, policy.meta.namespace, [library])
    label = policy.meta.label
    defaults = {}
    for family, path in _SPEC_PATHS.items():
        plain = PolicyCompiler(env, check_env, (), policy.meta.source, label)
        defaults[family] = tuple((name, plain.compile(_default_extractor(path, name), "spec.images"))
                                 for name in _CONTAINER_LISTS)
    compiled_exceptions = tuple(compile_exceptions(candidates, env, check_env))
    variants = [_compile_variant(policy, env, check_env, "", policy.match_constraints or MatchResources(),
                                 lambda text: text, label, compiled_exceptions)]
    # kk: ivpol provider.go: autogen copies of the cluster-scoped kind only, without exceptions
    if policy.meta.kind == "ImageValidatingPolicy":
        for target in autogen_targets(policy.match_constraints, policy.autogen_controllers):
            variants.append(_compile_variant(policy, env, check_env, f"{target.prefix}-{policy.meta.name}",
                                             target.match, target.rewrite, f"{label} (autogen {target.prefix})",
                                             ()))
    compiled = CompiledImageValidatingPolicy(policy, env, tuple(variants), defaults, references, registry)
    holder.append(compiled)
    return compiled


def _compile_variant(policy: ImageValidatingPolicy, env: Environment, check_env: Environment, name: str,
                     match: MatchResources, rewrite: Any, label: str,
                     exceptions: tuple[CompiledException, ...]) -> CompiledImageVariant:
    compiler = PolicyCompiler(env, check_env, [VariableDecl(v.name, rewrite(v.expression)) for v in policy.variables],
                              policy.meta.source, label)
    conditions = tuple(compiler.compile(rewrite(m.expression), f"spec.matchConditions[{i}].expression", ("bool",))
                       for i, m in enumerate(policy.match_conditions))
    extractors = tuple((e.name, compiler.compile(rewrite(e.expression), f"spec.images[{i}].expression"))
                       for i, e in enumerate(policy.image_extractors))
    validations = []
    for i, v in enumerate(policy.validations):
        program = compiler.compile(rewrite(v.expression), f"spec.validations[{i}].expression", ("bool",))
        message_program = (compiler.compile(rewrite(v.message_expression),
                                            f"spec.validations[{i}].messageExpression", ("string",))
                           if v.message_expression else None)
        validations.append(CompiledValidation(program, rewrite(v.message), message_program))
    audits = tuple((a.key, compiler.compile(rewrite(a.value_expression),
                                            f"spec.auditAnnotations[{i}].valueExpression", ("string", "null")))
                   for i, a in enumerate(policy.audit_annotations))
    return CompiledImageVariant(name, match, conditions, extractors, tuple(validations), audits, exceptions)


# ---------------------------------------------------------------------------------------------------------


def evaluate_image_validating(cp: CompiledImageValidatingPolicy, ctx: SubjectContext,
                              recorder: Trace | None = None) -> list[Result]:
    """The policy's response for one subject: none, or one result (Kyverno keeps one per policy name).

    `recorder` (explain's): the explain nodes of each variant evaluated, as it decides (matchConstraints,
    matchConditions, exceptions, the images, which of them are fetched, the validations, its answer), then
    the policy's result."""
    policy = cp.policy
    meta = policy.meta
    if meta.kind.startswith("Namespaced") and ctx.request.namespace != meta.namespace:
        if recorder is not None:
            recorder.add("namespace", NOT_MATCHED, f"a {meta.kind} of {meta.namespace!r} on a request in "
                                                   f"{ctx.request.namespace or 'no namespace'!r}")
            recorder.node(result_node(None))
        return []
    answer: Result | None = None
    for variant in cp.variants:
        step = recorder.open(f"autogen copy {variant.name}" if variant.name else "policy") \
            if recorder is not None else None
        result = evaluate_variant(cp, variant, ctx, recorder)
        if recorder is not None and step is not None:
            recorder.close(step, step.outcome or (result.result if result is not None else NONE))
        if result is not None:
            answer = result
    if recorder is not None:
        if len(cp.variants) > 1:
            recorder.current.detail = "each variant that answers replaces the previous answer (one result per policy)"
        recorder.node(result_node(answer))
    return [answer] if answer is not None else []


def _result(cp: CompiledImageValidatingPolicy, ctx: SubjectContext, rule: str, status: str, message: str,
            props: Mapping[str, str] | None = None) -> Result:
    policy = cp.policy
    return make_result(policy.meta, cp.source_kind, ctx, rule, status, message, props or {},
                       policy.validation_actions, policy.background)


def _failed(cp: CompiledImageValidatingPolicy, ctx: SubjectContext, error: str, where: str = "") -> Result:
    """`where`: the expression that gave `error`, when it may be one only a registry answers (image.GetMetadata
    offline): then `undetermined` (needs-registry), as every kind says it; an error from a lookup the state
    read from a cluster cannot answer is `undetermined` wherever it came from (read-failed, kind-not-captured)."""
    unread = lookup_unread(error)
    reason = undetermined_reason(where, error) if where else \
        unread_reason(unread, "the policy", error) if unread is not None else None
    if reason is not None:
        return _result(cp, ctx, cp.policy.meta.name, UNDETERMINED, reason)
    # kk: engine.go handleMutation: RuleError("evaluation", ..., "failed to evaluate policy", err)
    return _result(cp, ctx, "evaluation", "error", f"failed to evaluate policy: {error}")


def evaluate_variant(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant,
                     ctx: SubjectContext, recorder: Trace | None = None) -> Result | None:
    policy = cp.policy
    try:
        if not matches_constraints(cv.match_constraints, ctx.request, ctx.namespace_obj):
            if recorder is not None:
                if cv.name and not may_match(cv.match_constraints, ctx.request):
                    # an autogen copy for other kinds: one line
                    recorder.current.outcome = NOT_MATCHED
                    recorder.current.detail = f"the subject is a {ctx.subject.ref.kind}"
                else:
                    recorder.node(constraints_node(cv.match_constraints, ctx,
                                                   decided=(NOT_MATCHED, request_text(ctx.request))))
            return None
    except MatchError as exc:
        if recorder is not None:
            recorder.node(constraints_node(cv.match_constraints, ctx,
                                           decided=(ERROR, f"failed to execute matching: {exc}")))
        return _result(cp, ctx, "match", "error", f"failed to execute matching: {exc}")
    ignore = policy.failure_policy == "Ignore"
    activation = ctx.activation(cp.env)
    if recorder is not None:
        recorder.node(constraints_node(cv.match_constraints, ctx, decided=(MATCHED, request_text(ctx.request))))
        recorder.node(conditions_node(policy.match_conditions, cv.conditions, activation,
                                      "the policy gives no result"))
    if cv.conditions:
        ok, error = conditions_hold(cv.conditions, activation, ignore)
        if error is not None:
            return _failed(cp, ctx, error, "a matchCondition")
        if not ok:
            return None         # kk: Evaluate returns no result: the engine keeps no response
    matched = []
    exceptions = recorder.add("exceptions", NOT_MATCHED) if recorder is not None and cv.exceptions else None
    for candidate in cv.exceptions:
        exc_activation = ctx.activation(candidate.env)
        ok, error = conditions_hold(candidate.conditions, exc_activation, ignore)
        if exceptions is not None:
            exceptions.children.append(exception_node(candidate, ok, exc_activation))
            exceptions.outcome = MATCHED if ok else exceptions.outcome
        if error is not None:
            return _failed(cp, ctx, error, "a PolicyException")
        if ok:
            matched.append(candidate)
    if matched:
        # kk engine.go keys each exception with cache.MetaNamespaceKeyFunc(&result.Exceptions[i]), a pointer to
        # a pointer, which it cannot key: every key is "" (the error it returns is overwritten by the skip).
        # Kyverno's CLI v1.17.2 prints `rule is skipped due to policy exception: ` so
        keys = ", ".join("" for _ in matched)
        return _result(cp, ctx, "exception", "skip", f"rule is skipped due to policy exception: {keys}",
                       {"exceptions": ",".join(e.exception.meta.name for e in matched)})
    images, error = extract_images(cp, cv, ctx, activation)
    if recorder is not None:
        found = recorder.add("images", ERROR, error or "") if images is None else \
            recorder.add("images", f"{sum(len(v) for v in images.values())} found")
        found.children.extend(Step(name, show(listed)) for name, listed in (images or {}).items() if listed)
    if error is not None:
        return _failed(cp, ctx, error)
    assert images is not None
    try:
        fetched = [image for found in images.values() for image in found if cp.matches_image(image)]
    except CelFunctionError as exc:
        if recorder is not None:
            recorder.add("matchImageReferences", ERROR, str(exc))
        return _failed(cp, ctx, str(exc))
    bound = ctx.activation(cp.env, extra={
        "images": images,
        # attestor expressions (keys, certificates) feed signature checks only, which kyrec never runs
        "attestors": {a.name: dict(a.raw) for a in policy.attestors},
        "attestations": {name: name for name in policy.attestations},
    })
    missing = [image for image in dict.fromkeys(fetched) if cp.supplied_data(image) is None]
    failed = _failed_fetch(cp, missing)
    if recorder is not None:
        references = recorder.add("matchImageReferences", "needs registry" if missing and cp.registry is None
                                  else "fetch failed" if failed is not None else f"{len(set(fetched))} selected")
        for image in dict.fromkeys(i for listed in images.values() for i in listed):
            references.children.append(Step(image, NOT_MATCHED) if image not in fetched else Step(
                image, ERROR if failed is not None and image == failed[0] else MATCHED,
                _fetched_detail(cp, image, missing, failed)))
    answer = _answer(cp, cv, ctx, bound, missing, failed, recorder)
    if recorder is not None:
        # the variant's answer; the policy's result is the last variant's that answered
        said = recorder.node(result_node(answer, "no answer"))
        said.name = "answer"
    return answer


def _failed_fetch(cp: CompiledImageValidatingPolicy, missing: list[str]) -> tuple[str, str] | None:
    """With `--registry`, the first of the images the run was not given whose fetch fails, and the fetch's
    error; None offline or when every fetch succeeds. kk: ictx.AddImages fetches them in turn before any
    validation and stops at the first failure (policy.go Evaluate)."""
    if cp.registry is None:
        return None
    for image in missing:
        try:
            cp.registry.manifest(parse_image(image))
        except (RegistryError, ValueError) as exc:
            return image, str(exc)
    return None


def _fetched_detail(cp: CompiledImageValidatingPolicy, image: str, missing: list[str],
                    failed: tuple[str, str] | None) -> str:
    """What explain says of a selected image's data: where it came from, or why there is none."""
    if image not in missing:
        return ("its data given in the context file" if cp.registry is None
                else "its data read from the registry (or given in the context file)")
    if cp.registry is None:
        # the cause eval gives the result (_answer), and what answers it
        return f"Kyverno fetches it from the registry ({NEEDS_REGISTRY}: kyrec reads it only with --registry)"
    if failed is None:
        return "fetched from the registry"
    if image == failed[0]:
        # the registry's own error, as the policy's result says it (failed to evaluate policy: ...)
        return f"Kyverno fetches it from the registry, which failed: {failed[1]}"
    if missing.index(image) > missing.index(failed[0]):
        return "not fetched: an earlier image's fetch failed"
    return "fetched from the registry"


def _answer(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant, ctx: SubjectContext,
            bound: Activation, missing: list[str], failed: tuple[str, str] | None, recorder: Trace | None
            ) -> Result:
    if missing and cp.registry is not None:
        # kk: ictx.AddImages before any validation: a fetch that fails is the policy's error, returned as the
        # fetch said it (policy.go Evaluate; `failed to get imagedata` is the CEL functions' wording, not this)
        if failed is not None:
            return _failed(cp, ctx, failed[1])
        missing = []
    result = _validate(cp, cv, ctx, bound, recorder, bool(missing))
    if not missing:
        return result
    why = (f"{NEEDS_REGISTRY}: Kyverno fetches {', '.join(missing)} from the registry before any validation "
           "(a failed fetch fails the policy), which kyrec reads only with --registry (or give the image data "
           "in a context file's images)")
    if result.result != UNDETERMINED:
        why += f"; if the fetch succeeds: {result.result} ({result.message})"
    return _result(cp, ctx, cp.policy.meta.name, UNDETERMINED, why)


def extract_images(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant, ctx: SubjectContext,
                    activation: Activation) -> tuple[dict[str, list[str]] | None, str | None]:
    """kk: compiler.ExtractImages: the request resource's defaults, then the policy's (a name given twice:
    the policy's wins, as in Kyverno's map)."""
    req = ctx.request
    family = _DEFAULT_EXTRACTORS.get((req.group, req.version, req.resource))
    extractors = [*(cp.defaults[family] if family is not None else ()), *cv.extractors]
    by_name = dict(extractors)
    images: dict[str, list[str]] = {}
    for name, program in by_name.items():
        outcome = program.evaluate(activation)
        if not outcome.ok:
            return None, str(outcome.error)
        value = outcome.value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, f"type conversion error from '{type(value).__name__}' to '[]string'"
        images[name] = value
    return images, None


def _validate(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant, ctx: SubjectContext,
              activation: Activation, recorder: Trace | None = None, missing: bool = False) -> Result:
    """Step 6: the validations in order (kk: evaluator/policy.go Evaluate's loop)."""
    name = cp.policy.meta.name
    shown = recorder.add("validations", ALL_TRUE, "as they run once the images' data is fetched" if missing
                         else "") if recorder is not None else None
    specs = cp.policy.validations
    for index, validation in enumerate(cv.validations):
        outcome = validation.program.evaluate(activation)
        if shown is not None:
            text = f"[{index}] {one_line(specs[index].expression)}"
            if outcome.value is True:
                shown.children.append(Step(text, "true"))
            else:
                # the first not true decides: the message it gives, the ones after it not evaluated
                said, spec = outcome_node(text, outcome), specs[index]
                if said.outcome != ERROR and (spec.message or spec.message_expression):
                    said.detail = "message: " + (spec.message or one_line(spec.message_expression))
                shown.outcome = f"[{index}] not true"
                shown.children.append(said)
                shown.children.extend(Step(f"[{i}] {one_line(spec.expression)}", NOT_EVALUATED,
                                           "an earlier validation decided")
                                      for i, spec in enumerate(specs[index + 1:len(cv.validations)], index + 1))
        if not outcome.ok:
            return _failed(cp, ctx, str(outcome.error), f"validation {index}")
        if not isinstance(outcome.value, bool):
            # kk: the EvaluationResult's error is reported with the engine's own (nil) error: "error"
            return _result(cp, ctx, name, "error", "error")
        if outcome.value:
            continue
        message = validation_message(validation, activation, index)
        audits, audit_error = evaluate_audit_annotations(cv.audit_annotations, activation)
        if audit_error is not None:
            return _failed(cp, ctx, audit_error)
        return _result(cp, ctx, name, "fail", message, audits)
    return _result(cp, ctx, name, "pass", "success")
