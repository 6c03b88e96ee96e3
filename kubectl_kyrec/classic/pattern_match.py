"""Kyverno's pattern validation of a resource (pkg/engine/validate/validate.go MatchPattern, anchor/handlers.go,
wildcards/wildcards.go ExpandInMetadata) with Kyverno's failure paths and messages.

Internally every step returns (path, error-or-None) as Kyverno's do, so the skip/fail/missing-anchor decisions
and the path reported are the same.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubectl_kyrec.classic import anchors, pattern
from kubectl_kyrec.classic.anchors import (
    CONDITIONAL_ERR,
    GLOBAL_ERR,
    NEGATION_ERR,
    AnchorError,
    AnchorMap,
    PatternFailure,
)
from kubectl_kyrec.golang import wildcard
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.recording import Trace, shown


@dataclasses.dataclass(frozen=True)
class PatternError:
    """validate.PatternError: `message` is Kyverno's error text, `path` the failure path (`/spec/containers/0/
    image/`, '' when an anchored key is missing, or on skip), `skip` True when a condition/global anchor
    made the rule not apply."""

    message: str
    path: str
    skip: bool


class _Skip(PatternFailure):
    """A *PatternError with Skip set, carrying the combined skip errors (multierr)."""


Result = tuple[str, PatternFailure | None]
_OK: Result = ("", None)


def _combine(errors: list[PatternFailure]) -> str:
    return "; ".join(str(e) for e in errors)


def _skip(err: PatternFailure | None) -> bool:
    return anchors.is_conditional_error(err) or anchors.is_global_error(err)


def go_type_name(value: Any, *, pattern_side: bool = False) -> str:
    """%T of a decoded JSON value (pattern numbers are float64, resource integers int64)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "float64" if pattern_side else "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return type(value).__name__


def _pattern_sprint(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return sprint(float(value))
    return sprint(value)


def match_pattern(resource: Any, pattern_: Any, trace: Trace | None = None) -> PatternError | None:
    """validate.MatchPattern(resource, pattern): None when the resource matches. `trace` records the walk
    (explain): each key and anchor with how it came out, each leaf comparison."""
    ac = AnchorMap(trace)
    elem_path, err = _validate_element(resource, pattern_, pattern_, "/", ac)
    if err is None:
        return None
    if _skip(err):
        return PatternError(str(err), "", True)
    if anchors.is_negation_error(err):
        return PatternError(str(err), elem_path, False)
    if ac.keys_are_missing():
        return PatternError(str(err), "", False)
    return PatternError(str(err), elem_path, False)


def _validate_element(resource: Any, pattern_: Any, origin: Any, path: str, ac: AnchorMap) -> Result:
    if isinstance(pattern_, dict):
        if not isinstance(resource, dict):
            return path, PatternFailure(
                f"pattern and resource have different structures. Path: {path}. Expected "
                f"{go_type_name(pattern_, pattern_side=True)}, found {go_type_name(resource)}")
        ac.check_anchor_in_resource(pattern_, resource)
        return _validate_map(resource, pattern_, origin, path, ac)
    if isinstance(pattern_, list):
        if not isinstance(resource, list):
            return path, PatternFailure(f"validation rule failed at path {path}, resource does not satisfy the "
                                        f"expected overlay pattern")
        return _validate_array(resource, pattern_, origin, path, ac)
    if pattern_ is None or isinstance(pattern_, (str, int, float, bool)):
        if isinstance(resource, list):
            for item in resource:
                if not pattern.validate(item, pattern_):
                    return path, PatternFailure(f"resource value '{sprint(resource)}' does not match "
                                                f"'{_pattern_sprint(pattern_)}' at path {path}")
            return _OK
        if not pattern.validate(resource, pattern_):
            return path, PatternFailure(f"resource value '{sprint(resource)}' does not match "
                                        f"'{_pattern_sprint(pattern_)}' at path {path}")
        return _OK
    return path, PatternFailure(f"failed at '{path}', pattern contains unknown type")


# Patterns are evaluated against many resources: the key order of a pattern map is worked out once. The cache
# holds the map itself so that its id cannot be reused by another object while the entry lives.
_PLANS: dict[int, tuple[dict[str, Any], list[str], list[str], bool]] = {}


def _plan(pattern_: dict[str, Any]) -> tuple[list[str], list[str], bool]:
    """(anchored keys in order, other keys in order, whether wildcard metadata keys may need expanding)."""
    entry = _PLANS.get(id(pattern_))
    if entry is not None and entry[0] is pattern_:
        return entry[1], entry[2], entry[3]
    anchored, plain = anchors.split_anchors(pattern_)
    anchor_keys, plain_keys = sorted(anchored), _sorted_resource_keys(plain)
    # ExpandInMetadata changes the pattern only where labels/annotations have wildcard keys, or values that
    # are not strings (it keeps the string ones only)
    _, metadata = _pattern_value("metadata", pattern_)
    expandable = isinstance(metadata, dict) and any(
        isinstance(data, dict) and any(wildcard.contains_wildcard(k) or not isinstance(v, str)
                                       for k, v in data.items())
        for data in (_pattern_value("labels", metadata)[1], _pattern_value("annotations", metadata)[1]))
    if len(_PLANS) > 20000:
        _PLANS.clear()
    _PLANS[id(pattern_)] = (pattern_, anchor_keys, plain_keys, expandable)
    return anchor_keys, plain_keys, expandable


def _validate_map(resource: dict[str, Any], pattern_: dict[str, Any], origin: Any, path: str,
                  ac: AnchorMap) -> Result:
    anchor_keys, plain_keys, expandable = _plan(pattern_)
    expanded = expand_in_metadata(pattern_, resource) if expandable else pattern_
    if expanded is not pattern_:
        pattern_ = expanded
        anchored, plain = anchors.split_anchors(pattern_)
        anchor_keys, plain_keys = sorted(anchored), _sorted_resource_keys(plain)
    skip_errors: list[PatternFailure] = []
    apply_count = 0
    handle = _handle if ac.trace is None else _traced_handle
    for key in anchor_keys:
        handler_path, err = handle(key, pattern_[key], path, resource, origin, ac)
        if err is not None:
            if _skip(err):
                skip_errors.append(err)
                continue
            if not any(not isinstance(e, _Skip) for e in skip_errors):
                return handler_path, err
            continue
        apply_count += 1
    if skip_errors:
        sibling = any(not isinstance(e, _Skip) for e in skip_errors)
        if apply_count == 0 or sibling:
            return path, _Skip(_combine(skip_errors))
    for key in plain_keys:
        handler_path, err = handle(key, pattern_[key], path, resource, origin, ac)
        if err is not None:
            return handler_path, err
    return _OK


def _has_nested_anchors(value: Any) -> bool:
    if isinstance(value, dict):
        for key in value:
            a = anchors.parse(key)
            if a is not None and a.type in (anchors.CONDITION, anchors.EXISTENCE, anchors.EQUALITY,
                                            anchors.NEGATION, anchors.GLOBAL):
                return True
        return any(_has_nested_anchors(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nested_anchors(v) for v in value)
    return False


def _sorted_resource_keys(resources: dict[str, Any]) -> list[str]:
    """getSortedNestedAnchorResource: global anchors and keys with nested anchors first (pushed to the
    front one by one, so in reverse order), then the others in sorted order."""
    front: list[str] = []
    back: list[str] = []
    for key in sorted(resources):
        if anchors.is_global(anchors.parse(key)) or _has_nested_anchors(resources[key]):
            front.insert(0, key)
        else:
            back.append(key)
    return front + back


def _validate_array(resource: list[Any], pattern_: list[Any], origin: Any, path: str, ac: AnchorMap) -> Result:
    if not pattern_:
        return path, PatternFailure("pattern Array empty")
    first = pattern_[0]
    if isinstance(first, dict):
        return _validate_array_of_maps(resource, first, origin, path, ac)
    if first is None or isinstance(first, (str, int, float, bool)):
        return _validate_element(resource, first, origin, path, ac)
    if len(resource) < len(pattern_):
        return "", PatternFailure(f"validate Array failed, array length mismatch, resource Array len is "
                                  f"{len(resource)} and pattern Array len is {len(pattern_)}")
    apply_count = 0
    skip_errors: list[PatternFailure] = []
    for i, element in enumerate(pattern_):
        elem_path, err = _validate_element(resource[i], element, origin, f"{path}{i}/", ac)
        if err is not None:
            if _skip(err):
                skip_errors.append(err)
                continue
            return elem_path, err
        apply_count += 1
    if apply_count == 0 and skip_errors:
        return path, _Skip(_combine(skip_errors))
    return _OK


def _validate_array_of_maps(resource: list[Any], pattern_: dict[str, Any], origin: Any, path: str,
                            ac: AnchorMap) -> Result:
    apply_count = 0
    skip_errors: list[PatternFailure] = []
    for i, element in enumerate(resource):
        if ac.trace is None:
            elem_path, err = _validate_element(element, pattern_, origin, f"{path}{i}/", ac)
        else:
            elem_path, err = _traced(ac, f"{path}{i}", "element", _validate_element,
                                     (element, pattern_, origin, f"{path}{i}/", ac))
        if err is not None:
            if _skip(err):
                skip_errors.append(err)
                continue
            return elem_path, err
        apply_count += 1
    if apply_count == 0 and skip_errors:
        return path, _Skip(_combine(skip_errors))
    return _OK


# ---------------------------------------------------------------------------------------------- handlers


def _handle(element: str, pattern_: Any, path: str, resource: dict[str, Any], origin: Any, ac: AnchorMap) -> Result:
    """anchor.CreateElementHandler(element, pattern, path).Handle(...)."""
    a = anchors.parse(element)
    if a is not None and a.type != anchors.ADD_IF_NOT_PRESENT:
        key = a.key
        current = f"{path}{key}/"
        if a.type == anchors.CONDITION:
            if key in resource:
                return_path, err = _validate_element(resource[key], pattern_, origin, current, ac)
                if err is not None:
                    return return_path, AnchorError(CONDITIONAL_ERR, str(err))
                return _OK
            return current, AnchorError(CONDITIONAL_ERR, "conditional anchor key doesn't exist in the resource")
        if a.type == anchors.GLOBAL:
            if key in resource:
                return_path, err = _validate_element(resource[key], pattern_, origin, current, ac)
                if err is not None:
                    return return_path, AnchorError(GLOBAL_ERR, str(err))
            return _OK
        if a.type == anchors.EQUALITY:
            if key in resource:
                return_path, err = _validate_element(resource[key], pattern_, origin, current, ac)
                if err is not None:
                    return return_path, err
            return _OK
        if a.type == anchors.NEGATION:
            if key in resource:
                return current, AnchorError(NEGATION_ERR, f"{current} is not allowed")
            return _OK
        if a.type == anchors.EXISTENCE:
            return _existence(key, pattern_, current, resource, origin, ac)
    # default handler
    current = f"{path}{element}/"
    if pattern_ == "*" and isinstance(pattern_, str):
        if resource.get(element) is not None:
            return _OK
        return path, PatternFailure(f"{path}/{element} not found")
    return_path, err = _validate_element(resource.get(element), pattern_, origin, current, ac)
    if err is not None:
        return return_path, err
    return _OK


def _existence(key: str, pattern_: Any, current: str, resource: dict[str, Any], origin: Any,
               ac: AnchorMap) -> Result:
    if key not in resource:
        return _OK
    value = resource[key]
    if not isinstance(value, list):
        return current, PatternFailure(f"invalid resource type {go_type_name(value)}: Existence ^ () anchor can "
                                       f"be used only on list/array type resource")
    if not isinstance(pattern_, list):
        return current, PatternFailure(f"invalid pattern type {go_type_name(pattern_, pattern_side=True)}: Pattern "
                                       f"has to be of list to compare against resource")
    result: Result = _OK
    for pattern_map in pattern_:
        if not isinstance(pattern_map, dict):
            return current, PatternFailure(f"invalid pattern type {go_type_name(pattern_, pattern_side=True)}: "
                                           f"Pattern has to be of type map to compare against items in resource")
        result = _existence_in_list(value, pattern_map, origin, current, ac)
        if result[1] is not None:
            return result
    return result


def _existence_in_list(items: list[Any], pattern_map: dict[str, Any], origin: Any, path: str,
                       ac: AnchorMap) -> Result:
    for i, item in enumerate(items):
        if ac.trace is None:
            _, err = _validate_element(item, pattern_map, origin, f"{path}{i}/", ac)
        else:
            _, err = _traced(ac, f"{path}{i}", "element", _validate_element,
                             (item, pattern_map, origin, f"{path}{i}/", ac))
        if err is None:
            return _OK
    return path, PatternFailure(f"existence anchor validation failed at path {path}")


# ---------------------------------------------------------------------------------------------- tracing
# (explain only: the walk above calls these when its AnchorMap carries a recorder)

_ANCHOR_KINDS = {anchors.CONDITION: "condition anchor", anchors.EQUALITY: "equality anchor",
                 anchors.EXISTENCE: "existence anchor", anchors.NEGATION: "negation anchor",
                 anchors.GLOBAL: "global anchor"}


def _traced_handle(element: str, pattern_: Any, path: str, resource: dict[str, Any], origin: Any,
                   ac: AnchorMap) -> Result:
    """_handle, recording the key (or anchor) and how the engine's handler came out for it."""
    a = anchors.parse(element)
    anchored = a is not None and a.type != anchors.ADD_IF_NOT_PRESENT
    key = a.key if a is not None and anchored else element
    what = f"{_ANCHOR_KINDS[a.type]} {element}" if a is not None and anchored else ""
    if key not in resource:
        what = f"{what}, absent from the resource" if what else "absent from the resource"
    # a scalar of the pattern: the handler compares the resource's value with it (kk: pattern.Validate); an
    # anchored key absent from the resource is compared with nothing, a negation anchor's value never
    scalar = pattern_ is None or isinstance(pattern_, (str, int, float, bool))
    if scalar and (key in resource or not anchored) and not anchors.is_negation(a):
        compared = _comparison(resource.get(key), pattern_)
        what = f"{what}; {compared}" if what else compared
    return _traced(ac, f"{path}{key}", what, _handle, (element, pattern_, path, resource, origin, ac),
                   a.type if a is not None and anchored else "")


def _traced(ac: AnchorMap, name: str, what: str, step: Any, args: tuple[Any, ...], anchor_type: str = "") -> Result:
    """step(*args), recorded as a step `name` with the outcome the engine's result means."""
    trace = ac.trace
    assert trace is not None
    opened = trace.open(name, what)
    result: Result = step(*args)
    err = result[1]
    if err is None:
        outcome = "held" if anchor_type else "matched"
    elif anchors.is_conditional_error(err):
        outcome = "not held: the element is skipped" if anchor_type == anchors.CONDITION else "skipped"
    elif anchors.is_global_error(err):
        outcome = "not held: the rule is skipped" if anchor_type == anchors.GLOBAL else "skipped"
    elif anchors.is_negation_error(err):
        outcome = "present: not allowed" if anchor_type == anchors.NEGATION else "failed"
    else:
        outcome = "failed"
    # the message goes where the walk failed, not on every step above it
    below = any(c.outcome not in ("matched", "held") for c in opened.children)
    trace.close(opened, outcome, "" if err is None or below else str(err))
    return result


def _comparison(value: Any, pattern_: Any) -> str:
    """A resource value against a scalar of the pattern, with the operator the pattern's text names."""
    if isinstance(pattern_, str):
        ops = [pattern.get_operator(p.strip(" ")) or ("wildcard" if wildcard.contains_wildcard(p) else "equals")
               for alt in pattern_.split("|") for p in alt.split("&")]
        how = "operator " + ", ".join(dict.fromkeys(ops))
    else:
        how = "equals" if pattern_ is not None else "null: empty or zero"
    return f"value {shown(value)} vs pattern {shown(pattern_)} ({how})"


# ---------------------------------------------------------------------------------------------- wildcard keys


def _pattern_value(tag: str, data: dict[str, Any]) -> tuple[str, Any]:
    for key, value in data.items():
        if key == tag:
            return key, value
        a = anchors.parse(key)
        if a is not None and a.key == tag:
            return key, value
    return "", None


def _string_map(tag: str, data: Any) -> tuple[str, dict[str, str] | None]:
    if not isinstance(data, dict):
        return "", None
    key, value = _pattern_value(tag, data)
    if value is None or not isinstance(value, dict):
        return "", None
    return key, {k: v for k, v in value.items() if isinstance(v, str)}


def _expand_key(key: str, resource: dict[str, str]) -> str:
    for candidate in resource:
        if wildcard.match(key, candidate):
            return candidate
    return key


def replace_wildcards_in_map_keys(pattern_data: dict[str, str], resource_data: dict[str, str]) -> dict[str, Any]:
    """wildcards.replaceWildcardsInMapKeys: a wildcard key becomes the first resource key it matches."""
    results: dict[str, Any] = {}
    for key, value in pattern_data.items():
        if wildcard.contains_wildcard(key):
            a = anchors.parse(key)
            if a is not None:
                results[anchors.anchor_string(a.type, _expand_key(a.key, resource_data))] = value
            else:
                results[_expand_key(key, resource_data)] = value
        else:
            results[key] = value
    return results


def expand_in_metadata(pattern_: dict[str, Any], resource: dict[str, Any]) -> dict[str, Any]:
    """wildcards.ExpandInMetadata: wildcard keys under metadata.labels/annotations take the resource's keys
    (the values become a string-only map, as Kyverno's). Returns a new pattern map when it changes one."""
    _, metadata = _pattern_value("metadata", pattern_)
    if metadata is None or resource.get("metadata") is None or not isinstance(metadata, dict):
        return pattern_
    new_metadata = None
    for tag in ("labels", "annotations"):
        key, data = _string_map(tag, metadata)
        if data is None:
            continue
        _, resource_data = _string_map(tag, resource.get("metadata"))
        if resource_data is None:
            continue
        if new_metadata is None:
            new_metadata = dict(metadata)
        new_metadata[key] = replace_wildcards_in_map_keys(data, resource_data)
    if new_metadata is None:
        return pattern_
    out = dict(pattern_)
    meta_key, _ = _pattern_value("metadata", pattern_)
    out[meta_key] = new_metadata
    return out
