"""Kubernetes regex library: find/findAll with Go (RE2) semantics and Go's error texts."""

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.golang.regexp import RegexSyntaxError, compile_re2

ENV = Environment(kubernetes_libraries(), ["object"])


def run(expr: str, obj: object = None):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


@pytest.mark.parametrize(("expr", "expected"), [
    ("'build 2024 release'.find('[0-9]+')", "2024"),
    ("'build release'.find('[0-9]+')", ""),
    ("'v1.2.3'.find('[0-9]+\\\\.[0-9]+')", "1.2"),
    ("'10.0.0.7 and 10.0.0.9'.findAll('10\\\\.0\\\\.0\\\\.[0-9]')", ["10.0.0.7", "10.0.0.9"]),
    ("'10.0.0.7 and 10.0.0.9'.findAll('10\\\\.0\\\\.0\\\\.[0-9]', 1)", ["10.0.0.7"]),
    ("'abc'.findAll('x')", []),
    ("'abc'.findAll('[a-z]', 0)", []),
    ("'abc'.findAll('[a-z]', -1)", ["a", "b", "c"]),
    # Go drops an empty match that touches the previous match; Python's re.findall keeps it
    ("'42 ab 7'.findAll('[0-9]*')", ["42", "", "", "", "7"]),
    # RE2's $ is end of text: no match before a trailing newline
    ("'tag\\n'.find('tag$')", ""),
    ("'a\\ntag\\n'.find('(?m)^tag$')", "tag"),
    # RE2 \\d is ASCII only
    ("'\\u0663 and 3'.find('\\\\d')", "3"),
    # leftmost-first alternation, as Go
    ("'abcd'.find('ab|abcd')", "ab"),
    ("'Image:Latest'.find('(?i)latest')", "Latest"),
    ("'xAbY'.find('x(?i)ab')", "xAb"),
    ("'key=value'.find('(?P<k>[a-z]+)=')", "key="),
    ("'key=value'.find('(?<k>[a-z]+)=')", "key="),
    ("'a+b'.find('\\\\Qa+b\\\\E')", "a+b"),
    ("'x_y9'.find('[[:alpha:]_]+')", "x_y"),
])
def test_find(expr: str, expected: object) -> None:
    outcome = run(expr)
    assert outcome.error is None
    assert outcome.value == expected


@pytest.mark.parametrize(("pattern", "error"), [
    ("(abc", "error parsing regexp: missing closing ): `(abc`"),
    ("abc)", "error parsing regexp: unexpected ): `abc)`"),
    ("[abc", "error parsing regexp: missing closing ]: `[abc`"),
    ("*x", "error parsing regexp: missing argument to repetition operator: `*`"),
    ("x**", "error parsing regexp: invalid nested repetition operator: `**`"),
    ("x++", "error parsing regexp: invalid nested repetition operator: `++`"),
    ("(?=x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
    ("(x)\\1", "error parsing regexp: invalid escape sequence: `\\1`"),
    ("x{1001}", "error parsing regexp: invalid repeat count: `{1001}`"),
    ("[z-a]", "error parsing regexp: invalid character class range: `z-a`"),
    ("x\\", "error parsing regexp: trailing backslash at end of expression: ``"),
])
def test_illegal_regex_errors(pattern: str, error: str) -> None:
    with pytest.raises(RegexSyntaxError) as caught:
        compile_re2(pattern)
    assert str(caught.value) == error


def test_illegal_regex_in_cel_is_prefixed_like_kubernetes() -> None:
    outcome = run("'abc'.find('(a')")
    assert outcome.error == "Illegal regex: error parsing regexp: missing closing ): `(a`"
    outcome = run("'abc'.findAll('[a', 2)")
    assert outcome.error == "Illegal regex: error parsing regexp: missing closing ]: `[a`"


def test_what_the_translation_cannot_express_matches_on_re2() -> None:
    # RE2 itself matches what the translation to `re` cannot express
    assert run("'Ωmega'.find('\\\\pL+')").value == "Ωmega"


def test_re2_matches_in_linear_time_and_with_re2_semantics() -> None:
    # backtracking `re` needs seconds here (6.6 s for 24 characters, doubling with each one)
    outcome = run("'" + "a" * 40 + "b'.find('(a+)+$')")
    assert outcome.value == ""
    # RE2's \\D inside a class is ASCII: an Arabic-Indic digit is no \\d, so it is \\D
    assert run("'\u0663a'.find('[\\\\D]+')").value == "\u0663a"
    # what RE2 refuses keeps Go's error text
    assert run("'ab'.find('a(?=b)')").error == "Illegal regex: error parsing regexp: invalid or unsupported Perl " \
                                                "syntax: `(?=`"


def test_find_over_object_field() -> None:
    obj = {"image": "registry.example.com/team/app:1.4.2"}
    assert run("object.image.find(':[^:]+$')", obj).value == ":1.4.2"
