"""Kubernetes label selectors: one parser for the string form, one matcher for every form.

The string form is what `kubectl get -l` takes (apimachinery labels.Parse): `k=v`, `k==v`, `k!=v`,
`k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`. The structured form is a metav1.LabelSelector
({matchLabels, matchExpressions}), converted as LabelSelectorAsSelector converts it. Both become a
`Selector`, and every stage that matches labels matches through it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.strconv import quote as _go_quote  # field.Invalid prints a string value with %q


class SelectorError(ValueError, EngineError):
    """A selector Kubernetes would refuse (labels.Parse, LabelSelectorAsSelector)."""


_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "in", "notin", "exists", "!", "gt", "lt"
_BINARY = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GT, LT)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """validation.RegexError: the message, its examples and the regular expression, in Go's layout."""
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character")
_QUALIFIED_ERROR = _regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
_SUBDOMAIN_ERROR = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character", r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
    "example.com")
_VALUE_ERROR = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character", f"({_QUALIFIED_FMT})?", "MyValue", "my_value", "12345")


def _key_errors(key: str) -> list[str]:
    """validation.IsQualifiedName: every problem, in apimachinery's order and words."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_QUALIFIED_ERROR} with an optional DNS subdomain prefix and '/' (e.g. "
                "'example.com/MyName')"]
    errors = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not _SUBDOMAIN.match(prefix):
                errors.append(f"prefix part {_SUBDOMAIN_ERROR}")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _NAME.match(name):
        errors.append(f"name part {_QUALIFIED_ERROR}")
    return errors


def _key_error(key: str) -> str | None:
    errors = _key_errors(key)
    return f"key: Invalid value: {_go_quote(key)}: {'; '.join(errors)}" if errors else None


def _value_error(key: str, index: int, value: str) -> str | None:
    """validateLabelValue: the field path is values[i][key]."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _VALUE.match(value):
        errors.append(_VALUE_ERROR)
    if not errors:
        return None
    return f"values[{index}][{key}]: Invalid value: {_go_quote(value)}: {'; '.join(errors)}"


def _aggregate(errors: list[str]) -> None:
    """field.ErrorList.ToAggregate().Error(): one error as itself, several in brackets."""
    if len(errors) == 1:
        raise SelectorError(errors[0])
    if errors:
        raise SelectorError("[" + ", ".join(errors) + "]")


def _check_key(key: str) -> None:
    error = _key_error(key)
    if error:
        raise SelectorError(error)


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        """labels.Requirement.String: `k=v`, `k in (a,b)`, `!k`."""
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        values = ",".join(sorted(self.values))
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({values})"
        return f"{self.key}{ {GT: '>', LT: '<'}.get(self.operator, self.operator)}{values}"

    def matches(self, labels: Mapping[str, Any]) -> bool:
        present = self.key in labels
        value = str(labels[self.key]) if present else ""
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return present and value in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not present or value not in self.values
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        if not present:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.operator == GT else have < want


def requirement(key: str, operator: str, values: tuple[str, ...] = ()) -> Requirement:
    """labels.NewRequirement: the same checks, the same messages, every problem at once (an aggregate)."""
    errors = [e for e in (_key_error(key),) if e]
    if operator in (IN, NOT_IN) and not values:
        errors.append(f"values: Invalid value: {_go_list(values)}: for 'in', 'notin' operators, values set can't "
                      "be empty")
    if operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
        errors.append(f"values: Invalid value: {_go_list(values)}: exact-match compatibility requires one "
                      "single value")
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        errors.append(f"values: Invalid value: {_go_list(values)}: values set must be empty for exists and does "
                      "not exist")
    if operator in (GT, LT):
        if len(values) != 1:
            errors.append(f"values: Invalid value: {_go_list(values)}: for 'Gt', 'Lt' operators, exactly one "
                          "value is required")
        for i, value in enumerate(values):
            if not re.fullmatch(r"[+-]?[0-9]+", value):
                errors.append(f"values[{i}]: Invalid value: {_go_quote(value)}: for 'Gt', 'Lt' operators, the "
                              "value must be an integer")
    errors.extend(e for e in (_value_error(key, i, v) for i, v in enumerate(values)) if e)
    _aggregate(errors)
    return Requirement(key, operator, values)


def _go_list(values: tuple[str, ...]) -> str:
    # field.Invalid prints a []string with %#v; LabelSelectorAsSelector passes nil for no values
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


@dataclass(frozen=True)
class Selector:
    """An AND of requirements; no requirement matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def matches(self, labels: Mapping[str, Any] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


EVERYTHING = Selector()


# --- the string form (labels.Parse) -------------------------------------------------------------------

_SPECIAL = "=!(),><"
_TOKENS = {")": ")", ",": ",", "!": "!", "==": "==", "=": "=", ">": ">", "in": "in", "<": "<", "!=": "!=",
           "notin": "notin", "(": "("}
_IDENT, _END = "ident", "end"


def _lex(text: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            items.append((_END, ""))
            return items
        if text[pos] in _SPECIAL:
            # the longest run of special characters that is an operator, as the Go lexer scans
            buffer, last, end = "", None, pos
            while pos < n and text[pos] in _SPECIAL:
                buffer += text[pos]
                if buffer in _TOKENS:
                    last, end = buffer, pos + 1
                elif last is not None:
                    break
                pos += 1
            if last is None:
                raise SelectorError(f"found 'error expected: keyword found '{buffer}'', expected: !, identifier, "
                                    "or 'end of string'")
            pos = end
            items.append((_TOKENS[last], last))
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in " \t\r\n":
            pos += 1
        word = text[start:pos]
        items.append((_TOKENS.get(word, _IDENT), word) if word in ("in", "notin") else (_IDENT, word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        return (_IDENT, lit) if values and tok in ("in", "notin") else (tok, lit)

    def take(self, values: bool = True) -> tuple[str, str]:
        item = self.peek(values)
        self.pos += 1
        return item

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok == _END:
                break
            if tok not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            requirements.append(self.requirement())
            tok, lit = self.take()
            if tok == _END:
                break
            if tok != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok2, lit2 = self.peek()
            if tok2 not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit2}', expected: identifier after ','")
        return Selector(tuple(sorted(requirements, key=lambda r: r.key)))

    def requirement(self) -> Requirement:
        try:
            return self._requirement()
        except SelectorError as exc:
            raise SelectorError(f"unable to parse requirement: {exc}") from None

    def _requirement(self) -> Requirement:
        negated = False
        tok, lit = self.take()
        if tok == "!":
            negated = True
            tok, lit = self.take()
        if tok != _IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        _check_key(key)
        if negated or self.peek()[0] in (_END, ","):
            # `!key` takes nothing more: in `!key=v` the `=` is left over, an error (as in labels.Parse)
            return requirement(key, DOES_NOT_EXIST if negated else EXISTS)
        tok, lit = self.take(values=False)
        operators = {"in": IN, "notin": NOT_IN, "=": EQUALS, "==": DOUBLE_EQUALS, "!=": NOT_EQUALS, ">": GT,
                     "<": LT}
        if tok not in operators:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        operator = operators[tok]
        values = self._set() if operator in (IN, NOT_IN) else self._exact()
        return requirement(key, operator, tuple(sorted(values)))

    def _set(self) -> set[str]:
        tok, lit = self.take()
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok == ")":
            self.take()
            return {""}
        if tok not in (_IDENT, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        out: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == _IDENT:
                out.add(lit)
                tok2, lit2 = self.peek()
                if tok2 == ",":
                    continue
                if tok2 == ")":
                    self.take()
                    return out
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == ",":
                if not out:
                    out.add("")
                tok2, _ = self.peek()
                if tok2 == ")":
                    out.add("")
                    self.take()
                    return out
                if tok2 == ",":
                    self.take()
                    out.add("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact(self) -> set[str]:
        tok, lit = self.peek()
        if tok in (_END, ","):
            return {""}
        tok, lit = self.take()
        if tok == _IDENT:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_selector(text: str) -> Selector:
    """`kubectl get -l TEXT`'s selector; SelectorError with kubectl's message for a malformed one."""
    return _Parser(text).parse()


# --- the structured form (metav1.LabelSelector) -------------------------------------------------------

def selector_is_empty(selector: Mapping[str, Any] | None) -> bool:
    if not isinstance(selector, Mapping):
        return not selector     # a wrong shape is not empty: from_label_selector names it
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


_EXPRESSION_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """LabelSelectorAsSelector. A nil or empty selector matches everything."""
    if selector_is_empty(selector):
        return EVERYTHING
    assert selector is not None
    if not isinstance(selector, Mapping):
        raise SelectorError("a label selector must be a mapping")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels: expected a mapping")
    if not isinstance(expressions, list):
        raise SelectorError("matchExpressions: expected a list")
    # every requirement goes through NewRequirement's checks, as LabelSelectorAsSelector does: a bad key
    # or value is an error, never a selector that silently matches nothing
    requirements = [requirement(str(k), EQUALS, (str(v),)) for k, v in match_labels.items()]
    for i, expr in enumerate(expressions):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions[{i}]: expected a mapping")
        key = str(expr.get("key", ""))
        op = str(expr.get("operator", ""))
        values = tuple(str(v) for v in (expr.get("values") or []))
        if op not in _EXPRESSION_OPERATORS:
            raise SelectorError(f"{op!r} is not a valid label selector operator")
        requirements.append(requirement(key, _EXPRESSION_OPERATORS[op], values))
    return Selector(tuple(requirements))


def matches_selector(selector: Mapping[str, Any] | Selector | None, labels: Mapping[str, Any] | None) -> bool:
    """True when `labels` satisfy the selector (either form). A nil or empty selector matches everything."""
    if isinstance(selector, Selector):
        return selector.matches(labels)
    return from_label_selector(selector).matches(labels)


def matches_label_map(selector: Mapping[str, str] | None, labels: Mapping[str, Any] | None) -> bool:
    """An equality-only selector given as a plain map (as `resource.List` takes it)."""
    return from_label_selector({"matchLabels": selector} if selector else None).matches(labels)
