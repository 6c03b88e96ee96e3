"""`validate.cel` rules of ClusterPolicy / Policy (kk: pkg/engine/handlers/validation/validate_cel.go).

Kyverno runs them through the Kubernetes ValidatingAdmissionPolicy validator: `celPreconditions` are its
matchConditions (not met, or an error: skip `cel preconditions not met`), then every validation; the first denial is the
rule's failure with the validation's message (`validate.message` when it has none, else `failed
expression: <expr>`; a non-empty messageExpression wins), an evaluation error is a denial too (failure
policy Fail), and a pass says `Validation rule '<rule>' passed.`. Params come from paramKind/paramRef.
`namespaceObject` is the Namespace in a cluster and carries only the name in Kyverno's CLI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl, variable_references
from kubectl_kyrec.cel.engine import Environment, Program
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.classic.validate import ERROR, FAIL, PASS, SKIP, Response
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.labels import matches_selector
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule
from kubectl_kyrec.model import Document


@dataclass(frozen=True)
class CompiledCel:
    env: Environment
    conditions: tuple[Program, ...]
    validations: tuple[tuple[str, str, Program, Program | None], ...]   # (expression, message, ...)
    param_kind: Mapping[str, Any] | None
    param_ref: Mapping[str, Any] | None
    condition_texts: tuple[str, ...] = ()           # celPreconditions as written, for their error text
    # for the text of an error raised inside a variable: each variable compiled alone, what it reads, and
    # the variables each precondition and validation reads (same order as `conditions` then `validations`)
    variables: Mapping[str, Program] = field(default_factory=dict)
    variable_deps: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    condition_vars: tuple[tuple[str, ...], ...] = ()
    validation_vars: tuple[tuple[str, ...], ...] = ()
    # each precondition and validation that reads variables, with every variable read as null: an error it
    # still gives is the expression's own, raised before (or without) any variable's
    condition_nulled: tuple[Program | None, ...] = ()
    validation_nulled: tuple[Program | None, ...] = ()


def cel_compiler(policy: ClassicPolicy, rule: ClassicRule, envs: Environments) -> PolicyCompiler:
    """The compiler of a rule's expressions, with its variables (explain compiles the operands it shows with it)."""
    env, check_env = envs.get("ValidatingAdmissionPolicy")
    cel = rule.validate.get("cel") or {}
    variables = [VariableDecl(str(v.get("name", "")), str(v.get("expression", "")))
                 for v in cel.get("variables") or [] if isinstance(v, Mapping)]
    return PolicyCompiler(env, check_env, variables, policy.meta.source,
                          policy.meta.label)


def compile_cel_rule(policy: ClassicPolicy, rule: ClassicRule, envs: Environments) -> CompiledCel:
    """Compile a rule's expressions; InputError (file:line of the field) for one that does not compile."""
    env, _ = envs.get("ValidatingAdmissionPolicy")
    cel = rule.validate.get("cel") or {}
    base = f"spec.rules[{rule.index}]"
    compiler = cel_compiler(policy, rule, envs)
    preconditions = [str(m.get("expression", "")) for m in rule.raw.get("celPreconditions") or []
                     if isinstance(m, Mapping)]
    conditions = tuple(compiler.compile(text, f"{base}.celPreconditions[{i}].expression", ("bool",))
                       for i, text in enumerate(preconditions))
    default_message = str(rule.validate.get("message") or "")
    validations = []
    for i, v in enumerate(cel.get("expressions") or []):
        if not isinstance(v, Mapping):
            continue
        path = f"{base}.validate.cel.expressions[{i}]"
        expression = str(v.get("expression", ""))
        program = compiler.compile(expression, f"{path}.expression", ("bool",))
        message_program = (compiler.compile(str(v["messageExpression"]), f"{path}.messageExpression", ("string",))
                           if v.get("messageExpression") else None)
        validations.append((expression, str(v.get("message") or "") or default_message, program, message_program))
    param_kind = cel.get("paramKind") if isinstance(cel.get("paramKind"), Mapping) else None
    param_ref = cel.get("paramRef") if isinstance(cel.get("paramRef"), Mapping) else None
    names = compiler.variable_names()
    programs = {name: compiler.compile(f"variables.{name}", f"{base}.validate.cel.variables[{i}].expression")
                for i, name in enumerate(names)}

    def reads(text: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.name for r in variable_references(text) if r.name in programs))

    def nulled(text: str, path: str) -> Program | None:
        refs = variable_references(text)
        if not refs:
            return None
        out, last = [], 0
        for ref in refs:
            out.append(text[last:ref.start] + "dyn(null)")
            last = ref.end
        try:
            return compiler.compile("".join(out) + text[last:], path)
        except InputError:
            return None

    return CompiledCel(env, conditions, tuple(validations), param_kind, param_ref, tuple(preconditions),
                       programs, {n: tuple(compiler.dependencies(n)) for n in names},
                       tuple(reads(t) for t in preconditions), tuple(reads(v[0]) for v in validations),
                       tuple(nulled(t, f"{base}.celPreconditions") for t in preconditions),
                       tuple(nulled(v[0], f"{base}.validate.cel.expressions") for v in validations))


def _params(compiled: CompiledCel, namespace: str, state: Sequence[Document]) -> tuple[list[Any] | None, str]:
    """kk: admissionpolicy.CollectParams over the state; (None, "") when the rule has no params."""
    if compiled.param_kind is None or compiled.param_ref is None:
        return None, ""
    api_version = str(compiled.param_kind.get("apiVersion", ""))
    kind = str(compiled.param_kind.get("kind", ""))
    ref = compiled.param_ref
    ns = str(ref.get("namespace") or "") or namespace
    found = []
    for doc in state:
        if doc.api_version != api_version or doc.kind != kind:
            continue
        if ns and doc.namespace and doc.namespace != ns:
            continue
        if ref.get("name"):
            if doc.name == ref.get("name"):
                found.append(doc.obj)
        elif matches_selector(ref.get("selector") or {}, (doc.obj.get("metadata") or {}).get("labels") or {}):
            found.append(doc.obj)
    if ref.get("name") and not found:
        # a GET of a missing object (the plural as the RESTMapper would name it, close enough offline)
        return [], f"{kind.lower()}s \"{ref.get('name')}\" not found"
    if not found and ref.get("parameterNotFoundAction") == "Deny":
        return [], "no params found"
    return found, ""


_LAST: list[Any] = [None, None, None]     # (subject context, env, activation) of the last param-less call


def _activation(env: Environment, sctx: SubjectContext, param: Any, ns_obj: Any) -> Any:
    """One activation per (subject, environment) for rules without params: converting the object into
    CEL values is the expensive part, and every classic CEL rule of a subject shares it."""
    if param is not None:
        return sctx.activation(env, extra={"params": param, "namespaceObject": ns_obj})
    if _LAST[0] is sctx and _LAST[1] is env:
        return _LAST[2]
    activation = sctx.activation(env, extra={"params": None, "namespaceObject": ns_obj})
    _LAST[:] = [sctx, env, activation]
    return activation


_COMPOSITED = 'composited variable "{}" fails to evaluate: '


def _variable_error(compiled: CompiledCel, name: str, activation: Any, depth: int = 0) -> str | None:
    """The error `variables.<name>` gives on its own, as Kubernetes' composition words it (k8s.io/apiserver
    pkg/admission/plugin/cel/composition.go `variableAccessor.Callback`: `composited variable "NAME" fails to
    evaluate: E`, again around the error of a variable it read), or None when it evaluates."""
    program = compiled.variables.get(name)
    if program is None or depth > len(compiled.variables):
        return None
    outcome = program.evaluate(activation)
    if outcome.ok:
        return None
    inner = str(outcome.error)
    for dep in compiled.variable_deps.get(name, ()):
        wrapped = _variable_error(compiled, dep, activation, depth + 1)
        if wrapped is not None and _innermost(wrapped) == inner:
            return _COMPOSITED.format(name) + wrapped
    return _COMPOSITED.format(name) + inner


def _innermost(text: str) -> str:
    while text.startswith('composited variable "') and '" fails to evaluate: ' in text:
        text = text.split('" fails to evaluate: ', 1)[1]
    return text


def _error_text(compiled: CompiledCel, reads: tuple[str, ...], nulled: Program | None, error: str,
                activation: Any) -> str:
    """An expression's error, with the composition's wording when it came from a variable the expression reads.
    kyrec inlines variables (`cel.bind`), so the source is found apart: not the variables when the expression
    gives the same error with every variable read as null (its own part failed, and cel-go keeps the left
    error of `&&`/`||`); else the first variable read that fails alone with that very error."""
    if nulled is not None:
        own = nulled.evaluate(activation)
        if not own.ok and own.error == error:
            return error
    for name in reads:
        wrapped = _variable_error(compiled, name, activation)
        if wrapped is not None and _innermost(wrapped) == error:
            return wrapped
    return error


def _aggregate(errors: Sequence[str]) -> str:
    """apimachinery's utilerrors aggregate text: one error as itself, several deduplicated as `[a, b]`."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def cel_activations(compiled: CompiledCel, sctx: SubjectContext, state: Sequence[Document],
                    cli: bool = False) -> tuple[list[Any], str]:
    """The activations a rule is evaluated in, one per param (one without params), or a problem with the
    params (the text after `error in parameterized resource: `). `cli`: as Kyverno's CLI runs it (no cluster):
    `namespaceObject` carries only the name; in a cluster it is the Namespace itself."""
    req = sctx.request
    namespace = "" if (req.kind == "Namespace" and req.group == "") else req.namespace
    ns_obj: Any = None
    if namespace:
        ns_obj = {"metadata": {"name": namespace}} if cli or sctx.namespace_obj is None else sctx.namespace_obj
    params, problem = _params(compiled, namespace, state)
    if problem:
        return [], problem
    return [_activation(compiled.env, sctx, param, ns_obj) for param in (params if params is not None else [None])], ""


def evaluate_cel_rule(compiled: CompiledCel, rule: ClassicRule, activations: Sequence[Any], problem: str) -> Response:
    """The rule in the activations cel_activations gives (or its `problem` with the params)."""
    if problem:
        return Response(ERROR, f"error in parameterized resource: {problem}")
    for activation in activations:
        # k8s matchconditions (apiserver pkg/admission/plugin/webhook/matchconditions/matcher.go `Match`): a
        # false condition anywhere leaves Matches false, which Kyverno reads (its empty ValidateResult) as a
        # skip; else evaluation errors, under the Fail policy Kyverno's matcher has (NewMatcher with nil),
        # deny with their aggregate text, which Kyverno reports as a fail (validate_cel.go, ActionDeny)
        errors: list[str] = []
        for index, program in enumerate(compiled.conditions):
            outcome = program.evaluate(activation)
            if not outcome.ok:
                text = compiled.condition_texts[index] if index < len(compiled.condition_texts) else ""
                reads = compiled.condition_vars[index] if index < len(compiled.condition_vars) else ()
                nulled = compiled.condition_nulled[index] if index < len(compiled.condition_nulled) else None
                error = _error_text(compiled, reads, nulled, str(outcome.error), activation)
                errors.append(f"expression '{text}' resulted in error: {error}")
            elif outcome.value is not True:
                return Response(SKIP, "cel preconditions not met")
        if errors:
            return Response(FAIL, _aggregate(errors))
        for index, (expression, message, program, message_program) in enumerate(compiled.validations):
            outcome = program.evaluate(activation)
            if not outcome.ok:
                reads = compiled.validation_vars[index] if index < len(compiled.validation_vars) else ()
                nulled = compiled.validation_nulled[index] if index < len(compiled.validation_nulled) else None
                error = _error_text(compiled, reads, nulled, str(outcome.error), activation)
                return Response(FAIL, f"expression '{expression}' resulted in error: {error}")
            if outcome.value is True:
                continue
            text = message.strip() if message else f"failed expression: {expression.strip()}"
            if message_program is not None:
                m = message_program.evaluate(activation)
                if m.ok and isinstance(m.value, str) and m.value.strip():
                    text = m.value.strip()
            return Response(FAIL, text)
    return Response(PASS, f"Validation rule '{rule.name}' passed.")
