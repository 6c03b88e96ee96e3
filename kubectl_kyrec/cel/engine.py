"""The one module that talks to the CEL engine (cel-expr-python, the Python binding of cel-cpp).

Everything else in kyrec describes functions with :mod:`kubectl_kyrec.cel.decl` and evaluates through
:class:`Environment`; swapping the engine means rewriting this file only.

Engine facts this adapter works around (measured on cel-expr-python 0.1.3):
- standard extensions are switched on through an env-config YAML, not constructor arguments;
- a missing map key is an ERROR *value*, not an exception, so every result is checked for its type;
- `transformMap`/`transformList` compile but the runtime lacks `cel.@mapInsert`: they evaluate to an error;
- error texts are cel-cpp's (`Key not found in map : "x"`); Kyverno prints cel-go's (`no such key: x`),
  so they are translated here, and only here (:func:`_cel_go_message`, and :func:`_missing_field` for a
  field selected on null or on a scalar, whose cel-cpp text does not name the field). The cel-go texts
  are those of cel-go's interpreter (interpreter/attributes.go resolutionError, types/*.go); what stays
  different is listed in docs/compatibility.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from cel_expr_python import cel

from kubectl_kyrec.cel.decl import CelFunctionError, Library
from kubectl_kyrec.errors import EngineError

ENGINE_NAME = "cel-expr-python"

_EXTENSIONS = ("bindings", "encoders", "lists", "math", "optional", "regex", "sets", "strings",
               "two-var-comprehensions")


class CompileError(EngineError):
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


# Python exceptions raised by library functions during the engine call under way, to raise again once it
# returns (see _wrap). A list, not a flag: the one raised first is the one shown.
_BUGS: list[BaseException] = []


def _wrap(impl: Any) -> Any:
    # cel-expr-python turns ANY Python exception raised in a function (KeyboardInterrupt included) into a CEL
    # error value, and `||`, `&&`, `?:` and comprehensions may absorb that error: a bug in kyrec would become a
    # policy's `error` result, or vanish. So only an EngineError (errors.py: what Kyverno reports on user data,
    # e.g. Go's parse errors) is made the CEL error with its message; anything else is kept in _BUGS and raised
    # again by the engine call (_raise_bug): exit 70, or the interrupt it was.
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except CelFunctionError:
            raise
        except EngineError as exc:
            raise CelFunctionError(str(exc)) from exc
        except BaseException as exc:
            _BUGS.append(exc)
            raise
    return call


def _raise_bug() -> None:
    """Raise the first exception a library function raised during the engine call just made (see _wrap)."""
    bug = _BUGS[0]
    _BUGS.clear()
    raise bug


_STATUS_PREFIX = re.compile(r"^(?:[A-Z_]+: )+")
_LOCATION = re.compile(r"<input>:(\d+):(\d+): (.*)")


SELECT_ON_NON_MAP = "Applying SELECT to non-message type"
# an index into null or a scalar; cel-go: `no such key: <index>` (interpreter/attributes.go refQualify)
INDEX_ON_NON_CONTAINER = "Invalid container type: "

# cel-cpp text -> cel-go text (the texts cel-go's interpreter produces for the same failure)
_CONVERSIONS = {
    # types/string.go ConvertToType falls through to this error when parsing fails
    "cannot convert string to int": "type conversion error from 'string' to 'int'",
    "cannot convert string to uint": "type conversion error from 'string' to 'uint'",
    "cannot convert string to double": "type conversion error from 'string' to 'double'",
}


_KEY_NOT_FOUND = re.compile(r'Key not found in map : "?(.*?)"?$')
_INDEX_RANGE = re.compile(r"Index error: index=(-?\d+) size=(\d+)")
_INDEX_TYPE = re.compile(r"Index error: expected integer type, got (\w+)")


@functools.lru_cache(maxsize=4096)
def _cel_go_message(text: str) -> str:
    # cached: a run meets the same few error texts on every subject
    text = _STATUS_PREFIX.sub("", text.strip())
    m = _KEY_NOT_FOUND.match(text)
    if m:
        return f"no such key: {m.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    if text in ("divide by zero", "division by zero"):
        return "division by zero"
    m = _INDEX_RANGE.match(text)
    if m:
        # an index out of range is a missing index of the attribute (interpreter/attributes.go)
        return f"index out of bounds: {m.group(1)}"
    m = _INDEX_TYPE.match(text)
    if m:
        return f"unsupported index type '{m.group(1)}' in list"
    return _CONVERSIONS.get(text, text)


_SELECTION = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()")


def _bind_frame(text: str) -> tuple[str, str, dict[str, str]]:
    """The `cel.bind(...)` frames the policy compiler wraps around an expression (its variables), as a
    prefix and suffix that put any sub-expression back in their scope, and each bound name's expression."""
    from kubectl_kyrec.cel.compat import _call_end, _string_spans

    prefix, depth, rest = "", 0, text
    bound: dict[str, str] = {}
    while rest.startswith("cel.bind("):
        comma = rest.find(", (")
        if comma < 0:
            break
        init_close = _call_end(rest, comma + 2, _string_spans(rest))
        if init_close < 0 or not rest.startswith(", (", init_close + 1):
            break
        bound[rest[len("cel.bind("):comma].strip()] = rest[comma + 3:init_close]
        body_open = init_close + 3
        prefix += rest[:body_open + 1]
        rest = rest[body_open + 1:-2]
        depth += 1
    return prefix, "))" * depth, bound


def _evaluate_part(program: Program, activation: Activation, part: str) -> tuple[bool, Any]:
    """(ok, plain value) of a sub-expression of `program` on the same activation, inside its variables."""
    prefix, suffix, _ = _bind_frame(program.text)
    try:
        raw = program.env._env.compile(prefix + part + suffix).eval(activation.raw)
    except RuntimeError:    # the binding's compile and evaluation errors
        raw = None
    if _BUGS:
        _raise_bug()
    try:
        return (False, None) if raw is None else (True, _plain(raw))
    except (RuntimeError, _EvalError):
        return False, None


# what _missing_field makes of a receiver's value, by its type: 1 a scalar or null (a selection on it fails), 2 a
# list (one whose plain value is a list fails too), 0 anything else (a map, a timestamp...: not this one)
_RECEIVER_KIND = ("cel.bind(kyrecreceivertype, type({receiver}), kyrecreceivertype in "
                  "[null_type, bool, int, uint, double, string] ? 1 : (kyrecreceivertype == list ? 2 : 0))")
# a root's value converted by the engine (0): a value it cannot convert (a datetime, an integer out of range,
# anywhere in it) makes the call fail, as it makes every receiver on that root fail
_CONVERTED = "(type({root}) == null_type ? 0 : 0)"
# a receiver that is a plain path from one of the activation's variables, `object.spec.containers`
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*")


# a variable bound to a lookup of the run's state with literal arguments (`resource.Get("v1", "configmaps", "ns",
# "name")`): what it gives is the same for every subject, as the run's state does not change while it evaluates
# (the lookups the policies write as literals are read before it starts: load/run_inputs/sources.py)
_LITERAL = r"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
_CONSTANT_LOOKUP = re.compile(rf"\s*resource\.(?:Get|get|List|list)\(\s*{_LITERAL}(?:\s*,\s*{_LITERAL})*\s*\)\s*")


class _Receivers(NamedTuple):
    """What _missing_field looks at, worked out once per program (_selection_receivers): each selection's
    (field, compiled receiver, path), in text order, `path` the receiver's names when it is a plain path from a
    dyn variable of the activation (read from the activation's own data), else None; `kinds` one engine call for
    the rest: an entry 0 for each of `roots` (the paths' roots) once it converts, then the kind (_RECEIVER_KIND)
    of each receiver without a path, in order (None where it does not compile); `converts` the roots' entries
    alone; `others` how many receivers have no path. `constant`: those are all paths from variables bound to a
    constant lookup (_CONSTANT_LOOKUP), and `known` their kinds once an engine call told them (in order)."""

    receivers: tuple[tuple[str, Any, tuple[str, ...] | None], ...]
    kinds: Any
    roots: tuple[str, ...]
    converts: Any
    others: int
    constant: bool
    known: list[int]


def _selection_receivers(program: Program) -> _Receivers:
    """The program's _Receivers: the parsing and compiling depend on the program alone, so
    :func:`_missing_field` does them once per program."""
    from kubectl_kyrec.cel.compat import _inside, _receiver_start, _string_spans

    text = program.text
    spans = _string_spans(text)
    prefix, suffix, bound = _bind_frame(text)
    receivers = []
    seen: set[str] = set()
    for m in _SELECTION.finditer(text):
        dot = m.start()
        if _inside(spans, dot):
            continue
        start = _receiver_start(text, dot, spans)
        receiver = text[start:dot].strip()
        if not receiver or receiver.startswith("cel.bind") or receiver[0].isdigit():
            continue
        # a receiver met again (`object.spec` before `.containers` and `.volumes`) gives what it gave the
        # first time, which did not end the search: it is not evaluated twice
        if receiver in seen:
            continue
        seen.add(receiver)
        try:
            expr = program.env._env.compile(prefix + receiver + suffix)
        except RuntimeError:
            continue        # undeclared comprehension variables: never this one
        path = tuple(name.strip() for name in receiver.split(".")) if _PATH.fullmatch(receiver) else None
        if path is not None and path[0] not in program.env.plain_variables:
            path = None     # a bound variable (cel.bind), a typed one, a function's namespace
        receivers.append((m.group(1), expr, receiver, path))
    roots = tuple(dict.fromkeys(path[0] for _, _, _, path in receivers if path is not None))
    others = [r for _, _, r, path in receivers if path is None]
    converted = [_CONVERTED.format(root=root) for root in roots]
    kinds = converts = None
    if receivers:
        with contextlib.suppress(RuntimeError):     # then each receiver alone
            kinds = program.env._env.compile(
                prefix + "[" + ", ".join([*converted, *(_RECEIVER_KIND.format(receiver=r) for r in others)]) + "]"
                + suffix)
    if roots:
        with contextlib.suppress(RuntimeError):
            converts = program.env._env.compile("[" + ", ".join(converted) + "]")
    constant = all(_PATH.fullmatch(r) and _CONSTANT_LOOKUP.fullmatch(bound.get(r.split(".")[0].strip(), ""))
                   for r in others)
    return _Receivers(tuple((field, expr, path) for field, expr, _, path in receivers), kinds, roots, converts,
                      len(others), constant, [])


def _listed(expr: Any, activation: Activation) -> list[Any] | None:
    """The list `expr` evaluates to on `activation`, or None where it fails."""
    try:
        raw = expr.eval(activation.raw)
    except RuntimeError:
        raw = None
    if _BUGS:
        _raise_bug()
    listed = raw.plain_value() if raw is not None and raw.type() != _ERROR else None
    return listed if type(listed) is list else None


def _missing_field(program: Program, activation: Activation) -> str | None:
    """The field cel-go would name in `no such key: <field>` for a selection on null or a scalar.

    cel-cpp only says "Applying SELECT to non-message type"; the failing selection is found by evaluating
    the receivers of the expression's selections, in text order, until one is null, a scalar or a list (a
    receiver that fails, or is a map, is not the one).
    """
    found = program._receivers
    if found is None:
        found = program._receivers = _selection_receivers(program)
    receivers, kinds, roots, converts, others, constant, known = found
    data = activation.data
    listed = None
    if kinds is not None and data is not None:
        # the paths are read from the activation's data, which is what the engine converted once their roots
        # convert (a root that does not fails the call); the other receivers' kinds in the same engine call,
        # where none of them fails (else each receiver is evaluated alone, below), unless they are constant
        # lookups whose kinds a call told already: then only roots not seen converting on this activation
        checked = activation.converted
        if constant and len(known) == others:
            unseen = [root for root in roots if root not in checked]
            if not unseen or (converts is not None and _listed(converts, activation) is not None):
                listed = [0] * len(roots) + known
        else:
            listed = _listed(kinds, activation)
            if listed is not None and constant:
                known[:] = listed[len(roots):]
        if listed is not None:
            checked.update(roots)
    if listed is None:
        for field, expr, _ in receivers:
            if _names_field(expr, activation):
                return field
        return None
    assert data is not None
    told = iter(listed[len(roots):])
    for field, expr, path in receivers:
        kind = next(told) if path is None else _path_kind(data, path)
        if kind == 1:
            return field
        # a list, or a value read from the data whose kind is not told here: the receiver alone decides
        if kind == 2 and _names_field(expr, activation):
            return field
    return None


def _path_kind(data: Mapping[str, Any], path: tuple[str, ...]) -> int:
    """_RECEIVER_KIND of the value at `path` in an activation's data, whose roots convert: 1 null or a scalar, 0
    a map, -1 where the path fails (a selection on a missing key, or on anything but a map), 2 for what the
    engine alone tells (a list, any other type)."""
    if path[0] not in data:
        return -1      # `No value with name ... found in Activation`
    value = data[path[0]]
    for name in path[1:]:
        if type(value) is dict:
            if name not in value:
                return -1       # no such key
            value = value[name]
        elif value is None or type(value) in _SELECT_FAILS:
            return -1           # cel-cpp: Applying SELECT to non-message type
        else:
            return 2
    if type(value) is dict:
        return 0
    return 1 if value is None or type(value) in _SCALAR_VALUES else 2


# the Python types of the data whose engine value is a scalar (bool before int: type() is exact), and those a
# selection fails on besides null
_SCALAR_VALUES = frozenset((bool, int, float, str))
_SELECT_FAILS = frozenset((bool, int, float, str, list))


def _names_field(expr: Any, activation: Activation) -> bool:
    """Whether a receiver, evaluated alone, is what a selection failed on: null, a scalar, or a list."""
    try:
        raw = expr.eval(activation.raw)
    except RuntimeError:
        return False
    if _BUGS:
        _raise_bug()
    try:
        kind = _type_name(raw.type())
        if kind in _SCALAR_RESULTS:
            return True
        if not kind.startswith("list"):
            return False    # a map, a timestamp...: selectable or not this one; an error of its own
        value = _plain(raw)
    except (RuntimeError, _EvalError):
        return False
    return isinstance(value, list)


# results a selection fails on (besides lists); read from the type, so the receiver (often the whole
# object) is not converted to Python just to be looked at. Bytes convert to bytearray: not among them.
_SCALAR_RESULTS = frozenset(("null", "bool", "int", "uint", "double", "string"))


_NULL = cel.Type.NULL
_ERROR = cel.Type.ERROR
_BOOL = cel.Type.BOOL


def _plain(value: Any) -> Any:
    """Convert an engine result to plain Python (timestamps stay datetimes)."""
    kind = value.type()
    if kind == _NULL:
        # the engine's plain_value() returns None without a reference of its own: each call would drop
        # one from None, and Python 3.11 aborts once None's count reaches zero
        return None
    if kind == _ERROR:
        # optional values also report ERROR as their type, but have no value() at all
        try:
            text = str(value.value())
        except TypeError:     # pybind11: "Unable to convert function return value to a Python type"
            raise _EvalError("unsupported result type optional_type") from None
        raise _EvalError(_cel_go_message(text))
    try:
        plain = value.plain_value()
    except TypeError as exc:  # other engine-only types have no plain form
        raise _EvalError(f"unsupported result type {_type_name(value.type())}") from exc
    _restore_none_references(plain)
    return in_key_order(plain) if isinstance(plain, (dict, list)) else plain


def key_order(key: Any) -> tuple[str, Any]:
    """The sort key in_key_order gives a map's keys (keys of one type compare)."""
    return type(key).__name__, key


def sorted_keys(value: dict[Any, Any]) -> list[Any]:
    """A map's keys in in_key_order's order (key_order). Keys that are all strings, as nearly every map's are,
    are sorted as they are: the same order, without a call and a tuple per key to sort them by (a 4-key map
    sorted in a quarter of the time; 18,000 key_order calls for the objects of 3,000 triggers,
    bench/apply_prewrite.py)."""
    for key in value:
        if type(key) is not str:
            return sorted(value, key=key_order)
    return sorted(value)


def in_key_order(value: Any) -> Any:
    """`value` with every map's keys sorted, lists kept in their order. cel-cpp's maps iterate in the order
    of a hash seeded per process, so a map a policy builds (`{"a": .., "b": ..}`, a generated object, an
    ApplyConfiguration) would come out in a different order from run to run, and so would every output
    that holds it. Sorted is the order Go's encoding/json gives a map[string]any, as Kyverno writes a
    generated object or a patch (keys of one type compare; CEL map keys are strings, ints, uints or bools)."""
    if isinstance(value, dict):
        return {k: in_key_order(value[k]) for k in sorted_keys(value)}
    if isinstance(value, list):
        return [in_key_order(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


_INCREF = ctypes.pythonapi.Py_IncRef
_INCREF.argtypes = [ctypes.py_object]
_INCREF.restype = None


def _restore_none_references(value: Any) -> None:
    """plain_value() hands out every None inside its result without taking a reference to it (measured
    on cel-expr-python 0.1.3: one reference lost per None, e.g. a map holding two nulls loses two). Left
    alone, None's count reaches zero after enough evaluations and Python 3.11 aborts (`none_dealloc`);
    so one reference is given back per None found. (An extra one would only keep None alive.)"""
    if value is None:
        _INCREF(None)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k is None:
                _INCREF(None)
            if v is None or isinstance(v, (dict, list)):
                _restore_none_references(v)
    elif isinstance(value, list):
        for v in value:
            if v is None or isinstance(v, (dict, list)):
                _restore_none_references(v)


class _EvalError(EngineError):
    pass


# a boolean result is by far the most common one: its two outcomes are shared (Outcome is immutable)
_BOOL_OUTCOMES = {True: Outcome(value=True), False: Outcome(value=False)}


class Program:
    """A compiled expression; evaluate it on activations built by the same :class:`Environment`."""

    __slots__ = ("_expr", "text", "result_type", "env", "_receivers", "_bool")

    def __init__(self, expr: Any, text: str, result_type: str, env: Environment) -> None:
        self._expr = expr
        self.text = text
        self.result_type = result_type
        self.env = env
        self._receivers: _Receivers | None = None     # see _missing_field
        # typed bool: the result is a bool or an error, and value() tells them apart (an error's is its
        # text) in one call where type() + value() take two
        self._bool = result_type == "bool"

    def evaluate(self, activation: Activation) -> Outcome:
        try:
            raw = self._expr.eval(activation.raw)
        except RuntimeError as exc:
            if _BUGS:
                _raise_bug()
            return Outcome(error=self._cel_go(_cel_go_message(str(exc)), activation))
        if _BUGS:
            _raise_bug()
        return self._outcome(raw, activation)

    def _outcome(self, raw: Any, activation: Activation) -> Outcome:
        """The Outcome of an engine result `raw` of this program on `activation`."""
        try:
            if self._bool:
                try:
                    value = raw.value()
                except TypeError:
                    value = None
                if value is True or value is False:
                    return _BOOL_OUTCOMES[value]
            return Outcome(value=_plain(raw))
        except _EvalError as exc:
            return Outcome(error=self._cel_go(str(exc), activation))
        except RuntimeError as exc:
            return Outcome(error=self._cel_go(_cel_go_message(str(exc)), activation))

    def _cel_go(self, message: str, activation: Activation) -> str:
        if message == SELECT_ON_NON_MAP:
            field = _missing_field(self, activation)
            if field is not None:
                return f"no such key: {field}"
        elif message.startswith(INDEX_ON_NON_CONTAINER):
            from kubectl_kyrec.cel.compat import missing_index

            key = missing_index(self.text, lambda part: _evaluate_part(self, activation, part))
            if key is not None:
                return f"no such key: {key}"
        return message


def first_not_true(programs: Sequence[Program], activation: Activation) -> tuple[int, Outcome] | None:
    """The index and Outcome of the first program that does not evaluate to true, or None when all do.

    What `evaluate` gives program by program, in one loop: a policy's validations run on every
    (subject, policy) pair, and most of them pass, so the common case pays for the engine call alone.
    """
    raw_activation = activation.raw
    true = True
    for index, program in enumerate(programs):
        try:
            raw = program._expr.eval(raw_activation)
        except RuntimeError as exc:
            if _BUGS:
                _raise_bug()
            return index, Outcome(error=program._cel_go(_cel_go_message(str(exc)), activation))
        if _BUGS:
            _raise_bug()
        if program._bool or raw.type() == _BOOL:
            # (a dyn result only once its type says bool: value() of a null is not safe, see _plain)
            try:
                value = raw.value()
            except (TypeError, RuntimeError):
                value = None        # _outcome says what it is
            if value is true:
                continue
            if value is False:
                return index, _BOOL_OUTCOMES[False]
            if type(value) is str and raw.type() == _ERROR:
                # an error's value() is its text: what _outcome makes of it through _plain, without
                # asking the engine for it again (a validation that errs on every subject meets this per pair)
                return index, Outcome(error=program._cel_go(_cel_go_message(value), activation))
        outcome = program._outcome(raw, activation)
        if outcome.value is not true:
            return index, outcome
    return None


class Activation:
    """Variable bindings for one subject; reused for every program (the engine converts lazily)."""

    __slots__ = ("raw", "data", "converted")

    def __init__(self, raw: Any, data: Mapping[str, Any] | None = None) -> None:
        self.raw = raw
        # the variables as given (plain Python), which _missing_field reads paths from, and those of them the
        # engine was seen converting (_missing_field)
        self.data = data
        self.converted: set[str] = set()


def _type_name(t: Any) -> str:
    try:
        return str(t.name()).lower()
    except AttributeError:
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
        # a set: asked for each binding of every activation a subject gets (evaluate/subjects.py)
        self.variables = frozenset(names)
        # the variables declared dyn, as given (not a library's typed ones): their values are the data's own
        self.plain_variables = frozenset(names) - {var for lib in libraries for var in lib.variables}
        # each text compiled once: a run's policy validation and its evaluation compile the same expressions
        # in the same environments (evaluate/policy_validation.py), and policies repeat expressions
        self._programs: dict[str, Program] = {}

    def compile(self, text: str) -> Program:
        program = self._programs.get(text)
        if program is not None:
            return program
        try:
            expr = self._env.compile(text)
        except RuntimeError as exc:
            raise _compile_error(str(exc)) from None
        program = self._programs[text] = Program(expr, text, _type_name(expr.return_type()), self)
        return program

    def activation(self, data: Mapping[str, Any]) -> Activation:
        data = dict(data)
        return Activation(self._env.Activation(data), data)


# cel-cpp checker text -> cel-go checker text (checker/errors.go), for the same type error
_SELECT_OPERAND = re.compile(r"^expression of type '(.*)' cannot be the operand of a select operation$")


def _cel_go_check_message(text: str) -> str:
    m = _SELECT_OPERAND.match(text)
    if m:
        return f"type '{m.group(1)}' does not support field selection"
    return text


def _compile_error(text: str) -> CompileError:
    m = _LOCATION.search(text)
    if not m:
        return CompileError(_cel_go_check_message(_STATUS_PREFIX.sub("", text.strip()).splitlines()[0]))
    first = _cel_go_check_message(m.group(3).strip())
    return CompileError(first, int(m.group(1)), int(m.group(2)))
