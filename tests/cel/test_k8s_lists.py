"""Kubernetes list library: cases after lists_test.go in k8s.io/apiserver, with values of our own."""

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries

ENV = Environment(kubernetes_libraries(), ["object"])


def run(expr: str, obj: object = None):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


@pytest.mark.parametrize(("expr", "expected"), [
    ("[].isSorted()", True),
    ("[7].isSorted()", True),
    ("[2, 5, 5, 9].isSorted()", True),
    ("[3, 1].isSorted()", False),
    ("['ant', 'bee', 'bee', 'cat'].isSorted()", True),
    ("['b', 'a'].isSorted()", False),
    ("[1.5, 0.5].isSorted()", False),
    ("[false, true].isSorted()", True),
    ("[b'a', b'b'].isSorted()", True),
    ("[duration('1s'), duration('1m')].isSorted()", True),
    ("[timestamp('2024-01-02T00:00:00Z'), timestamp('2024-01-01T00:00:00Z')].isSorted()", False),
    ("[4, 6].sum()", 10),
    ("[0.25, 0.5].sum()", 0.75),
    ("[].sum()", 0),
    ("[1u, 2u].sum() == 3u", True),
    ("[8, 2, 5].min()", 2),
    ("[8, 2, 5].max()", 8),
    ("['pear', 'apple'].min()", "apple"),
    ("[2.5].max()", 2.5),
    ("([0] + object).min()", 0),
    ("[1, 2, 2, 3].indexOf(2)", 1),
    ("['a', 'b', 'b', 'c'].lastIndexOf('b')", 2),
    ("[1.0].indexOf(1.1)", -1),
    ("[].indexOf('x')", -1),
    ("[[1], [2]].indexOf([2])", 1),
    ("[{'k': 1}].lastIndexOf({'k': 1})", 0),
    # CEL equality: a bool is never equal to a number, but 1 and 1.0 are equal
    ("dyn([1, true]).indexOf(true)", 1),
    ("dyn([1.0, 2]).indexOf(1)", 0),
    # the strings extension's indexOf keeps working beside the list overloads
    ("'banana'.indexOf('an')", 1),
    ("'banana'.lastIndexOf('an')", 3),
])
def test_list_functions(expr: str, expected: object) -> None:
    outcome = run(expr, obj=[])
    assert outcome.error is None
    assert outcome.value == expected and type(outcome.value) is type(expected)


@pytest.mark.parametrize(("expr", "error"), [
    ("[].min()", "min called on empty list"),
    ("[].max()", "max called on empty list"),
    ("dyn([[1], [2]]).isSorted()", "no such overload"),
    ("dyn([1, 2.5]).sum()", "no such overload"),
    ("[9223372036854775807, 1].sum()", "integer overflow"),
])
def test_list_errors(expr: str, error: str) -> None:
    assert run(expr).error == error


def test_sorting_over_object_data() -> None:
    obj = {"ports": [80, 443, 8080], "names": ["web", "api"]}
    assert run("object.ports.isSorted() && !object.names.isSorted()", obj).value is True
    assert run("object.ports.max() - object.ports.min()", obj).value == 8000


def test_durations_cannot_be_returned_by_the_engine() -> None:
    # cel-go returns a duration here; this engine cannot hand one back from a Python function.
    outcome = run("[duration('1s'), duration('2s')].sum()")
    assert outcome.error is not None and "cannot return a duration" in outcome.error
