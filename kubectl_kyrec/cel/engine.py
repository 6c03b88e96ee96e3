"""The one module that talks to the CEL engine (cel-expr-python, the Python binding of cel-cpp).

Everything else in kyrec describes functions with :mod:`kubectl_kyrec.cel.decl` and evaluates through
:class:`Environment`; swapping the engine means rewriting this file only.

Engine facts this adapter works around (measured on cel-expr-python 0.1.3):
- standard extensions are switched on through an env-config YAML, not constructor arguments;
- a missing map key is an ERROR *value*, not an exception, so every result is checked for its type;
- `transformMap`/`transformList` compile but the runtime lacks `cel.@mapInsert`: they evaluate to an error;
- error texts are cel-cpp's (`Key not found in map : "x"`); Kyverno prints cel-go's (`no such key: x`),
  so the common ones are translated in :func:`_cel_go_message`.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from kubectl_kyrec.cel.decl import CelFunctionError, Library

ENGINE_NAME = "cel-expr-python"

_EXTENSIONS = ("bindings", "encoders", "lists", "math", "optional", "regex", "sets", "strings",
               "two-var-comprehensions")


class CompileError(Exception):
    """An expression that does not parse or type-check; `line`/`column` are 1-based within it."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class Outcome:
    """What one evaluation produced: a plain Python value, or the error text Kyverno would show."""

    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


_SCALAR_TYPES = {
    "bool": cel.Type.BOOL, "int": cel.Type.INT, "uint": cel.Type.UINT, "double": cel.Type.DOUBLE,
    "string": cel.Type.STRING, "bytes": cel.Type.BYTES, "dyn": cel.Type.DYN, "null": cel.Type.NULL,
    "timestamp": cel.Type.TIMESTAMP, "duration": cel.Type.DURATION,
}


def _type(spec: str) -> cel.Type:
    spec = spec.replace(" ", "")
    if spec in _SCALAR_TYPES:
        return _SCALAR_TYPES[spec]
    if spec == "list":
        return cel.Type.List(cel.Type.DYN)
    if spec == "map":
        return cel.Type.Map(cel.Type.DYN, cel.Type.DYN)
    if spec.startswith("list<") and spec.endswith(">"):
        return cel.Type.List(_type(spec[5:-1]))
    if spec.startswith("map<") and spec.endswith(">"):
        inner = spec[4:-1]
        depth = 0
        for i, ch in enumerate(inner):
            depth += ch == "<"
            depth -= ch == ">"
            if ch == "," and depth == 0:
                return cel.Type.Map(_type(inner[:i]), _type(inner[i + 1:]))
    raise ValueError(f"unknown CEL type spec {spec!r}")


def _wrap(impl: Any) -> Any:
    # cel-expr-python turns any Python exception into an error value; keep our message clean of
    # Python's repr and keep programming errors visible as such.
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except CelFunctionError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, ArithmeticError) as exc:
            raise CelFunctionError(str(exc)) from exc
    return call


_STATUS_PREFIX = re.compile(r"^(?:[A-Z_]+: )+")
_LOCATION = re.compile(r"<input>:(\d+):(\d+): (.*)")


def _cel_go_message(text: str) -> str:
    text = _STATUS_PREFIX.sub("", text.strip())
    m = re.match(r'Key not found in map : "?(.*?)"?$', text)
    if m:
        return f"no such key: {m.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    if text in ("divide by zero", "division by zero"):
        return "division by zero"
    m = re.match(r"Index error: index=(-?\d+) size=(\d+)", text)
    if m:
        return f"index '{m.group(1)}' out of range in list size '{m.group(2)}'"
    return text


def _plain(value: Any) -> Any:
    """Convert an engine result to plain Python (timestamps stay datetimes)."""
    if value.type() == cel.Type.ERROR:
        # optional values also report ERROR as their type, but have no value() at all
        try:
            text = str(value.value())
        except Exception:
            raise _EvalError("unsupported result type optional_type") from None
        raise _EvalError(_cel_go_message(text))
    try:
        return value.plain_value()
    except Exception as exc:  # other engine-only types have no plain form
        raise _EvalError(f"unsupported result type {_type_name(value.type())}") from exc


class _EvalError(Exception):
    pass


class Program:
    """A compiled expression; evaluate it on activations built by the same :class:`Environment`."""

    __slots__ = ("_expr", "text", "result_type")

    def __init__(self, expr: Any, text: str, result_type: str) -> None:
        self._expr = expr
        self.text = text
        self.result_type = result_type

    def evaluate(self, activation: Activation) -> Outcome:
        try:
            raw = self._expr.eval(activation.raw)
            return Outcome(value=_plain(raw))
        except _EvalError as exc:
            return Outcome(error=str(exc))
        except RuntimeError as exc:
            return Outcome(error=_cel_go_message(str(exc)))


class Activation:
    """Variable bindings for one subject; reused for every program (the engine converts lazily)."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw


def _type_name(t: Any) -> str:
    try:
        return str(t.name()).lower()
    except Exception:
        return str(t).lower()


class Environment:
    """A CEL environment: the standard extensions, the given libraries and top-level variables (dyn)."""

    def __init__(self, libraries: Sequence[Library] = (), variables: Sequence[str] = ()) -> None:
        config = cel.NewEnvConfigFromYaml(
            "name: kyrec\nextensions:\n" + "".join(f"  - name: {e}\n" for e in _EXTENSIONS))
        decls: list[Any] = []
        names = {v: cel.Type.DYN for v in variables}
        for lib in libraries:
            for var, spec in lib.variables.items():
                names[var] = _type(spec)
            for function in lib.functions:
                decls.append(cel.FunctionDecl(function.name, [
                    cel.Overload(o.id, _type(o.result), [_type(p) for p in o.params],
                                 is_member=o.member, impl=_wrap(o.impl))
                    for o in function.overloads]))
        extensions = [cel.CelExtension("kyrec", decls)] if decls else []
        self._env = cel.NewEnv(config=config, variables=names, extensions=extensions)
        self.variables = tuple(names)

    def compile(self, text: str) -> Program:
        try:
            expr = self._env.compile(text)
        except RuntimeError as exc:
            raise _compile_error(str(exc)) from None
        return Program(expr, text, _type_name(expr.return_type()))

    def activation(self, data: Mapping[str, Any]) -> Activation:
        return Activation(self._env.Activation(dict(data)))


def _compile_error(text: str) -> CompileError:
    m = _LOCATION.search(text)
    if not m:
        return CompileError(_STATUS_PREFIX.sub("", text.strip()).splitlines()[0])
    first = m.group(3).strip()
    return CompileError(first, int(m.group(1)), int(m.group(2)))


def to_timestamp_text(value: datetime.datetime) -> str:
    """RFC 3339 the way Go's time.Time marshals in UTC (used when CEL returns a timestamp)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    text = value.astimezone(datetime.timezone.utc).isoformat()
    return text.replace("+00:00", "Z")
