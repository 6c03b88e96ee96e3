"""CEL PolicyExceptions (docs/semantics/exceptions.md; kk: pkg/cel/policies/vpol/compiler/policy.go).

Candidates are the exceptions whose policyRefs name the policy and its kind; expired ones are dropped
(the in-cluster vpol provider checks `expiresAt`). Each matched exception contributes its images and
allowedValues; a match with neither is a full exemption and the policy is not evaluated.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_kyrec.cel.compiler import PolicyCompiler
from kubectl_kyrec.cel.decl import needs_registry
from kubectl_kyrec.cel.engine import Activation, Environment, Program
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.times import parse_rfc3339
from kubectl_kyrec.load.policy.policies import PolicyException


@dataclass(frozen=True)
class CompiledException:
    exception: PolicyException
    conditions: tuple[Program, ...]
    env: Environment

    @property
    def key(self) -> str:
        meta = self.exception.meta
        return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def applicable(exceptions: Sequence[PolicyException], policy_name: str, policy_kind: str,
               now: datetime.datetime, *, check_expiry: bool = True) -> list[PolicyException]:
    out = []
    for exc in exceptions:
        if not any(ref.name == policy_name and ref.kind == policy_kind for ref in exc.policy_refs):
            continue
        if check_expiry and exc.expires_at:
            expires = parse_rfc3339(exc.expires_at)
            if expires is not None and expires <= now:
                continue
        out.append(exc)
    return out


def compile_exceptions(exceptions: Sequence[PolicyException], env: Environment,
                       check_env: Environment) -> list[CompiledException]:
    out = []
    for exc in exceptions:
        compiler = PolicyCompiler(env, check_env, (), exc.meta.source,
                                  exc.meta.label)
        conditions = tuple(compiler.compile(m.expression, f"spec.matchConditions[{i}].expression", ("bool",))
                           for i, m in enumerate(exc.match_conditions))
        out.append(CompiledException(exc, conditions, env))
    return out


@dataclass(frozen=True)
class ExceptionOutcome:
    matched: tuple[CompiledException, ...]
    allowed_images: tuple[str, ...]
    allowed_values: tuple[str, ...]
    error: str | None = None

    @property
    def full(self) -> bool:
        return bool(self.matched) and not self.allowed_images and not self.allowed_values


def conditions_hold(programs: Sequence[Program], activation: Activation,
                    ignore_errors: bool) -> tuple[bool, str | None]:
    """Kubernetes matchConditions: any false wins; otherwise errors fail (or skip under Ignore). Under Ignore,
    errors that all came from a read only a registry answers (image.GetMetadata offline) are kept: with the
    registry the conditions could all hold, so the skip would be a guess (the engines make it undetermined)."""
    errors = []
    for program in programs:
        outcome = program.evaluate(activation)
        if not outcome.ok:
            errors.append(str(outcome.error))
            continue
        if not isinstance(outcome.value, bool):
            errors.append(f"type conversion error from '{type(outcome.value).__name__}' to 'bool'")
            continue
        if not outcome.value:
            return False, None
    if errors:
        if ignore_errors and not all(needs_registry(e) for e in errors):
            return False, None
        return False, "; ".join(errors)
    return True, None


def evaluate_exceptions(compiled: Sequence[CompiledException], ctx: SubjectContext,
                        ignore_errors: bool) -> ExceptionOutcome:
    matched: list[CompiledException] = []
    images: list[str] = []
    values: list[str] = []
    for exc in compiled:
        ok, error = conditions_hold(exc.conditions, ctx.activation(exc.env), ignore_errors)
        if error is not None:
            return ExceptionOutcome((), (), (), error)
        if ok:
            matched.append(exc)
            images.extend(exc.exception.images)
            values.extend(exc.exception.allowed_values)
    return ExceptionOutcome(tuple(matched), tuple(images), tuple(values))


def selected_report_result(matched: Sequence[CompiledException]) -> str:
    """The reportResult of the highest `polex.kyverno.io/priority` (> 0; ties: first), else the first."""
    best = 0
    index = 0
    for i, exc in enumerate(matched):
        if exc.exception.priority > best:
            best, index = exc.exception.priority, i
    return matched[index].exception.report_result
