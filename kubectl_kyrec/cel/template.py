"""Generation templates: `spec.generate[].template` (kk: pkg/cel/policies/gpol/template/template.go, scanner.go).

A template is YAML, one or more documents, each a mapping describing a resource. With `interpolate: cel`,
`(( expr ))` placeholders are CEL: a placeholder that is a whole scalar is spliced as any value (map,
list, scalar); one embedded in a longer string must give a scalar, printed as Go's `%v` prints it.
Placeholders in mapping keys are refused, as are merge keys in subtrees holding placeholders; `\\((`
writes a literal `((`. Scalars decode the way go.yaml.in/yaml/v3 decodes into `any`: YAML 1.2 booleans
(`yes` stays a string), Go integer syntax, timestamps kept as strings.

Messages repeat Kyverno's, so `kyrec eval` shows what the policy's status would: render errors are
`document N: field "metadata": field "name": failed to evaluate placeholder "x": <cel error>`.
"""

from __future__ import annotations

import abc
import contextlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from kubectl_kyrec.cel.engine import Activation, Program
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.fmt import sprint as go_format_v  # fmt's %v of the scalar a placeholder prints
from kubectl_kyrec.k8s.json_values import copy_json


class TemplateError(EngineError):
    """A template that does not compile (YAML, placeholder syntax) or does not render."""


# ---- YAML decoding as yaml.v3 decodes into interface{} -------------------------------------------------

_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_SPECIAL_FLOATS = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf, "+.inf": math.inf, "+.Inf": math.inf,
                   "+.INF": math.inf, "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
                   ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint: base prefixes and a leading 0 meaning octal."""
    if not _INT.match(text):
        return None
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if "_" in body and body[:2].lower() not in ("0x", "0o", "0b"):
        return None          # Go accepts underscores only with a base prefix when base is 0
    body = body.replace("_", "")
    try:
        if body[:2].lower() in ("0x", "0o", "0b"):
            value = int(body, 0)
        elif len(body) > 1 and body.startswith("0"):
            value = int(body, 8)
        else:
            value = int(body, 10)
    except ValueError:
        return None
    value *= sign
    return value if -(2 ** 63) <= value < 2 ** 64 else None


_PLAIN_TAG = "tag:kyrec,2026:plain"


class _V3Loader(yaml.SafeLoader):
    """SafeLoader with yaml.v3's implicit types (see module docstring).

    Every untagged plain scalar gets a private tag, resolved by `_resolve_plain`; quoted scalars and
    explicitly tagged ones keep PyYAML's handling.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return _PLAIN_TAG
        return super().resolve(kind, value, implicit)


def _resolve_plain(text: str) -> Any:
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if text[:1] in "0123456789+-.":
        value = _go_int(text)
        if value is not None:
            return value
        if _FLOAT.match(text):
            return float(text)
    return text


def _construct_plain(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    return _resolve_plain(str(loader.construct_scalar(node)))


_V3Loader.add_constructor(_PLAIN_TAG, _construct_plain)


def _compose(value: str) -> list[yaml.Node]:
    try:
        return [n for n in yaml.compose_all(value, Loader=_V3Loader) if n is not None]
    except yaml.YAMLError as exc:
        raise TemplateError(f"failed to parse YAML: {' '.join(str(exc).split())}") from None


def _decode(node: yaml.Node) -> Any:
    loader = _V3Loader("")
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise TemplateError(f"line {node.start_mark.line + 1}: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()


# ---- placeholder scanning (scanner.go) ------------------------------------------------------------------

@dataclass(frozen=True)
class _Segment:
    literal: str = ""
    expression: str = ""
    is_expr: bool = False


def _scan_placeholder(s: str, start: int) -> tuple[str, int]:
    depth = 0
    quote = ""
    i = start + 2
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
            i += 1
            continue
        if c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth > 0:
                depth -= 1
            elif i + 1 < len(s) and s[i + 1] == ")":
                expr = s[start + 2:i].strip()
                if not expr:
                    raise TemplateError(f"empty placeholder at offset {start}")
                return expr, i + 2
            else:
                raise TemplateError(f"unbalanced parenthesis in placeholder starting at offset {start}")
        i += 1
    if quote:
        raise TemplateError(f"unterminated string literal in placeholder starting at offset {start}")
    raise TemplateError(f"unterminated placeholder starting at offset {start}: missing closing '))'")


def scan(s: str) -> list[_Segment]:
    """Split a scalar into literal and placeholder segments; `\\((` is a literal `((`."""
    segments: list[_Segment] = []
    literal: list[str] = []

    def flush() -> None:
        if literal:
            segments.append(_Segment(literal="".join(literal)))
            literal.clear()

    i = 0
    while i < len(s):
        if s.startswith("\\((", i):
            literal.append("((")
            i += 3
            continue
        if s.startswith("((", i):
            expr, nxt = _scan_placeholder(s, i)
            flush()
            segments.append(_Segment(expression=expr, is_expr=True))
            i = nxt
            continue
        literal.append(s[i])
        i += 1
    flush()
    return segments


def contains_placeholder(s: str) -> bool:
    i = 0
    while i < len(s):
        if s.startswith("\\((", i):
            i += 3
            continue
        if s.startswith("((", i):
            return True
        i += 1
    return False


def _node_has_placeholder(node: yaml.Node) -> bool:
    if isinstance(node, yaml.ScalarNode):
        return contains_placeholder(str(node.value)) or "\\((" in str(node.value)
    if isinstance(node, yaml.SequenceNode):
        return any(_node_has_placeholder(n) for n in node.value)
    if isinstance(node, yaml.MappingNode):
        return any(_node_has_placeholder(k) or _node_has_placeholder(v) for k, v in node.value)
    return False


def extract_expressions(value: str) -> list[str]:
    """Every placeholder's expression, in document order (empty for malformed YAML, as Kyverno does)."""
    try:
        docs = _compose(value)
    except TemplateError:
        return []
    out: list[str] = []

    def walk(node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            if contains_placeholder(str(node.value)):
                with contextlib.suppress(TemplateError):
                    out.extend(s.expression for s in scan(str(node.value)) if s.is_expr)
        elif isinstance(node, yaml.SequenceNode):
            for n in node.value:
                walk(n)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(k)
                walk(v)

    for doc in docs:
        walk(doc)
    return out


# ---- compiled nodes -------------------------------------------------------------------------------------

def go_type_name(value: Any) -> str:
    """Go's `%T` of what a CEL result converts to (for the embedded-placeholder error)."""
    if value is None:
        return "<nil>"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return {bool: "bool", int: "int64", float: "float64", str: "string"}.get(type(value), type(value).__name__)


class _Node(abc.ABC):
    """A compiled piece of a template value."""

    @abc.abstractmethod
    def render(self, activation: Activation) -> Any: ...


@dataclass
class _Literal(_Node):
    value: Any

    def render(self, activation: Activation) -> Any:
        return copy_json(self.value)


@dataclass
class _Mapping(_Node):
    entries: list[tuple[str, _Node]]

    def render(self, activation: Activation) -> Any:
        out: dict[str, Any] = {}
        for key, node in self.entries:
            try:
                out[key] = node.render(activation)
            except TemplateError as exc:
                raise TemplateError(f'field "{key}": {exc}') from None
        return out


@dataclass
class _Sequence(_Node):
    items: list[_Node]

    def render(self, activation: Activation) -> Any:
        out = []
        for i, node in enumerate(self.items):
            try:
                out.append(node.render(activation))
            except TemplateError as exc:
                raise TemplateError(f"item {i}: {exc}") from None
        return out


def _evaluate(program: Program, expression: str, activation: Activation) -> Any:
    outcome = program.evaluate(activation)
    if not outcome.ok:
        raise TemplateError(f'failed to evaluate placeholder "{expression}": {outcome.error}')
    value = outcome.value
    if isinstance(value, bytes | bytearray):
        raise TemplateError(f'failed to convert placeholder "{expression}" result: '
                            "type conversion error from 'bytes' to 'google.protobuf.Value'")
    return value


@dataclass
class _Splice(_Node):
    program: Program
    expression: str

    def render(self, activation: Activation) -> Any:
        return _evaluate(self.program, self.expression, activation)


@dataclass
class _Interpolated(_Node):
    segments: list[_Segment]
    programs: dict[int, Program]

    def render(self, activation: Activation) -> Any:
        parts = []
        for i, seg in enumerate(self.segments):
            if not seg.is_expr:
                parts.append(seg.literal)
                continue
            value = _evaluate(self.programs[i], seg.expression, activation)
            if isinstance(value, str):
                parts.append(value)
            elif isinstance(value, bool | int | float):
                parts.append(go_format_v(value))
            else:
                raise TemplateError(f'placeholder "{seg.expression}" embedded in a string must evaluate to a '
                                    f"scalar, got {go_type_name(value)}; use a whole-value placeholder for "
                                    "structured results")
        return "".join(parts)


CompileExpression = Callable[[str, int], Program]    # (expression, 1-based line in the template) -> program


@dataclass(frozen=True)
class Template:
    """A compiled template; `render` builds fresh objects every time."""

    docs: tuple[_Node, ...]

    def render(self, activation: Activation) -> list[dict[str, Any]]:
        out = []
        for i, doc in enumerate(self.docs):
            try:
                value = doc.render(activation)
            except TemplateError as exc:
                raise TemplateError(f"document {i + 1}: {exc}") from None
            if not isinstance(value, dict):
                raise TemplateError(f"document {i + 1}: expected a mapping describing a resource, "
                                    f"got {go_type_name(value)}")
            out.append(value)
        return out


class _Compiler:
    def __init__(self, interpolate: bool, compile_expression: CompileExpression) -> None:
        self.interpolate = interpolate
        self.compile_expression = compile_expression

    def node(self, node: yaml.Node) -> _Node:
        if not self.interpolate or not _node_has_placeholder(node):
            return _Literal(_decode(node))
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            entries = []
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    raise TemplateError(f"line {key.start_mark.line + 1}: only scalar mapping keys are supported")
                if contains_placeholder(str(key.value)):
                    raise TemplateError(f"line {key.start_mark.line + 1}: placeholders are not supported in "
                                        "mapping keys; use a whole-value placeholder on the parent field "
                                        "instead (e.g. `labels: (( variables.labels ))`)")
                if key.value == "<<":
                    raise TemplateError(f"line {key.start_mark.line + 1}: YAML merge keys are not supported "
                                        "in subtrees containing placeholders")
                entries.append((str(key.value), self.node(value)))
            return _Mapping(entries)
        if isinstance(node, yaml.SequenceNode):
            return _Sequence([self.node(n) for n in node.value])
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, line)
        raise TemplateError(f"line {line}: unsupported YAML node kind")

    def scalar(self, node: yaml.ScalarNode, line: int) -> _Node:
        try:
            segments = scan(str(node.value))
        except TemplateError as exc:
            raise TemplateError(f"line {line}: {exc}") from None
        exprs = [s for s in segments if s.is_expr]
        if not exprs:
            return _Literal("".join(s.literal for s in segments))
        if len(segments) == 1:
            return _Splice(self.compile_expression(exprs[0].expression, line), exprs[0].expression)
        programs = {i: self.compile_expression(s.expression, line) for i, s in enumerate(segments) if s.is_expr}
        return _Interpolated(segments, programs)


def compile_template(value: str, interpolate: str, compile_expression: CompileExpression) -> Template:
    """Parse and compile; raises TemplateError (YAML, placeholders) or the compiler's error (CEL)."""
    compiler = _Compiler(interpolate == "cel", compile_expression)
    docs: list[_Node] = []
    for root in _compose(value):
        if isinstance(root, yaml.ScalarNode) and (root.tag == "tag:yaml.org,2002:null" or (
                root.tag == _PLAIN_TAG and _resolve_plain(str(root.value)) is None)):
            continue    # an empty or null document, as yaml.v3 skips it
        compiled = compiler.node(root)
        if not _is_mapping_root(compiled):
            raise TemplateError(f"line {root.start_mark.line + 1}: document must be a mapping describing a resource")
        docs.append(compiled)
    if not docs:
        raise TemplateError("template must contain at least one YAML document")
    return Template(tuple(docs))


def _is_mapping_root(node: _Node) -> bool:
    if isinstance(node, _Mapping | _Splice):
        return True
    return isinstance(node, _Literal) and isinstance(node.value, dict)

