"""PolicyCompiler: variables composed through cel.bind, compile errors by field and column."""

from __future__ import annotations

import pytest

from kubectl_kyrec.cel.compiler import PolicyCompiler, VariableDecl, variable_references
from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source

ENV = Environment([], ["object"])
CHECK = Environment([], ["object", "variables"])


def compiler(*variables: tuple[str, str]) -> PolicyCompiler:
    return PolicyCompiler(ENV, CHECK, [VariableDecl(n, e) for n, e in variables], Source("p.yaml", 7),
                          "ValidatingPolicy \"p\"")


def test_references_skip_strings_and_member_access() -> None:
    text = "variables.a + 'variables.b' + x.variables.c + variables['d'] + variables .e"
    assert [r.name for r in variable_references(text)] == ["a", "d", "e"]


def test_optional_variable_flows_into_expression() -> None:
    c = compiler(("labels", "object.metadata.?labels"), ("team", "variables.labels.?team.orValue('none')"))
    program = c.compile("variables.team", "spec.validations[0].expression")
    act = ENV.activation({"object": {"metadata": {"labels": {"team": "a"}}}})
    assert program.evaluate(act).value == "a"
    assert program.evaluate(ENV.activation({"object": {"metadata": {}}})).value == "none"


def test_unused_failing_variable_is_lazy() -> None:
    c = compiler(("boom", "object.missing.field"), ("ok", "1"))
    program = c.compile("variables.ok == 1", "spec.validations[0].expression")
    assert program.evaluate(ENV.activation({"object": {}})).value is True


def test_used_failing_variable_errors_the_expression() -> None:
    c = compiler(("boom", "object.missing"))
    outcome = c.compile("variables.boom == 1", "x").evaluate(ENV.activation({"object": {}}))
    assert outcome.error == "no such key: missing"


def test_compile_error_names_file_field_and_column() -> None:
    with pytest.raises(InputError) as info:
        compiler().compile("object.a ==", "spec.validations[2].expression")
    text = str(info.value)
    assert text.startswith("p.yaml:7: ValidatingPolicy \"p\": spec.validations[2].expression: column ")
    assert "Syntax error" in text


def test_unknown_variable_is_a_compile_error() -> None:
    with pytest.raises(InputError, match="undefined field 'nope'"):
        compiler(("a", "1")).compile("variables.nope", "spec.validations[0].expression")


def test_variable_may_not_use_a_later_one() -> None:
    with pytest.raises(InputError, match=r"spec.variables\[0\].expression: .*undefined field 'b'"):
        compiler(("a", "variables.b"), ("b", "1"))


def test_result_type_is_checked_and_worded_as_kyverno() -> None:
    # kk pkg/cel/compiler/compiler.go: CompileValidation, CompileAuditAnnotation
    with pytest.raises(InputError, match=r"spec.validations\[0\].expression: .*output is expected to be of type bool$"):
        compiler().compile("'x'", "spec.validations[0].expression", ("bool",))
    with pytest.raises(InputError, match="output is expected to be of type string$"):
        compiler().compile("1", "spec.validations[0].messageExpression", ("string",))
    with pytest.raises(InputError, match="output is expected to be either of type string or null_type$"):
        compiler().compile("1", "spec.auditAnnotations[0].valueExpression", ("string", "null"))


def test_or_value_on_plain_values_is_the_value() -> None:
    c = compiler(("containers", "object.spec.containers"), ("maybe", "object.?spec.?x"))
    act = ENV.activation({"object": {"spec": {"containers": [1, 2], "vols": []}}})
    assert c.compile("object.spec.vols.orValue([9]).size()", "e").evaluate(act).value == 0
    assert c.compile("variables.containers.orValue([]).size()", "e").evaluate(act).value == 2
    # receivers that are (or may be) optional keep the real orValue
    assert c.compile("variables.maybe.orValue(7)", "e").evaluate(act).value == 7
    assert c.compile("object.spec.?missing.orValue('d')", "e").evaluate(act).value == "d"
    text = "'x.orValue(1)' + string(size(object.spec.vols.orValue(1)))"
    assert c.compile(text, "e").evaluate(act).value == 'x.orValue(1)0'


def test_has_on_a_declared_variable() -> None:
    c = compiler(("resp", "object.?missing"), ("m", "{'a': 1}"))
    act = ENV.activation({"object": {}})
    assert c.compile("has(variables.resp) && has(variables.m.a)", "e").evaluate(act).value is True
    with pytest.raises(InputError, match="undefined field 'nope'"):
        c.compile("has(variables.nope)", "e")


@pytest.mark.parametrize(("text", "column"), [
    ("object.metadata.name.matches('[')", 30),
    ("object.metadata.name.matches(r'\\d[')", 30),
    ("object.metadata.name.matches( \"(\" )", 31),
])
def test_a_constant_regex_that_does_not_compile_is_a_compile_error(text: str, column: int) -> None:
    # cel-go ValidateRegexLiterals (Kubernetes' base environment): `invalid matches argument` at the literal
    with pytest.raises(InputError) as info:
        compiler().compile(text, "spec.validations[0].expression")
    assert info.value.message == (f"ValidatingPolicy \"p\": spec.validations[0].expression: column {column}: "
                                  "invalid matches argument")


@pytest.mark.parametrize("text", [
    "object.metadata.name.matches('^a\\\\d+$')",
    "object.metadata.name.matches('[' + 'a]')",       # not a constant: left to the runtime
    "'x.matches(\"[\")' == object.metadata.name",      # inside a string
    "object.metadata.name.matches(object.metadata.namespace)",
])
def test_other_matches_calls_compile(text: str) -> None:
    compiler().compile(text, "spec.validations[0].expression")
