"""Kubernetes URL library: cases after urls_test.go and Go's net/url rules, with our own URLs."""

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries

ENV = Environment(kubernetes_libraries(), ["object"])

PREFIX = "URL parse error during conversion from string: "


def run(expr: str, obj: object = None):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


@pytest.mark.parametrize(("expr", "expected"), [
    ("isURL('https://ops:secret@api.example.org:8443/v1/items?limit=5#top')", True),
    ("isURL('/healthz')", True),
    ("isURL('mailto:team@example.org')", True),
    ("isURL('../up/one')", False),
    ("isURL('api.example.org/v1')", False),
    ("isURL('https://a:b:c/')", False),
    ("isURL('')", False),
    ("url('/healthz').getScheme()", ""),
    ("url('HTTPS://Api.Example.org/').getScheme()", "https"),
    ("url('https://Api.Example.org/').getHost()", "Api.Example.org"),
    ("url('https://api.example.org:8443/').getHost()", "api.example.org:8443"),
    ("url('https://[2001:db8::7]:8443/').getHost()", "[2001:db8::7]:8443"),
    ("url('https://[2001:db8::7]/').getHost()", "[2001:db8::7]"),
    ("url('/healthz').getHost()", ""),
    ("url('https://api.example.org:8443/').getHostname()", "api.example.org"),
    ("url('https://10.20.30.40:8443/').getHostname()", "10.20.30.40"),
    ("url('https://[2001:db8::7]:8443/').getHostname()", "2001:db8::7"),
    ("url('http://[fe80::1%25en0]:8080/').getHostname()", "fe80::1%en0"),
    ("url('https://api.example.org:8443/').getPort()", "8443"),
    ("url('https://api.example.org/').getPort()", ""),
    ("url('/healthz').getPort()", ""),
    ("url('https://api.example.org/v1/items').getEscapedPath()", "/v1/items"),
    ("url('https://api.example.org/my files/a b').getEscapedPath()", "/my%20files/a%20b"),
    ("url('https://api.example.org/a%2Fb').getEscapedPath()", "/a%2Fb"),
    ("url('https://api.example.org').getEscapedPath()", ""),
    ("url('https://api.example.org/p#frag').getEscapedPath()", "/p"),
    ("url('https://api.example.org/p?x=1&y=2&y=3').getQuery()", {"x": ["1"], "y": ["2", "3"]}),
    ("url('https://api.example.org/p?first name=Ada Lovelace').getQuery()", {"first name": ["Ada Lovelace"]}),
    ("url('https://api.example.org/p?a=%41&b=x+y').getQuery()", {"a": ["A"], "b": ["x y"]}),
    ("url('https://api.example.org/p?bad=%zz&ok=1').getQuery()", {"ok": ["1"]}),
    ("url('https://api.example.org/p?a=1;b=2&c=3').getQuery()", {"c": ["3"]}),
    ("url('https://api.example.org/p?').getQuery()", {}),
    ("url('https://api.example.org/p').getQuery()", {}),
    ("url('https://bücher.example/').getHost()", "bücher.example"),
    # URLs compare by Go's URL.String()
    ("url('https://api.example.org/a b') == url('https://api.example.org/a%20b')", True),
    ("url('https://api.example.org/a') == url('https://api.example.org/b')", False),
])
def test_url_functions(expr: str, expected: object) -> None:
    outcome = run(expr)
    assert outcome.error is None
    assert outcome.value == expected


@pytest.mark.parametrize(("expr", "error"), [
    ("url('https://a:b:c/')", 'parse "https://a:b:c/": invalid port ":b:c" after host'),
    ("url('../up/one')", 'parse "../up/one": invalid URI for request'),
    ("url('')", 'parse "": empty url'),
    ("url('://x')", 'parse "://x": missing protocol scheme'),
    ("url('https://api.example.org:8x/')",
     'parse "https://api.example.org:8x/": invalid port ":8x" after host'),
    ("url('https://[1.2.3.4]/')", 'parse "https://[1.2.3.4]/": invalid IP-literal'),
    ("url('https://[v1.x]/')",
     'parse "https://[v1.x]/": invalid host: ParseAddr("v1.x"): unexpected character (at "v1.x")'),
    ("url('http://[::1/')", "parse \"http://[::1/\": missing ']' in host"),
    ("url('https://api.example.org/%zz')", 'parse "https://api.example.org/%zz": invalid URL escape "%zz"'),
    ("url('https://exa mple.org/')", 'parse "https://exa mple.org/": invalid character " " in host name'),
    ("url('https://ü@api.example.org/')", 'parse "https://ü@api.example.org/": net/url: invalid userinfo'),
    ("url('https://api.example.org/\\t')",
     'parse "https://api.example.org/\\t": net/url: invalid control character in URL'),
])
def test_url_errors(expr: str, error: str) -> None:
    assert run(expr).error == PREFIX + error


def test_other_schemes_keep_the_last_colon_as_port() -> None:
    # Go enforces a single colon in the host only for http and https.
    assert run("url('ftp://a:b:21/').getPort()").value == "21"


def test_getters_refuse_non_urls() -> None:
    assert run("quantity('1').getHost()").error == "no such overload"
