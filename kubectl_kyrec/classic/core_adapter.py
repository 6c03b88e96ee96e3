"""The one place the rules layer calls the engine core (jmespath_eval, json_context, variables, conditions,
pattern_match), so the rule handlers read as Kyverno's handlers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.classic import conditions as cond
from kubectl_kyrec.classic import jmespath_eval, pattern_match, variables
from kubectl_kyrec.classic.json_context import EvalContext
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.recording import Trace

JsonContext = EvalContext


@dataclass(frozen=True)
class PatternFailure:
    """kk: validate.PatternError: `path` "" means an error rather than a failure; `skip` a rule skip."""

    message: str
    path: str
    skip: bool


class Core:
    """The calls into the engine core, in Kyverno's terms."""

    # the recorder of `explain`'s evaluation (recording.py): set only while explain runs the evaluator,
    # None in every other evaluation (nothing is recorded then)
    trace: Trace | None = None

    def query(self, ctx: EvalContext, expression: str) -> Any:
        """kk: ctx.Query: JMESPath over the whole context (deferred entries loaded); raises with Kyverno's text."""
        return ctx.query(expression)

    def search(self, expression: str, data: Any) -> Any:
        return jmespath_eval.search(expression, data)

    def substitute(self, ctx: EvalContext, value: Any) -> Any:
        """kk: variables.SubstituteAll."""
        return variables.substitute_all(ctx, value)

    def conditions(self, ctx: EvalContext, conditions: Any, label: str = "conditions") -> tuple[bool, str]:
        """kk: EvaluateConditionsWithContext: (passed, message). No conditions pass. `label` names the
        conditions in a trace (preconditions, deny conditions, ...)."""
        if conditions is None:
            return True, ""
        trace = self.trace
        if trace is None:
            return cond.evaluate_conditions(ctx, conditions)
        opened = trace.open(label)
        try:
            ok, msg = cond.evaluate_conditions(ctx, conditions, trace)
        except EngineError as exc:
            trace.close(opened, "error", str(exc))
            raise
        trace.close(opened, str(ok).lower())
        return ok, msg

    def check_any_all_conditions(self, ctx: EvalContext, block: Mapping[str, Any], label: str) -> bool:
        """kk: conditions.CheckAnyAllConditions (a PolicyException's conditions): `all` before `any`."""
        trace = self.trace
        if trace is None:
            return cond.check_any_all_conditions(ctx, block)
        opened = trace.open(label)
        try:
            ok = cond.check_any_all_conditions(ctx, block, trace)
        except EngineError as exc:
            trace.close(opened, "error", str(exc))
            raise
        trace.close(opened, str(ok).lower())
        return ok

    def match_pattern(self, resource: Mapping[str, Any], pattern: Any,
                      label: str = "pattern") -> PatternFailure | None:
        trace = self.trace
        if trace is None:
            err = pattern_match.match_pattern(resource, pattern)
        else:
            opened = trace.open(label)
            err = pattern_match.match_pattern(resource, pattern, trace)
            if err is None:
                trace.close(opened, "pass")
            elif err.skip:
                trace.close(opened, "skip", err.message)
            else:
                trace.close(opened, "fail" if err.path else "error",
                            f"failed at path {err.path}" if err.path else err.message)
        if err is None:
            return None
        return PatternFailure(str(err.message), str(err.path or ""), bool(err.skip))
