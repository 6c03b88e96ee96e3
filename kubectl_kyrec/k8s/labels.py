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


class SelectorError(ValueError):
    """A selector Kubernetes would refuse (labels.Parse, LabelSelectorAsSelector)."""


_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "in", "notin", "exists", "!", "gt", "lt"
_BINARY = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GT, LT)


def _key_errors(key: str) -> list[str]:
    """validation.IsQualifiedName."""
    prefix, slash, name = key.rpartition("/")
    errors = []
    if slash and not prefix:
        errors.append("prefix part must be non-empty")
    elif slash and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        errors.append("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric character")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    elif not _NAME.match(name):
        errors.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                      "end with an alphanumeric character")
    return errors


def _check_key(key: str) -> None:
    errors = _key_errors(key)
    if errors:
        raise SelectorError(f"key: Invalid value: {key!r}: {'; '.join(errors)}")


def _check_value(key: str, value: str) -> None:
    if len(value) > 63:
        raise SelectorError(f"values[{key}]: Invalid value: {value!r}: must be no more than 63 characters")
    if not _VALUE.match(value):
        raise SelectorError(f"values[{key}]: Invalid value: {value!r}: a valid label must be an empty string or "
                            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                            "alphanumeric character")


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
    """labels.NewRequirement: the same checks, the same messages."""
    _check_key(key)
    if operator in (IN, NOT_IN) and not values:
        raise SelectorError(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
    if operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
        raise SelectorError(f"exact-match compatibility requires one single value (key {key!r})")
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise SelectorError(f"values set must be empty for exists and does not exist (key {key!r})")
    if operator in (GT, LT):
        if len(values) != 1:
            raise SelectorError(f"for 'Gt', 'Lt' operators, exactly one value is required (key {key!r})")
        if not re.fullmatch(r"[+-]?[0-9]+", values[0]):
            raise SelectorError(f"for 'Gt', 'Lt' operators, the value must be an integer (key {key!r})")
    for value in values:
        _check_value(key, value)
    return Requirement(key, operator, values)


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
    requirements = [Requirement(str(k), EQUALS, (str(v),)) for k, v in match_labels.items()]
    for i, expr in enumerate(expressions):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions[{i}]: expected a mapping")
        key = str(expr.get("key", ""))
        op = str(expr.get("operator", ""))
        values = tuple(str(v) for v in (expr.get("values") or []))
        if op not in _EXPRESSION_OPERATORS:
            raise SelectorError(f"{op!r} is not a valid label selector operator")
        operator = _EXPRESSION_OPERATORS[op]
        if operator in (IN, NOT_IN) and not values:
            raise SelectorError(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
        if operator in (EXISTS, DOES_NOT_EXIST) and values:
            raise SelectorError(f"values set must be empty for exists and does not exist (key {key!r})")
        requirements.append(Requirement(key, operator, values))
    return Selector(tuple(requirements))


def matches_selector(selector: Mapping[str, Any] | Selector | None, labels: Mapping[str, Any] | None) -> bool:
    """True when `labels` satisfy the selector (either form). A nil or empty selector matches everything."""
    if isinstance(selector, Selector):
        return selector.matches(labels)
    return from_label_selector(selector).matches(labels)


def matches_label_map(selector: Mapping[str, str] | None, labels: Mapping[str, Any] | None) -> bool:
    """An equality-only selector given as a plain map (as `resource.List` takes it)."""
    return from_label_selector({"matchLabels": selector} if selector else None).matches(labels)
