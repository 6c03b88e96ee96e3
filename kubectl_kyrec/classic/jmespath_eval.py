"""Kyverno's JMESPath dialect (kyverno/go-jmespath + pkg/engine/jmespath) on the maintained `jmespath` package.

The parser is jmespath.py's (with go-jmespath's strict JSON literals); a TreeInterpreter subclass gives
go-jmespath's semantics:
- a missing map key on a path raises NotFoundError (`Unknown key "x" in path`); the error becomes null inside
  `||`, the left of `&&`, `!`, comparators, function arguments, pipes, projections and multiselects, and any
  error on the left of a filter projection, flatten or `*` gives null;
- ordering comparisons work on numbers only (else null); equality is reflect.DeepEqual (1 != true);
- the built-in functions behave as go-jmespath's (numbers are float64: `to_string(`2.0`)` is "2") and
  Kyverno's functions (classic/jmespath_functions.py) are registered over them (`sum` included).
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import random
from collections.abc import Callable
from typing import Any

from jmespath import exceptions as jp_exceptions
from jmespath import lexer as jp_lexer
from jmespath import parser as jp_parser
from jmespath import visitor as jp_visitor

from kubectl_kyrec.classic.go_values import deep_equal, is_number
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.golang.json import marshal


class JMESPathError(EngineError):
    """A JMESPath failure; str() is the text Kyverno's Go error carries (e.g. `Unknown key "x" in path`)."""


class JMESPathCompileError(JMESPathError):
    """The expression does not parse (go-jmespath: `SyntaxError: ...`)."""


class NotFoundError(JMESPathError):
    """go-jmespath NotFoundError: a missing key on a path (`Unknown key "name1" in path`)."""

    def __init__(self, key: str) -> None:
        super().__init__(f'Unknown key "{key}" in path')
        self.key = key


class FunctionError(JMESPathError):
    """A function rejected its arguments or failed."""


# ---------------------------------------------------------------------------------------------- parsing


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


class _StrictLexer(jp_lexer.Lexer):  # type: ignore[misc]
    # go-jmespath json.Unmarshals a `literal` strictly; jmespath.py falls back to a string (JEP-12 deprecation).
    def _consume_literal(self) -> dict[str, Any]:
        start = self._position
        lexeme = self._consume_until("`").replace("\\`", "`")
        try:
            # go-jmespath numbers are float64; Go's decoder has no NaN/Infinity
            parsed_json = json.loads(lexeme, parse_int=float, parse_constant=_no_constant)
        except ValueError as exc:
            raise jp_exceptions.LexerError(lexer_position=start, lexer_value=lexeme,
                                           message=f"invalid JSON literal: {exc}") from None
        return {"type": "literal", "value": parsed_json, "start": start, "end": self._position - start}


class _Parser(jp_parser.Parser):  # type: ignore[misc]
    def _parse(self, expression: str) -> Any:
        self.tokenizer = _StrictLexer().tokenize(expression)
        self._tokens = list(self.tokenizer)
        self._index = 0
        parsed = self._expression(binding_power=0)
        if self._current_token() != "eof":
            t = self._lookahead_token(0)
            raise jp_exceptions.ParseError(t["start"], t["value"], t["type"], f"Unexpected token: {t['value']}")
        return jp_parser.ParsedResult(expression, parsed)


@functools.lru_cache(maxsize=4096)
def _parse(expression: str) -> dict[str, Any]:
    try:
        ast: dict[str, Any] = _Parser()._do_parse(expression).parsed
    except jp_exceptions.JMESPathError as exc:
        raise JMESPathCompileError(f"SyntaxError: {exc}") from None
    return ast


# ---------------------------------------------------------------------------------------------- helpers


def is_false(value: Any) -> bool:
    """go-jmespath isFalse: false, null, "", [] and {} (numbers are never false)."""
    if value is None or value is False:
        return True
    if isinstance(value, (str, list, dict)):
        return len(value) == 0
    return False


class _ExpRef:
    __slots__ = ("node", "interpreter")

    def __init__(self, node: dict[str, Any], interpreter: _Interpreter) -> None:
        self.node = node
        self.interpreter = interpreter

    def apply(self, value: Any) -> Any:
        try:
            return self.interpreter.visit(self.node, value)
        except NotFoundError:
            return None


# ---------------------------------------------------------------------------------------------- interpreter


class _Interpreter(jp_visitor.TreeInterpreter):  # type: ignore[misc]
    def __init__(self, functions: dict[str, Function]) -> None:
        super().__init__()
        self._fns = functions

    def _soft(self, node: dict[str, Any], value: Any) -> Any:
        try:
            return self.visit(node, value)
        except NotFoundError:
            return None

    def visit_field(self, node: dict[str, Any], value: Any) -> Any:
        if isinstance(value, dict):
            key = node["value"]
            if key in value:
                return value[key]
            raise NotFoundError(key)
        return None

    def visit_subexpression(self, node: dict[str, Any], value: Any) -> Any:
        result = value
        for child in node["children"]:
            result = self.visit(child, result)
        return result

    visit_index_expression = visit_subexpression

    def visit_comparator(self, node: dict[str, Any], value: Any) -> Any:
        left = self._soft(node["children"][0], value)
        right = self._soft(node["children"][1], value)
        op = node["value"]
        if op == "eq":
            return deep_equal(left, right)
        if op == "ne":
            return not deep_equal(left, right)
        if not (is_number(left) and is_number(right)):
            return None
        if op == "lt":
            return left < right
        if op == "lte":
            return left <= right
        if op == "gt":
            return left > right
        return left >= right

    def visit_expref(self, node: dict[str, Any], value: Any) -> Any:
        return _ExpRef(node["children"][0], self)

    def visit_function_expression(self, node: dict[str, Any], value: Any) -> Any:
        args = [self._soft(child, value) for child in node["children"]]
        name = node["value"]
        fn = self._fns.get(name)
        if fn is None:
            raise FunctionError("unknown function: " + name)
        return fn.call(args)

    def visit_filter_projection(self, node: dict[str, Any], value: Any) -> Any:
        try:
            base = self.visit(node["children"][0], value)
        except JMESPathError:
            return None
        if not isinstance(base, list):
            return None
        collected = []
        for element in base:
            if not is_false(self._soft(node["children"][2], element)):
                current = self._soft(node["children"][1], element)
                if current is not None:
                    collected.append(current)
        return collected

    def visit_flatten(self, node: dict[str, Any], value: Any) -> Any:
        try:
            base = self.visit(node["children"][0], value)
        except JMESPathError:
            return None
        if not isinstance(base, list):
            return None
        merged: list[Any] = []
        for element in base:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged

    def visit_index(self, node: dict[str, Any], value: Any) -> Any:
        if not isinstance(value, list):
            return None
        index = node["value"]
        if index < 0:
            index += len(value)
        if 0 <= index < len(value):
            return value[index]
        return None

    def visit_slice(self, node: dict[str, Any], value: Any) -> Any:
        if not isinstance(value, list):
            return None
        start, stop, step = node["children"]
        if step == 0:
            raise JMESPathError("Invalid slice, step cannot be 0")
        return value[slice(start, stop, step)]

    def visit_multi_select_dict(self, node: dict[str, Any], value: Any) -> Any:
        if value is None:
            return None
        return {child["value"]: self._soft(child, value) for child in node["children"]}

    def visit_multi_select_list(self, node: dict[str, Any], value: Any) -> Any:
        if value is None:
            return None
        return [self._soft(child, value) for child in node["children"]]

    def visit_or_expression(self, node: dict[str, Any], value: Any) -> Any:
        matched = self._soft(node["children"][0], value)
        if is_false(matched):
            matched = self._soft(node["children"][1], value)
        return matched

    def visit_and_expression(self, node: dict[str, Any], value: Any) -> Any:
        matched = self._soft(node["children"][0], value)
        if is_false(matched):
            return matched
        # go-jmespath returns the right side's error as is (NotFound included)
        return self.visit(node["children"][1], value)

    def visit_not_expression(self, node: dict[str, Any], value: Any) -> Any:
        return is_false(self._soft(node["children"][0], value))

    def visit_pipe(self, node: dict[str, Any], value: Any) -> Any:
        result = value
        for child in node["children"]:
            result = self._soft(child, result)
        return result

    def visit_projection(self, node: dict[str, Any], value: Any) -> Any:
        base = self._soft(node["children"][0], value)
        if not isinstance(base, list):
            return None
        collected = []
        for element in base:
            current = self._soft(node["children"][1], element)
            if current is not None:
                collected.append(current)
        return collected

    def visit_value_projection(self, node: dict[str, Any], value: Any) -> Any:
        try:
            base = self.visit(node["children"][0], value)
        except JMESPathError:
            return None
        if not isinstance(base, dict):
            return None
        collected = []
        for element in base.values():
            current = self._soft(node["children"][1], element)
            if current is not None:
                collected.append(current)
        return collected


# ---------------------------------------------------------------------------------------------- functions

NUMBER = "number"
STRING = "string"
ARRAY = "array"
OBJECT = "object"
ARRAY_NUMBER = "array[number]"
ARRAY_STRING = "array[string]"
EXPREF = "expref"
ANY = "any"


def _type_ok(kind: str, arg: Any) -> bool:
    if kind == ANY:
        return True
    if kind == NUMBER:
        return is_number(arg)
    if kind == STRING:
        return isinstance(arg, str)
    if kind == ARRAY:
        return isinstance(arg, list)
    if kind == OBJECT:
        return isinstance(arg, dict)
    if kind == ARRAY_NUMBER:
        return isinstance(arg, list) and all(is_number(v) for v in arg)
    if kind == ARRAY_STRING:
        return isinstance(arg, list) and all(isinstance(v, str) for v in arg)
    if kind == EXPREF:
        return isinstance(arg, _ExpRef)
    return False


class Function:
    """A go-jmespath FunctionEntry: argument specs (type lists), a handler, variadic last argument."""

    __slots__ = ("name", "args", "handler", "variadic")

    def __init__(self, name: str, args: list[list[str]], handler: Callable[..., Any], *, variadic: bool = False):
        self.name = name
        self.args = args
        self.handler = handler
        self.variadic = variadic

    def call(self, args: list[Any]) -> Any:
        if self.args:
            if not self.variadic:
                if len(self.args) != len(args):
                    raise FunctionError("incorrect number of args")
                for spec, arg in zip(self.args, args):
                    if not any(_type_ok(t, arg) for t in spec):
                        expected = ", ".join(f'"{t}"' for t in spec)
                        raise FunctionError(
                            f"Invalid type for: {sprint(arg)}, expected: []jmespath.JpType{{{expected}}}")
            elif len(args) < len(self.args):
                raise FunctionError("Invalid arity.")
        return self.handler(*args)


def _f(value: Any) -> float:
    return float(value)


def _contains(search: Any, el: Any) -> bool:
    if isinstance(search, str):
        return isinstance(el, str) and el in search
    # Go compares interface values with ==: scalars by type and value
    for item in search:
        if isinstance(item, (dict, list)) or isinstance(el, (dict, list)):
            continue
        if isinstance(item, bool) or isinstance(el, bool):
            if isinstance(item, bool) and isinstance(el, bool) and item == el:
                return True
            continue
        if item == el and (is_number(item) == is_number(el)):
            return True
    return False


def _length(arg: Any) -> float:
    return float(len(arg))


def _floats(items: list[Any]) -> list[Any]:
    # go-jmespath converts an array[number] to []float64 before max/min/sort
    return [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in items]


def _max(items: list[Any]) -> Any:
    return max(_floats(items)) if items else None


def _min(items: list[Any]) -> Any:
    return min(_floats(items)) if items else None


def _by(items: list[Any], ref: _ExpRef, pick_max: bool) -> Any:
    if not items:
        return None
    if len(items) == 1:
        return items[0]
    start = ref.apply(items[0])
    if is_number(start):
        want: Any = (int, float)
        err = "invalid type, must be number"
    elif isinstance(start, str):
        want = str
        err = "invalid type, must be string"
    else:
        raise FunctionError("invalid type, must be number of string")
    best_val, best = start, items[0]
    for item in items[1:]:
        current = ref.apply(item)
        if not isinstance(current, want) or isinstance(current, bool):
            raise FunctionError(err)
        if (current > best_val) if pick_max else (current < best_val):
            best_val, best = current, item
    return best


def _sort(items: list[Any]) -> list[Any]:
    return sorted(_floats(items))


def _sort_by(items: list[Any], ref: _ExpRef) -> list[Any]:
    if len(items) <= 1:
        return items
    start = ref.apply(items[0])
    if is_number(start):
        want: Any = (int, float)
    elif isinstance(start, str):
        want = str
    else:
        raise FunctionError("invalid type, must be number of string")
    keys = []
    for item in items:
        key = ref.apply(item)
        if not isinstance(key, want) or isinstance(key, bool):
            raise FunctionError("error in sort_by comparison")
        keys.append(key)
    order = sorted(range(len(items)), key=lambda i: keys[i])
    return [items[i] for i in order]


def _merge(*objects: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for obj in objects:
        if not isinstance(obj, dict):
            raise FunctionError(f"Invalid type for: {sprint(obj)}, expected: []jmespath.JpType{{\"object\"}}")
        out.update(obj)
    return out


def _type(arg: Any) -> str:
    if arg is None:
        return "null"
    if isinstance(arg, bool):
        return "boolean"
    if is_number(arg):
        return "number"
    if isinstance(arg, str):
        return "string"
    if isinstance(arg, list):
        return "array"
    return "object"


def _to_string(arg: Any) -> str:
    if isinstance(arg, str):
        return arg
    return marshal(arg)


def _to_number(arg: Any) -> Any:
    if is_number(arg):
        return float(arg)
    if isinstance(arg, str):
        from kubectl_kyrec.golang.strconv import parse_float

        try:
            return parse_float(arg)
        except ValueError:
            return None
    return None


def _not_null(*args: Any) -> Any:
    for arg in args:
        if arg is not None:
            return arg
    return None


def _reverse(arg: Any) -> Any:
    return arg[::-1]


def _to_array(arg: Any) -> list[Any]:
    return arg if isinstance(arg, list) else [arg]


def _join(sep: str, items: list[str]) -> str:
    return sep.join(items)


def _avg(items: list[Any]) -> Any:
    if not items:
        return math.nan
    return sum(_f(v) for v in items) / len(items)


def _go_sum(items: list[Any]) -> Any:
    return float(sum(items))


def _map(ref: _ExpRef, items: list[Any]) -> list[Any]:
    return [ref.apply(v) for v in items]


def builtin_functions() -> dict[str, Function]:
    """go-jmespath's built-in function table."""
    n, s, a, o = [NUMBER], [STRING], [ARRAY], [OBJECT]
    fns = [
        Function("length", [[STRING, ARRAY, OBJECT]], _length),
        Function("starts_with", [s, s], lambda x, y: x.startswith(y)),
        Function("abs", [n], lambda x: float(abs(x))),
        Function("avg", [[ARRAY_NUMBER]], _avg),
        Function("ceil", [n], lambda x: float(math.ceil(x))),
        Function("contains", [[ARRAY, STRING], [ANY]], _contains),
        Function("ends_with", [s, s], lambda x, y: x.endswith(y)),
        Function("floor", [n], lambda x: float(math.floor(x))),
        Function("map", [[EXPREF], a], _map),
        Function("max", [[ARRAY_NUMBER, ARRAY_STRING]], _max),
        Function("merge", [o], _merge, variadic=True),
        Function("max_by", [a, [EXPREF]], lambda x, r: _by(x, r, True)),
        Function("sum", [[ARRAY_NUMBER]], _go_sum),
        Function("min", [[ARRAY_NUMBER, ARRAY_STRING]], _min),
        Function("min_by", [a, [EXPREF]], lambda x, r: _by(x, r, False)),
        Function("type", [[ANY]], _type),
        Function("keys", [o], lambda x: list(x.keys())),
        Function("values", [o], lambda x: list(x.values())),
        Function("sort", [[ARRAY_STRING, ARRAY_NUMBER]], _sort),
        Function("sort_by", [a, [EXPREF]], _sort_by),
        Function("join", [s, [ARRAY_STRING]], _join),
        Function("reverse", [[ARRAY, STRING]], _reverse),
        Function("to_array", [[ANY]], _to_array),
        Function("to_string", [[ANY]], _to_string),
        Function("to_number", [[ANY]], _to_number),
        Function("not_null", [[ANY]], _not_null, variadic=True),
    ]
    return {f.name: f for f in fns}


# ---------------------------------------------------------------------------------------------- engine


def _field_chain(ast: dict[str, Any]) -> tuple[str, ...] | None:
    """The names of a plain `a.b.c` path (the most common Kyverno variable), else None."""
    if ast["type"] == "field":
        return (ast["value"],)
    if ast["type"] == "subexpression" and all(c["type"] == "field" for c in ast["children"]):
        return tuple(c["value"] for c in ast["children"])
    return None


class Compiled:
    """A parsed expression bound to an engine's functions."""

    __slots__ = ("expression", "_ast", "_interpreter", "_fields")

    def __init__(self, expression: str, ast: dict[str, Any], interpreter: _Interpreter) -> None:
        self.expression = expression
        self._ast = ast
        self._interpreter = interpreter
        self._fields = _field_chain(ast)

    def search(self, data: Any) -> Any:
        if self._fields is not None:
            # the interpreter's visit_field, unrolled: missing key raises, a non-map gives null
            node = data
            for name in self._fields:
                if isinstance(node, dict):
                    if name not in node:
                        raise NotFoundError(name)
                    node = node[name]
                else:
                    node = None
            return node
        try:
            return self._interpreter.visit(self._ast, data)
        except JMESPathError:
            raise
        except RecursionError:
            raise JMESPathError("expression too deeply nested") from None


class Engine:
    """A configured Kyverno JMESPath: the clock for time_now*/time_since, the random source for `random`.

    `now` returns the current time (UTC-aware); tests inject a fixed clock.
    """

    def __init__(self, *, now: Callable[[], datetime.datetime] | None = None, seed: int | None = None) -> None:
        from kubectl_kyrec.classic.jmespath_functions import kyverno_functions

        self.now = now or (lambda: datetime.datetime.now(datetime.UTC))
        self.rng = random.Random(seed)
        self.functions = builtin_functions()
        self.functions.update(kyverno_functions(self))
        self._interpreter = _Interpreter(self.functions)
        self._compiled: dict[str, Compiled] = {}

    def compile(self, expression: str) -> Compiled:
        """Parse once; the result has `.search(data) -> Any`. Raises JMESPathCompileError."""
        compiled = self._compiled.get(expression)
        if compiled is None:
            compiled = Compiled(expression, _parse(expression), self._interpreter)
            if len(self._compiled) > 8192:
                self._compiled.clear()
            self._compiled[expression] = compiled
        return compiled

    def search(self, expression: str, data: Any) -> Any:
        """Evaluate `expression` over `data` (plain JSON values). Raises JMESPathError subclasses."""
        return self.compile(expression).search(data)


@functools.lru_cache(maxsize=1)
def default_engine() -> Engine:
    """The process-wide engine with the real clock."""
    return Engine()


def search(expression: str, data: Any) -> Any:
    """`default_engine().search(expression, data)`: Kyverno's jmespath.Search."""
    return default_engine().search(expression, data)
