"""The patch mechanics of classic `mutate` rules (kk: pkg/engine/mutate/mutation.go, mutate/patch/*).

`patch_strategic_merge(overlay, resource)`: strategicPreprocessing.go (the anchors: conditional `(k)` and
global `<(k)` conditions, add-if-not-present `+(k)`; list elements with conditions become one patch element
per matching resource element, named after it) then kyaml merge2 (classic/merge2.py). A failed condition
empties the patch; any other preprocessing error is an error.

`patch_json6902(text, resource)`: the YAML or JSON text decoded, then applied with evanphx/json-patch's
options as Kyverno sets them (SupportNegativeIndices, AllowMissingPathOnRemove, EnsurePathExistsOnAdd;
patchJSON6902.go applyPatchesWithOptions).

`apply(strategic, json6902, resource) -> Outcome`: mutate.Mutate / mutate.ForEach after substitution:
`pass` "resource patched" when the object changed, `skip` "no patches applied" when not, `error` with
Kyverno's message otherwise.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.classic import anchors
from kubectl_kyrec.classic.merge2 import MergeError, merge, scalar_value
from kubectl_kyrec.classic.pattern_match import match_pattern
from kubectl_kyrec.errors import EngineError, InputError
from kubectl_kyrec.k8s.json_patch import PatchError, apply_patch
from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents

PASS, SKIP, ERROR = "pass", "skip", "error"


@dataclass(frozen=True)
class Outcome:
    """mutate.Response: the status, the patched resource (the input on skip, None on error), the message."""

    status: str
    resource: Any
    message: str


def error(message: str, err: object | None = None) -> Outcome:
    """mutate.NewErrorResponse."""
    return Outcome(ERROR, None, f"{message}: {err}" if err is not None else message)


class _ConditionError(EngineError):
    def __str__(self) -> str:
        return f"condition failed: {self.args[0]}"


class _GlobalConditionError(EngineError):
    def __str__(self) -> str:
        return f"global condition failed: {self.args[0]}"


class PreprocessError(EngineError):
    """A structural error of preprocessing (not a failed condition)."""


_ABSENT: Any = object()      # Go's nil *RNode: a field the resource does not have


def _field(node: Any, key: str) -> Any:
    if isinstance(node, dict) and key in node:
        return node[key]
    return _ABSENT


def _has_anchor(a: anchors.Anchor | None) -> bool:
    return anchors.contains_condition(a) or anchors.is_add_if_not_present(a)


def _filter_keys(pattern: Any, condition: Callable[[anchors.Anchor], bool]) -> list[anchors.Anchor]:
    if not isinstance(pattern, dict):
        return []
    out = []
    for key in list(pattern):
        a = anchors.parse(key)
        if a is not None and condition(a):
            out.append(a)
    return out


def _rename(pattern: dict[str, Any], old: str, new: str) -> None:
    """renameField: the key renamed in place (the map keeps its order and identity)."""
    if old not in pattern:
        return
    items = [(new if k == old else k, v) for k, v in pattern.items()]
    pattern.clear()
    pattern.update(items)


def _empty_node(value: Any) -> bool:
    """RNode.IsNilOrEmpty."""
    return value is _ABSENT or value is None or (isinstance(value, (dict, list)) and not value)


def _has_anchors(node: Any, is_anchor: Callable[[anchors.Anchor | None], bool]) -> bool:
    if isinstance(node, dict):
        for key, value in node.items():
            a = anchors.parse(key)
            if a is not None and is_anchor(a):
                return True
            if not _empty_node(value) and _has_anchors(value, is_anchor):
                return True
        return False
    if isinstance(node, list):
        return any(_has_anchors(e, is_anchor) for e in node)
    # a scalar: whether its text is a condition anchor, whatever anchor was asked for
    return anchors.contains_condition(anchors.parse(scalar_value(node)))


def _handle_add_if_not_present(pattern: Any, resource: Any) -> int:
    found = _filter_keys(pattern, anchors.is_add_if_not_present)
    for a in found:
        if _field(resource, a.key) is not _ABSENT:
            pattern.pop(str(a), None)
        else:
            _rename(pattern, str(a), a.key)
    return len(found)


def _interface(node: Any) -> Any:
    """convertRNodeToInterface: a scalar is its text; maps and lists are JSON."""
    if isinstance(node, (dict, list)):
        return node
    return scalar_value(node)


def _validate_conditions_internal(pattern: Any, resource: Any,
                                  condition: Callable[[anchors.Anchor], bool]) -> None:
    for a in _filter_keys(pattern, condition):
        key = a.key
        value = _field(resource, key)
        if value is _ABSENT:
            raise PreprocessError(f'could not found "{key}" key in the resource')
        pattern_value = pattern.get(str(a))
        if _handle_add_if_not_present(pattern_value, value) > 0:
            continue
        failure = match_pattern(_interface(value), _interface(pattern_value))
        if failure is not None:
            raise PreprocessError(failure.message)


def _validate_conditions(pattern: Any, resource: Any) -> None:
    try:
        _validate_conditions_internal(pattern, resource, anchors.is_global)
    except EngineError as exc:
        raise _GlobalConditionError(str(exc)) from None
    try:
        _validate_conditions_internal(pattern, resource, anchors.is_condition)
    except EngineError as exc:
        raise _ConditionError(str(exc)) from None


def _recursive(pattern: Any, resource: Any) -> None:
    if isinstance(pattern, dict):
        _walk_map(pattern, resource)
    elif isinstance(pattern, list) and pattern and isinstance(pattern[0], dict):
        _process_list_of_maps(pattern, resource)


def _walk_map(pattern: dict[str, Any], resource: Any) -> None:
    _handle_add_if_not_present(pattern, resource)
    _validate_conditions(pattern, resource)
    for key in [k for k in pattern if not _has_anchor(anchors.parse(k))]:
        if key in pattern:
            _recursive(pattern[key], _field(resource, key))


def _process_list_of_maps(pattern: list[Any], resource: Any) -> None:
    if resource is _ABSENT or resource is None:
        elements: list[Any] = []
    elif isinstance(resource, list):
        elements = list(resource)
    else:
        raise PreprocessError(f"wrong node kind: expected SequenceNode but got {type(resource).__name__}")
    for element in list(pattern):
        if not _has_anchors(element, _has_anchor):
            continue
        has_global = _has_anchors(element, anchors.is_global)
        any_global_passed = False
        last_global: Exception | None = None
        # one copy for every resource element: what preprocessing changes in it carries over (as in Kyverno)
        element_copy = copy.deepcopy(element)
        for resource_element in elements:
            try:
                _recursive(element_copy, resource_element)
            except _ConditionError:
                continue
            except _GlobalConditionError as exc:
                last_global = exc
                continue
            if has_global:
                any_global_passed = True
            else:
                _handle_pattern_name(pattern, element_copy, resource_element)
        if resource is _ABSENT:
            try:
                _recursive(element_copy, _ABSENT)
            except _ConditionError:
                continue
            if has_global:
                any_global_passed = True
        if not any_global_passed and last_global is not None:
            raise last_global


def _handle_pattern_name(pattern: list[Any], element: Any, resource_element: Any) -> None:
    name = _field(resource_element, "name")
    if _empty_node(name):
        return
    node = copy.deepcopy(element)
    if _delete_anchors(node, True, False):
        return
    if isinstance(node, dict):
        node["name"] = name
    pattern.append(node)


def _delete_condition_elements(pattern: Any) -> None:
    if not isinstance(pattern, dict):
        raise PreprocessError("wrong node kind: expected MappingNode")
    for key in list(pattern):
        delete_scalar = anchors.contains_condition(anchors.parse(key))
        if _delete_anchors(pattern[key], delete_scalar, False):
            del pattern[key]


def _delete_anchors(node: Any, delete_scalar: bool, traverse: bool) -> bool:
    if isinstance(node, dict):
        return _delete_anchors_in_map(node, traverse)
    if isinstance(node, list):
        return _delete_anchors_in_list(node, traverse)
    return delete_scalar


def _delete_anchors_in_map(node: dict[str, Any], traverse: bool) -> bool:
    exist = False
    for a in _filter_keys(node, anchors.contains_condition):
        if _delete_anchors(node[str(a)], True, traverse):
            del node[str(a)]
        else:
            exist = True
    if exist:
        for a in _filter_keys(node, anchors.contains_condition):
            _rename(node, str(a), a.key)
    need = True
    for key in list(node):
        if _delete_anchors(node[key], False, traverse):
            del node[key]
        else:
            need = False
    return need


def _delete_anchors_in_list(node: list[Any], traverse: bool) -> bool:
    elements = list(node)
    was_empty = not elements
    for i, element in enumerate(elements):
        if _has_anchors(element, _has_anchor):
            delete = True
            if traverse and isinstance(element, dict):
                delete = _delete_anchors(element, True, traverse)
        else:
            delete = _delete_anchors(element, False, traverse)
        if delete:
            # deleteListElement removes by the element's original index from the list as it is now
            # (Kyverno's own shift: a second deletion in one list takes the element after)
            if i >= len(node):
                raise PreprocessError(f"runtime error: slice bounds out of range [{i + 1}:{len(node)}]")
            del node[i]
    return not node and not was_empty


def preprocess(pattern: Any, resource: Any) -> Any:
    """PreProcessPattern on a copy of the overlay: the patch to merge; {} when a condition fails."""
    pattern = _sorted_keys(pattern)
    try:
        _recursive(pattern, resource)
        _delete_condition_elements(pattern)
    except (_ConditionError, _GlobalConditionError):
        return {}
    except PreprocessError as exc:
        raise PreprocessError(f"failed to preProcess rule: {exc}") from None
    return pattern


def _sorted_keys(value: Any) -> Any:
    """The overlay as json.Marshal writes it (map keys sorted), copied."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def patch_strategic_merge(overlay: Any, resource: Any) -> Any:
    """ProcessStrategicMergePatch; raises PreprocessError or MergeError."""
    return merge(preprocess(overlay, resource), resource)


def decode_json6902(text: str) -> list[Any]:
    """convertPatchesToJSON + DecodePatch: JSON, or YAML when it does not start with `[`."""
    if not text:
        raise PatchError("failed to decode patches: unexpected end of JSON input")
    try:
        # sigs.k8s.io/yaml YAMLToJSON: go-yaml v2 scalars (`y`, `on` are booleans), as manifests are read
        documents = list(iter_yaml_documents(text, "patchesJson6902"))
    except InputError as exc:
        raise PatchError(f"failed to convert patchesJSON6902 to JSON: {exc.message}") from None
    ops = documents[0].value if documents else None
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise PatchError("failed to decode patches: json: cannot unmarshal into Go value of type jsonpatch.Patch")
    return ops


def patch_json6902(text: str, resource: Any) -> Any:
    """ProcessPatchJSON6902 with Kyverno's ApplyOptions."""
    return apply_patch(resource, decode_json6902(text), ensure_path_exists_on_add=True,
                       support_negative_indices=True, allow_missing_path_on_remove=True)


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as their encodings are (True is not 1)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return bool(a == b) and (a is None) == (b is None)


def apply(strategic: Any, json6902: str | None, resource: Any) -> Outcome:
    """NewPatcher + Patch + the comparison of mutate.Mutate/ForEach: the strategic merge patch when the rule
    has one, else the JSON patch; none is "empty mutate rule"."""
    try:
        if strategic is not None:
            patched = patch_strategic_merge(strategic, resource)
        elif json6902:
            patched = patch_json6902(json6902, resource)
        else:
            return error("empty mutate rule")
    except PreprocessError as exc:
        return error("failed to patch resource", exc)
    except (MergeError, PatchError) as exc:
        return error("failed to patch resource", exc)
    if same_json(patched, resource):
        return Outcome(SKIP, resource, "no patches applied")
    if not isinstance(patched, dict):
        return error("failed to unmarshal patched resource", "Object 'Kind' is missing")
    return Outcome(PASS, patched, "resource patched")


LABELS_REFUSED = ('labels and annotations supports only string values, "use double quotes around the non string '
                  'values"')


def label_values_refused(rule: Any) -> bool:
    """kk: pkg/validation/policy/validate.go isLabelAndAnnotationsString, for a mutate rule: its
    patchStrategicMerge (a foreach rule's first map one) may give metadata labels and annotations only string
    values, at `metadata` or at `spec.template.metadata`. Kyverno checks whichever of the two keys its map
    iteration meets first; kyrec refuses only when every one present fails, so no order could admit it."""
    mutate = rule.get("mutate") if isinstance(rule, Mapping) else None
    if not isinstance(mutate, Mapping):
        return False
    patch: Any = None
    if mutate.get("foreach") is not None:
        patch = next((f.get("patchStrategicMerge") for f in mutate.get("foreach") or []
                      if isinstance(f, Mapping) and isinstance(f.get("patchStrategicMerge"), Mapping)), None)
    else:
        patch = mutate.get("patchStrategicMerge")
    if not isinstance(patch, Mapping):
        return False

    def strings_only(meta: Any) -> bool:
        if not isinstance(meta, Mapping):
            return True
        return all(not isinstance(meta.get(k), Mapping) or all(isinstance(v, str) for v in meta[k].values())
                   for k in ("labels", "annotations"))

    outcomes = []
    if isinstance(patch.get("metadata"), Mapping):
        outcomes.append(strings_only(patch["metadata"]))
    if "spec" in patch:
        spec = patch.get("spec")
        template = spec.get("template") if isinstance(spec, Mapping) else None
        outcomes.append(strings_only(template.get("metadata") if isinstance(template, Mapping) else None))
    return bool(outcomes) and not any(outcomes)
