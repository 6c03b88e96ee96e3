"""The CEL rules of a CRD's x-kubernetes-validations, evaluated as the API server does on create
(k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel): `self` is the value the rule sits on, the
Kubernetes CEL libraries are bound, and a transition rule (one that reads `oldSelf`) does not run on create.

load/schema validates the documents; it sits below the CEL layer, so the file load path is handed
`evaluate_rule` (load/schema SchemaCheck.rules) by the commands that read policies.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from kubectl_kyrec.cel.engine import CompileError, Environment, Program
from kubectl_kyrec.load.schema import SchemaCheck

_OLD_SELF = re.compile(r"\boldSelf\b")


@functools.cache
def _environment() -> Environment:
    from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries

    return Environment(kubernetes_libraries(), variables=("self", "oldSelf"))


@functools.cache
def _program(rule: str) -> Program | str | None:
    """The compiled rule; None for a transition rule; the compile error's text for one that does not compile
    (the server would not have accepted the CRD; a rule of the shipped data never is one)."""
    if _OLD_SELF.search(rule):
        return None
    try:
        return _environment().compile(rule)
    except CompileError as exc:
        return f"compilation failed: {exc.message}"


def evaluate_rule(rule: str, value: Any) -> str | None:
    """None when the rule holds for `value` (or does not run on create); "" when it is false; the
    evaluation error's text otherwise."""
    program = _program(rule)
    if program is None:
        return None
    if isinstance(program, str):
        return program
    outcome = program.evaluate(_environment().activation({"self": value}))
    if outcome.error is not None:
        return outcome.error
    return None if outcome.value is True else ""


def policy_schema_check() -> SchemaCheck:
    """The schema check of every policy read from files, the CRDs' CEL rules included."""
    return SchemaCheck(evaluate_rule)
