"""golang/ against Go's own documented examples and test tables (strconv, time, encoding/json, fmt) and
Kyverno's wildcard semantics."""

from __future__ import annotations

import datetime
import json
import math

import pytest

from kubectl_kyrec.golang import json as gojson
from kubectl_kyrec.golang import time as go_time
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.golang.strconv import format_float, parse_float, parse_int, quote
from kubectl_kyrec.golang.wildcard import contains_wildcard, match

# ---------------------------------------------------------------------------------------------- strconv


@pytest.mark.parametrize(("value", "fmt", "bits", "want"), [
    (3.1415926535, "E", 32, "3.1415927E+00"),      # ExampleFormatFloat
    (3.1415926535, "E", 64, "3.1415926535E+00"),   # ExampleFormatFloat
    (1.0, "e", 64, "1e+00"),
    (10.0, "E", 64, "1E+01"),
    (1e21, "g", 64, "1e+21"),
    (1e20, "g", 64, "1e+20"),
    (100000.0, "g", 64, "100000"),
    (1e6, "g", 64, "1e+06"),
    (0.0001, "g", 64, "0.0001"),
    (0.00001, "g", 64, "1e-05"),
    (123456789.0, "f", 64, "123456789"),
    (0.000001234, "f", 64, "0.000001234"),
    (-0.0, "g", 64, "-0"),
    (0.1, "g", 32, "0.1"),                          # float32(0.1) prints short, not 0.10000000149011612
    (0.1, "f", 32, "0.1"),
    (16777217.0, "f", 32, "16777216"),              # rounded to float32 first
    (1e39, "g", 32, "+Inf"),                        # beyond float32: an infinity, as float32(v) in Go
    (1.5, "G", 64, "1.5"),
    (1e-7, "G", 64, "1E-07"),
    (math.nan, "E", 64, "NaN"),
    (-math.inf, "f", 64, "-Inf"),
])
def test_format_float(value: float, fmt: str, bits: int, want: str) -> None:
    assert format_float(value, fmt, bits) == want


@pytest.mark.parametrize(("text", "want"), [
    ('"Fran & Freddie\'s Diner\t☺"', '"\\"Fran & Freddie\'s Diner\\t☺\\""'),   # ExampleQuote
    ("\a\b\f\r\n\t\v", '"\\a\\b\\f\\r\\n\\t\\v"'),
    ("\x00\x04\x7f", '"\\x00\\x04\\x7f"'),
    ("\u263a", '"☺"'),
    ("\u00ad", '"\\u00ad"'),                     # soft hyphen: not printable
    ("\U0010ffff", '"\\U0010ffff"'),
    ("é<>&", '"é<>&"'),
    (b"\xffa\xc3", '"\\xffa\\xc3"'),              # bytes that are not UTF-8, one at a time
])
def test_quote(text: str | bytes, want: str) -> None:
    assert quote(text) == want


def test_parse_float_and_int() -> None:
    assert parse_float("0x1p-2") == 0.25
    assert parse_float("1e10") == 1e10
    assert parse_float("-Inf") == -math.inf
    for bad in ("1_000", "1e400", "", "1.2.3", "0x"):
        with pytest.raises(ValueError):
            parse_float(bad)
    assert parse_int("-9223372036854775808") == -(2**63)
    for bad in ("9223372036854775808", "1.0", "0x10", ""):
        with pytest.raises(ValueError):
            parse_int(bad)
    with pytest.raises(ValueError):
        parse_int("128", 8)


# ---------------------------------------------------------------------------------------------- time

_NS = 1
_US = 1000 * _NS
_MS = 1000 * _US
_S = 1000 * _MS
_M = 60 * _S
_H = 60 * _M


@pytest.mark.parametrize(("text", "want"), [     # time's parseDurationTests
    ("0", 0), ("5s", 5 * _S), ("30s", 30 * _S), ("1478s", 1478 * _S), ("-5s", -5 * _S), ("+5s", 5 * _S),
    ("-0", 0), ("+0", 0), ("5.0s", 5 * _S), ("5.6s", 5 * _S + 600 * _MS), ("5.s", 5 * _S), (".5s", 500 * _MS),
    ("1.0s", _S), ("1.00s", _S), ("1.004s", _S + 4 * _MS), ("100.00100s", 100 * _S + 1 * _MS),
    ("10ns", 10), ("11us", 11 * _US), ("12µs", 12 * _US), ("12μs", 12 * _US), ("13ms", 13 * _MS),
    ("14s", 14 * _S), ("15m", 15 * _M), ("16h", 16 * _H), ("3h30m", 3 * _H + 30 * _M),
    ("10.5s4m", 4 * _M + 10 * _S + 500 * _MS), ("-2m3.4s", -(2 * _M + 3 * _S + 400 * _MS)),
    ("1h2m3s4ms5us6ns", _H + 2 * _M + 3 * _S + 4 * _MS + 5 * _US + 6), ("39h9m14.425s", 39 * _H + 9 * _M + 14425 * _MS),
    ("52763797000ns", 52763797000), ("0.3333333333333333333h", 20 * _M),
    ("9223372036854775807ns", 2**63 - 1), ("9223372036854775.807us", 2**63 - 1),
])
def test_parse_duration(text: str, want: int) -> None:
    assert go_time.parse_duration(text) == want
    assert go_time.try_parse_duration(text) == want


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'), ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'), ("s", 'time: invalid duration "s"'), (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'), (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'), ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("\u0085\u0085", 'time: invalid duration "\\u0085\\u0085"'),   # a Go string of the runes, not the bytes
])
def test_parse_duration_errors(text: str, message: str) -> None:
    with pytest.raises(go_time.GoTimeError) as info:
        go_time.parse_duration(text)
    assert str(info.value) == message
    assert go_time.try_parse_duration(text) is None


@pytest.mark.parametrize(("ns", "want"), [       # time's durationTests
    (0, "0s"), (1, "1ns"), (1100, "1.1µs"), (2200 * _US, "2.2ms"), (3300 * _MS, "3.3s"), (4 * _M + 5 * _S, "4m5s"),
    (4 * _M + 5001 * _MS, "4m5.001s"), (5 * _H + 6 * _M + 7001 * _MS, "5h6m7.001s"), (8 * _M + 1, "8m0.000000001s"),
    (2**63 - 1, "2562047h47m16.854775807s"), (-(2**63), "-2562047h47m16.854775808s"), (10 * _H, "10h0m0s"),
])
def test_format_duration(ns: int, want: str) -> None:
    assert go_time.format_duration(ns) == want


def test_rfc3339() -> None:
    ist = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    moment = datetime.datetime(2006, 1, 2, 15, 4, 5, 120000, tzinfo=ist)
    assert go_time.format_rfc3339(moment) == "2006-01-02T15:04:05+05:30"
    assert go_time.format_rfc3339(moment, nano=True) == "2006-01-02T15:04:05.12+05:30"
    assert go_time.format_rfc3339(go_time.in_utc(moment), nano=True) == "2006-01-02T09:34:05.12Z"
    assert go_time.format_rfc3339(datetime.datetime(1, 1, 1)) == "0001-01-01T00:00:00Z"   # naive is UTC
    assert go_time.in_utc(datetime.datetime(2020, 1, 1)).tzinfo is datetime.UTC
    parsed = go_time.parse_time(go_time.RFC3339, "2006-01-02T15:04:05+07:00")
    assert parsed == datetime.datetime(2006, 1, 2, 8, 4, 5, tzinfo=datetime.UTC)
    assert go_time.format_rfc3339(parsed) == "2006-01-02T15:04:05+07:00"
    with pytest.raises(go_time.GoTimeError) as info:
        go_time.parse_time(go_time.RFC3339, "2006-01-02")
    assert str(info.value) == 'parsing time "2006-01-02" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'


# ---------------------------------------------------------------------------------------------- json, fmt


def test_marshal() -> None:
    value = {"b": 1, "a": [1.5, "<>&\u2028"], "c": None, "d": b"hi", "e": 1e21, "f": 1e-7, "g": 2**64}
    assert gojson.marshal(value) == ('{"a":[1.5,"\\u003c\\u003e\\u0026\\u2028"],"b":1,"c":null,"d":"aGk=",'
                                     '"e":1e+21,"f":1e-7,"g":18446744073709552000}')
    with pytest.raises(gojson.UnsupportedValue, match="json: unsupported value: NaN"):
        gojson.marshal([math.nan])



def test_marshal_fast_path_agrees_with_the_general_encoder() -> None:
    # plain JSON values take the C encoder; keys that are not strings must still fail as Go's encoder does
    plain = {"z": [1, "é<\x01\n", None, True], "a": {"y": -(2**63)}}
    assert gojson.marshal(plain) == gojson.marshal(plain, lambda _: None) == \
        '{"a":{"y":-9223372036854775808},"z":[1,"é\\u003c\\u0001\\n",null,true]}'
    with pytest.raises(gojson.UnsupportedType):
        gojson.marshal({"a": {1: "x"}})
    with pytest.raises(gojson.GoJSONError):
        gojson.marshal({"a": {1: "x"}}, lambda _: None)

def test_roundtrip_is_go_any() -> None:
    moment = datetime.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=datetime.UTC)
    assert gojson.roundtrip({1: (1, 2.5, True), "t": moment, "b": b"hi"}) == \
        {"1": [1.0, 2.5, True], "t": "2024-01-02T03:04:05.5Z", "b": "aGk="}
    assert isinstance(gojson.roundtrip(1), float)
    with pytest.raises(gojson.UnsupportedValue, match=r"\+Inf"):
        gojson.roundtrip({"x": math.inf})


@pytest.mark.parametrize(("text", "want"), [
    # decode.go unquoteBytes: a surrogate escape not followed by its pair is U+FFFD, and the escape after it
    # is read on its own; a valid pair is one character
    ('"a\\ud800b"', "a\ufffdb"),
    ('"\\uDC00\\uD800"', "\ufffd\ufffd"),
    ('"\\ud800\\ud800\\udc00"', "\ufffd\U00010000"),
    ('"\\ud83d\\ude00"', "\U0001f600"),
    ('"\\ud800\\u0041"', "\ufffdA"),
    # an escaped backslash before `ud800` is no escape: the text is searched, the strings stay as they are
    ('"\\\\ud800"', "\\ud800"),
])
def test_as_go_decodes_reads_surrogate_escapes_as_go(text: str, want: str) -> None:
    assert gojson.as_go_decodes(json.loads(text), text) == gojson.unmarshal(text) == want


def test_as_go_decodes_replaces_in_keys_and_nested_values_and_leaves_plain_text_alone() -> None:
    text = '{"k\\udfff": [{"v": "\\uD800"}, 1, null], "x": "\\ud7ff"}'
    assert gojson.as_go_decodes(json.loads(text), text) == {"k\ufffd": [{"v": "\ufffd"}, 1, None], "x": "\ud7ff"}
    # only the text given is searched: a value outside it is handed back as it is (the same object)
    plain = json.loads('{"a": "b"}')
    assert gojson.as_go_decodes(plain, text, len(text)) is plain
    assert gojson.as_go_decodes(plain, '{"a": "b"}') is plain


def test_sprint() -> None:
    assert sprint({"b": [1, 2.5, None], "a": True}) == "map[a:true b:[1 2.5 <nil>]]"
    assert sprint(1.0) == "1"
    assert sprint(1e6) == "1e+06"
    assert sprint(123456789.0) == "1.23456789e+08"
    assert sprint("x") == "x"
    assert sprint(b"hi") == "[104 105]"


# ---------------------------------------------------------------------------------------------- wildcard


@pytest.mark.parametrize(("pattern", "text", "want"), [
    ("*", "", True), ("", "", True), ("", "a", False), ("a", "a", True), ("a", "b", False),
    ("a?c", "abc", True), ("a?c", "ac", False), ("a*", "a", True), ("*.com", "x.y.com", True),
    ("kube-*", "kube-system", True), ("?", "", False), ("[a]", "a", False), ("[a]", "[a]", True),
    ("a*b", "a\nb", True), ("a.c", "abc", False),
])
def test_wildcard(pattern: str, text: str, want: bool) -> None:
    assert match(pattern, text) is want


def test_contains_wildcard() -> None:
    assert contains_wildcard("a*") and contains_wildcard("a?") and not contains_wildcard("a[b]")
