"""Kyverno's variable substitution (pkg/engine/variables/vars.go, regex/vars.go, jsonutils/traverse.go).

`{{ expr }}` innermost first (the loop repeats until nothing changes), `\\{{` escapes, `{{- x}}` is shallow,
`{{@}}` is the current pattern path, `$(./../x)` references; a whole-string variable keeps its JSON type,
embedded values go through Go's json.Marshal. Map keys are substituted too. A failed lookup is an error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_kyrec.classic import anchors
from kubectl_kyrec.classic.jmespath_types import NotFoundError
from kubectl_kyrec.classic.json_context import ContextError, EvalContext, InvalidVariableError
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.golang.json import GoJSONError, marshal
from kubectl_kyrec.golang.regexp import find_all

# '{{...}}' at the beginning of the string, and 'x{{...}}' where 'x' is not '\'
REGEX_VARIABLES = re.compile(r"(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})")
REGEX_VARIABLE_INIT = re.compile(r"^\{\{(\{[^{}]*\}|[^{}])*\}\}")
# '$(...)' at the beginning of the string, and 'x$(...)' where 'x' is not '\'
REGEX_REFERENCES = re.compile(r"^\$\(.[^ ]*\)|[^\\]\$\(.[^ ]*\)")
REGEX_ESCAPED_REFERENCES = re.compile(r"\\\$\(.[^ )]*\)")
REGEX_ELEMENT_INDEX = re.compile(r"{{\s*elementIndex\d*\s*}}")


class SubstitutionError(EngineError):
    """str() is Kyverno's message, e.g. `failed to resolve request.object.x at path /validate/message:
    JMESPath query failed: Unknown key "x" in path`. `not_found` is True when the cause is a JMESPath
    NotFoundError (what Kyverno's CheckNotFoundErr looks for through its wrapping)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def is_variable(text: str) -> bool:
    """regex.IsVariable."""
    return REGEX_VARIABLES.search(text) is not None


def is_reference(text: str) -> bool:
    """regex.IsReference (`$(...)`)."""
    return REGEX_REFERENCES.search(text) is not None


def replace_all_vars(text: str, replace: Callable[[str], str]) -> str:
    """ReplaceAllVars: replace every `{{...}}` with `replace(match)`, keeping the character before it."""

    def wrapper(m: re.Match[str]) -> str:
        s = m.group(0)
        prefix = ""
        if not REGEX_VARIABLE_INIT.search(s):
            prefix, s = s[0], s[1:]
        return prefix + replace(s)

    return REGEX_VARIABLES.sub(wrapper, text)


def _replace_braces_and_trim(v: str) -> tuple[str, bool]:
    variable = v.replace("{{", "").replace("}}", "").strip(" \t\n\r\v\f")
    if variable.startswith("-"):
        return variable[1:].strip(" \t\n\r\v\f"), True
    return variable, False


# ---------------------------------------------------------------------------------------------- traversal

Action = Callable[[Any, Any, str], Any]


def _marked(document: Any, out: set[int]) -> bool:
    """Collect the ids of the maps and lists that hold a `{{`/`$(` somewhere (keys included)."""
    if isinstance(document, str):
        return "{{" in document or "$(" in document
    found = False
    if isinstance(document, dict):
        for key, value in document.items():
            # no short-circuit: every marked container below must be recorded
            found = _marked(value, out) | ("{{" in key or "$(" in key) | found
    elif isinstance(document, list):
        for value in document:
            found = _marked(value, out) | found
    if found:
        out.add(id(document))
    return found


def _traverse(document: Any, action: Action, *, only_marked: bool = False) -> Any:
    """jsonutils.Traversal with OnlyForLeafsAndKeys: the action sees leaves and map keys (at the map's path).

    With `only_marked`, maps and lists without any `{{`/`$(` are returned as they are (the action would leave
    every leaf of them unchanged), which spares rebuilding large patterns for one message variable."""
    marked: set[int] = set()
    if only_marked:
        _marked(document, marked)

    def visit(element: Any, path: str, is_key: bool = False) -> Any:
        if is_key or not isinstance(element, (dict, list)):
            original = element
            element = action(document, element, path)
            if only_marked and element is not original and isinstance(element, (dict, list)):
                _marked(element, marked)
        if isinstance(element, (dict, list)) and only_marked and id(element) not in marked:
            return element
        if isinstance(element, dict):
            out: dict[str, Any] = {}
            for key, value in element.items():
                new_key = visit(key, path, True)
                if new_key is None:
                    new_key = key
                if not isinstance(new_key, str):
                    raise SubstitutionError(f'expected string after substituting variables in key "{key}"')
                out[new_key] = visit(value, path + "/" + key.replace("/", "\\/"))
            return out
        if isinstance(element, list):
            return [visit(v, f"{path}/{i}") for i, v in enumerate(element)]
        return element

    return visit(document, "")


# ---------------------------------------------------------------------------------------------- references


def _traverse_paths(document: Any) -> list[tuple[str, Any]]:
    """Every (path, element) the traversal's action would see, in order."""
    seen: list[tuple[str, Any]] = []

    def record(_doc: Any, element: Any, path: str) -> Any:
        seen.append((path, element))
        return element

    _traverse(document, record)
    return seen


def _go_path_join(base: str, rel: str) -> str:
    import posixpath

    joined = posixpath.normpath(base + "/" + rel) if base else posixpath.normpath(rel)
    if joined.startswith("//"):
        joined = joined[1:]
    return joined


def _resolve_reference(document: Any, reference: str, absolute_path: str) -> Any:
    from kubectl_kyrec.classic.pattern import get_operator

    path = reference.strip("$()")
    operation = get_operator(path)
    path = path[len(operation):]
    if not path:
        raise SubstitutionError("expected path, found empty reference")
    if not path.startswith("/"):
        path = _go_path_join(absolute_path, path)
    found: Any = None
    for element_path, element in _traverse_paths(document):
        if anchors.remove_anchors_from_path(element_path) == path:
            found = element
    if operation == "":
        return found
    if isinstance(found, str):
        text = found
    elif isinstance(found, (int, float)) and not isinstance(found, bool):
        text = f"{float(found):f}"  # decoded JSON numbers are float64: fmt %f
    else:
        raise SubstitutionError(f"incorrect expression: operator {operation} does not match with value "
                                f"{sprint(found)}")
    return operation + text


def _substitute_references(document: Any) -> Any:
    def action(doc: Any, element: Any, path: str) -> Any:
        if not isinstance(element, str):
            return element
        value = element
        for v in find_all(value, REGEX_REFERENCES):
            initial = v[:2] == "$("
            old = v
            if not initial:
                v = v[1:]
            try:
                resolved = _resolve_reference(doc, v, path)
            except SubstitutionError as exc:
                raise SubstitutionError(f"failed to resolve {v} at path {path}: {exc}") from None
            if resolved is None:
                raise SubstitutionError(f"got nil resolved variable {v} at path {path}: <nil>")
            if isinstance(resolved, str):
                value = value.replace(old, ("" if initial else old[0]) + resolved, 1)
                continue
            raise SubstitutionError(f"NotResolvedReferenceErr,reference {v} not resolved at path {path}")
        for v in find_all(value, REGEX_ESCAPED_REFERENCES):
            value = value.replace(v, v[1:])
        return value

    if not any("$(" in s for s in _strings(document)):
        return document
    return _traverse(document, action, only_marked=True)


def _strings(document: Any) -> Any:
    if isinstance(document, str):
        yield document
    elif isinstance(document, dict):
        for key, value in document.items():
            yield key
            yield from _strings(value)
    elif isinstance(document, list):
        for value in document:
            yield from _strings(value)


# ---------------------------------------------------------------------------------------------- variables


def _jsonpointer_path(raw: str) -> list[str]:
    """jsonpointer.ParsePath: `/` separated, `\\` escapes, `"..."` quoted components."""
    parts: list[str] = []
    buf: list[str] = []
    escaped = quoted = False
    i = 0
    quote_start = 0
    while i < len(raw):
        c = raw[i]
        if escaped:
            buf.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            if quoted:
                with contextlib.suppress(ValueError):
                    buf.append(json.loads(raw[quote_start:i + 1]))
            else:
                quote_start = i
            quoted = not quoted
        elif c == "/" and not quoted:
            if buf:
                parts.append("".join(buf))
            buf = []
        elif not quoted:
            buf.append(c)
        i += 1
    if buf:
        parts.append("".join(buf))
    return parts


_POINTER_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                    "\t": "\\t"}
_UNQUOTED_FIRST = re.compile(r"[(A-Z_a-z]")
_UNQUOTED_REST = re.compile(r"[)0-9A-Z_a-z(]*")


def _pointer_jmespath(parts: list[str]) -> str:
    out: list[str] = []
    for component in parts:
        if component.isdigit() and component.isascii():
            out.append(f"[{component}]")
            continue
        if out:
            out.append(".")
        first_ok = bool(component) and _UNQUOTED_FIRST.match(component[0]) is not None
        rest_ok = re.fullmatch(r"[)0-9A-Z_a-z]*", component[1:] if component else "") is not None
        if first_ok and rest_ok and "(" not in component[1:]:
            out.append(component)
            continue
        escaped = []
        for ch in component:
            code = ord(ch)
            if code >= 0x20 and ch not in '"\\':
                escaped.append(ch)  # jsonpointer's unescaped range (it keeps `/` as is)
            elif ch in _POINTER_ESCAPES:
                escaped.append(_POINTER_ESCAPES[ch])
            else:
                escaped.append(f"\\u{code:04x}")
        out.append('"' + "".join(escaped) + '"')
    return "".join(out)


def _at_path(ctx: EvalContext, path: str) -> str:
    prefix = "target"
    try:
        ctx.query("target")
    except ContextError:
        prefix = "request.object"
    parts = _jsonpointer_path(path)
    if "foreach" in parts:
        parts = parts[parts.index("foreach") + 1:]
    parts = parts[2:] if len(parts) - 1 >= 2 else []
    return _pointer_jmespath(prefix.split(".") + parts)


def _is_delete(ctx: EvalContext | None) -> bool:
    return ctx is not None and ctx.query_operation() == "DELETE"


@functools.lru_cache(maxsize=16384)
def _variables_in(value: str) -> tuple[str, ...]:
    return tuple(m.group(0) for m in REGEX_VARIABLES.finditer(value))


def _substitute_variables(ctx: EvalContext, document: Any) -> Any:
    delete = _is_delete(ctx)

    def action(_doc: Any, element: Any, path: str) -> Any:
        if not isinstance(element, str):
            return element
        return _substitute_string(ctx, element, path, delete)

    return _traverse(document, action, only_marked=True)


def _substitute_string(ctx: EvalContext, element: str, path: str, delete: bool) -> Any:
    """substituteVariablesIfAny's action on one string leaf or key."""
    value = element
    variables = _variables_in(value)
    while variables:
        original = value
        shallow = False
        for v in variables:
            initial = REGEX_VARIABLE_INIT.search(v) is not None
            old = v
            if not initial:
                v = v[1:]
            variable, shallow = _replace_braces_and_trim(v)
            if variable == "@":
                variable = _at_path(ctx, path)
            if delete:
                variable = variable.replace("request.object", "request.oldObject")
            try:
                substituted = ctx.query(variable)
            except InvalidVariableError as exc:
                raise SubstitutionError(str(exc)) from None     # kk: returned as it is, not wrapped
            except ContextError as exc:
                raise SubstitutionError(f"failed to resolve {variable} at path {path}: {exc}",
                                        not_found=isinstance(exc.cause, NotFoundError)) from None
            if original == v:
                return substituted
            prefix = "" if initial else old[0]
            if shallow and substituted is not None:
                if not isinstance(substituted, str):
                    raise SubstitutionError(f"failed to resolve {variable} at path {path}: shallow "
                                            f"substitution of a non-string value")
                substituted = substituted.replace("{{", "\\{{")
            if isinstance(substituted, str):
                text = substituted
            else:
                try:
                    text = marshal(substituted)
                except GoJSONError:
                    raise SubstitutionError(f"failed to resolve {variable} at path {path}: failed to marshal "
                                            f"{type(substituted).__name__}: {sprint(substituted)}") from None
            value = value.replace(prefix + v, prefix + text, 1)
        variables = () if shallow else _variables_in(value)
    return value.replace("\\{{", "{{")


def has_markers(document: Any) -> bool:
    """Whether any string or key holds `{{`, `$(` or `\\{{`: without one, substitution changes nothing."""
    if isinstance(document, str):
        return "{{" in document or "$(" in document
    if isinstance(document, Mapping):
        return any(has_markers(k) or has_markers(v) for k, v in document.items())
    if isinstance(document, list):
        return any(has_markers(v) for v in document)
    return False


# Rules substitute the same pattern objects for every resource: whether one holds a marker is remembered. The
# cache keeps the object so that its id is not reused while the entry lives.
_MARKERS: dict[int, tuple[Any, bool]] = {}


def _has_markers_cached(document: Any) -> bool:
    entry = _MARKERS.get(id(document))
    if entry is not None and entry[0] is document:
        return entry[1]
    found = has_markers(document)
    if len(_MARKERS) > 20000:
        _MARKERS.clear()
    _MARKERS[id(document)] = (document, found)
    return found


def substitute_all(ctx: EvalContext, document: Any) -> Any:
    """Kyverno SubstituteAll: references `$(...)` then variables. The result shares unchanged parts with
    `document` (a document without variables or references comes back as is): do not mutate it."""
    if isinstance(document, str):
        # the common case (a message, a condition key): no traversal needed
        if "{{" not in document:
            return _substitute_references(document) if "$(" in document else document
        if "$(" in document:
            document = _substitute_references(document)
            if not isinstance(document, str):
                return document
        return _substitute_string(ctx, document, "", _is_delete(ctx))
    if not _has_markers_cached(document):
        return document
    return _substitute_variables(ctx, _substitute_references(document))


def substitute_all_in_preconditions(ctx: EvalContext, document: Any) -> Any:
    """SubstituteAllInPreconditions: the document goes through a JSON round trip first (numbers become Go
    int64 where integral, as the k8s decoder gives them); a failed lookup is an error here too."""
    if isinstance(document, str):
        return substitute_all(ctx, document)
    if has_integral_floats(document):
        document = _json_roundtrip(document)
    return substitute_all(ctx, document)


def has_integral_floats(value: Any) -> bool:
    """Whether a JSON round trip through the Kubernetes decoder would turn a float into an int64."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(has_integral_floats(v) for v in value.values())
    if isinstance(value, list):
        return any(has_integral_floats(v) for v in value)
    return False


def _json_roundtrip(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _json_roundtrip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_roundtrip(v) for v in value]
    return value


# a position in a document: map keys and list indexes, from its root
Position = tuple[str | int, ...]


def substitution_errors(ctx: EvalContext, document: Any) -> list[tuple[Position, str]]:
    """Every string (value or key) of `document` whose variables do not substitute in `ctx`, with its
    position and Kyverno's text (`failed to resolve X at path /p: ...`). Kyverno's SubstituteAll stops at
    the first failure it meets (in Go's random map order); a policy's validation reports each one, so that
    every problem is shown at once. The `$(...)` references go first, over the whole document, as there."""
    try:
        document = _substitute_references(document)
    except SubstitutionError as exc:
        return [((), str(exc))]
    out: list[tuple[Position, str]] = []

    def check(text: str, path: str, where: Position) -> None:
        try:
            _substitute_string(ctx, text, path, False)
        except SubstitutionError as exc:
            out.append((where, str(exc)))

    def visit(element: Any, path: str, where: Position) -> None:
        if isinstance(element, str):
            if "{{" in element:
                check(element, path, where)
        elif isinstance(element, Mapping):
            for key, value in element.items():
                if isinstance(key, str) and "{{" in key:
                    check(key, path, where)      # a key is substituted at its map's path
                visit(value, path + "/" + str(key).replace("/", "\\/"), (*where, str(key)))
        elif isinstance(element, list):
            for i, value in enumerate(element):
                visit(value, f"{path}/{i}", (*where, i))

    visit(document, "", ())
    return out


def elements_outside_foreach(document: Any) -> list[tuple[Position, str]]:
    """kk: ValidateElementInForEach: an `element...` or `elementIndex` variable outside a foreach, with
    Kyverno's text (`variable 'element.name' present outside of foreach at path /validate/message`)."""
    out: list[tuple[Position, str]] = []

    def visit(element: Any, path: str, where: Position) -> None:
        if isinstance(element, str):
            for v in _variables_in(element):
                if REGEX_VARIABLE_INIT.search(v) is None:
                    v = v[1:]
                variable, _ = _replace_braces_and_trim(v)
                if (variable.startswith("element") or variable == "elementIndex") and "/foreach/" not in path:
                    out.append((where, f"variable '{variable}' present outside of foreach at path {path}"))
                    return
        elif isinstance(element, Mapping):
            for key, value in element.items():
                visit(key, path, where)
                visit(value, path + "/" + str(key).replace("/", "\\/"), (*where, str(key)))
        elif isinstance(element, list):
            for i, value in enumerate(element):
                visit(value, f"{path}/{i}", (*where, i))

    visit(document, "", ())
    return out
