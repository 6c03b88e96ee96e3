"""validate.pattern / anyPattern -> one CEL boolean, walking the pattern as Kyverno's validator walks it
(kk: pkg/engine/validate/validate.go; kyrec's classic/pattern_match.py is the same walk in Python).

Each piece gives (ok, skip): `ok` the piece matches, `skip` a conditional anchor skipped it (Kyverno's skip
error). An array of maps skips when every element skipped; a map skips when a conditional anchor fails or an
anchored child skipped. The rule passes when the top level matches or skips (a skipped rule admits as a pass
does: run/convert.py compares verdicts that way)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.classic import anchors
from kubectl_kyrec.classic import pattern as scalar
from kubectl_kyrec.classic.go_quantity import try_parse_value
from kubectl_kyrec.convert.cel_text import (
    Unconvertible,
    conj,
    disj,
    has,
    has_wildcard,
    literal,
    negate,
    present,
    select,
    wildcard_as_re2,
)
from kubectl_kyrec.golang import time as go_time

_OPS = {scalar.MORE: ">", scalar.LESS: "<", scalar.MORE_EQUAL: ">=", scalar.LESS_EQUAL: "<=",
        scalar.EQUAL: "==", scalar.NOT_EQUAL: "!="}


@dataclass(frozen=True)
class Piece:
    ok: str
    skip: str = "false"


class PatternWriter:
    def __init__(self, field: str) -> None:
        self.field = field
        self._names = itertools.count()
        self.substitutes: list[str] = []

    def var(self) -> str:
        return f"e{next(self._names)}"

    def top(self, value_expr: str, pattern: Any) -> str:
        """The rule's check on `value_expr` (the object): matches or skipped."""
        piece = self.element(value_expr, pattern, self.field)
        return disj([piece.skip, piece.ok])

    def element(self, expr: str, pattern: Any, where: str) -> Piece:
        if isinstance(pattern, dict):
            for key in pattern:
                if "{{" in str(key) or "$(" in str(key):
                    raise Unconvertible(f"{where}.{key}", "a variable or reference in a pattern key is not converted")
            return self.map(expr, pattern, where)
        if isinstance(pattern, list):
            return self.array(expr, pattern, where)
        # a scalar pattern against a list holds when every item matches it (kk: validate.go
        # validateResourceElement; kyrec classic/pattern_match.py _validate_element)
        item = self.var()
        return Piece(f"(type({expr}) == list ? {expr}.all({item}, {self.scalar(item, pattern, where)}) : "
                     f"{self.scalar(expr, pattern, where)})")

    def map(self, expr: str, pattern: dict[str, Any], where: str) -> Piece:
        conditions: list[str] = []
        skips: list[str] = []
        checks: list[str] = []
        for key in sorted(pattern, key=str):
            value = pattern[key]
            at = f"{where}.{key}"
            anchor = anchors.parse(key)
            name = anchor.key if anchor is not None else key
            if has_wildcard(name):
                raise Unconvertible(at, "a wildcard key matches the resource's keys by pattern (Kyverno expands "
                                        "it against the resource); CEL has no such selection written here")
            field = select(expr, name)
            there = present(expr, name)
            if anchor is None:
                if isinstance(value, str) and value == "*":
                    checks.append(there)
                    continue
                child = self.element(field, value, at)
                missing_ok = not isinstance(value, (dict, list)) and scalar.validate(None, value)
                ok = disj([negate(there), child.ok]) if missing_ok else conj([there, child.ok])
                checks.append(ok)
                if child.skip != "false":
                    skips.append(conj([there, child.skip]))
            elif anchor.type == anchors.CONDITION:
                child = self.element(field, value, at)
                conditions.append(conj([there, negate(child.skip), child.ok]))
            elif anchor.type == anchors.GLOBAL:
                raise Unconvertible(at, "a global anchor <() skips the whole rule from inside the pattern; "
                                        "not converted")
            elif anchor.type == anchors.EQUALITY:
                child = self.element(field, value, at)
                checks.append(disj([negate(there), child.ok]))
                if child.skip != "false":
                    skips.append(conj([there, child.skip]))
            elif anchor.type == anchors.NEGATION:
                checks.append(negate(has(expr, name)))
            elif anchor.type == anchors.EXISTENCE:
                if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
                    raise Unconvertible(at, "an existence anchor ^() takes a list of maps")
                wants = []
                for item in value:
                    v = self.var()
                    child = self.map(v, item, at)
                    wants.append(f"{field}.exists({v}, {conj([negate(child.skip), child.ok])})")
                checks.append(disj([negate(has(expr, name)), conj([f"type({field}) == list", *wants])]))
            else:
                raise Unconvertible(at, f"anchor {key} belongs to mutate overlays, not validate patterns")
        skip = disj([negate(conj(conditions)) if conditions else "false", *skips])
        return Piece(conj(checks), skip)

    def array(self, expr: str, pattern: list[Any], where: str) -> Piece:
        if not pattern:
            return Piece("false")
        first = pattern[0]
        if isinstance(first, dict):
            v = self.var()
            child = self.map(v, first, f"{where}[]")
            ok = f"type({expr}) == list && {expr}.all({v}, {disj([child.skip, child.ok])})"
            if child.skip == "false":
                return Piece(ok)
            skip = f"type({expr}) == list && size({expr}) > 0 && {expr}.all({v}, {child.skip})"
            return Piece(ok, skip)
        if first is None or isinstance(first, (str, int, float, bool)):
            v = self.var()
            return Piece(f"type({expr}) == list && {expr}.all({v}, {self.scalar(v, first, where)})")
        raise Unconvertible(where, "a list of lists in a pattern is compared element by element by position; "
                                   "not converted")

    def scalar(self, expr: str, pattern: Any, where: str) -> str:
        if isinstance(pattern, bool):
            return f"{expr} == {literal(pattern)}"
        if isinstance(pattern, (int, float)):
            if isinstance(pattern, float) and not pattern.is_integer():
                return f"{expr} == {literal(pattern)}"
            n = int(pattern)
            return f"({expr} == {n} || {expr} == {float(n)!r})"
        if pattern is None:
            return f"({expr} == null || {expr} == false || {expr} == 0 || {expr} == '')"
        if not isinstance(pattern, str):
            raise Unconvertible(where, f"pattern value {pattern!r}")
        if "{{" in pattern or "$(" in pattern:
            # Kyverno substitutes these before it compares; read as text they would compare as a literal
            raise Unconvertible(where, f"a variable or reference in a pattern value ({pattern!r}) is not converted")
        alternatives = []
        for alternative in pattern.split("|"):
            parts = [self.operand(expr, c.strip(" "), where) for c in alternative.strip(" ").split("&")]
            alternatives.append(conj(parts))
        return disj([f"{expr} == {literal(pattern)}", *alternatives]) if "|" in pattern or "&" in pattern \
            else disj(alternatives)

    def operand(self, expr: str, text: str, where: str) -> str:
        op = scalar.get_operator(text)
        if op == scalar.IN_RANGE:
            m = scalar.IN_RANGE_REGEX.search(text)
            assert m is not None
            return conj([self.operand(expr, f">= {m.group(1)}", where), self.operand(expr, f"<= {m.group(2)}", where)])
        if op == scalar.NOT_IN_RANGE:
            m = scalar.NOT_IN_RANGE_REGEX.search(text)
            assert m is not None
            return disj([self.operand(expr, f"< {m.group(1)}", where), self.operand(expr, f"> {m.group(2)}", where)])
        value = text[len(op):].strip(" \t\n\r\v\f")
        cel_op = _OPS[op]
        if go_time.try_parse_duration(value) is not None and value != "0":
            raise Unconvertible(where, f"'{text}' compares durations, and a value that is no duration falls back "
                                       "to quantities and strings in Kyverno; not converted")
        if try_parse_value(value) is not None:
            # Kyverno compares quantities when both sides parse as one (numbers too), else strings
            text_expr = f"string({expr})"
            compared = f"quantity({text_expr}).compareTo(quantity({literal(value)})) {cel_op} 0"
            quantity = f"isQuantity({text_expr}) && {compared}"
            if op in (scalar.EQUAL, scalar.NOT_EQUAL):
                fallback = f"{text_expr} {cel_op} {literal(value)}"
                return f"(isQuantity({text_expr}) ? quantity({text_expr}).compareTo(quantity({literal(value)})) " \
                       f"{cel_op} 0 : {fallback})"
            return f"({quantity})"
        if op not in (scalar.EQUAL, scalar.NOT_EQUAL):
            return "false"
        if value == "*":
            match = "true"
        elif has_wildcard(value):
            match = f"string({expr}).matches({literal(wildcard_as_re2(value))})"
        else:
            match = f"string({expr}) == {literal(value)}"
        return negate(match) if op == scalar.NOT_EQUAL else match
