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

JsonContext = EvalContext


@dataclass(frozen=True)
class PatternFailure:
    """kk: validate.PatternError: `path` "" means an error rather than a failure; `skip` a rule skip."""

    message: str
    path: str
    skip: bool


class Core:
    """The calls into the engine core, in Kyverno's terms."""

    def query(self, ctx: EvalContext, expression: str) -> Any:
        """kk: ctx.Query: JMESPath over the whole context (deferred entries loaded); raises with Kyverno's text."""
        return ctx.query(expression)

    def search(self, expression: str, data: Any) -> Any:
        return jmespath_eval.search(expression, data)

    def substitute(self, ctx: EvalContext, value: Any) -> Any:
        """kk: variables.SubstituteAll."""
        return variables.substitute_all(ctx, value)

    def conditions(self, ctx: EvalContext, conditions: Any) -> tuple[bool, str]:
        """kk: EvaluateConditionsWithContext: (passed, message). No conditions pass."""
        if conditions is None:
            return True, ""
        return cond.evaluate_conditions(ctx, conditions)

    def match_pattern(self, resource: Mapping[str, Any], pattern: Any) -> PatternFailure | None:
        err = pattern_match.match_pattern(resource, pattern)
        if err is None:
            return None
        return PatternFailure(str(err.message), str(err.path or ""), bool(err.skip))
