"""A ClusterPolicy generate rule -> a GeneratingPolicy's `generate` expression (Kyverno's migration mapping,
kyverno/kyverno#16506: a rule's `data` becomes `generator.Apply(namespace, [object])`, its `synchronize`,
`generateExisting` and `orphanDownstreamOnPolicyDelete` the policy's `evaluation` settings; docs/convert.md).

The object handed to `generator.Apply` is the one Kyverno's background controller builds for the rule
(kk: pkg/background/generate/generator.go, data.go; kyrec: evaluate/classic/generate_objects.py `_finish`):
the rule's `data`, its `metadata.name` set to the rule's `name`, `kind` the data's own or the rule's, and
`apiVersion` the rule's; the namespace is the first argument of `generator.Apply`, which drops it for a
cluster-scoped kind as the classic controller does (evaluate/generating/downstreams.py). `{{ }}` variables
become CEL (convert/jmes.py): a string that is one variable is that value, a string with variables the
concatenation of their `string()`s. What is not converted (clone, cloneList, foreach, a variable in a key)
raises Unconvertible naming the field."""

from __future__ import annotations

import json
from typing import Any

from kubectl_kyrec.convert import jmes
from kubectl_kyrec.convert.cel_text import Unconvertible, literal
from kubectl_kyrec.load.run_inputs.kinds import builtin_kinds

# a rule's generate settings -> GeneratingPolicy `spec.evaluation` (kk: api/policies.kyverno.io GeneratingPolicy
# EvaluationConfiguration); generateExisting may also be set for the whole policy (spec.generateExisting)
SETTINGS = ("synchronize", "generateExisting", "orphanDownstreamOnPolicyDelete")


def settings(generate: dict[str, Any], spec: dict[str, Any]) -> dict[str, bool]:
    """The rule's evaluation settings: the rule's value, else the spec's (generateExisting), else false."""
    out = {}
    for key in SETTINGS:
        value = generate.get(key)
        if value is None and key == "generateExisting":
            value = spec.get("generateExisting")
        out[key] = bool(value)
    return out


def may_error(generate: dict[str, Any]) -> bool:
    """Whether the rule's object can fail to be built: it reads a variable (even the object's name is missing
    at admission when the object has a generateName)."""
    return "{{" in json.dumps(generate)


def expression(generate: dict[str, Any], at: str) -> str:
    """`generator.Apply(namespace, [object])` for one generate rule."""
    for key, why in (("clone", "clone (a copy of a cluster object) is not converted yet"),
                     ("cloneList", "cloneList is not converted yet"),
                     ("foreach", "generate foreach is not converted yet"),
                     ("uid", "a target chosen by uid has no GeneratingPolicy counterpart")):
        if generate.get(key):
            raise Unconvertible(f"{at}.{key}", why)
    if generate.get("data") is None:
        raise Unconvertible(f"{at}.data", "a generate rule without data or clone is not converted")
    data = generate["data"]
    if not isinstance(data, dict):
        raise Unconvertible(f"{at}.data", "must be a map")
    api_version = _plain(generate.get("apiVersion"), f"{at}.apiVersion")
    kind = _plain(data.get("kind") or generate.get("kind"), f"{at}.kind")
    if not api_version or not kind:
        raise Unconvertible(at, "apiVersion and kind are required")
    name = generate.get("name")
    if not isinstance(name, str) or not name:
        raise Unconvertible(f"{at}.name", "a generate rule without a name is not converted")
    namespace = generate.get("namespace") or ""
    if not isinstance(namespace, str):
        raise Unconvertible(f"{at}.namespace", "must be a string")
    if not namespace and _namespaced(api_version, kind) is not False:
        # the classic controller writes the object without a namespace; generator.Apply refuses one
        raise Unconvertible(f"{at}.namespace", f"no namespace for {kind}, which is not known to be cluster-scoped")
    meta = data.get("metadata") or {}
    if not isinstance(meta, dict):
        raise Unconvertible(f"{at}.data.metadata", "must be a map")
    item = {**{k: v for k, v in data.items() if k not in ("apiVersion", "kind", "metadata")}}
    fields = [f"'apiVersion': dyn({literal(api_version)})", f"'kind': dyn({literal(kind)})",
              f"'metadata': dyn({_metadata(meta, name, at)})"]
    fields += [f"{literal(str(k))}: dyn({_value(v, f'{at}.data.{k}')})" for k, v in item.items()]
    return (f"generator.Apply({_string(namespace, f'{at}.namespace')}, "
            f"[{{{', '.join(fields)}}}])")


def _metadata(meta: dict[str, Any], name: str, at: str) -> str:
    entries = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
    fields = [f"'name': dyn({_string(name, f'{at}.name')})"]
    fields += [f"{literal(str(k))}: dyn({_value(v, f'{at}.data.metadata.{k}')})" for k, v in entries.items()]
    return "{" + ", ".join(fields) + "}"


def _plain(value: Any, at: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or "{{" in value:
        raise Unconvertible(at, "a variable here is not converted")
    return value


def _namespaced(api_version: str, kind: str) -> bool | None:
    group, _, version = api_version.rpartition("/")
    for info in builtin_kinds():
        if info.kind == kind and info.group == group and info.version == version:
            return info.namespaced
    return None


def _string(text: str, at: str) -> str:
    """A string field of the object: a whole `{{ x }}` is x's value (Kyverno substitutes it as is)."""
    return jmes.value(text, at) if "{{" in text else literal(text)


def _value(value: Any, at: str) -> str:
    """The data as a CEL literal, each map value and list item wrapped in dyn() (a literal's values are of
    different types); strings with variables as CEL."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            if "{{" in str(k):
                raise Unconvertible(f"{at}.{k}", "a variable in a key is not converted")
            parts.append(f"{literal(str(k))}: dyn({_value(v, f'{at}.{k}')})")
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(f"dyn({_value(v, f'{at}[{i}]')})" for i, v in enumerate(value)) + "]"
    if isinstance(value, str):
        if "\\{{" in value or "$(" in value:
            raise Unconvertible(at, "an escaped variable or a $( ) reference is not converted")
        return _string(value, at)
    return literal(value)
