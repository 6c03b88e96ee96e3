"""json.unmarshal / json.marshal: Go encoding/json semantics and error texts (sdk json/impl_test.go)."""

from __future__ import annotations

import datetime
import math
import random
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_json import json_library
from kubectl_kyrec.cel.kyverno_json import json_marshal as marshal
from kubectl_kyrec.cel.kyverno_libs import kyverno_libraries
from kubectl_kyrec.golang.json import syntax_error, unmarshal
from kubectl_kyrec.golang.strconv import format_float

NOW = datetime.datetime(2025, 1, 2, 15, 30, tzinfo=datetime.timezone.utc)


def run(expr: str, **variables: Any) -> Any:
    env = Environment([json_library()], list(variables))
    outcome = env.compile(expr).evaluate(env.activation(variables))
    return outcome.error if outcome.error is not None else outcome.value


def test_unmarshal_turns_every_number_into_a_double() -> None:
    assert run('json.unmarshal("{\\"a\\": 1, \\"b\\": [2, 3.5]}")') == {"a": 1.0, "b": [2.0, 3.5]}
    assert run('type(json.unmarshal("{\\"a\\": 1}").a) == double') is True
    # an int literal does not add to it: Kyverno gives the same no-such-overload error
    assert run('json.unmarshal("1") + 1') == "no such overload"


def test_unmarshal_scalars_and_null() -> None:
    assert run('json.unmarshal("null") == null') is True
    assert run('json.unmarshal("\\"x\\"")') == "x"
    assert run('json.unmarshal("true")') is True


@pytest.mark.parametrize(("text", "message"), [
    ("", "unexpected end of JSON input"),
    ("{", "unexpected end of JSON input"),
    ("x", "invalid character 'x' looking for beginning of value"),
    ('{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    ("[1,]", "invalid character ']' looking for beginning of value"),
    ('{"a" 1}', "invalid character '1' after object key"),
    ('{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    ("[1 2]", "invalid character '2' after array element"),
    ("1 2", "invalid character '2' after top-level value"),
    ("01", "invalid character '1' after top-level value"),
    ("-a", "invalid character 'a' in numeric literal"),
    ("1.e", "invalid character 'e' after decimal point in numeric literal"),
    ("1ex", "invalid character 'x' in exponent of numeric literal"),
    ("tru", "unexpected end of JSON input"),
    ("trux", "invalid character 'x' in literal true (expecting 'e')"),
    ('"a\\q"', "invalid character 'q' in string escape code"),
    ('"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
    ('"a\nb"', "invalid character '\\n' in string literal"),
    ("NaN", "invalid character 'N' looking for beginning of value"),
    ("1e400", "json: cannot unmarshal number 1e400 into Go value of type float64"),
])
def test_unmarshal_errors_use_go_wording(text: str, message: str) -> None:
    with pytest.raises(Exception) as info:
        unmarshal(text)
    assert str(info.value) == message


def test_unmarshal_error_through_cel() -> None:
    assert run("json.unmarshal(text)", text="{bad") == \
        "invalid character 'b' looking for beginning of object key string"


def test_syntax_error_is_none_for_valid_json() -> None:
    assert syntax_error(' {"a": [1, -2.5e3, "x\\u00e9", true, null]} ') is None


def test_lone_surrogate_escape_decodes_to_replacement_character() -> None:
    assert unmarshal('"\\ud800"') == "\ufffd"


@pytest.mark.parametrize(("expr", "expected"), [
    ('json.marshal({"key": "value"})', '{"key":"value"}'),
    ("json.marshal([1, 2, 3])", "[1,2,3]"),
    ('json.marshal("hello")', '"hello"'),
    ("json.marshal(42)", "42"),
    ("json.marshal(3.14)", "3.14"),
    ("json.marshal(true)", "true"),
    ("json.marshal(null)", "null"),
    ('json.marshal(b"foo")', '"Zm9v"'),
    ("json.marshal({})", "{}"),
    ("json.marshal([])", "[]"),
    ('json.marshal({"outer": {"inner": "value"}})', '{"outer":{"inner":"value"}}'),
    ('json.marshal(json.unmarshal("{\\"a\\":\\"b\\"}"))', '{"a":"b"}'),
    ('json.marshal(dyn({"str": dyn("foo"), "nested": dyn({"arr": dyn([]), "bol": dyn(true), "nil": dyn(null), '
     '"num": dyn(1), "str": dyn("bar")})}))',
     '{"nested":{"arr":[],"bol":true,"nil":null,"num":1,"str":"bar"},"str":"foo"}'),
    ('json.marshal([dyn({"str": dyn("foo")})])', '[{"str":"foo"}]'),
])
def test_marshal_matches_kyverno_cases(expr: str, expected: str) -> None:
    assert run(expr) == expected


def test_marshal_sorts_keys_and_escapes_like_go() -> None:
    assert marshal({"b": 1, "a": "<x>&\u2028\n\x01"}) == '{"a":"\\u003cx\\u003e\\u0026\\u2028\\n\\u0001","b":1}'


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"),
    (1e-6, "0.000001"), (-0.0, "-0"), (123456789.0, "123456789"),
])
def test_marshal_floats_like_go(value: float, text: str) -> None:
    assert marshal(value) == text


def test_format_float_g_switches_to_exponent_at_1e6() -> None:
    assert format_float(123456.0, "g") == "123456"
    assert format_float(1234567.0, "g") == "1.234567e+06"
    assert format_float(0.0001, "g") == "0.0001"
    assert format_float(0.00001, "g") == "1e-05"


def test_marshal_timestamp_and_duration_as_go_types() -> None:
    assert run('json.marshal(timestamp("2024-01-02T03:04:05.5Z"))') == '"2024-01-02T03:04:05.5Z"'
    # a time.Duration is an integer count of nanoseconds
    assert run('json.marshal(duration("1.5s"))') == "1500000000"


def test_marshal_rejects_non_finite_numbers_and_non_string_keys() -> None:
    with pytest.raises(Exception, match=r"^json: unsupported value: NaN$"):
        marshal(math.nan)
    assert run("json.marshal({1: 2})") == \
        "json: failed to convert CEL map to native map: type conversion error from int to 'string'"


def test_json_library_is_bound_for_validating_policies() -> None:
    ctx = LibraryContext(NOW, EmptyProvider(), rng=random.Random(0))
    env = Environment(kyverno_libraries(ctx, policy_kind="ValidatingPolicy"), [])
    assert env.compile('json.marshal(json.unmarshal("[1,2]"))').evaluate(env.activation({})).value == "[1,2]"
