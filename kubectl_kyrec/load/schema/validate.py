"""Validate one object against its structural schema as the API server does on create with
`fieldValidation=Strict` (k8s.io/apiextensions-apiserver: pkg/apiserver/schema/pruning for unknown fields,
pkg/apiserver/validation for values, pkg/apiserver/schema/listtype for list types, pkg/apiserver/schema/cel
for x-kubernetes-validations), every problem reported, not only the first.

The order of the server: a null in an object for a field that is not `nullable` is dropped first (and its
`default` applies: structural defaulting's PruneNonNullableNullsWithoutDefaults), so `field: null` is as good
as no field; unknown fields are a decoding error (HTTP 400, `strict decoding error: unknown field "a.b"`)
and the value checks (422) only run once there are none: `problems` returns both kinds, each tagged, and
the caller reports them all.

Messages are the server's (k8s.io/apimachinery/pkg/util/validation/field ErrorList as the apiserver prints
it): `spec.failurePolicy: Unsupported value: "Sometimes": supported values: "Ignore", "Fail"`.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.golang.strconv import quote as go_quote
from kubectl_kyrec.load.schema.tables import Schema, object_meta

UNKNOWN = "unknown"        # a field the schema does not know (strict decoding)
VALUE = "value"            # a type, enum, required, format, bound, list-type or CEL-rule violation
# a oneOf/anyOf/not violation: the server names no field (`<nil>: Invalid value: "": "spec.x" must ...`), the
# path goes into the message; kyrec keeps it for the line
NO_FIELD = "no-field"


@dataclass(frozen=True)
class Problem:
    """One thing the API server would refuse: `path` as it names the field (`spec.rules[0].name`)."""

    path: str
    message: str
    kind: str = VALUE

    @property
    def text(self) -> str:
        """The line as the API server prints it (unknown fields and combinators name their path inside the
        message)."""
        return self.message if self.kind in (UNKNOWN, NO_FIELD) else f"{self.path}: {self.message}"


# A CEL rule of x-kubernetes-validations, evaluated by the layer that owns CEL (cel/schema_rules.py):
# (rule, self value) -> None when it holds, else the reason it does not (False or an evaluation error).
RuleEvaluator = Callable[[str, Any], "str | None"]


def shown(value: Any) -> str:
    """A value as field.Error prints it: strings as Go's %q, numbers and booleans bare."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def json_type(value: Any) -> str:
    """The JSON type name the server's messages use for a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() and math.isfinite(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def type_message(path: str, value: Any, expected: str) -> str:
    """`Invalid value: "string": spec.x in body must be of type integer: "string"` (without the path prefix)."""
    found = json_type(value)
    return f'Invalid value: "{found}": {path} in body must be of type {expected}: "{found}"'


def unsupported_message(value: Any, allowed: Any) -> str:
    return f"Unsupported value: {shown(value)}: supported values: {', '.join(shown(a) for a in allowed)}"


REQUIRED = "Required value"


def unknown_message(path: str, known: Any = ()) -> str:
    """`strict decoding error: unknown field "spec.validation"`, and the nearest known spelling if one is
    close (`; did you mean "validations"?`)."""
    name = path.rsplit(".", 1)[-1]
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    hint = f'; did you mean "{near[0]}"?' if near else ""
    return f'strict decoding error: unknown field "{path}"{hint}'


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Walk:
    def __init__(self, rules: RuleEvaluator | None, builtin: bool = False) -> None:
        self.rules = rules
        self.builtin = builtin
        self.out: list[Problem] = []

    def add(self, path: str, message: str, kind: str = VALUE) -> None:
        self.out.append(Problem(path, message, kind))

    def value(self, schema: Schema, value: Any, path: str) -> None:
        if value is None:
            if not schema.get("nullable"):
                self.add(path, type_message(path, None, schema.get("type") or "object"))
            return
        if schema.get("x-kubernetes-int-or-string"):
            if json_type(value) not in ("integer", "string"):
                self.add(path, type_message(path, value, "integer-or-string"))
                return
        elif not self._type(schema, value, path):
            return
        self._format(schema, value, path)
        self._bounds(schema, value, path)
        if "enum" in schema and value not in schema["enum"]:
            self.add(path, unsupported_message(value, schema["enum"]))
        for combinator in ("allOf", "anyOf", "oneOf", "not"):
            if combinator in schema:
                self._combinator(combinator, schema[combinator], value, path)
        if isinstance(value, Mapping):
            self._object(schema, value, path)
        elif isinstance(value, list):
            self._array(schema, value, path)
        if "x-kubernetes-validations" in schema and self.rules is not None:
            for rule in schema["x-kubernetes-validations"]:
                self._rule(rule, value, path)

    def decoded_only(self, schema: Schema, value: Any, path: str) -> None:
        """What decoding alone refuses, for a part the server validates no further: a custom resource's status
        (reset on create, so its values are never checked) still has its unknown fields refused by strict
        decoding, and Kubernetes' own kinds also their wrong types (Go's decoder)."""
        if value is None:
            return
        if self.builtin and not self._type(schema, value, path):
            return
        if isinstance(value, Mapping):
            properties: Mapping[str, Schema] = schema.get("properties") or {}
            additional = schema.get("additionalProperties")
            for key, item in value.items():
                child = _child(path, str(key))
                sub = properties.get(str(key)) or (additional if isinstance(additional, dict) else None)
                if sub is not None:
                    self.decoded_only(sub, item, child)
                elif not schema.get("x-kubernetes-preserve-unknown-fields") and additional is not True:
                    self.add(child, unknown_message(child, properties), UNKNOWN)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                self.decoded_only(schema["items"], item, f"{path}[{index}]")

    def _type(self, schema: Schema, value: Any, path: str) -> bool:
        expected = schema.get("type")
        if not expected:
            return True
        found = json_type(value)
        if found == expected or (expected == "number" and found == "integer"):
            return True
        self.add(path, type_message(path, value, expected))
        return False

    def _format(self, schema: Schema, value: Any, path: str) -> None:
        from kubectl_kyrec.k8s.times import parse_rfc3339

        fmt = schema.get("format")
        if fmt == "date-time" and isinstance(value, str) and parse_rfc3339(value) is None:
            self.add(path, f"Invalid value: {shown(value)}: {path} in body must be of type date-time: {shown(value)}")
        elif fmt == "int32" and isinstance(value, int) and not -(2**31) <= value < 2**31:
            self.add(path, f'Invalid value: "": Checked value must be of type integer with format int32 in {path}',
                     NO_FIELD)

    def _bounds(self, schema: Schema, value: Any, path: str) -> None:
        if isinstance(value, str):
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                self.add(path, f"Too long: may not be more than {schema['maxLength']} bytes")
            if "minLength" in schema and len(value) < schema["minLength"]:
                self.add(path, f"Invalid value: {shown(value)}: {path} in body should be at least "
                         f"{schema['minLength']} chars long")
            if "pattern" in schema and not _go_regex(schema["pattern"]).search(value):
                self.add(path, f"Invalid value: {shown(value)}: {path} in body should match '{schema['pattern']}'")
        elif isinstance(value, list):
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                self.add(path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items")
            if "minItems" in schema and len(value) < schema["minItems"]:
                self.add(path, f"Invalid value: {len(value)}: {path} in body should have at least "
                         f"{schema['minItems']} items")
        elif isinstance(value, Mapping):
            if "maxProperties" in schema and len(value) > schema["maxProperties"]:
                self.add(path, f"Too many: {len(value)}: must have at most {schema['maxProperties']} items")
            if "minProperties" in schema and len(value) < schema["minProperties"]:
                self.add(path, f"Invalid value: {len(value)}: {path} in body should have at least "
                         f"{schema['minProperties']} properties")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in schema and (value < schema["minimum"]
                                        or (schema.get("exclusiveMinimum") and value == schema["minimum"])):
                self.add(path, f"Invalid value: {shown(value)}: {path} in body should be greater than or equal to "
                         f"{shown(schema['minimum'])}")
            if "maximum" in schema and (value > schema["maximum"]
                                        or (schema.get("exclusiveMaximum") and value == schema["maximum"])):
                self.add(path, f"Invalid value: {shown(value)}: {path} in body should be less than or equal to "
                         f"{shown(schema['maximum'])}")

    def _combinator(self, name: str, subs: Any, value: Any, path: str) -> None:
        """Value validations only (structural schemas allow no types or properties under them): each
        sub-schema is checked for its own problems, not its unknown fields."""
        def failures(sub: Schema) -> list[Problem]:
            probe = _Walk(None, self.builtin)
            probe._shape_only(sub, value, path)
            return probe.out

        where = f'Invalid value: "": "{path}"'
        if name == "not":
            if not failures(subs):
                self.add(path, f"{where} must not validate the schema (not)", NO_FIELD)
            return
        found = [failures(sub) for sub in subs]
        valid = sum(1 for f in found if not f)
        nearest = min(found, key=len) if found else []
        if name == "allOf":
            for f in found:
                self.out.extend(f)
        elif name == "anyOf" and not valid:
            self.add(path, f"{where} must validate at least one schema (anyOf)", NO_FIELD)
            self.out.extend(nearest)
        elif name == "oneOf" and valid == 0:
            # kube-openapi adds the problems of the alternative nearest to valid (the first of the fewest)
            self.add(path, f"{where} must validate one and only one schema (oneOf). Found none valid", NO_FIELD)
            self.out.extend(nearest)
        elif name == "oneOf" and valid > 1:
            self.add(path, f"{where} must validate one and only one schema (oneOf). Found {valid} valid "
                     "alternatives", NO_FIELD)

    def _shape_only(self, schema: Schema, value: Any, path: str) -> None:
        """A value-validation sub-schema: required, enum, bounds, types, its own properties' values."""
        if "type" in schema and not self._type(schema, value, path):
            return
        if "enum" in schema and value not in schema["enum"]:
            self.add(path, unsupported_message(value, schema["enum"]))
        self._bounds(schema, value, path)
        if isinstance(value, Mapping):
            for name in schema.get("required", ()):
                if value.get(name) is None:
                    self.add(_child(path, name), REQUIRED)
            for name, sub in (schema.get("properties") or {}).items():
                if value.get(name) is not None:
                    self._shape_only(sub, value[name], _child(path, name))

    def _object(self, schema: Schema, value: Mapping[str, Any], path: str) -> None:
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        for name in schema.get("required", ()):
            if value.get(name) is None and "default" not in (properties.get(name) or {}):
                self.add(_child(path, name), REQUIRED)
        for key, item in value.items():
            name = str(key)
            sub = properties.get(name)
            child = _child(path, name)
            if sub is None and isinstance(additional, dict):
                sub = additional
            if sub is None:
                if not preserve and additional is not True:
                    self.add(child, unknown_message(child, properties), UNKNOWN)
                continue
            if path == "" and name == "metadata":
                sub = object_meta()
            if item is None and not sub.get("nullable"):
                continue            # dropped before validation (a required one is missing, reported above)
            self.value(sub, item, child)

    def _array(self, schema: Schema, value: list[Any], path: str) -> None:
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                if item is None and self.builtin and items.get("type") == "object":
                    item = {}           # Go decodes a null item of a list of structs as the zero struct
                self.value(items, item, f"{path}[{index}]")
        list_type = None if self.builtin else schema.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[Any] = []
            for index, item in enumerate(value):
                if item in seen:
                    self.add(f"{path}[{index}]", f"Duplicate value: {shown(item)}")
                else:
                    seen.append(item)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or ()
            item_props = (items or {}).get("properties", {}) if isinstance(items, dict) else {}
            found: list[tuple[Any, ...]] = []
            for index, item in enumerate(value):
                if not isinstance(item, Mapping):
                    continue
                key = tuple(item.get(k, (item_props.get(k) or {}).get("default")) for k in keys)
                if key in found:
                    entries = ",".join(f"{shown(k)}:{shown(v)}" for k, v in zip(keys, key))
                    self.add(f"{path}[{index}]", "Duplicate value: {" + entries + "}")
                else:
                    found.append(key)

    def _rule(self, rule: Mapping[str, Any], value: Any, path: str) -> None:
        assert self.rules is not None
        failed = self.rules(rule["rule"], value)
        if failed is None:
            return
        target = path
        if rule.get("fieldPath"):
            target = path + rule["fieldPath"]
        message = failed or rule.get("message") or f"failed rule: {rule['rule']}"
        self.add(target, f"Invalid value: {message}")


@functools.cache
def _go_regex(pattern: str) -> Any:
    """A schema's `pattern`, as the API server compiles it: Go's regexp, RE2 syntax."""
    import re2

    return re2.compile(pattern)


# apimachinery's totalAnnotationSizeLimitB
_ANNOTATIONS_LIMIT = 256 * 1024


def metadata_problems(metadata: Any) -> list[Problem]:
    """What ValidateObjectMeta refuses on create (k8s.io/apimachinery/pkg/api/validation/objectmeta.go): no
    name, a name that is no DNS subdomain, label keys and values and annotation keys that are not valid, one
    problem per message as the server lists them. Types are the schema's concern (a number as a label value)."""
    from kubectl_kyrec.k8s.validation import is_dns1123_subdomain, is_valid_label_value

    meta = metadata if isinstance(metadata, Mapping) else {}
    out: list[Problem] = []
    name, generate = meta.get("name"), meta.get("generateName")
    if not name and not generate:
        out.append(Problem("metadata.name", f"{REQUIRED}: name or generateName is required"))
    elif isinstance(name, str) and name:
        out.extend(Problem("metadata.name", f"Invalid value: {shown(name)}: {m}") for m in is_dns1123_subdomain(name))
    labels = meta.get("labels")
    if isinstance(labels, Mapping):
        for key, value in labels.items():
            out.extend(Problem("metadata.labels", f"Invalid value: {shown(key)}: {m}") for m in _label_key(str(key)))
            if isinstance(value, str):
                out.extend(Problem("metadata.labels", f"Invalid value: {shown(value)}: {_in_bytes(m)}")
                           for m in is_valid_label_value(value))
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        for key in annotations:
            out.extend(Problem("metadata.annotations", f"Invalid value: {shown(key)}: {m}")
                       for m in _label_key(str(key).lower()))
        size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
        if size > _ANNOTATIONS_LIMIT:
            out.append(Problem("metadata.annotations", f"Too long: may not be more than {_ANNOTATIONS_LIMIT} bytes"))
    return out


def _in_bytes(message: str) -> str:
    """Label keys and values count bytes in the server's words (`must be no more than 63 bytes`)."""
    return re.sub(r"(must be no more than \d+) characters", r"\1 bytes", message)


def _label_key(key: str) -> list[str]:
    """apimachinery's label key check: a qualified name, named as a label key, its lengths in bytes."""
    from kubectl_kyrec.k8s.validation import is_qualified_name

    return [_in_bytes(m.replace("a qualified name ", "a valid label key ", 1)) for m in is_qualified_name(key)]


def problems(schema: Schema, obj: Mapping[str, Any], rules: RuleEvaluator | None = None, *,
             builtin: bool = False) -> list[Problem]:
    """Every problem of `obj` against its kind's `schema`, in document order per field. `builtin`: one of
    Kubernetes' own kinds, which decode into Go structs: list-type set/map items may repeat (a
    ValidatingAdmissionPolicy's variables, say), a null list item is the zero struct."""
    # the status is reset on create: only decoding looks at it (decoded_only)
    body = {k: v for k, v in obj.items() if k != "status"}
    walk = _Walk(None, builtin)
    walk.value(schema, body, "")
    if obj.get("status") is not None:
        status = (schema.get("properties") or {}).get("status")
        if status is None:
            walk.add("status", unknown_message("status", schema.get("properties") or {}), UNKNOWN)
        else:
            walk.decoded_only(status, obj["status"], "status")
    meta = metadata_problems(obj.get("metadata"))
    if walk.out or rules is None:
        return meta + walk.out
    # the CEL rules run only on an object that is otherwise valid: the server skips them ("some validation
    # rules were not checked because the object was invalid") when anything else is wrong
    walk = _Walk(rules, builtin)
    walk.value(schema, body, "")
    return meta + walk.out
