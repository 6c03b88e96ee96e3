"""Generation templates: Kyverno's template_test.go cases, rendered through kyrec's CEL engine."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment, Program
from kubectl_kyrec.cel.template import TemplateError, compile_template, extract_expressions, go_format_v

ENV = Environment([], ["variables", "object"])
VARS = {"targetName": "myns", "targetNamespace": "myns", "port": 8080, "enabled": True,
        "selector": {"matchLabels": {"app": "web"}}, "labels": {"team": "dev", "env": "prod"},
        "nsList": ["a", "b"], "ratio": 0.25}
ACTIVATION = ENV.activation({"variables": VARS, "object": {}})


def _compile(expression: str, line: int) -> Program:
    return ENV.compile(expression)


def render(value: str, interpolate: str = "cel") -> list[dict[str, Any]]:
    return compile_template(value, interpolate, _compile).render(ACTIVATION)


def test_plain_yaml_without_interpolation() -> None:
    assert render("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: static}\ndata: {key: value}", "none") == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "static"}, "data": {"key": "value"}}]


def test_placeholders_are_inert_without_interpolation() -> None:
    assert render("metadata:\n  name: (( variables.targetName ))", "none") == [
        {"metadata": {"name": "(( variables.targetName ))"}}]


def test_scalar_and_embedded_placeholders() -> None:
    out = render("metadata:\n  name: (( variables.targetName ))-scraping\n"
                 "  namespace: (( variables.targetNamespace ))")
    assert out == [{"metadata": {"name": "myns-scraping", "namespace": "myns"}}]


def test_structural_splices_keep_types() -> None:
    out = render("metadata:\n  labels: (( variables.labels ))\n  finalizers: (( variables.nsList ))\n"
                 "spec:\n  port: (( variables.port ))\n  enabled: (( variables.enabled ))\n"
                 "  selector: (( variables.selector ))")
    assert out == [{"metadata": {"labels": {"team": "dev", "env": "prod"}, "finalizers": ["a", "b"]},
                    "spec": {"port": 8080, "enabled": True, "selector": {"matchLabels": {"app": "web"}}}}]


def test_embedded_scalars_print_as_go_does() -> None:
    out = render("a: p-(( variables.port ))-(( variables.enabled ))-(( variables.ratio ))\n"
                 "b: \"x(( string(variables.port) ))\"")
    assert out == [{"a": "p-8080-true-0.25", "b": "x8080"}]


def test_multi_document_and_empty_documents() -> None:
    out = render("metadata: {name: first}\n---\n---\nmetadata: {name: second, namespace: other}\n")
    assert [d["metadata"]["name"] for d in out] == ["first", "second"]


def test_escaped_placeholder_stays_literal() -> None:
    assert render("data:\n  key: \\(( literal ))") == [{"data": {"key": "(( literal ))"}}]


def test_scalars_decode_as_yaml_v3() -> None:
    # YAML 1.2 booleans, Go integer syntax (a leading 0 is octal), timestamps stay strings
    out = render("a: yes\nb: 017\nc: 0x1F\nd: 2001-12-14\ne: 1.5\nf: ~\ng: True\nh: '12'\n", "none")
    assert out == [{"a": "yes", "b": 15, "c": 31, "d": "2001-12-14", "e": 1.5, "f": None, "g": True, "h": "12"}]


def test_embedded_structured_result_is_refused() -> None:
    with pytest.raises(TemplateError, match='document 1: field "metadata": field "name": placeholder '
                                            '"variables.labels" embedded in a string must evaluate to a scalar, '
                                            r"got map\[string\]interface \{\}"):
        render("metadata:\n  name: prefix-(( variables.labels ))")


def test_evaluation_error_names_the_path() -> None:
    with pytest.raises(TemplateError) as info:
        render("spec:\n  items:\n  - name: (( variables.nope ))")
    assert str(info.value) == ('document 1: field "spec": field "items": item 0: field "name": failed to '
                               'evaluate placeholder "variables.nope": no such key: nope')


@pytest.mark.parametrize("value, message", [
    ("apiVersion: v1\nkind: [unclosed", "failed to parse YAML"),
    ("", "at least one YAML document"),
    ("- a\n- b", "line 1: document must be a mapping"),
    ("metadata:\n  name: \"(( variables.name\"", "line 2: unterminated placeholder"),
    ("metadata:\n  labels:\n    (( variables.key )): enabled", "line 3: placeholders are not supported in mapping"),
    ("a: &x {b: 1}\nc:\n  <<: *x\n  d: (( variables.port ))", "merge keys are not supported"),
])
def test_compile_errors(value: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        compile_template(value, "cel", _compile)


def test_every_placeholder_is_compiled_with_its_line() -> None:
    seen: list[tuple[str, int]] = []

    def record(expression: str, line: int) -> Program:
        seen.append((expression, line))
        return ENV.compile(expression)

    compile_template("a: 1\nb: (( variables.a ))\nc:\n  d: x-(( variables.b ))-(( variables.c ))", "cel", record)
    assert seen == [("variables.a", 2), ("variables.b", 4), ("variables.c", 4)]


def test_renders_are_independent() -> None:
    template = compile_template("data:\n  nested: {key: value}", "none", _compile)
    first = template.render(ACTIVATION)
    first[0]["data"]["nested"]["key"] = "mutated"
    assert template.render(ACTIVATION)[0]["data"]["nested"]["key"] == "value"


def test_extract_expressions() -> None:
    assert extract_expressions("metadata:\n  name: (( variables.a ))\n  namespace: p-(( variables.b ))") == [
        "variables.a", "variables.b"]
    assert extract_expressions("kind: [unclosed") == []


@pytest.mark.parametrize("value, text", [(1.0, "1"), (1e6, "1e+06"), (123456.0, "123456"), (0.0001, "0.0001"),
                                         (0.00001, "1e-05"), (-2.5, "-2.5"), (True, "true"), (7, "7")])
def test_go_format_v(value: object, text: str) -> None:
    assert go_format_v(value) == text
