"""sigs.k8s.io/yaml's `Unmarshal` into Go `any` over go-yaml v2, as Kyverno's CEL `yaml.parse` and its
JMESPath `parse_yaml` decode a string.

sigs.k8s.io/yaml resolves plain scalars with go-yaml v2's YAML 1.1 rules (`y`, `on`, `no` are
booleans; `0x1F`, `017` and `1_000` are ints), turns the document into JSON and decodes that into Go
`any`, so every number comes out a float64, map keys become strings and timestamps stay strings.
Only the first document of a stream is read.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import yaml

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.json import GoJSONError, roundtrip
from kubectl_kyrec.golang.strconv import format_float
from kubectl_kyrec.load.yaml_scalars import resolve_plain

_PLAIN = "tag:kyrec.go-yaml,plain"
_MERGE = "tag:yaml.org,2002:merge"



class GoYAMLError(ValueError, EngineError):
    """`error converting YAML to JSON: ...`, as sigs.k8s.io/yaml words a document it cannot decode."""


def _resolve_plain(text: str) -> Any:
    """go-yaml v2 `resolve("", text)` for a plain scalar: the project's one reading of such scalars
    (load.yaml_scalars, which manifests are read with too); numbers become float64 later (`roundtrip`)."""
    return resolve_plain(text)


class _GoYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader with go-yaml v2's scalar resolution and tag handling."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return _MERGE if value == "<<" else _PLAIN
        return super().resolve(kind, value, implicit)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        # Keys become JSON strings right away: in a Python dict `true` and `1` would be one key.
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            mapping[_json_key(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_plain(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    return _resolve_plain(str(loader.construct_scalar(node)))


def _construct_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    # go-yaml keeps an explicit !!timestamp as its text when decoding into interface{}
    return str(loader.construct_scalar(node))


def _construct_binary(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    raw = str(loader.construct_scalar(node))
    try:
        data = base64.b64decode("".join(raw.split()), validate=True)
    except binascii.Error as exc:
        raise yaml.constructor.ConstructorError(None, None, "!!binary value contains invalid base64 data",
                                                node.start_mark) from exc
    return data.decode("utf-8", errors="replace")


def _construct_unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    # go-yaml ignores tags it does not know and decodes the node by shape
    if isinstance(node, yaml.ScalarNode):
        return str(loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]


_GoYamlLoader.add_constructor(_PLAIN, _construct_plain)
_GoYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
_GoYamlLoader.add_constructor("tag:yaml.org,2002:binary", _construct_binary)
_GoYamlLoader.add_multi_constructor("!", _construct_unknown)
_GoYamlLoader.add_multi_constructor("tag:", _construct_unknown)


def _json_key(key: Any) -> str:
    # sigs.k8s.io/yaml convertToJSONableObject: string, int, float and bool keys become strings
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return format_float(key, "g")
    raise GoYAMLError(f"error converting YAML to JSON: unsupported map key of type: {_go_type(key)}, "
                           f"key: {key!r}")


def _go_type(value: Any) -> str:
    return {type(None): "<nil>", list: "[]interface {}", dict: "map[interface {}]interface {}"}.get(
        type(value), type(value).__name__)


_PROBLEM_WORDING = {
    # PyYAML's scanner words a few problems differently from libyaml, which go-yaml ports
    "mapping values are not allowed here": "mapping values are not allowed in this context",
}


def _yaml_error(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    problem = _PROBLEM_WORDING.get(problem, problem)
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"error converting YAML to JSON: yaml: line {mark.line + 1}: {problem}"
    return f"error converting YAML to JSON: yaml: {problem}"


def parse_yaml(text: str) -> Any:
    """`yaml.Unmarshal(text, &any)` from sigs.k8s.io/yaml."""
    try:
        # PyYAML checks every character here, where go-yaml's reader meets them (readerc.go, no line given)
        loader = _GoYamlLoader(text)
    except yaml.reader.ReaderError:
        raise GoYAMLError("error converting YAML to JSON: yaml: control characters are not allowed") from None
    try:
        # the first document only, as go-yaml's Unmarshal does
        node = loader.get_node() if loader.check_node() else None
        data = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise GoYAMLError(_yaml_error(exc)) from None
    except RecursionError:
        raise GoYAMLError("error converting YAML to JSON: yaml: exceeded max depth") from None
    finally:
        loader.dispose()
    try:
        return roundtrip(data)
    except GoJSONError as exc:
        raise GoYAMLError(f"error converting YAML to JSON: {exc}") from None
