"""Kyverno's resource hash against the Go-computed vectors, and the Go encoding rules it rests on."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from kubectl_kyrec.expect.resource_hash import hash_input, resource_hash, resource_hash_from_json_text
from kubectl_kyrec.golang.json import marshal as go_json
from kubectl_kyrec.golang.json import marshal_float as go_float
from tests.shared_inputs import cases, present, shared

VECTORS = shared("vectors/resource-hash.json")


def _load_vectors() -> list[dict[str, Any]]:
    return list(json.loads(VECTORS.read_text()))


# the only proof of hash compatibility with Go: absent under CI=true is a failure (tests/shared_inputs.py)
VECTOR_LIST = cases(VECTORS, "Go resource-hash vectors", _load_vectors, ids=lambda v: v["name"])


@present(VECTORS, "Go resource-hash vectors (count)")
def test_vectors_are_present_and_many() -> None:
    assert len(VECTOR_LIST) >= 10


@pytest.mark.parametrize("vector", VECTOR_LIST)
def test_go_vector(vector: dict[str, Any]) -> None:
    assert resource_hash_from_json_text(vector["object_json"]) == vector["hash"]


@pytest.mark.parametrize("vector", VECTOR_LIST)
def test_go_vector_through_the_general_encoder(vector: dict[str, Any]) -> None:
    # the fast path (C json + escapes) and the general encoder must agree byte for byte
    value = hash_input(json.loads(vector["object_json"]))
    # a `special` that declines every value takes the general encoder
    general = go_json(value, lambda _: None)
    assert general == go_json(value)
    assert hashlib.md5(general.encode()).hexdigest() == vector["hash"]


@pytest.mark.parametrize(("value", "text"), [
    (1e21, "1e+21"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"), (1e20, "100000000000000000000"),
    (100.0, "100"), (0.5, "0.5"), (-0.0025, "-0.0025"), (-0.0, "-0"), (0.1 + 0.2, "0.30000000000000004"),
    (123456789.125, "123456789.125"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (-2.5e-10, "-2.5e-10"), (1.2345678901234568e-5, "0.000012345678901234568"),
])
def test_floats_as_encoding_json_writes_them(value: float, text: str) -> None:
    assert go_float(value) == text


def test_integers_beyond_int64_are_float64() -> None:
    assert go_json([2**63 - 1, -(2**63), 2**64]) == (
        "[9223372036854775807,-9223372036854775808,18446744073709552000]")


def test_strings_escape_like_go() -> None:
    assert go_json({"k<": "a<b>&c\u2028\u2029\b\f\n\r\t\x01\x7f\"\\é🚀"}) == (
        '{"k\\u003c":"a\\u003cb\\u003e\\u0026c\\u2028\\u2029\\b\\f\\n\\r\\t\\u0001\x7f\\"\\\\é🚀"}')


def test_keys_sort_by_code_point_and_nil_maps_are_null() -> None:
    assert go_json({"b": 1, "B": 2, "é": 3, "_": 4, "0": 5}) == '{"0":5,"B":2,"_":4,"b":1,"é":3}'
    assert hash_input({"kind": "X"})[:2] == [None, None]


def test_invalid_utf8_becomes_the_replacement_character() -> None:
    # Go's JSON decoder turns each invalid byte and each lone surrogate into U+FFFD
    raw = b'{"kind":"ConfigMap","metadata":{"labels":{"a":"x\xffy"}},"data":{"b":"\\ud800z"}}'
    clean = '{"kind":"ConfigMap","metadata":{"labels":{"a":"x\ufffdy"}},"data":{"b":"\ufffdz"}}'
    assert resource_hash_from_json_text(raw) == resource_hash(json.loads(clean))
    assert go_json(["\ud83d\ude80", "\ud800"]) == '["🚀","\ufffd"]'


def test_nan_makes_marshal_fail_and_the_hash_empty() -> None:
    assert resource_hash({"kind": "X", "spec": {"f": float("nan")}}) == ""


def test_dropped_fields_do_not_change_the_hash_and_kept_ones_do() -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"app": "a"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Pending"}}
    base = resource_hash(pod)
    moved = json.loads(json.dumps(pod))
    moved["spec"]["nodeName"] = "n2"
    moved["status"]["phase"] = "Running"
    moved["metadata"]["resourceVersion"] = "9"
    assert resource_hash(moved) == base
    relabelled = json.loads(json.dumps(pod))
    relabelled["metadata"]["labels"]["tier"] = "web"
    assert resource_hash(relabelled) != base
    assert pod["spec"]["nodeName"] == "n1"   # the input is not modified


def test_known_hash_of_a_small_object() -> None:
    # md5 of the exact bytes Go writes for this object
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"a": "<b>"}},
           "data": {"k": "v"}}
    data = b'[null,{"a":"\\u003cb\\u003e"},{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap"}]'
    assert resource_hash(obj) == hashlib.md5(data).hexdigest()
