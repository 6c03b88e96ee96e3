"""Kubernetes semver library (version 1): cases after semver_test.go, with our own versions."""

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries

ENV = Environment(kubernetes_libraries(), ["object"])


def run(expr: str, obj: object = None):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


@pytest.mark.parametrize(("expr", "expected"), [
    ("isSemver('2.4.6-rc.2+sha.5114f85')", True),
    ("isSemver('')", False),
    ("isSemver('v2.4.6')", False),
    ("isSemver(' 2.4.6')", False),
    ("isSemver('2. 4.6')", False),
    ("isSemver('2.4.6 ')", False),
    ("isSemver('02.04.06')", False),
    ("isSemver('2')", False),
    ("isSemver('2.4')", False),
    ("isSemver('2.4.6-01')", False),
    ("isSemver('2.4.6+')", False),
    ("isSemver('', true)", False),
    ("isSemver(' 2.4.6', true)", False),
    ("isSemver('2.4.6 ', true)", False),
    ("isSemver('v2.4.6', true)", True),
    ("isSemver('02.04.06', true)", True),
    ("isSemver('2', true)", True),
    ("isSemver('2.4', true)", True),
    ("semver('v02.04', true) == semver('2.4.0')", True),
    ("semver('2.4.6') == semver('2.4.6')", True),
    ("semver('2.4.6+build.1') == semver('2.4.6+build.2')", True),  # build metadata has no precedence
    ("semver('2.4.6') == semver('2.4.7')", False),
    ("semver('2.4.6-alpha') == semver('2.4.6')", False),
    ("semver('2.4.6').isLessThan(semver('2.10.0'))", True),
    ("semver('2.4.6').isLessThan(semver('2.4.6'))", False),
    ("semver('3.0.0').isGreaterThan(semver('2.99.99'))", True),
    ("semver('3.0.0').isGreaterThan(semver('3.0.0'))", False),
    ("semver('2.4.6').compareTo(semver('2.4.6'))", 0),
    ("semver('2.4.6').compareTo(semver('3.0.0'))", -1),
    ("semver('2.4.6').compareTo(semver('0.9.9'))", 1),
    # pre-release precedence from semver.org, as blang/semver implements it
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))", True),
    ("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", True),
    ("semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))", True),
    ("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", True),
    ("semver('7.8.9').major()", 7),
    ("semver('7.8.9').minor()", 8),
    ("semver('7.8.9').patch()", 9),
])
def test_semver_functions(expr: str, expected: object) -> None:
    outcome = run(expr)
    assert outcome.error is None
    assert outcome.value == expected and type(outcome.value) is type(expected)


@pytest.mark.parametrize(("expr", "error"), [
    ("semver('v2.0')", "No Major.Minor.Patch elements found"),
    ("semver('')", "Version string empty"),
    ("semver('a.0.0')", 'Invalid character(s) found in major number "a"'),
    ("semver('1.02.0')", 'Minor number must not contain leading zeroes "02"'),
    ("semver('1.2.x')", 'Invalid character(s) found in patch number "x"'),
    ("semver('1.2.3-')", "Prerelease is empty"),
    ("semver('1.2.3-beta.05')", 'Numeric PreRelease version must not contain leading zeroes "05"'),
    ("semver('1.2.3-be_ta')", 'Invalid character(s) found in prerelease "be_ta"'),
    ("semver('1.2.3+')", "Build meta data is empty"),
    ("semver('1..3')", 'strconv.ParseUint: parsing "": invalid syntax'),
    ("semver('99999999999999999999.0.0')",
     'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
    ("semver('1.2-rc', true)", "short version cannot contain PreRelease/Build meta data"),
    ("semver('1.0.0').isLessThan(quantity('1'))", "no such overload"),
])
def test_semver_errors(expr: str, error: str) -> None:
    assert run(expr).error == error


def test_shared_comparisons_route_by_type() -> None:
    # isLessThan is one overload for Quantity and Semver; each must still compare by its own rules.
    assert run("semver('1.10.0').isLessThan(semver('1.9.0'))").value is False
    assert run("quantity('1.10').isLessThan(quantity('1.9'))").value is True
