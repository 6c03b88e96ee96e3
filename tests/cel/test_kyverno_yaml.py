"""yaml.parse: sigs.k8s.io/yaml over go-yaml v2 (YAML 1.1 scalars, JSON-shaped output)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_yaml import yaml_library
from kubectl_kyrec.load.sigs_yaml import GoYAMLError, parse_yaml


def run(expr: str, **variables: Any) -> Any:
    env = Environment([yaml_library()], list(variables))
    outcome = env.compile(expr).evaluate(env.activation(variables))
    return outcome.error if outcome.error is not None else outcome.value


def test_parse_through_cel() -> None:
    assert run("yaml.parse(text).spec.replicas", text="spec:\n  replicas: 3\n") == 3.0
    # go-yaml v2 reads a bare `y` as true, even inside a flow sequence
    assert run("yaml.parse(text).a", text="a: [x, y]") == ["x", True]


@pytest.mark.parametrize(("scalar", "value"), [
    ("y", True), ("Yes", True), ("on", True), ("ON", True), ("n", False), ("No", False), ("off", False),
    ("~", None), ("null", None), ("", None),
    ("1", 1.0), ("0x1F", 31.0), ("017", 15.0), ("0o17", 15.0), ("1_000", 1000.0), ("+12", 12.0),
    ("1e3", 1000.0), (".5", 0.5), ("08", 8.0), ("-0b101", -5.0),
    ("2001-12-14", "2001-12-14"), ("1e400", "1e400"), ("1.2.3", "1.2.3"), ("'1'", "1"), ('"yes"', "yes"),
])
def test_plain_scalars_resolve_like_go_yaml_v2(scalar: str, value: Any) -> None:
    assert parse_yaml(f"v: {scalar}") == {"v": value}


def test_keys_become_json_strings_like_sigs_yaml() -> None:
    assert parse_yaml("1: a\ntrue: b\n1.5: c\nn: d") == {"1": "a", "true": "b", "1.5": "c", "false": "d"}


def test_only_the_first_document_is_read() -> None:
    assert parse_yaml("a: 1\n---\nb: 2\n") == {"a": 1.0}


def test_merge_keys_and_anchors() -> None:
    assert parse_yaml("x: &a {p: 1}\n'y':\n  <<: *a\n  q: 2") == {"x": {"p": 1.0}, "y": {"p": 1.0, "q": 2.0}}


def test_tags() -> None:
    assert parse_yaml("a: !custom bar\nb: !!str 1\nc: !!binary aGVsbG8=\nd: !!timestamp 2001-12-14") == {
        "a": "bar", "b": "1", "c": "hello", "d": "2001-12-14"}


def test_empty_input_is_null() -> None:
    assert run('yaml.parse("") == null') is True


def test_syntax_errors_name_the_line() -> None:
    with pytest.raises(GoYAMLError) as info:
        parse_yaml("a: 1\nb: c: d\n")
    assert str(info.value) == ("error converting YAML to JSON: yaml: line 2: mapping values are not allowed "
                               "in this context")


def test_nan_cannot_become_json() -> None:
    assert run('yaml.parse("a: .nan")') == "error converting YAML to JSON: json: unsupported value: NaN"


def test_null_key_is_rejected() -> None:
    with pytest.raises(GoYAMLError, match="^error converting YAML to JSON: unsupported map key"):
        parse_yaml("~: 1")
