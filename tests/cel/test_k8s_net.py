"""Kubernetes IP and CIDR libraries: cases after ip_test.go and cidr_test.go, with our own addresses."""

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.golang.netip import addr_text, parse_addr

ENV = Environment(kubernetes_libraries(), ["object"])


def run(expr: str, obj: object = None):
    return ENV.compile(expr).evaluate(ENV.activation({"object": obj}))


@pytest.mark.parametrize(("expr", "expected"), [
    ("string(ip('10.1.2.3'))", "10.1.2.3"),
    ("isIP('10.1.2.3')", True),
    ("isIP('10.1.2.3.4')", False),
    ("isIP('010.1.2.3')", False),
    ("isIP('fe80::1%eth0')", False),
    ("isIP('::ffff:10.1.2.3')", False),
    ("ip('10.1.2.3').family()", 4),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('10.0.0.1').isUnspecified()", False),
    ("ip('127.8.0.1').isLoopback()", True),
    ("ip('10.0.0.1').isLoopback()", False),
    ("ip('224.0.0.251').isLinkLocalMulticast()", True),
    ("ip('224.0.1.251').isLinkLocalMulticast()", False),
    ("ip('169.254.10.20').isLinkLocalUnicast()", True),
    ("ip('172.16.0.1').isLinkLocalUnicast()", False),
    ("ip('172.16.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("ip('fd12:3456::9').family()", 6),
    ("ip('::').isUnspecified()", True),
    ("ip('::1').isLoopback()", True),
    ("ip('2001:db8::5').isLoopback()", False),
    ("ip('ff02::fb').isLinkLocalMulticast()", True),
    ("ip('ff05::fb').isLinkLocalMulticast()", False),
    ("ip('fe80::abcd').isLinkLocalUnicast()", True),
    ("ip('fec0::1').isLinkLocalUnicast()", False),
    ("ip('2001:db8::5').isGlobalUnicast()", True),
    ("ip('ff02::1').isGlobalUnicast()", False),
    ("ip.isCanonical('10.1.2.3')", True),
    ("ip.isCanonical('2001:db8::5')", True),
    ("ip.isCanonical('2001:DB8::5')", False),
    ("ip.isCanonical('2001:db8:0:0:0:0:0:5')", False),
    ("ip('2001:DB8:0:0:0:0:0:5') == ip('2001:db8::5')", True),
    ("ip('10.0.0.1') == ip('10.0.0.2')", False),
    ("string(ip('2001:0db8:0000:0001:0000:0000:0000:0001'))", "2001:db8:0:1::1"),
    ("string(ip('1:0:0:2:0:0:0:3'))", "1:0:0:2::3"),
    ("string(ip('1:0:0:2:0:0:3:4'))", "1::2:0:0:3:4"),
    ("string(ip('::2:3:4:5:6:7:8'))", "0:2:3:4:5:6:7:8"),
    ("string(ip('64:ff9b::10.1.2.3'))", "64:ff9b::a01:203"),
    ("string(cidr('10.8.0.0/16'))", "10.8.0.0/16"),
    ("isCIDR('10.8.0.0/16')", True),
    ("isCIDR('10.8.0.0/33')", False),
    ("isCIDR('::1/129')", False),
    ("isCIDR('::ffff:10.0.0.0/104')", False),
    ("cidr('10.8.0.0/16').containsIP(ip('10.8.200.1'))", True),
    ("cidr('10.8.0.0/16').containsIP(ip('10.9.0.1'))", False),
    ("cidr('10.8.0.0/16').containsIP('10.8.200.1')", True),
    ("cidr('10.8.0.0/16').containsIP('10.9.0.1')", False),
    ("cidr('10.8.0.0/16').containsIP('::1')", False),
    ("cidr('10.8.0.0/16').containsCIDR(cidr('10.8.4.0/24'))", True),
    ("cidr('10.8.0.0/16').containsCIDR('10.8.4.0/24')", True),
    ("cidr('10.8.0.0/16').containsCIDR('10.8.0.0/15')", False),
    ("cidr('10.8.0.0/16').containsCIDR('10.9.0.0/24')", False),
    ("cidr('10.8.0.1/16').ip() == ip('10.8.0.1')", True),
    ("cidr('10.8.0.1/16').ip().family()", 4),
    ("cidr('10.8.0.1/16').masked() == cidr('10.8.0.0/16')", True),
    ("cidr('10.8.0.0/16') == cidr('10.8.0.0/16').masked()", True),
    ("cidr('10.8.0.1/16') == cidr('10.8.0.1/16').masked()", False),
    ("cidr('10.8.0.0/16').prefixLength()", 16),
    ("cidr('2001:db8::/48').containsIP('2001:db8:0:ffff::1')", True),
    ("cidr('2001:db8::/48').containsIP('2001:db9::1')", False),
    ("cidr('2001:db8::/48').containsCIDR('2001:db8:0:ab00::/56')", True),
    ("cidr('2001:db8::/48').containsCIDR('2001:db8::/47')", False),
    ("string(cidr('2001:db8:1:2::/48').masked())", "2001:db8:1::/48"),
    ("cidr('2001:db8::/48').prefixLength()", 48),
    ("cidr('::1/128').ip().family()", 6),
])
def test_net_functions(expr: str, expected: object) -> None:
    outcome = run(expr)
    assert outcome.error is None
    assert outcome.value == expected and type(outcome.value) is type(expected)


@pytest.mark.parametrize(("expr", "error"), [
    ("ip('10.1.2.3.4')", 'IP Address "10.1.2.3.4" parse error during conversion from string: '
                         'ParseAddr("10.1.2.3.4"): IPv4 address too long'),
    ("ip('10.1.2')", 'IP Address "10.1.2" parse error during conversion from string: '
                     'ParseAddr("10.1.2"): IPv4 address too short'),
    ("ip('10.1.2.300')", 'IP Address "10.1.2.300" parse error during conversion from string: '
                         'ParseAddr("10.1.2.300"): IPv4 field has value >255'),
    ("ip('10.01.2.3')", 'IP Address "10.01.2.3" parse error during conversion from string: '
                        'ParseAddr("10.01.2.3"): IPv4 field has octet with leading zero'),
    ("ip('10..2.3')", 'IP Address "10..2.3" parse error during conversion from string: '
                      'ParseAddr("10..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
    ("ip('2001:db8:::5')", 'IP Address "2001:db8:::5" parse error during conversion from string: '
                           'ParseAddr("2001:db8:::5"): each colon-separated field must have at least one '
                           'digit (at ":5")'),
    ("ip('2001:db8::12345')", 'IP Address "2001:db8::12345" parse error during conversion from string: '
                              'ParseAddr("2001:db8::12345"): each group must have 4 or less digits '
                              '(at "12345")'),
    ("ip('1::2::3')", 'IP Address "1::2::3" parse error during conversion from string: '
                      'ParseAddr("1::2::3"): multiple :: in address (at ":3")'),
    ("ip('host')", 'IP Address "host" parse error during conversion from string: '
                   'ParseAddr("host"): unable to parse IP'),
    ("ip('fe80::1%eth0')", 'IP address "fe80::1%eth0" with zone value is not allowed'),
    ("ip('::ffff:10.1.2.3')", 'IPv4-mapped IPv6 address "::ffff:10.1.2.3" is not allowed'),
    ("ip.isCanonical('10.1.2.3.4')", 'IP Address "10.1.2.3.4" parse error during conversion from string: '
                                     'ParseAddr("10.1.2.3.4"): IPv4 address too long'),
    ("cidr('10.8.0.0/')", 'network address parse error during conversion from string: network address '
                          'parse error during conversion from string: netip.ParsePrefix("10.8.0.0/"): '
                          'bad bits after slash: ""'),
    ("cidr('10.8.0.0/016')", 'network address parse error during conversion from string: network address '
                             'parse error during conversion from string: netip.ParsePrefix("10.8.0.0/016"): '
                             'bad bits after slash: "016"'),
    ("cidr('10.8.0.0/40')", 'network address parse error during conversion from string: network address '
                            'parse error during conversion from string: netip.ParsePrefix("10.8.0.0/40"): '
                            'prefix length out of range'),
    ("cidr('10.8.0.0')", 'network address parse error during conversion from string: network address '
                         'parse error during conversion from string: netip.ParsePrefix("10.8.0.0"): '
                         "no '/'"),
    ("cidr('::ffff:10.0.0.0/104')", 'network address parse error during conversion from string: '
                                    'IPv4-mapped IPv6 address "::ffff:10.0.0.0/104" is not allowed'),
    # A bad IP string given to containsIP surfaces as an overload mismatch, as in Kubernetes ...
    ("cidr('10.8.0.0/16').containsIP('10.8')", "no such overload"),
    # ... while a bad CIDR string given to containsCIDR surfaces its parse error.
    ("cidr('10.8.0.0/16').containsCIDR('10.8/8')",
     'network address parse error during conversion from string: network address parse error during '
     'conversion from string: netip.ParsePrefix("10.8/8"): ParseAddr("10.8"): IPv4 address too short'),
    ("string({'a': 1})", "no such overload"),
    # IP members refuse a CIDR
    ("cidr('10.0.0.0/8').family()", "no such overload"),
])
def test_net_errors(expr: str, error: str) -> None:
    assert run(expr).error == error


@pytest.mark.parametrize(("text", "canonical"), [
    ("0:0:0:0:0:0:0:0", "::"),
    ("1:0:0:0:0:0:0:0", "1::"),
    ("1:0:1:0:0:1:0:0", "1:0:1::1:0:0"),
    ("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789", "abcd:ef01:2345:6789:abcd:ef01:2345:6789"),
])
def test_ipv6_text_follows_rfc5952(text: str, canonical: str) -> None:
    assert addr_text(parse_addr(text)) == canonical
