"""The classic engine's JMESPath functions over the Go ports (golang/, load/sigs_yaml.py): each port's own error
type reaches JMESPath as a FunctionError carrying Go's text, which the engine reports as an `error` result."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest

from kubectl_kyrec.classic.jmespath_functions import kyverno_functions
from kubectl_kyrec.classic.jmespath_types import FunctionError


def _call(name: str, *args: Any) -> Any:
    functions = kyverno_functions(lambda: datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC), random.Random(7))
    return functions[name].handler(*args)


@pytest.mark.parametrize(("name", "args", "message"), [
    ("random", ("[a",), "error parsing regexp: "),
    ("parse_yaml", ("a: 1\nb: c: d\n",), "error converting YAML to JSON: yaml: line 2: "),
    ("parse_json", ("{bad",), "invalid character 'b' looking for beginning of object key string"),
    ("x509_decode", ("not a certificate",), "failed to decode PEM block"),
    ("x509_decode", ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",),
     "x509: malformed certificate"),
])
def test_go_errors_are_function_errors(name: str, args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(FunctionError) as info:
        _call(name, *args)
    assert str(info.value).startswith(message)


def test_the_ports_still_answer() -> None:
    assert _call("parse_json", '{"a": [1, "x"]}') == {"a": [1.0, "x"]}
    assert _call("parse_yaml", "a: yes\nb: 0x1F") == {"a": True, "b": 31.0}
    assert len(_call("random", "[0-9]{4}")) == 4
    assert _call("semver_compare", "1.2.3", ">=1.0.0 <2.0.0") is True
