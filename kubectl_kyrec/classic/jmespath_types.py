"""What the JMESPath interpreter (jmespath_eval.py) and Kyverno's functions (jmespath_functions.py) share:
the errors, the argument types and the Function entry with its argument checks (go-jmespath functions.go
functionEntry, argSpec, jpType). Both import it; it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jmespath import visitor as jp_visitor

from kubectl_kyrec.classic.go_values import is_number
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.fmt import sprint


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


class _ExpRef:
    __slots__ = ("node", "interpreter")

    def __init__(self, node: dict[str, Any], interpreter: jp_visitor.TreeInterpreter) -> None:
        self.node = node
        self.interpreter = interpreter

    def apply(self, value: Any) -> Any:
        try:
            return self.interpreter.visit(self.node, value)
        except NotFoundError:
            return None


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
