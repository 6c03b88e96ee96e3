"""Kubernetes quantity library: cases after quantity_test.go (apiserver and apimachinery), own values."""

from decimal import Decimal

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.cel.k8s_quantity import ERR_FORMAT, QuantityError, parse_quantity

ENV = Environment(kubernetes_libraries(), ["object"])


def run(expr: str, obj: object = None):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


@pytest.mark.parametrize(("text", "value"), [
    ("0", "0"),
    ("7", "7"),
    ("3Ki", "3072"),
    ("2Gi", "2147483648"),
    ("5n", "0.000000005"),
    ("250m", "0.25"),
    ("40k", "40000"),
    ("1.5G", "1500000000"),
    ("2e3", "2000"),
    ("1.25E-3", "0.00125"),
    ("-4M", "-4000000"),
    ("+12", "12"),
    (".5", "0.5"),
    ("1.", "1"),
    ("0.5Mi", "524288"),
    # below a nanounit, the magnitude rounds up to the next nanounit
    ("1.0001n", "0.000000002"),
    ("-1.0001n", "-0.000000002"),
    ("0.0000000001", "0.000000001"),
    # binary suffixes cap at 2^63-1
    ("9Ei", "9223372036854775807"),
    ("-16Ei", "-9223372036854775807"),
    # the digit-less forms ParseQuantity reads as zero on its int64 path
    (".", "0"),
    ("Ki", "0"),
])
def test_parse_values(text: str, value: str) -> None:
    assert parse_quantity(text) == Decimal(value)


@pytest.mark.parametrize(("text", "error"), [
    ("", ERR_FORMAT),
    ("10Mo", ERR_FORMAT),
    (" 5", ERR_FORMAT),
    ("5 ", ERR_FORMAT),
    ("1.2.3", ERR_FORMAT),
    ("ten", ERR_FORMAT),
    ("10Mm", "unable to parse quantity's suffix"),
    ("200K", "unable to parse quantity's suffix"),
    ("3i", "unable to parse quantity's suffix"),
    ("1e", "unable to parse quantity's suffix"),
    ("1e2147483648", "unable to parse quantity's suffix"),
    ("Ei", "unable to parse numeric part of quantity"),
])
def test_parse_errors(text: str, error: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert str(caught.value) == error


@pytest.mark.parametrize(("expr", "expected"), [
    ("quantity('1Gi') == quantity('1024Mi')", True),
    ("quantity('300M') == quantity('0.3G') && quantity('0.3G') == quantity('300M')", True),
    ("quantity('3M') == quantity('0.003G') && quantity('3000k') == quantity('3M')", True),
    ("quantity('300M') == quantity('0.4G')", False),
    ("isQuantity('30')", True),
    ("isQuantity('30Mi')", True),
    ("isQuantity('30Mo')", False),
    ("isQuantity('30Mm')", False),
    ("quantity('60M').isLessThan(quantity('60Mi'))", True),
    ("quantity('60Mi').isLessThan(quantity('60M'))", False),
    ("quantity('2Gi').isGreaterThan(quantity('2G'))", True),
    ("quantity('2G').isGreaterThan(quantity('2G'))", False),
    ("quantity('400M').compareTo(quantity('0.4G'))", 0),
    ("quantity('60M').compareTo(quantity('60Mi'))", -1),
    ("quantity('60Mi').compareTo(quantity('60M'))", 1),
    ("quantity('40k').add(quantity('30')) == quantity('40.03k')", True),
    ("quantity('40k').add(30).isLessThan(quantity('40030'))", False),
    ("quantity('40k').sub(quantity('30')) == quantity('39.97k')", True),
    ("quantity('40k').sub(30) == quantity('39970')", True),
    ("quantity('40k').add(10).sub(quantity('90k')).asInteger()", -49990),
    ("quantity('40k').add(10).sub(quantity('90k')).sub(-50000).asInteger()", 10),
    ("quantity('40k').asInteger()", 40000),
    ("quantity('40').isInteger()", True),
    ("quantity('2.5').isInteger()", False),
    ("quantity('8888888888888888888888888888888888G').isInteger()", False),
    ("quantity('40.125k').asApproximateFloat()", 40125.0),
    ("quantity('40k').sub(10000).asApproximateFloat() == 30000.0", True),
    ("sign(quantity('-3m'))", -1),
    ("sign(quantity('0'))", 0),
    ("sign(quantity('2Ki'))", 1),
])
def test_quantity_functions(expr: str, expected: object) -> None:
    outcome = run(expr)
    assert outcome.error is None
    assert outcome.value == expected and type(outcome.value) is type(expected)


@pytest.mark.parametrize(("expr", "error"), [
    ("quantity('10Mo')", ERR_FORMAT),
    ("quantity('10Mm')", "unable to parse quantity's suffix"),
    ("quantity('8888888888888888888888888888888888G').asInteger()", "cannot convert value to integer"),
    ("quantity('1.5').asInteger()", "cannot convert value to integer"),
    # only Quantity maps are quantities
    ("sign({'value': '1'})", "no such overload"),
    ("quantity('1').add({'a': 1})", "no such overload"),
    ("quantity('1').isLessThan(semver('1.0.0'))", "no such overload"),
])
def test_quantity_errors(expr: str, error: str) -> None:
    assert run(expr).error == error


def test_sign_is_not_a_member_in_kubernetes() -> None:
    # Kubernetes declares sign(Quantity) as a global overload, so the member form does not compile.
    with pytest.raises(Exception, match="sign"):
        ENV.compile("quantity('1').sign()")


def test_value_based_integer_check_differs_from_kubernetes_for_milli_forms() -> None:
    # Documented difference: Kubernetes keeps scale -3 for "1000m" and reports isInteger() == false.
    assert run("quantity('1000m').isInteger()").value is True
