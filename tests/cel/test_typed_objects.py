"""Object{...} / JSONPatch{...} literals: rewritten for cel-expr-python, decoded as Kubernetes' patchers
read them (pkg/cel/mutation/dynamic/objects.go, patch/json_patch.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.k8s_jsonpatch import LIBRARY, escape_key
from kubectl_kyrec.cel.typed_objects import (
    TypedValueError,
    decode_json_patch,
    decode_object,
    rewrite_typed_literals,
)

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "a", "image": "docker.io/a"}, {"name": "b", "image": "b"}]}}


def _eval(text: str, obj: dict[str, Any] = POD) -> Any:
    env = Environment([LIBRARY], ["object"])
    outcome = env.compile(rewrite_typed_literals(text)).evaluate(env.activation({"object": obj}))
    assert outcome.ok, outcome.error
    return outcome.value


def test_nested_objects_and_comprehension_elements_decode_to_plain_json() -> None:
    value = _eval('Object{spec: Object.spec{containers: object.spec.containers.map(c, '
                  'Object.spec.containers{name: c.name, image: "x/" + c.image})}}')
    assert decode_object(value) == {"spec": {"containers": [{"name": "a", "image": "x/docker.io/a"},
                                                            {"name": "b", "image": "x/b"}]}}


def test_strings_and_field_names_inside_strings_are_left_alone() -> None:
    value = _eval('Object{metadata: Object.metadata{labels: {"Object{a: b}": "spec: x"}}}')
    assert decode_object(value) == {"metadata": {"labels": {"Object{a: b}": "spec: x"}}}


def test_optional_fields_and_trailing_commas() -> None:
    assert decode_object(_eval('Object{?spec: optional.none(), metadata: Object.metadata{},}')) == {"metadata": {}}


def test_a_type_name_that_is_not_the_field_path_is_refused() -> None:
    with pytest.raises(TypedValueError, match='unexpected type name "Object.spec.wrong", expected '
                                              '"Object.spec.selector"'):
        decode_object(_eval("Object{spec: Object.spec{selector: Object.spec.wrong{}}}"))


def test_apply_configuration_must_give_an_object() -> None:
    with pytest.raises(TypedValueError, match="unsupported return type from ApplyConfiguration expression: map"):
        decode_object(_eval('{"spec": 1}'))


def test_json_patch_ops_with_escaped_keys_and_json_numbers() -> None:
    ops = decode_json_patch(_eval('[JSONPatch{op: "add", path: "/metadata/labels/" + '
                                  'jsonpatch.escapeKey("a/b~c"), value: 3}, JSONPatch{op: "remove", path: "/x"}]'))
    assert ops == [{"op": "add", "path": "/metadata/labels/a~1b~0c", "value": 3},
                   {"op": "remove", "path": "/x"}]


def test_json_patch_of_an_unknown_field_does_not_compile() -> None:
    with pytest.raises(CompileError, match="undefined field 'values'"):
        rewrite_typed_literals('[JSONPatch{op: "add", path: "/a", values: 1}]')


def test_a_list_of_maps_is_not_a_json_patch() -> None:
    with pytest.raises(TypedValueError, match="array of JSONPatch, got element of map"):
        decode_json_patch(_eval('[{"op": "add"}]'))


def test_escape_key_replaces_tilde_before_slash() -> None:
    assert escape_key("~1/") == "~01~1"
