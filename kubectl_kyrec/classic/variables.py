"""Kyverno's variable substitution (pkg/engine/variables/vars.go, regex/vars.go).

`{{ expr }}` innermost first (the loop repeats until nothing changes), `\\{{` escapes, `{{- x}}` is shallow,
`{{@}}` is the current pattern path, `$(./../x)` references; a whole-string variable keeps its JSON type,
embedded values go through Go's json.Marshal (kubectl_kyrec/gojson.py).
"""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.classic.json_context import EvalContext


class SubstitutionError(Exception):
    """str() is Kyverno's message, e.g. `variable substitution failed for rule r: failed to resolve x at path
    /validate/message: ...` is built by the caller; here: `failed to resolve <var> at path <path>: <err>`.
    `not_found` is True when the cause is a JMESPath NotFoundError (Kyverno's CheckNotFoundErr)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def substitute_all(ctx: EvalContext, document: Any) -> Any:
    """Kyverno SubstituteAll: references `$(...)` then variables; returns a new document."""
    raise NotImplementedError


def substitute_all_in_preconditions(ctx: EvalContext, document: Any) -> Any:
    """SubstituteAllInPreconditions: as substitute_all, but a NotFound lookup resolves to null."""
    raise NotImplementedError


def is_variable(text: str) -> bool:
    """regex.IsVariable."""
    raise NotImplementedError


def is_reference(text: str) -> bool:
    """regex.IsReference (`$(...)`)."""
    raise NotImplementedError


def replace_all_vars(text: str, replace: Any) -> str:
    """ReplaceAllVars: replace every `{{...}}` with `replace(match)`."""
    raise NotImplementedError
