"""generator.Apply / generator.apply as a library: overloads per policy scope, the sink, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.generator_lib import (
    GENERATOR_VALUE,
    GenerateRefused,
    GeneratorSink,
    generator_extra,
    generator_library,
)

CM = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}'


def env(namespace: str = "") -> tuple[Environment, GeneratorSink]:
    sink = GeneratorSink()
    return Environment([generator_library(sink, namespace)], ["object"]), sink


def run(environment: Environment, text: str) -> Any:
    return environment.compile(text).evaluate(environment.activation({"object": {}, "generator": GENERATOR_VALUE}))


def test_cluster_overloads_hand_calls_to_the_bound_handler() -> None:
    environment, sink = env()
    calls: list[tuple[str, list[dict[str, Any]]]] = []
    sink.bind(lambda ns, items: calls.append((ns, items)))
    assert run(environment, f'generator.Apply("a", [{CM}]) && generator.apply("b", [])').value is True
    assert calls == [("a", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]), ("b", [])]
    assert sink.calls == 2


def test_namespaced_overloads_use_the_policy_namespace() -> None:
    environment, sink = env("apps")
    calls: list[str] = []
    sink.bind(lambda ns, items: calls.append(ns))
    assert run(environment, f"generator.apply([{CM}])").value is True
    assert calls == ["apps"]
    with pytest.raises(CompileError):
        environment.compile(f'generator.apply("other", [{CM}])')


def test_refusals_are_cel_errors() -> None:
    environment, sink = env()

    def refuse(ns: str, items: list[dict[str, Any]]) -> None:
        raise GenerateRefused("cross-scope generation denied: no")

    sink.bind(refuse)
    outcome = run(environment, f'generator.apply("a", [{CM}])')
    assert outcome.error == "failed to generate resources: cross-scope generation denied: no"


def test_without_a_bound_handler_nothing_is_generated() -> None:
    environment, sink = env()
    assert "no generation context" in str(run(environment, f'generator.apply("a", [{CM}])').error)
    sink.bind(lambda ns, items: None)
    sink.release()
    assert run(environment, f'generator.apply("a", [{CM}])').error is not None


def test_extra_serves_only_generating_kinds() -> None:
    extra = generator_extra(GeneratorSink())
    assert extra("ValidatingPolicy", "") == []
    assert [lib.name for lib in extra("GeneratingPolicy", "")] == ["kyverno.generator"]
    (namespaced,) = extra("NamespacedGeneratingPolicy", "apps")
    assert {o.id for f in namespaced.functions for o in f.overloads} == {"generator_apply_list_pascal",
                                                                         "generator_apply_list_camel"}
