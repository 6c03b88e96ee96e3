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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
