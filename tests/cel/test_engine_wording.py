"""The engine's errors read as cel-go's (cel/engine.py, the one place they are translated).

Expected texts come from cel-go's interpreter: interpreter/attributes.go (refQualify and resolutionError:
`no such key: %v`, `index out of bounds: %v`), types/int.go (`division by zero`, `modulus by zero`),
types/string.go (`type conversion error from 'string' to 'int'`), types/list.go IndexOrError
(`unsupported index type '%s' in list`), and `no such overload` for a dispatch without a matching overload.
"""

from __future__ import annotations

import gc
import sys

import pytest

from kubectl_kyrec.cel.engine import CompileError, Environment

ENV = Environment([], ("object", "x"))
DATA = {"object": {"n": None, "num": 1, "s": "text", "l": [1], "m": {"k": None}}, "x": None}


@pytest.mark.parametrize("expression, message", [
    ("object.missing", "no such key: missing"),
    ("object['missing']", "no such key: missing"),
    # a selection on null or on a scalar: cel-go names the field
    ("x.spec", "no such key: spec"),
    ("object.n.labels", "no such key: labels"),
    ("object.m.k.z", "no such key: z"),
    ("object.num.b", "no such key: b"),
    ("object.s.b", "no such key: b"),
    ("object.num > 0 && object.n.deep", "no such key: deep"),
    # the frame the policy compiler puts around an expression using its variables
    ("cel.bind(v, (object.m.k), (v.inner))", "no such key: inner"),
    ("[1, 2].all(i, x.w)", "no such key: w"),
    ("object.l[3]", "index out of bounds: 3"),
    ("object.l['a']", "unsupported index type 'string' in list"),
    ("1 / (object.num - 1)", "division by zero"),
    ("1 % (object.num - 1)", "modulus by zero"),
    ("object.num + object.s", "no such overload"),
    ("int(object.s)", "type conversion error from 'string' to 'int'"),
    # an index into null or a scalar: cel-go names the index (cel-cpp: Invalid container type)
    ("object.n['k']", "no such key: k"),
    ("x[0]", "no such key: 0"),
    ("object.s['k']", "no such key: k"),
    ("object.m.k[1.5]", "no such key: 1.5"),
    ("object.m['k'][true]", "no such key: true"),
    ("object.l[0]['z']", "no such key: z"),
    ("cel.bind(v, (object.m.k), (v['inner']))", "no such key: inner"),
])
def test_cel_go_wording(expression: str, message: str) -> None:
    outcome = ENV.compile(expression).evaluate(ENV.activation(DATA))
    assert outcome.error == message


def test_results_holding_nulls_keep_none_alive() -> None:
    # the engine loses one reference to None per null in a result; the adapter gives it back
    program = ENV.compile("[object, x, {'a': null}]")
    activation = ENV.activation(DATA)
    program.evaluate(activation)
    gc.disable()
    try:
        before = sys.getrefcount(None)
        for _ in range(500):
            assert program.evaluate(activation).value[1] is None
        after = sys.getrefcount(None)
    finally:
        gc.enable()
    assert after >= before - 10       # was 4 lost per call: -2000


@pytest.mark.parametrize("expression, value", [
    # cel-go's presence test on a receiver that is not a map is false (attributes.go refQualify)
    ("has(object.n.f)", False),
    ("has(object.s.f)", False),
    ("has(object.l.f)", False),
    ("has(object.m.k.z)", False),
    ("has(object.m.k)", True),
    ("has(object.m.z)", False),
    ("!has(x.spec) && has(object.m.k)", True),
    # has() inside a string literal is text
    ("'has(x.y)' == 'has(x.y)'", True),
])
def test_has_follows_cel_go(expression: str, value: bool) -> None:
    from kubectl_kyrec.cel.compiler import PolicyCompiler
    from kubectl_kyrec.model import Source

    compiler = PolicyCompiler(ENV, Environment([], ("object", "x", "variables")), [], Source("p.yaml", 1), "p")
    outcome = compiler.compile(expression, "e").evaluate(ENV.activation(DATA))
    assert outcome.ok and outcome.value is value


def test_has_on_a_missing_receiver_stays_an_error() -> None:
    from kubectl_kyrec.cel.compiler import PolicyCompiler
    from kubectl_kyrec.model import Source

    compiler = PolicyCompiler(ENV, Environment([], ("object", "x", "variables")), [], Source("p.yaml", 1), "p")
    assert compiler.compile("has(object.missing.f)", "e").evaluate(ENV.activation(DATA)).error == \
        "no such key: missing"


@pytest.mark.parametrize("expression, message", [
    # the policy's variables are cel.bind frames around the expression; the field or index is found inside
    ("variables.v.k", "no such key: k"),
    ("variables.v['k']", "no such key: k"),
    ("variables.w", "no such key: z"),
    ("object.l.all(i, variables.v.q)", "no such key: q"),
])
def test_cel_go_wording_through_policy_variables(expression: str, message: str) -> None:
    from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl
    from kubectl_kyrec.model import Source

    variables = [VariableDecl("v", "object.n"), VariableDecl("w", "variables.v.z")]
    compiler = PolicyCompiler(ENV, Environment([], ("object", "x", "variables")), variables,
                              Source("p.yaml", 1), "p")
    assert compiler.compile(expression, "e").evaluate(ENV.activation(DATA)).error == message


def test_field_named_per_activation_by_the_same_program() -> None:
    # the receivers of a program's selections are compiled once and kept: which one fails, and so which
    # field is named, still depends on each activation's data
    program = ENV.compile("object.a.b == 1 || object.c.d == 2")
    null_a = ENV.activation({"object": {"a": None, "c": {"d": 1}}, "x": None})
    null_c = ENV.activation({"object": {"a": {"b": 0}, "c": None}, "x": None})
    assert program.evaluate(null_a).error == "no such key: b"
    assert program.evaluate(null_c).error == "no such key: d"
    assert program.evaluate(null_a).error == "no such key: b"
    assert program.evaluate(ENV.activation({"object": {"a": {"b": 1}}, "x": None})).value is True


@pytest.mark.parametrize("texts", [
    ("true", "object.num == 1", "dyn(object.num == 1)"),                # all true: None
    ("true", "object.num == 2", "x.spec"),                              # a false before an error
    ("object.num == 1", "dyn(true)", "x.spec", "false"),                 # an error first
    ("true", "dyn(object.s)", "false"),                                 # a dyn string: not a bool
    ("true", "dyn(object.n)", "false"),                                 # a dyn null
])
def test_first_not_true_is_evaluate_program_by_program(texts: tuple[str, ...]) -> None:
    from kubectl_kyrec.cel.engine import first_not_true

    programs = [ENV.compile(t) for t in texts]
    activation = ENV.activation(DATA)
    expected = next(((i, o) for i, p in enumerate(programs) if (o := p.evaluate(activation)).value is not True),
                    None)
    assert first_not_true(programs, activation) == expected


@pytest.mark.parametrize(("expression", "message"), [
    # cel-go checker/errors.go typeDoesNotSupportFieldSelection; cel-cpp words it as an operand problem
    ("[1][0].a", "type 'int' does not support field selection"),
    ("'s'.f", "type 'string' does not support field selection"),
    # the texts the engines share stay as they are
    ('1 + "a"', "found no matching overload for '_+_' applied to '(int, string)'"),
    ("x.bar()", "undeclared reference to 'bar' (in container '')"),
])
def test_compile_errors_word_as_cel_go(expression: str, message: str) -> None:
    with pytest.raises(CompileError) as caught:
        ENV.compile(expression)
    assert caught.value.message == message
