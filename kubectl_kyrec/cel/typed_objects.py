"""The typed-object literals of mutating admission: `Object{...}`, `Object.spec{...}`, `JSONPatch{...}`.

Kubernetes declares these for MutatingAdmissionPolicy and Kyverno's MutatingPolicy (k8s.io/apiserver
pkg/admission/plugin/cel/compile.go `hasPatchTypes`: `mutation.DynamicTypeResolver`, pkg/cel/mutation):
`JSONPatch` is an object type with the fields op, path, from (strings) and value (dyn); any name that is
`Object` or starts with `Object.` is a `dynamic.ObjectType` whose fields are whatever the literal sets.

Why a source rewrite and not declared types: cel-expr-python (cel-cpp) constructs only protobuf messages,
each with a fixed set of fields known when the environment is built. A dynamic `Object.<path>` type, of
any path and any fields, has no protobuf descriptor, so it cannot be declared. The literal is therefore
rewritten before compiling into a map literal that carries its type name under a key no field can have
(`TYPE_KEY`; field names are CEL identifiers, which never hold `@`):

    Object{spec: Object.spec{replicas: 3}}  ->  {"@type": "Object", "spec": {"@type": "Object.spec", "replicas": 3}}

and `decode` turns an evaluated result back into plain JSON, checking on the way what Kubernetes checks
at run time (pkg/cel/mutation/dynamic/objects.go `CheckTypeNamesMatchFieldPathNames`: each nested
literal's type name must be the field path from its root `Object`). What the rewrite cannot give:
cel-go's compile-time check of the result type (ApplyConfiguration must give `Object`, JSONPatch a
`list(JSONPatch)`): that is checked on the value instead, when the expression runs.

A plain CEL map or list literal *inside* a plain map or list below a typed literal
(`Object{metadata: {'labels': {'a': 'b'}}}`) is refused by the patcher: objects.go convertField turns a field's
map or list into Go values one level deep only (`v.Value()` of a map literal is a `map[ref.Val]ref.Val`), and
structured-merge-diff's typed conversion does not read that as a map (smd.go ApplyStructuredMergeDiff:
"failed to convert patch object to typed object: .metadata.labels: expected map, got &{map[a:b]}"). A map
that came from the request (`{'labels': object.metadata.labels}`) is a Go `map[string]any` and converts. The
decoded value does not tell the two apart, so `nested_literal` finds the place and `builds_only_literals`
says whether the expression can have read anything but literals (docs/compatibility.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.compat import skip_string
from kubectl_kyrec.cel.engine import CompileError
from kubectl_kyrec.errors import EngineError

TYPE_KEY = "@type"
OBJECT = "Object"
JSON_PATCH = "JSONPatch"
# pkg/cel/mutation/jsonpatch.go JSONPatchType fields
JSON_PATCH_FIELDS = ("op", "path", "from", "value")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE_NAME = re.compile(r"(Object(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*|JSONPatch)\s*\{")
_FIELD = re.compile(r"\s*(\?)?\s*([A-Za-z_][A-Za-z0-9_]*)\s*:")


def has_typed_literals(text: str) -> bool:
    return "Object" in text or "JSONPatch" in text


def rewrite_typed_literals(text: str) -> str:
    """`text` with every `Object...{}` / `JSONPatch{}` literal a map literal tagged with its type name.

    Raises CompileError for a JSONPatch field that does not exist (cel-go's checker refuses it too)."""
    if not has_typed_literals(text):
        return text
    out: list[str] = []
    # one entry per open bracket: the type name of a typed literal's brace, else ""
    stack: list[str] = []
    expect_field = False
    i, n = 0, len(text)
    while i < n:
        if expect_field:
            expect_field = False
            m = _FIELD.match(text, i)
            if m is not None:
                name = m.group(2)
                if stack[-1] == JSON_PATCH and name not in JSON_PATCH_FIELDS:
                    raise CompileError(f"undefined field '{name}'", 1, m.start(2) + 1)
                out.append(f'{", " if out[-1] != "," else " "}{"?" if m.group(1) else ""}"{name}":')
                i = m.end()
                continue
        ch = text[i]
        if ch in "'\"":
            end = skip_string(text, i)
            out.append(text[i:end])
            i = end
            continue
        m = _IDENT.match(text, i)
        if m is not None:
            before = text[:i].rstrip()
            typed = _TYPE_NAME.match(text, i) if not before.endswith(".") else None
            if typed is not None and m.group(0) in (OBJECT, JSON_PATCH):
                name = re.sub(r"\s+", "", typed.group(1))
                out.append("{" + f'"{TYPE_KEY}": "{name}"')
                stack.append(name)
                expect_field = True
                i = typed.end()
                continue
            out.append(m.group(0))
            i = m.end()
            continue
        if ch in "([{":
            stack.append("")
        elif ch in ")]}":
            if stack:
                stack.pop()
        elif ch == "," and stack and stack[-1]:
            out.append(",")
            i += 1
            expect_field = True
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class TypedValueError(EngineError):
    """A value Kubernetes' patchers refuse; the message is theirs."""


@dataclass(frozen=True)
class JsonPatchOp:
    op: str
    path: str
    from_: str
    value: Any
    has_value: bool


def type_name(value: Any) -> str:
    """The CEL type name of a decoded value, as cel-go prints it in errors."""
    if isinstance(value, Mapping):
        tagged = value.get(TYPE_KEY)
        return tagged if isinstance(tagged, str) else "map"
    return {bool: "bool", int: "int", float: "double", str: "string", list: "list", type(None): "null_type",
            bytes: "bytes"}.get(type(value), type(value).__name__)


def _plain(value: Any, path: list[str], errors: list[str]) -> Any:
    """`value` with its type tags removed, and type-name mismatches collected (objects.go typeCheck)."""
    if isinstance(value, Mapping):
        tagged = value.get(TYPE_KEY)
        if isinstance(tagged, str):
            expected = ".".join(path)
            if tagged != expected:
                errors.append(f'unexpected type name "{tagged}", expected "{expected}", which matches field '
                              f"name path from root Object type")
            return {k: _plain(v, [*path, k], errors) for k, v in value.items() if k != TYPE_KEY}
        # a map's values are checked against the map's own path (typeCheck passes typeNamePath on)
        return {k: _plain(v, path, errors) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, path, errors) for v in value]
    return value


def decode_object(value: Any) -> dict[str, Any]:
    """The result of an ApplyConfiguration expression as plain JSON (patch/smd.go applyConfigPatcher)."""
    if not (isinstance(value, Mapping) and isinstance(value.get(TYPE_KEY), str)
            and value[TYPE_KEY].startswith(OBJECT)):
        raise TypedValueError(f"unsupported return type from ApplyConfiguration expression: {type_name(value)}")
    errors: list[str] = []
    plain = _plain(value, [value[TYPE_KEY]], errors)
    if errors:
        raise TypedValueError("type mismatch: " + "\n".join(errors))
    return plain


def decode_json_patch(value: Any) -> list[dict[str, Any]]:
    """The result of a JSONPatch expression as RFC 6902 operations (patch/json_patch.go
    evaluatePatchExpression): each element a JSONPatch, an Object value type-checked from its own name."""
    if not isinstance(value, list):
        raise TypedValueError("type mismatch: JSONPatchType.expression should evaluate to array")
    ops: list[dict[str, Any]] = []
    for element in value:
        if not (isinstance(element, Mapping) and element.get(TYPE_KEY) == JSON_PATCH):
            raise TypedValueError("type mismatch: JSONPatchType.expression should evaluate to array of "
                                  f"JSONPatch, got element of {type_name(element)}")
        op: dict[str, Any] = {"op": _string(element.get("op")), "path": _string(element.get("path"))}
        if element.get("from"):
            op["from"] = _string(element["from"])
        if "value" in element and element["value"] is not None:
            raw = element["value"]
            errors: list[str] = []
            tagged = raw.get(TYPE_KEY) if isinstance(raw, Mapping) else None
            plain = _plain(raw, [tagged] if isinstance(tagged, str) else [], errors)
            if errors:
                raise TypedValueError("type mismatch: " + "\n".join(errors))
            op["value"] = _as_json_value(plain)
        ops.append(op)
    return ops


# the identifiers an expression may use and still build only literals: constants and the standard
# conversions of values it built itself
_LITERAL_IDENTS = frozenset({"true", "false", "null", "size", "string", "int", "uint", "double", "bool", "dyn",
                             "bytes", "has", "type"})


def builds_only_literals(rewritten: str) -> bool:
    """Whether a rewritten expression (`rewrite_typed_literals`) reads nothing but literals: no variable,
    request field or library call could give it a Go-native map or list (conservative: any other identifier
    that is not a member name counts as a read)."""
    i, n = 0, len(rewritten)
    while i < n:
        ch = rewritten[i]
        if ch in "'\"":
            i = skip_string(rewritten, i)
            continue
        m = _IDENT.match(rewritten, i)
        if m is None:
            i += 1
            continue
        before = rewritten[:i].rstrip()
        member = before.endswith(".") and not (len(before) > 1 and before[-2].isdigit())
        if not member and not (i and rewritten[i - 1].isalnum()) and m.group(0) not in _LITERAL_IDENTS:
            return False
        i = m.end()
    return True


Keyed = Callable[[str, tuple[str, ...]], bool]


def nested_literal(value: Any, kind: str, keyed: Keyed) -> str | None:
    """Where a decoded ApplyConfiguration (`value`, still tagged) holds a map or list inside a plain map or
    list below a typed literal, with structured-merge-diff's text for it; None if nowhere. `keyed(kind,
    path)` tells whether the list at `path` is a map-list (an associative list refuses a non-map element
    before its elements are typed)."""
    return _nested_in_object(value, kind, keyed, ())


def _nested_in_object(value: Mapping[str, Any], kind: str, keyed: Keyed, path: tuple[str, ...]) -> str | None:
    for key in sorted(k for k in value if k != TYPE_KEY):
        item, here = value[key], (*path, key)
        found: str | None = None
        if _is_object(item):
            found = _nested_in_object(item, kind, keyed, here)
        elif isinstance(item, Mapping):
            for k in sorted(item):
                found = found or _element(item[k], kind, keyed, (*here, k), _dotted((*here, k)))
        elif isinstance(item, list):
            for i, element in enumerate(item):
                if not _is_object(element) and isinstance(element, (Mapping, list)) and keyed(kind, here):
                    return f"{_dotted(here)}: element {i}: associative list with keys may not have non-map elements"
                found = found or _element(element, kind, keyed, here, f"{_dotted(here)}[{i}]")
        if found is not None:
            return found
    return None


def _element(value: Any, kind: str, keyed: Keyed, path: tuple[str, ...], at: str) -> str | None:
    if _is_object(value):
        return _nested_in_object(value, kind, keyed, path)
    if isinstance(value, Mapping):
        return f"{at}: expected map, got &{{{_go_text(value)}}}"
    if isinstance(value, list):
        return f"{at}: expected list, got &{{{_go_text(value)}}}"
    return None


def _is_object(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get(TYPE_KEY), str)


def _dotted(path: tuple[str, ...]) -> str:
    return "".join(f".{p}" for p in path)


def _go_text(value: Any) -> str:
    """`value` as Go's %v prints it (maps with sorted keys)."""
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{_go_text(value[k])}" for k in sorted(value) if k != TYPE_KEY) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_text(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _string(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _as_json_value(value: Any) -> Any:
    """What a CEL value becomes through structpb.Value and encoding/json: numbers are doubles (an int
    beyond 2^53 loses precision, as in Kubernetes); whole doubles print without a fraction."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        number = float(value)
        return int(number) if number.is_integer() and abs(number) < 1e21 else number
    if isinstance(value, Mapping):
        return {k: _as_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json_value(v) for v in value]
    raise TypedValueError("JSONPath valueExpression evaluated to a type that could not marshal to JSON: "
                          f"unsupported type {type_name(value)}")
