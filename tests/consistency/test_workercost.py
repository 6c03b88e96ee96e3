"""Issue 36, the workers' cost in `eval --state` (branch workercost): cel-go's `no such key: <field>` for a
selection on null (cel/engine.py _missing_field) without evaluating again what is known.

A receiver that is a plain path from an activation variable (`object.spec`) is read from the activation's data
once the engine has converted its root; a receiver that is a variable bound to a lookup with literal arguments
(`resource.Get("v1", "configmaps", "default", "name")`, the state a run does not change) is asked of the engine
once per program, not once per subject. The field named must be the one each receiver evaluated alone names.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubectl_kyrec.cel import engine as cel_engine
from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory

_NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
_CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "present", "namespace": "default"},
              "data": {"x": "1"}}

# as the policy compiler writes a ValidatingPolicy's variables (cel/compiler.py): bound, in order
_PROGRAMS = [
    'cel.bind(kyrecvar_cm, (resource.Get("v1", "configmaps", "default", "{name}")), '
    '(object.a.b == 1 || kyrecvar_cm.data.x == "1"))',
    'cel.bind(kyrecvar_cm, (resource.Get("v1", "configmaps", "default", "{name}")), '
    '(kyrecvar_cm.data.x == "1" && object.a.b == 1 || namespaceObject.metadata.name == "n"))',
    'cel.bind(kyrecvar_cm, (resource.Get("v1", "configmaps", "default", "{name}")), '
    '(object.a.b == 1 || kyrecvar_cm.data[?"x"].orValue("") == "1"))',
    # a lookup whose arguments are not all literals: asked every time
    'cel.bind(kyrecvar_cm, (resource.Get("v1", "configmaps", object.ns, "{name}")), '
    '(object.a.b == 1 || kyrecvar_cm.data[?"x"].orValue("") == "1"))',
]
_OBJECTS: list[dict[str, Any]] = [
    {"a": {"b": None}, "ns": "default"},
    {"a": {"b": 2}, "ns": "default"},
    {"a": None, "ns": "default"},
    {"a": {"b": [1]}, "ns": "other"},
    {"a": 3, "ns": "default"},
    {"ns": "default"},
    # roots the engine cannot convert: every receiver on them fails
    {"a": {"b": None}, "ns": "default", "u": 1 << 70},
    {"a": 3, "ns": "default", "u": 1 << 70},
]
_NAMESPACES: list[dict[str, Any] | None] = [None, {"metadata": {"name": "n"}}, {"metadata": None}]


class _Counting(ObjectsProvider):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gets = 0

    def get_resource(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.gets += 1
        return super().get_resource(api_version, resource, namespace, name)


def _environment() -> tuple[Any, _Counting]:
    provider = _Counting([_CONFIGMAP])
    env, _ = Environments(library_factory(LibraryContext(now=_NOW, provider=provider))).get("ValidatingPolicy")
    return env, provider


@pytest.mark.parametrize("name", ["present", "absent"])
@pytest.mark.parametrize("text", _PROGRAMS)
def test_the_field_named_is_the_one_each_receiver_alone_names(text: str, name: str) -> None:
    env, _ = _environment()
    program = env.compile(text.format(name=name))
    for namespace in _NAMESPACES:
        for obj in _OBJECTS:
            activation = env.activation({"object": obj, "oldObject": None, "request": None,
                                         "namespaceObject": namespace})
            named = cel_engine._missing_field(program, activation)
            found = program._receivers
            assert found is not None and found.kinds is not None
            program._receivers = found._replace(kinds=None)      # each receiver alone, as before
            try:
                assert cel_engine._missing_field(program, cel_engine.Activation(activation.raw)) == named, \
                    (obj, namespace)
            finally:
                program._receivers = found


def test_a_constant_lookup_is_asked_once_per_program() -> None:
    env, provider = _environment()
    constant = env.compile(_PROGRAMS[2].format(name="absent"))
    varying = env.compile(_PROGRAMS[3].format(name="absent"))
    # each subject's program asks once (its own evaluation) and _missing_field once more, where not constant
    for program, asked in ((constant, 3 + 1), (varying, 3 + 3)):
        provider.gets = 0
        for _ in range(3):
            activation = env.activation({"object": {"a": {"b": 2}, "ns": "default"}, "oldObject": None,
                                         "request": None, "namespaceObject": None})
            assert program.evaluate(activation).error == "no such key: data"
        assert provider.gets == asked
    assert constant._receivers is not None and constant._receivers.constant
    assert varying._receivers is not None and not varying._receivers.constant
