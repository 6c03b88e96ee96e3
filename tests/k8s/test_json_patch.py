"""k8s/json_patch.py: the patch `make_patch` writes turns the one value into the other, and `apply_patch`
keeps RFC 6902's rules (a missing parent is an error unless asked to create it, `test` checks JSON
equality, nothing is changed in place)."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from kubectl_kyrec.k8s.json_patch import PatchError, apply_patch, make_patch


def _value(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(7 if depth < 3 else 4)
    if pick == 0:
        return rng.choice([0, 1, 2.5, -3])
    if pick == 1:
        return rng.choice(["a", "b", "x/y", "m~n", ""])
    if pick == 2:
        return rng.choice([True, False])
    if pick == 3:
        return None
    if pick in (4, 5):
        return {rng.choice(["a", "b", "c/d", "e~f"]): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


@pytest.mark.parametrize("seed", range(300))
def test_made_patch_turns_before_into_after(seed: int) -> None:
    rng = random.Random(seed)
    before, after = _value(rng, 0), _value(rng, 0)
    kept = copy.deepcopy(before)
    patch = make_patch(before, after)
    assert _typed(apply_patch(before, patch)) == _typed(after)
    assert before == kept
    assert make_patch(after, after) == []


def _typed(value: Any) -> Any:
    # compare with JSON's types: True must not pass for 1
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value) is bool, value)


def test_a_changed_boolean_is_replaced_even_where_python_calls_it_equal() -> None:
    assert make_patch({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert make_patch({"a": 1}, {"a": 1.0}) == []


def test_add_under_a_missing_parent_is_an_error_unless_asked_to_create_it() -> None:
    op = [{"op": "add", "path": "/spec/containers/0/name", "value": "x"}]
    with pytest.raises(PatchError):
        apply_patch({}, op)
    assert apply_patch({}, op, ensure_path_exists_on_add=True) == {"spec": {"containers": [{"name": "x"}]}}


def test_ops_in_order_with_escapes_move_copy_and_test() -> None:
    doc = {"a/b": [1, 2], "c": {"d": 1}}
    out = apply_patch(doc, [
        {"op": "add", "path": "/a~1b/-", "value": 3},
        {"op": "add", "path": "/a~1b/0", "value": 0},
        {"op": "copy", "from": "/c", "path": "/e"},
        {"op": "move", "from": "/c/d", "path": "/f"},
        {"op": "test", "path": "/e", "value": {"d": 1.0}},
        {"op": "remove", "path": "/a~1b/1"},
    ])
    assert out == {"a/b": [0, 2, 3], "c": {}, "e": {"d": 1}, "f": 1}
    assert doc == {"a/b": [1, 2], "c": {"d": 1}}
    with pytest.raises(PatchError):
        apply_patch(doc, [{"op": "test", "path": "/c/d", "value": True}])
    with pytest.raises(PatchError):
        apply_patch(doc, [{"op": "replace", "path": "/zz", "value": 1}])
    with pytest.raises(PatchError):
        apply_patch(doc, [{"op": "remove", "path": "/a~1b/2"}])


def test_kyvernos_options_negative_indices_missing_removes_and_paths_made() -> None:
    """Kyverno applies patchesJson6902 with SupportNegativeIndices, AllowMissingPathOnRemove and
    EnsurePathExistsOnAdd (evanphx/json-patch v5.9.11)."""
    opts = {"ensure_path_exists_on_add": True, "support_negative_indices": True, "allow_missing_path_on_remove": True}
    doc = {"l": [1, 2, 3]}
    # -1 is the last element for replace/remove; for add it is the end of the list one longer
    assert apply_patch(doc, [{"op": "replace", "path": "/l/-1", "value": 9}], **opts) == {"l": [1, 2, 9]}
    assert apply_patch(doc, [{"op": "remove", "path": "/l/-3"}], **opts) == {"l": [2, 3]}
    assert apply_patch(doc, [{"op": "add", "path": "/l/-1", "value": 4}], **opts) == {"l": [1, 2, 3, 4]}
    with pytest.raises(PatchError):
        apply_patch(doc, [{"op": "replace", "path": "/l/-1", "value": 9}])     # not without the option
    # a remove of what is not there does nothing
    assert apply_patch(doc, [{"op": "remove", "path": "/x/y"}, {"op": "remove", "path": "/l/7"}], **opts) == doc
    # missing parents: a list for an index token (padded with nulls up to it, -1 its first element),
    # an object otherwise
    assert apply_patch({}, [{"op": "add", "path": "/a/-1/b/-1", "value": 1}], **opts) == {"a": [{"b": [1]}]}
    assert apply_patch({}, [{"op": "add", "path": "/a/2/b", "value": 1}], **opts) == {"a": [None, None, {"b": 1}]}
    assert apply_patch({"a": [0]}, [{"op": "add", "path": "/a/3/b", "value": 1}], **opts) == \
        {"a": [0, None, None, {"b": 1}]}
    with pytest.raises(PatchError):
        apply_patch({}, [{"op": "add", "path": "/a/-2/b", "value": 1}], **opts)
