"""The early reject by kind in front of classic matching (classic/match.py KindGate): it may only skip a rule
the full match would refuse, so every case here is checked against rule_matches itself."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml

import kubectl_kyrec.classic.match as match_module
from kubectl_kyrec.classic.match import KindGate, RequestFacts, rule_matches
from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source

# (group, version, kind, subresource) of the requests every match below is asked about
REQUESTS = [
    ("", "v1", "Pod", ""), ("", "v1", "Pod", "status"), ("", "v1", "Pod", "ephemeralcontainers"),
    ("apps", "v1", "Deployment", ""), ("apps", "v1", "Deployment", "scale"), ("extensions", "v1beta1",
                                                                             "Deployment", ""),
    ("", "v1", "Namespace", ""), ("", "v1", "ConfigMap", ""), ("networking.k8s.io", "v1", "NetworkPolicy", ""),
    ("batch", "v1", "CronJob", ""),
]

MATCHES: list[dict[str, Any]] = [
    {"resources": {"kinds": ["Pod"]}},
    {"resources": {"kinds": ["*"]}},
    {"resources": {"kinds": ["*/*"]}},
    {"resources": {"kinds": ["*/scale"]}},
    {"resources": {"kinds": ["Pod/status"]}},
    {"resources": {"kinds": ["Pod.status"]}},
    {"resources": {"kinds": ["v1/Pod/ephemeralcontainers"]}},
    {"resources": {"kinds": ["apps/v1/Deployment"]}},
    {"resources": {"kinds": ["apps/*/Deployment"]}},
    {"resources": {"kinds": ["*/Deployment"]}},
    {"resources": {"kinds": ["Deploy*"]}},
    {"resources": {"kinds": ["v1beta1/Deployment"]}},
    {"resources": {"kinds": ["networking.k8s.io/v1/NetworkPolicy"]}},
    {"resources": {"kinds": ["Config?ap"]}},
    # autogen's rewritten kinds (Pod controllers) and its CronJob rule
    {"resources": {"kinds": ["DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController"]}},
    {"any": [{"resources": {"kinds": ["CronJob"]}}]},
    {"any": [{"resources": {"kinds": ["Namespace"]}}, {"resources": {"kinds": ["ConfigMap"]}}]},
    {"any": [{"resources": {"kinds": ["Namespace"]}}, {"resources": {"names": ["*"]}}]},   # second: any kind
    {"all": [{"resources": {"kinds": ["Pod", "ConfigMap"]}}, {"resources": {"kinds": ["v1/*"]}}]},
    {"all": [{"resources": {"kinds": ["Pod"]}}, {"resources": {"names": ["*"]}}]},
    {"all": [{"resources": {"names": ["*"]}}]},
    {"any": [{"resources": {"kinds": ["Pod"]}, "subjects": [{"kind": "User", "name": "x"}]}]},
    {"resources": {"names": ["*"]}},                                  # old form without kinds: any kind
    {"resources": {"kinds": ["Pod"], "operations": ["DELETE"]}},       # refused by operation, not by kind
]


def _facts(group: str, version: str, kind: str, sub: str) -> RequestFacts:
    obj = {"apiVersion": f"{group}/{version}" if group else version, "kind": kind,
           "metadata": {"name": "x", "namespace": "" if kind == "Namespace" else "ns"}}
    return RequestFacts(obj=obj, group=group, version=version, kind=kind, subresource=sub, operation="CREATE",
                        namespace_labels={})


@pytest.mark.parametrize("request_gvk", REQUESTS, ids=lambda r: "/".join(p for p in r if p))
def test_the_gate_never_rejects_what_the_full_match_accepts(request_gvk: tuple[str, str, str, str]) -> None:
    gate = KindGate(MATCHES)
    passed = set(gate.candidates(*request_gvk))
    facts = _facts(*request_gvk)
    accepted = {i for i, m in enumerate(MATCHES) if rule_matches(m, None, facts)}
    assert accepted <= passed
    # and it is a real filter: a rule whose kinds alone decide is passed exactly when it matches
    kind_only = {i for i, m in enumerate(MATCHES)
                 if all(set(b.get("resources", {})) <= {"kinds"} and set(b) <= {"resources"}
                        for b in [m, *m.get("any", []), *m.get("all", [])] if b.get("resources") is not None)}
    assert {i for i in passed if i in kind_only} == {i for i in accepted if i in kind_only}


@pytest.mark.parametrize(("kinds", "gvk", "passes"), [
    (["*"], ("batch", "v1", "CronJob", ""), True),
    (["apps/*/Deployment"], ("apps", "v1", "Deployment", ""), True),
    (["apps/*/Deployment"], ("extensions", "v1beta1", "Deployment", ""), False),
    (["Deployment"], ("extensions", "v1beta1", "Deployment", ""), True),
    (["v1/ConfigMap"], ("", "v1", "ConfigMap", ""), True),
    (["v1/ConfigMap"], ("", "v2", "ConfigMap", ""), False),
    (["Pod/status"], ("", "v1", "Pod", ""), False),
    (["Pod/status"], ("", "v1", "Pod", "status"), True),
    (["Pod"], ("", "v1", "Pod", "status"), False),
    (["Pod"], ("", "v1", "Pod", "ephemeralcontainers"), True),       # Kyverno lets Pod rules see them
    (["*/scale"], ("apps", "v1", "Deployment", "scale"), True),
    (["Namespace"], ("", "v1", "ConfigMap", ""), False),
])
def test_wildcard_qualified_and_subresource_kinds(kinds: list[str], gvk: tuple[str, str, str, str],
                                                  passes: bool) -> None:
    gate = KindGate([{"any": [{"resources": {"kinds": kinds}}]}])
    assert gate.candidates(*gvk) == ((0,) if passes else ())


def test_a_kind_is_decided_once() -> None:
    gate = KindGate([{"resources": {"kinds": ["Namespace"]}}, {"resources": {"kinds": ["ConfigMap"]}}])
    calls = []
    real = match_module.check_kind

    def counting(kinds: Any, facts: RequestFacts, allow_ephemeral: bool = True) -> bool:
        calls.append(kinds)
        return real(kinds, facts, allow_ephemeral)

    match_module.check_kind = counting
    try:
        for _ in range(50):
            assert gate.candidates("", "v1", "ConfigMap") == (1,)
    finally:
        match_module.check_kind = real
    assert len(calls) == 2


POLICY = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: gated}
spec:
  rules:
  - name: per-ns
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: from-ns
      namespace: "{{request.object.metadata.name}}"
      data: {data: {a: b}}
  - name: per-anything
    # (kinds ["*"] itself is refused for generate rules, as Kyverno's validateWildcard refuses it)
    match: {any: [{resources: {kinds: [Namespace, "apps/*/Deployment", Secret, "batch/*/CronJob"],
                               names: ["keep-*"]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: "from-{{request.object.metadata.name}}"
      namespace: default
      data: {data: {kind: "{{request.object.kind}}"}}
  - name: per-deploy
    match: {all: [{resources: {kinds: [apps/*/Deployment]}}]}
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: "deploy-{{request.object.metadata.name}}"
      namespace: default
      data: {data: {a: b}}
"""
TRIGGERS = """
apiVersion: v1
kind: Namespace
metadata: {name: keep-ns, uid: u1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: keep-d, namespace: default, uid: u2}
---
apiVersion: v1
kind: Secret
metadata: {name: other, namespace: default, uid: u3}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: keep-cj, namespace: default, uid: u4}
"""


def _run() -> Any:
    docs = [Document(d, Source("t.yaml", i + 1)) for i, d in enumerate(yaml.safe_load_all(TRIGGERS))]
    policies = classify([Document(yaml.safe_load(POLICY), Source("p.yaml", 1))])
    return run_classic_generate(policies.classic, docs, [], kinds=KindTable(),
                                options=GenerateOptions(now=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
                                                        user_info_known=True))


def _summary(out: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(o.policy.rule_name, o.trigger.ref.name, tuple(str(x["metadata"]["name"]) for x in o.objects))
            for o in out.outcomes]


def test_a_run_with_the_gate_equals_one_without(monkeypatch: pytest.MonkeyPatch) -> None:
    gated = _run()
    assert _summary(gated) == [
        ("per-ns", "keep-ns", ("from-ns",)), ("per-anything", "keep-ns", ("from-keep-ns",)),
        ("per-anything", "keep-d", ("from-keep-d",)), ("per-deploy", "keep-d", ("deploy-keep-d",)),
        ("per-anything", "keep-cj", ("from-keep-cj",))]
    # every object is still an evaluated trigger (its downstreams would no longer match, not be out of scope)
    assert gated.evaluated_uids == {"u1", "u2", "u3", "u4"}

    class Open(KindGate):
        def candidates(self, group: str, version: str, kind: str, subresource: str = "") -> tuple[int, ...]:
            return tuple(range(len(self._requirements)))

    monkeypatch.setattr(match_module, "KindGate", Open)
    ungated = _run()
    assert _summary(ungated) == _summary(gated)
    assert ungated.evaluated_uids == gated.evaluated_uids
