"""Every CEL library function implemented in Python, called with odd values of its declared parameter types,
returns or raises an EngineError (kubectl_kyrec/errors.py: what Kyverno reports on user data). Anything else
is a bug: cel/engine.py's `_wrap` raises it again after the engine call, and the run ends with exit 70
(tests/consistency/test_cel_library_bugs.py). So what a user can write, or feed in, must never raise one.

The odd values include maps written by hand with a Kubernetes or Kyverno type's tag (`{"@type": "net.IP"}`):
a CEL expression can write them, and cel-go answers "no such overload" where kyrec's tagged maps stand in for
Go types.
"""

from __future__ import annotations

import datetime
import itertools
import math
import random
from collections.abc import Iterator
from typing import Any

from kubectl_kyrec.cel import k8s_net, k8s_quantity, k8s_semver, k8s_url, kyverno_image
from kubectl_kyrec.cel.authz_envoy import envoy_authz_library
from kubectl_kyrec.cel.authz_http import http_authz_library
from kubectl_kyrec.cel.authz_jwt import jwt_library
from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.decl import Library, Overload
from kubectl_kyrec.cel.generator_lib import GeneratorSink, generator_library
from kubectl_kyrec.cel.k8s_jsonpatch import LIBRARY as JSONPATCH
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.cel.kyverno_imageverify import imageverify_library
from kubectl_kyrec.cel.kyverno_libs import kyverno_libraries
from kubectl_kyrec.errors import EngineError

UTC = datetime.UTC
NOW = datetime.datetime(2026, 8, 1, tzinfo=UTC)


def _libraries() -> list[Library]:
    provider = ObjectsProvider([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "d"}}])
    ctx = LibraryContext(now=NOW, provider=provider, rng=random.Random(1))
    return [*kubernetes_libraries(), *kyverno_libraries(ctx, policy_kind="ValidatingPolicy"), JSONPATCH,
            http_authz_library(), envoy_authz_library(), jwt_library(NOW), generator_library(GeneratorSink()),
            imageverify_library(lambda image: True, ["attestation"])]


_TAGS = ("kubernetes.Quantity", "kubernetes.Semver", "kubernetes.URL", "net.IP", "net.CIDR",
         "kubernetes.NamedFormat", "kyverno.image", "schema.GroupVersionResource", "kyverno.http", "jwt.Token",
         "http.CheckRequestAttributes", "http.CheckResponseOk", "http.CheckResponseDenied", "http.CheckResponse",
         "envoy.service.auth.v3.CheckResponse", "envoy.service.auth.v3.OkHttpResponse",
         "envoy.service.auth.v3.DeniedHttpResponse", "envoy.config.core.v3.HeaderValueOption",
         "envoy.config.core.v3.QueryParameter", "kyverno.generator.Context")
# the fields the tagged values hold, once with the wrong types and once with unparseable texts
_FIELDS = ("value", "version", "ip", "cidr", "url", "registry", "repository", "group", "resource", "headers",
           "status", "body", "header", "query", "ok", "headers_to_remove", "response_headers_to_add",
           "query_parameters_to_set", "query_parameters_to_remove")
_WRONG = (5, None, 3, [], 1, 1, None, 1, None, 5, 3, 1, 1, 2, 1, "x", None, 1, 2)
_TEXTS = ("x", "x", "x", "x", "%%", "x", "x", "", "configmaps", [], {}, "", {}, {}, "x", "x", "x", "x", "x")


def _maps() -> list[Any]:
    out: list[Any] = [{}, {"a": 1}, {1: 2}, {"a": None}, {"header": 5, "query": 6},
                      {"header": {"A": "x"}, "query": {"a": 1}}]
    for tag in _TAGS:
        out += [{"@type": tag}, {"@type": tag, **dict(zip(_FIELDS, _WRONG))},
                {"@type": tag, **dict(zip(_FIELDS, _TEXTS))}]
    # values the libraries' own constructors made
    out += [k8s_quantity._to_quantity("1Gi"), k8s_semver._to_semver("1.2.3"), k8s_net._to_ip("10.0.0.1"),
            k8s_net._to_cidr("10.0.0.0/8"), k8s_url._to_url("https://a.b:8/x?y=1"),
            kyverno_image.string_to_image("nginx:1")]
    return out


STRINGS = ["", "a", "1.2.3", "v1.2", "01.02", "::1", "10.0.0.0/8", "fe80::1%eth0", "http://x/y?a=b", "%zz",
           "nginx:latest", "[", "\x00", "é", "a" * 300, "1e3", "Infinity", "{", "[1,2]", '{"a":1}', "apps/v1",
           "a/b/c", "/", "1Gi", "-1.5e3m", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "*", "(",
           "a{2,3}", "system:serviceaccount:ns:name", "eyJhbGciOiJIUzI1NiJ9.e30.x", "a.b.c", "key: [", "!!binary x",
           "? [a]: b", "x@sha256:" + "a" * 64, "HTTP://X"]
DURATIONS = [datetime.timedelta(0), datetime.timedelta(seconds=-1), datetime.timedelta(days=3650000),
             datetime.timedelta(microseconds=1)]
TIMES = [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), NOW]
POOLS: dict[str, list[Any]] = {
    "string": STRINGS,
    "int": [0, -1, 1, 2**63 - 1, -2**63, 10**6],
    "uint": [0, 2**64 - 1, 5],
    "double": [0.0, -0.0, 1.5, math.nan, math.inf, -math.inf, 1e308, 5e-324],
    "bool": [True, False],
    "bytes": [b"", bytearray(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"), bytearray(b"\x00\x01garbage"),
              bytearray(b"\xff" * 20)],
    "timestamp": TIMES,
    "duration": DURATIONS,
    "null": [None],
}
POOLS["map"] = _maps()
POOLS["list"] = [[], [1, "a"], [None], [{"a": 1}], [[1]], [math.nan, 1.0], [1, 2.0], [True, 1], DURATIONS[:2],
                 TIMES[:1], POOLS["map"][-6:-4], [{"cosign": {"key": {"data": "x"}}}], [1, 2**63 - 1], ["b", "a"],
                 [b"a", bytearray(b"b")]]
POOLS["dyn"] = [value for pool in POOLS.values() for value in pool]


def _pool(spec: str) -> list[Any]:
    spec = spec.replace(" ", "")
    return POOLS.get(spec) or POOLS["list" if spec.startswith("list") else "map" if spec.startswith("map") else "dyn"]


def _overloads() -> Iterator[tuple[str, Overload]]:
    for library in _libraries():
        for function in library.functions:
            for overload in function.overloads:
                yield function.name, overload


def test_library_functions_raise_only_engine_errors_on_odd_values() -> None:
    rng = random.Random(35)
    escaped: dict[tuple[str, str, str], str] = {}
    calls = overloads = 0
    for name, overload in _overloads():
        overloads += 1
        combos = list(itertools.islice(itertools.product(*(_pool(p) for p in overload.params)), 20000))
        for args in rng.sample(combos, 400) if len(combos) > 400 else combos:
            calls += 1
            try:
                overload.impl(*args)
            except EngineError:
                pass
            except Exception as exc:  # noqa: BLE001 - what the test looks for: any other exception
                escaped.setdefault((name, overload.id, type(exc).__name__), f"{args!r:.160} -> {exc}")
    assert escaped == {}, "\n".join(f"{key}: {example}" for key, example in sorted(escaped.items()))
    # every library above took part (a library dropped from _libraries would leave the test silently smaller)
    assert overloads >= 180 and calls >= 30000, (overloads, calls)
