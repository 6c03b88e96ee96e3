"""Values embedded in substituted strings and JMESPath's to_string go through Go's json.Marshal (gojson, the
encoder the CEL json library and the report hash share), byte for byte what Kyverno writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_kyrec.classic import variables
from kubectl_kyrec.classic.jmespath_eval import default_engine
from kubectl_kyrec.classic.json_context import EvalContext

CASES: list[tuple[Any, str]] = [
    # keys sorted by their bytes, compact, `<>&` and U+2028/U+2029 escaped, the rest of Unicode as is
    ({"b": 1, "a": [True, None, "x"], "é": {}, "Z": "<a&b>"},
     '{"Z":"\\u003ca\\u0026b\\u003e","a":[true,null,"x"],"b":1,"é":{}}'),
    # (a string alone is substituted as it is: these sit in a list)
    (["\u2028\u2029\n\t\x00\x7f😀"], '["\\u2028\\u2029\\n\\t\\u0000\x7f😀"]'),
    # float64 in strconv's shortest form: 'f', 'e' below 1e-6 and from 1e21 with an unpadded exponent
    ([1.5, 2.0, -0.0, 1e20, 1e21, 1e-6, 1e-7, 123456789.125], "[1.5,2,-0,100000000000000000000,1e+21,0.000001,1e-7,"
                                                               "123456789.125]"),
    # what Go's decoder holds: a lone surrogate escape is U+FFFD, an integer beyond int64 a float64
    ([json.loads('"a\\ud800b"')], '["a\ufffdb"]'),
    ([2**63 - 1, 2**63], "[9223372036854775807,9223372036854776000]"),
]


@pytest.mark.parametrize(("value", "expected"), CASES)
def test_an_embedded_value_is_go_json(value: Any, expected: str) -> None:
    ctx = EvalContext({"v": value})
    assert variables.substitute_all(ctx, "x={{ v }}") == "x=" + expected


@pytest.mark.parametrize(("value", "expected"), CASES[:3])
def test_to_string_is_go_json(value: Any, expected: str) -> None:
    assert default_engine().search("to_string(v)", {"v": value}) == expected


def test_a_value_json_refuses_is_a_substitution_error() -> None:
    ctx = EvalContext({"v": [float("nan")]})
    with pytest.raises(variables.SubstitutionError, match=r"failed to resolve v at path : failed to marshal list"):
        variables.substitute_all(ctx, "x={{ v }}")
