"""A ClusterPolicy mutate rule -> MutatingPolicy mutations (Kyverno's migration mapping, kyverno/kyverno#16506:
`patchStrategicMerge` becomes an ApplyConfiguration, docs/convert.md).

What is converted is the part where a strategic merge patch and a structured-merge apply configuration set
the same fields: a tree of maps with scalar leaves. A map in the patch merges into the object's map in both
(kk: pkg/engine/mutate/patch/strategicMergePatch.go; k8s.io/apiserver pkg/admission/plugin/policy/mutating
ApplyConfiguration). Lists (merged by key in one, by the schema's list type in the other), nulls (a deletion
in a strategic merge patch), anchors, `$patch` directives and `{{ }}` variables are refused by field, as are
patchesJson6902 (Kyverno's classic JSON patch creates missing parents on `add`, a MutatingPolicy's does not),
foreach and targets."""

from __future__ import annotations

import re
from typing import Any

from kubectl_kyrec.convert.cel_text import Unconvertible, literal, selectable
from kubectl_kyrec.k8s.structured_merge import atomic_fields


def mutations(mutate: dict[str, Any], at: str, kinds: list[str]) -> list[dict[str, Any]]:
    """`kinds`: the rule's matched kinds, whose atomic fields an apply configuration may not set."""
    for key in ("patchesJson6902", "foreach", "targets"):
        if mutate.get(key):
            raise Unconvertible(f"{at}.{key}", {
                "patchesJson6902": "Kyverno's classic JSON patch creates missing parents on add; a "
                                   "MutatingPolicy's JSONPatch fails there; not converted",
                "foreach": "mutate foreach is not converted yet",
                "targets": "mutate targets (mutate existing) are not converted yet"}[key])
    patch = mutate.get("patchStrategicMerge")
    if not isinstance(patch, dict) or not patch:
        raise Unconvertible(at, "a mutate rule with no patchStrategicMerge map")
    expression = _object("Object", patch, f"{at}.patchStrategicMerge")
    for kind in kinds:
        atomic = atomic_fields(patch, kind)
        if atomic:
            # a strategic merge patch merges into them; Kubernetes refuses an apply configuration that sets
            # an atomic map or list (mutating patch/smd.go validatePatch)
            raise Unconvertible(f"{at}.patchStrategicMerge", f"sets {', '.join(atomic)} of {kind}, atomic in "
                                                             "its schema: an apply configuration may not")

    return [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}]


def _object(type_name: str, patch: dict[str, Any], at: str) -> str:
    """`Object{field: value, ...}`: a map whose values are scalars of one CEL type is a map literal (its keys
    may be any string: labels); any other map is a typed literal `Object.<path>{...}`. Kubernetes' patcher
    converts an Object field's map one level deep only, so a map literal inside a map literal is refused
    (k8s.io/apiserver pkg/cel/mutation/dynamic/objects.go convertField, docs/compatibility.md), and a map
    literal's values must be of one type (cel-go's homogeneous aggregate literals)."""
    fields = []
    for key, value in patch.items():
        where = f"{at}.{key}"
        _plain_key(key, where)
        if not selectable(str(key)):
            raise Unconvertible(where, "a field name that is not a CEL identifier")
        _check(value, where)
        fields.append(f"{key}: {_value(f'{type_name}.{key}', value, where)}")
    return f"{type_name}{{{', '.join(fields)}}}"


def _value(type_name: str, value: Any, at: str) -> str:
    if not isinstance(value, dict) or _scalar_map(value):
        return literal(value)
    for key in value:
        if not selectable(str(key)):
            raise Unconvertible(f"{at}.{key}", "a key that is not a CEL identifier in a map holding maps or values "
                                               "of different types: neither a typed literal (identifier fields) "
                                               "nor a map literal (one value type, no map inside a map) can "
                                               "write it")
    return _object(type_name, value, at)


def _scalar_map(value: dict[str, Any]) -> bool:
    """Every value a scalar, all of one CEL type (bool, int, double, string)."""
    kinds = {type(v) for v in value.values()}
    return len(kinds) == 1 and kinds <= {bool, int, float, str}


# the typed literals Kyverno's MutatingPolicy autogen moves into the pod template, kk:
# pkg/cel/policies/mpol/autogen/autogen.go convertPodToTemplateExpression: the text `Object.spec`, and
# `Object.metadata.labels` / `.annotations`; the root `Object{` is wrapped
_AUTOGEN_RENAMED = re.compile(r"Object(?:\.spec|\.metadata\.labels|\.metadata\.annotations)?(?![\w.])")
_TYPED_NAME = re.compile(r"Object(?:\.\w+)*(?=\{)")


def autogen_unrenamed(expression: str) -> str | None:
    """The first typed literal of a converted expression that the MutatingPolicy autogen would leave named
    after the Pod (then a type mismatch in the controller's copy), e.g. `Object.metadata`; None if none."""
    for m in _TYPED_NAME.finditer(expression):
        name = m.group(0)
        if not (name == "Object" or name.startswith(("Object.spec.", "Object.metadata.labels.",
                                                      "Object.metadata.annotations."))
                or _AUTOGEN_RENAMED.fullmatch(name)):
            return name
    return None


def _plain_key(key: Any, at: str) -> None:
    text = str(key)
    if "(" in text or text.startswith("$"):
        raise Unconvertible(at, "anchors and $patch directives in patchStrategicMerge are not converted yet")
    if "{{" in text:
        raise Unconvertible(at, "a variable in a patch key is not converted")


def _check(value: Any, at: str) -> None:
    if isinstance(value, dict):
        if not value:
            raise Unconvertible(at, "an empty map in the patch is not converted")
        for k, v in value.items():
            _plain_key(k, f"{at}.{k}")
            _check(v, f"{at}.{k}")
        return
    if isinstance(value, list):
        raise Unconvertible(at, "a list in patchStrategicMerge (merged by key; an apply configuration merges "
                                "by the schema's list type) is not converted yet")
    if value is None:
        raise Unconvertible(at, "null in patchStrategicMerge deletes the field; not converted")
    if isinstance(value, str) and "{{" in value:
        raise Unconvertible(at, "a variable in a patch value is not converted yet")
