"""The validate handler for pattern / anyPattern / deny / foreach rules (kk: pkg/engine/handlers/validation/
validate_resource.go), with Kyverno's messages word for word.

Order inside a validator: its context entries, its preconditions, then deny > pattern|anyPattern > foreach.
A foreach runs a nested validator per element; an element whose response is a skip, or an error from its
preconditions, is passed over; the first other non-pass ends the rule (`validation failure: <msg>`); no
element at all means no response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.classic.core_adapter import Core, JsonContext
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.recording import shown

PASS, FAIL, ERROR, SKIP = "pass", "fail", "error", "skip"


@dataclass(frozen=True)
class Response:
    status: str
    message: str


def error(message: str, err: object | None = None) -> Response:
    """kk: RuleError: `<msg>: <err>` when there is an error."""
    return Response(ERROR, f"{message}: {err}" if err is not None else message)


def join_non_empty(parts: Sequence[str], sep: str) -> str:
    return sep.join(p for p in parts if p)


class ContextLoadError(EngineError):
    """A context entry failed to load (the text is Kyverno's)."""


@dataclass
class Validator:
    core: Core
    rule_name: str
    message: str                         # the rule's validate.message (the root one, for nested foreach too)
    context_entries: Sequence[Any]
    conditions: Any                      # preconditions of this level
    pattern: Any
    any_pattern: Any
    deny: Any
    foreach: Sequence[Any] | None
    nesting: int
    load_context: Any                    # (entries, ctx) -> None, raises ContextLoadError
    # the element patterns apply to (kk: policyContext.Element()): set by a scoped foreach level and kept
    # by the levels below it until one of them sets its own
    element: Mapping[str, Any] | None = None

    def validate(self, ctx: JsonContext) -> Response | None:
        element = self.element
        try:
            self.load_context(self.context_entries, ctx)
        except ContextLoadError as exc:
            return error("failed to load context", exc)
        try:
            ok, msg = self.core.conditions(ctx, self.conditions, "preconditions")
        except EngineError as exc:  # the core's evaluation errors carry Kyverno's text
            return error("failed to evaluate preconditions", exc)
        if not ok:
            return Response(SKIP, join_non_empty(["preconditions not met", msg], "; "))
        if self.deny is not None:
            return self._deny(ctx)
        if self.pattern is not None or self.any_pattern is not None:
            try:
                pattern = self.core.substitute(ctx, self.pattern) if self.pattern is not None else None
                any_pattern = (self.core.substitute(ctx, self.any_pattern) if self.pattern is None
                               else self.any_pattern)
            except EngineError as exc:
                return error("variable substitution failed", exc)
            if element is not None:
                return self._patterns(ctx, element, pattern, any_pattern)
            request = ctx.data.get("request") or {}
            if request.get("operation") == "DELETE":
                return None
            return self._patterns(ctx, request.get("object") or {}, pattern, any_pattern)
        if self.foreach is not None:
            return self._foreach(ctx)
        return None

    # -- deny --------------------------------------------------------------------------------------------

    def _deny(self, ctx: JsonContext) -> Response:
        conditions = self.deny.get("conditions") if isinstance(self.deny, Mapping) else None
        try:
            denied, msg = self.core.conditions(ctx, conditions, "deny.conditions")
        except EngineError as exc:
            return error("failed to check deny conditions", exc)
        if not denied:
            return Response(PASS, f"validation rule '{self.rule_name}' passed.")
        return Response(FAIL, self._deny_message(ctx, msg))

    def _deny_message(self, ctx: JsonContext, msg: str) -> str:
        if not self.message and not msg:
            return f"validation error: rule {self.rule_name} failed"
        text = join_non_empty([self.message, msg], "; ")
        try:
            raw = self.core.substitute(ctx, text)
        except EngineError:
            return msg
        return raw if isinstance(raw, str) else \
            "the produced message didn't resolve to a string, check your policy definition."

    # -- pattern / anyPattern --------------------------------------------------------------------------

    def _patterns(self, ctx: JsonContext, resource: Mapping[str, Any], pattern: Any,
                  any_pattern: Any) -> Response:
        name = self.rule_name
        if pattern is not None:
            failure = self.core.match_pattern(resource, pattern)
            if failure is None:
                return Response(PASS, f"validation rule '{name}' passed.")
            if failure.skip:
                return Response(SKIP, failure.message)
            if not failure.path:
                return Response(ERROR, self._error_message(ctx, failure.message, ""))
            return Response(FAIL, self._error_message(ctx, failure.message, failure.path))
        if not isinstance(any_pattern, list):
            return error("failed to deserialize anyPattern, expected type array",
                         "json: cannot unmarshal object into Go value of type []interface {}")
        failed: list[str] = []
        skipped: list[str] = []
        for idx, p in enumerate(any_pattern):
            failure = self.core.match_pattern(resource, p, f"anyPattern[{idx}]")
            if failure is None:
                return Response(PASS, f"validation rule '{name}' anyPattern[{idx}] passed.")
            if failure.skip:
                skipped.append(f"rule {name}[{idx}] skipped: {failure.message}")
            elif not failure.path:
                failed.append(f"rule {name}[{idx}] failed: {failure.message}")
            else:
                failed.append(f"rule {name}[{idx}] failed at path {failure.path}")
        if skipped and not failed:
            return Response(SKIP, " ".join(skipped))
        if failed:
            return Response(FAIL, self._any_pattern_message(ctx, failed))
        return Response(PASS, self.message)

    def _error_message(self, ctx: JsonContext, err: str, path: str) -> str:
        name = self.rule_name
        if not self.message:
            if path:
                return f"validation error: rule {name} failed at path {path}"
            return f"validation error: rule {name} execution error: {err}"
        try:
            msg = self.core.substitute(ctx, self.message)
        except EngineError:
            return f"validation error: variables substitution error in rule {name} execution error: {err}"
        msg = str(msg)
        if not msg.endswith("."):
            msg += "."
        if path:
            return f"validation error: {msg} rule {name} failed at path {path}"
        return f"validation error: {msg} rule {name} execution error: {err}"

    def _any_pattern_message(self, ctx: JsonContext, errors: list[str]) -> str:
        text = " ".join(errors)
        if not self.message:
            return f"validation error: {text}"
        try:
            msg = str(self.core.substitute(ctx, self.message))
        except EngineError:
            return f"validation error: variables substitution error in rule {self.rule_name} execution error: {text}"
        if msg.endswith("."):
            return f"validation error: {msg} {text}"
        return f"validation error: {msg}. {text}"

    # -- foreach -----------------------------------------------------------------------------------------

    def _foreach(self, ctx: JsonContext) -> Response | None:
        applied = 0
        list_error: Exception | None = None
        trace = self.core.trace
        for j, foreach in enumerate(self.foreach or []):
            if not isinstance(foreach, Mapping):
                continue
            try:
                elements = self._elements(ctx, str(foreach.get("list") or ""))
            except EngineError as exc:
                if trace is not None:
                    trace.add(f"foreach[{j}]", "list not evaluated", f"list {foreach.get('list')!r}: {exc}")
                if "Unknown key" in str(exc):
                    continue
                list_error = exc
                continue
            opened = trace.open(f"foreach[{j}]", f"list {foreach.get('list')!r}: {len(elements)} element(s)") \
                if trace is not None else None
            response, count = self._elements_response(ctx, foreach, elements)
            if trace is not None and opened is not None:
                trace.close(opened, response.status, f"{count} applied")
            if response.status != PASS:
                return response
            applied += count
        if applied == 0:
            if list_error is not None:
                return error("failed to evaluate list", list_error)
            return None
        return Response(PASS, "rule passed")

    def _elements(self, ctx: JsonContext, expression: str) -> list[Any]:
        """kk: EvaluateList: a list as it is, anything else wrapped."""
        value = self.core.query(ctx, expression)
        return value if isinstance(value, list) else [value]

    def _elements_response(self, ctx: JsonContext, foreach: Mapping[str, Any],
                           elements: list[Any]) -> tuple[Response, int]:
        ctx.checkpoint()
        try:
            return self._each_element(ctx, foreach, elements)
        finally:
            ctx.restore()

    def _each_element(self, ctx: JsonContext, foreach: Mapping[str, Any],
                      elements: list[Any]) -> tuple[Response, int]:
        applied = 0
        scope = foreach.get("elementScope")
        for index, element in enumerate(elements):
            if element is None:
                continue
            ctx.reset()     # each element starts from what the loop started from
            scoped = isinstance(element, Mapping)
            if scope is not None:
                if scope and not isinstance(element, Mapping):
                    return error("failed to process foreach",
                                 "cannot use elementScope=true foreach rules for elements that are not maps, "
                                 f"expected type=map got type={_go_type(element)}"), applied
                scoped = bool(scope)
            ctx.add_element(element, index, self.nesting)
            nested = foreach.get("foreach")
            # kk: newForEachValidator: a level without a nested foreach still has an empty (non-nil) one
            validator = Validator(
                core=self.core, rule_name=self.rule_name, message=self.message,
                context_entries=foreach.get("context") or [], conditions=foreach.get("preconditions"),
                pattern=foreach.get("pattern"), any_pattern=foreach.get("anyPattern"), deny=foreach.get("deny"),
                foreach=nested if isinstance(nested, list) else [],
                nesting=self.nesting + 1, load_context=self.load_context,
                element=element if scoped else self.element)
            trace = self.core.trace
            if trace is None:
                response = validator.validate(ctx)
            else:
                opened = trace.open(f"element {index}", shown(element))
                response = validator.validate(ctx)
                trace.close(opened, "no response" if response is None else response.status,
                            "" if response is None else response.message)
            if response is None or response.status == SKIP:
                continue
            if response.status != PASS:
                # kk: validateElements: an element that errors (its preconditions, context, deny conditions)
                # is passed over unless it is the list's last one, whose error is the rule's
                if response.status == ERROR and index < len(elements) - 1:
                    continue
                return Response(response.status, f"validation failure: {response.message}"), applied
            applied += 1
        return Response(PASS, ""), applied


def _go_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "float64" if isinstance(value, float) else "int64"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def root_validator(core: Core, rule_name: str, validate: Mapping[str, Any], load_context: Any) -> Validator:
    """The top-level validator of a rule; its own context and preconditions were handled by the engine."""
    foreach = validate.get("foreach")
    return Validator(core=core, rule_name=rule_name, message=str(validate.get("message") or ""),
                     context_entries=[], conditions=None, pattern=validate.get("pattern"),
                     any_pattern=validate.get("anyPattern"), deny=validate.get("deny"),
                     foreach=foreach if isinstance(foreach, list) else None, nesting=0,
                     load_context=load_context)
