"""Kyverno conditions (deny.conditions, preconditions; kk: pkg/engine/variables/operator) -> CEL booleans.

Only the operator/value forms whose Kyverno semantics a plain CEL comparison reproduces are converted:
wildcards, ranges and duration strings in values are compared by Kyverno in ways (string forms, fallbacks)
that a CEL `==` or `in` does not share, so they raise Unconvertible."""

from __future__ import annotations

import re
from typing import Any

from kubectl_kyrec.classic import pattern as scalar
from kubectl_kyrec.classic.go_quantity import try_parse_value
from kubectl_kyrec.convert import jmes
from kubectl_kyrec.convert.cel_text import Unconvertible, conj, disj, has_wildcard, literal, negate
from kubectl_kyrec.golang import time as go_time
from kubectl_kyrec.golang.fmt import sprint

_NUMERIC = {"greaterthan": ">", "greaterthanorequals": ">=", "lessthan": "<", "lessthanorequals": "<="}
_RANGE = re.compile(rf"^({scalar._NUM})!?-({scalar._NUM})$")


def block(conditions: Any, field: str, scope: jmes.Scope | None = None, ordered: bool = False) -> str:
    """`{any: [...], all: [...]}` or the legacy list (all of them) -> true when the conditions hold.

    `ordered`: in Kyverno's order, where a condition that errors is an error only when it is reached
    (kubectl_kyrec/classic/conditions.py _evaluate_block: the `any` ones until one is true, then the `all` ones
    until one is false), as ternaries; CEL's `||` and `&&` would let a later operand decide past the error.
    For conditions that read context entries (convert/context.py), which fail when an object is not there."""
    if conditions is None:
        return "true"
    if isinstance(conditions, list):
        parts = [condition(c, f"{field}[{i}]", scope) for i, c in enumerate(conditions)]
        return _all_in_order(parts) if ordered else conj(parts)
    if not isinstance(conditions, dict):
        raise Unconvertible(field, "conditions must be a list or an any/all map")
    if ordered:
        # `any: []` is false: Kyverno's evaluateAnyAllConditions starts an `any` that is there (non-nil) false
        any_part = _any_in_order([condition(c, f"{field}.any[{i}]", scope)
                                  for i, c in enumerate(conditions.get("any") or [])]) \
            if conditions.get("any") is not None else "true"
        all_part = _all_in_order([condition(c, f"{field}.all[{i}]", scope)
                                  for i, c in enumerate(conditions.get("all") or [])])
        if all_part == "true":
            return any_part
        # the `all` conditions are read whatever the `any` ones gave (an error there is the block's error)
        return all_part if any_part == "true" else f"({any_part} ? {all_part} : ({all_part} ? false : false))"
    parts = []
    if conditions.get("any") is not None:
        # `any: []` is false (kk: pkg/engine/variables/evaluate.go evaluateAnyAllConditions), disj([]) too
        parts.append(disj([condition(c, f"{field}.any[{i}]", scope) for i, c in enumerate(conditions["any"] or [])]))
    if conditions.get("all"):
        parts.append(conj([condition(c, f"{field}.all[{i}]", scope) for i, c in enumerate(conditions["all"])]))
    return conj(parts)


def _any_in_order(parts: list[str]) -> str:
    out = "false"
    for part in reversed(parts):
        out = f"({part} ? true : {out})" if out != "false" else part
    return out


def _all_in_order(parts: list[str]) -> str:
    out = "true"
    for part in reversed(parts):
        out = f"({part} ? {out} : false)" if out != "true" else part
    return out


def _plain_value(raw: Any, field: str) -> None:
    values = raw if isinstance(raw, list) else [raw]
    for v in values:
        if isinstance(v, str) and "{{" not in v:
            if has_wildcard(v):
                raise Unconvertible(field, f"value {v!r} is a wildcard, which Kyverno matches against the key's "
                                           "string form; not converted")
            if _RANGE.match(v):
                raise Unconvertible(field, f"value {v!r} is a numeric range; not converted")
            if go_time.try_parse_duration(v) is not None or try_parse_value(v) is not None:
                raise Unconvertible(field, f"value {v!r} parses as a duration or quantity, which Kyverno then "
                                           "compares as such; not converted")


# escaped in a runtime wildcard: the metacharacters a Kubernetes name, verb, group or image can hold (each
# escape is a nested call, and CEL parsers stop at a nesting depth of 32; docs/convert.md)
_REGEX_META = ".+"


def _runtime_regex(text: str) -> str:
    """CEL that turns the string `text` evaluates to into Kyverno's wildcard as an anchored RE2 pattern."""
    out = text
    for ch in _REGEX_META:
        out = f"{out}.replace({literal(ch)}, {literal(chr(92) + ch)})"
    return f"'^' + {out}.replace('*', '.*').replace('?', '.') + '$'"


def _cel_wildcard_test(pattern: str, text: str) -> str:
    return f"({text} == {pattern} || (({pattern}.contains('*') || {pattern}.contains('?')) && " \
           f"{text}.matches({_runtime_regex(pattern)})))"


def _both_ways(a: str, b: str) -> str:
    return f"({_cel_wildcard_test(a, b)} || {_cel_wildcard_test(b, a)})"


def condition(cond: Any, field: str, scope: jmes.Scope | None = None) -> str:
    if not isinstance(cond, dict) or "operator" not in cond:
        raise Unconvertible(field, "a condition needs key, operator and value")
    op = str(cond["operator"]).lower()
    raw_key, raw_value = cond.get("key"), cond.get("value")
    key = jmes.value(raw_key, f"{field}.key", scope)
    value = jmes.value(raw_value, f"{field}.value", scope)
    if op in ("equals", "equal", "notequals", "notequal"):
        if isinstance(raw_value, str) and "{{" in raw_value:
            # kk: pkg/engine/variables/operator/equal.go: a string value is a wildcard for a string key, both
            # are compared as durations or quantities where they parse, a number key against the string's
            # parse; the value is known at run time only
            raise Unconvertible(f"{field}.value", "a value from a variable, which Kyverno compares as a wildcard, "
                                                  "a duration or a quantity where it parses as one; not converted")
        _plain_value(raw_value, f"{field}.value")
        if isinstance(raw_value, (int, float)) and not isinstance(raw_value, bool):
            raise Unconvertible(f"{field}.value", "numbers compare with Kyverno's string/quantity conversions; "
                                                  "not converted")
        # a list or map value against a key of another static type (`request.operation == ['DELETE']`): cel-go's
        # checker refuses the overload and Kyverno does not load the policy; at run time both are false
        equal = f"dyn({key}) == {value}" if isinstance(raw_value, (list, dict)) else f"{key} == {value}"
        return equal if op.startswith("equal") else negate(equal)
    if op in ("anyin", "allin", "anynotin", "allnotin", "in", "notin"):
        if isinstance(raw_value, str) and "{{" not in raw_value:
            raise Unconvertible(f"{field}.value", "a single string value (Kyverno reads it as a JSON list, a range "
                                                  "or a wildcard); not converted")
        if isinstance(raw_value, str) and not jmes.gives_list(raw_value, scope):
            # kk: operator/anyin.go and the others: a string value is read as a JSON list, then a range, then
            # one wildcard; the conversion cannot parse JSON at run time
            raise Unconvertible(f"{field}.value", "a value from a variable that can be a string (Kyverno reads a "
                                                  "string as a JSON list or a range); not converted")
        if isinstance(raw_value, list):
            _plain_value([v for v in raw_value if not has_wildcard(str(v))], f"{field}.value")
            value = literal([v if isinstance(v, str) else sprint(v) for v in raw_value])
        # Kyverno's in-operators compare string forms, each side a wildcard pattern for the other
        # (kk: pkg/engine/variables/operator/anyin.go isAnyIn: wildcard.Match both ways); a key that is no
        # scalar or list, or a value that is no list or string, answers false whatever the operator
        def member(k: str) -> str:
            return f"vv.exists(x, {_both_ways('string(x)', f'string({k})')})"

        def check(kv: str) -> tuple[str, str]:
            if op == "anyin":
                return f"{kv}.exists(k, {member('k')})", member(kv)
            if op in ("allin", "in"):
                return f"{kv}.all(k, {member('k')})", member(kv)
            if op == "anynotin":
                return f"{kv}.exists(k, !{member('k')})", negate(member(kv))
            if op == "allnotin":
                return f"!{kv}.exists(k, {member('k')})", negate(member(kv))
            return f"!{kv}.all(k, {member('k')})", negate(member(kv))      # NotIn: not wholly inside
        literal_key = not (isinstance(raw_key, str) and "{{" in raw_key)
        listed, one = check(f"dyn({key})" if literal_key else "kv")
        if literal_key:
            # a literal key: list or not is known here (CEL's checker refuses a comprehension over a string)
            body = listed if isinstance(raw_key, list) else one
        else:
            body = (f"[dyn({key})].all(kv, type(kv) == list ? {listed} : "
                    f"(type(kv) == map || type(kv) == null_type ? false : {one}))")
        # a string value (from a variable) is one element here: Kyverno also reads it as a JSON list or a
        # range (policy.py names that difference)
        return f"[dyn({value})].all(v0, [type(v0) == string ? [v0] : v0].all(vv, type(vv) == list ? {body} : false))"
    if op in _NUMERIC:
        if isinstance(raw_value, (int, float)) and not isinstance(raw_value, bool):
            return f"(type({key}) == int || type({key}) == double) && {key} {_NUMERIC[op]} {value}"
        raise Unconvertible(f"{field}.value", f"{cond['operator']} on a non-number compares quantities, durations "
                                              "or versions as Kyverno parses them; not converted")
    raise Unconvertible(f"{field}.operator", f"operator {cond['operator']} not converted")
