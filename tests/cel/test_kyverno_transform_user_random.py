"""listObjToMap, parseServiceAccount and random (sdk transform/, user/, random/ tests)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_random import random_library
from kubectl_kyrec.cel.kyverno_transform import transform_library
from kubectl_kyrec.cel.kyverno_user import user_library
from kubectl_kyrec.golang.regen import generate


def run(expr: str, seed: int = 0, **variables: Any) -> Any:
    env = Environment([transform_library(), user_library(), random_library(random.Random(seed))], list(variables))
    outcome = env.compile(expr).evaluate(env.activation(variables))
    return outcome.error if outcome.error is not None else outcome.value


LIST_EXPR = '''{fn}([{{"name": "kyverno", "lfx": "mentorship"}}, {{"name": "kubernetes", "lfx": "something"}}],
             [{{"domain": "security"}}, {{"domain": "orchestration"}}], "name", "domain")'''


@pytest.mark.parametrize("name", ["listObjToMap", "transform.listObjToMap"])
def test_list_obj_to_map(name: str) -> None:
    assert run(LIST_EXPR.format(fn=name)) == {"kyverno": "security", "kubernetes": "orchestration"}


def test_list_obj_to_map_missing_value_field_is_null() -> None:
    assert run('listObjToMap([{"k": "a"}], [{"other": 1}], "k", "v")') == {"a": None}


def test_list_obj_to_map_works_on_object_data() -> None:
    assert run('listObjToMap(object.keys, object.values, "k", "v")',
               object={"keys": [{"k": "a"}, {"k": "b"}], "values": [{"v": 1}, {"v": 2}]}) == {"a": 1, "b": 2}


@pytest.mark.parametrize(("expr", "message"), [
    ('listObjToMap([{"k": "a"}], [], "k", "v")', "listObjToMap must take lists of equal length. list1: 1, list2: 0"),
    ('listObjToMap([{"k": 1}], [{"v": 1}], "k", "v")',
     "the passed key name cannot be handled as a string in the key object list"),
    ('listObjToMap([{"x": "a"}], [{"v": 1}], "k", "v")',
     "the passed key name cannot be handled as a string in the key object list"),
    ('listObjToMap([{"k": "a"}], ["v"], "k", "v")',
     "object cannot be handled as a map string to any in the value object list"),
])
def test_list_obj_to_map_errors(expr: str, message: str) -> None:
    assert run(expr) == message


def test_list_obj_to_map_key_entry_must_be_a_map() -> None:
    assert str(run('listObjToMap(["a"], [{"v": 1}], "k", "v")')).startswith("object cannot be handled as a map, ")


@pytest.mark.parametrize(("user", "name", "namespace"), [
    ("system:serviceaccount:foo:bar", "bar", "foo"),
    ("system:serviceaccount:foo:bar:baz", "bar:baz", "foo"),
    ("something-else:123", "", ""),
    ("system:serviceaccount:nocolon", "", ""),
])
def test_parse_service_account(user: str, name: str, namespace: str) -> None:
    assert run(f'parseServiceAccount("{user}")') == {"Name": name, "Namespace": namespace}
    assert run(f'user.parseServiceAccount("{user}").Namespace') == namespace


def test_random_default_pattern() -> None:
    for spelling in ("random()", "random.random()"):
        assert re.fullmatch(r"[0-9a-z]{8}", run(spelling))


def test_random_pattern() -> None:
    pattern = "[A-Z0-9]{8}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{12}"
    assert re.fullmatch(pattern, run(f'random.random("{pattern}")'))


def test_random_is_reproducible_for_a_seed_and_varies_between_calls() -> None:
    assert run("[random(), random()]", seed=7) == run("[random(), random()]", seed=7)
    first, second = run("[random(), random()]", seed=7)
    assert first != second


@pytest.mark.parametrize("pattern", [r"a|b", r"(ab)\1", r"\d+", r"[^a-z]{3}", r"x*", r"^abc$", r"\w{2}\s?"])
def test_generated_strings_match_their_pattern(pattern: str) -> None:
    rng = random.Random(3)
    for _ in range(20):
        assert re.fullmatch(pattern, generate(pattern, rng))


def test_random_with_an_invalid_pattern() -> None:
    assert str(run('random("[a")')).startswith("error parsing regexp: ")
