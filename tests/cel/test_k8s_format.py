"""Kubernetes format library: the validators, and what the engine lets CEL reach of them."""

import pytest

from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.k8s_format import FORMATS, validate_format
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries

ENV = Environment(kubernetes_libraries(), ["object"])

LABEL_REGEX_ERROR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                     "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                     "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


@pytest.mark.parametrize(("name", "value", "errors"), [
    ("dns1123Label", "web-01", []),
    ("dns1123Label", "Web", [LABEL_REGEX_ERROR]),
    ("dns1123Label", "web.internal", ["must not contain dots"]),
    ("dns1123Label", "a" * 64, ["must be no more than 63 characters"]),
    ("dns1123Subdomain", "api.example.com", []),
    ("dns1123Subdomain", "api..example", [
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ("dns1035Label", "x9", []),
    ("dns1035Label", "9x", [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ("dns1123LabelPrefix", "web-", []),
    ("qualifiedName", "example.com/Team_A", []),
    ("qualifiedName", "/Team", ["prefix part must be non-empty"]),
    ("qualifiedName", "a/b/c", [
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
        "and '/' (e.g. 'example.com/MyName')"]),
    ("labelValue", "", []),
    ("labelValue", "v1.2_beta", []),
    ("uri", "https://example.com/x", []),
    ("uri", "relative/x", ['parse "relative/x": invalid URI for request']),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", []),
    ("uuid", "123e4567", ["does not match the UUID format"]),
    ("byte", "aGVsbG8=", []),
    ("byte", "aGVsbG8", ["invalid base64"]),
    ("date", "2024-02-29", []),
    ("date", "2023-02-29", ["invalid date"]),
    ("datetime", "2024-05-01T10:20:30Z", []),
    ("datetime", "yesterday", ["invalid datetime"]),
])
def test_validators(name: str, value: str, errors: list[str]) -> None:
    assert validate_format(name, value) == errors


def test_constructors_are_declared_for_every_format() -> None:
    for name, (kube_name, _) in FORMATS.items():
        program = ENV.compile(f"format.{name}()")
        assert program.evaluate(ENV.activation({"object": None})).value == {
            "@type": "kubernetes.NamedFormat", "name": kube_name}


@pytest.mark.parametrize("expr", [
    "format.dns1123Label().validate('x').hasValue()",
    "format.named('dns1123Label').hasValue()",
])
def test_optional_returning_functions_are_not_declared(expr: str) -> None:
    # The engine cannot return optional values from Python, so these must not compile (rather than
    # compile to something that behaves differently from Kubernetes).
    with pytest.raises(CompileError):
        ENV.compile(expr)
