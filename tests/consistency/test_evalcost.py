"""eval's per (subject, policy) path (branch evalcost): the same results as before on what it changed.

- pipeline.evaluate_policies walks a kind's variants flattened once (validating/engine.py KindPlan), calling
  evaluate_variant for each, where it called evaluate_validating per policy: every result and reportable flag is
  the one the per-policy loop made, on policies with variables, messageExpressions, matchConditions, a
  PolicyException, a namespaceSelector, a NamespacedValidatingPolicy (its own namespace only), autogen
  variants (a Deployment), a lookup error and a type error.
- ObjectsProvider asks the kind table of a looked-up resource once (cel/context.py _kind_info), not on every
  `resource.Get` of a kind the state holds no object of; what it answers is the same.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import NOT_FOUND_RESOURCE, LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.decl import CelFunctionError, LookupRefused
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate import pipeline
from kubectl_kyrec.evaluate.namespaces import namespace_objects
from kubectl_kyrec.evaluate.pipeline import EvalOptions, reportable, run_eval, subject_context
from kubectl_kyrec.evaluate.validating import engine
from kubectl_kyrec.evaluate.validating.engine import KindPlan, candidate_variants
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Result

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
PODS_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}


def _vpol(name: str, validations: list[dict[str, Any]], *, kind: str = "ValidatingPolicy",
          namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": "policies.kyverno.io/v1beta1" if kind.startswith("Namespaced") else "policies.kyverno.io/v1",
            "kind": kind, "metadata": metadata,
            "spec": {"validationActions": ["Audit"],
                     "matchConstraints": {"resourceRules": [PODS_RULE], **spec.pop("constraints", {})},
                     "validations": validations, **spec}}


POLICIES = [
    _vpol("vars-msg", [{"expression": "variables.image.endsWith(':1')",
                        "messageExpression": "'pin ' + variables.image + ' in ' + variables.ns"}],
          variables=[{"name": "image", "expression": "object.spec.containers[0].image"},
                     {"name": "ns", "expression": "namespaceObject.metadata.name"}],
          matchConditions=[{"name": "not-skipped", "expression": "!object.metadata.name.startsWith('skip')"}]),
    _vpol("ns-selected", [{"expression": "has(object.metadata.labels)", "message": "labels"}],
          constraints={"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    _vpol("excepted", [{"expression": "object.metadata.name != 'legacy'", "message": "no legacy"}]),
    # the ConfigMap is not in the state: `no such key: data` (cel/engine.py _missing_field), on every subject
    _vpol("lookup", [{"expression": "variables.cm.data['allowed'] == 'yes'"}],
          variables=[{"name": "cm", "expression": "resource.Get('v1', 'configmaps', 'default', 'absent')"}]),
    _vpol("typed", [{"expression": "object.metadata.name == 'ok' ? true : object.metadata.name"}]),
    _vpol("own-ns", [{"expression": "object.metadata.name == 'ok'", "message": "only ok"}],
          kind="NamespacedValidatingPolicy", namespace="team"),
    {"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
     "metadata": {"name": "legacy-ok", "namespace": "team"},
     "spec": {"policyRefs": [{"name": "excepted", "kind": "ValidatingPolicy"}],
              "matchConditions": [{"name": "legacy", "expression": "object.metadata.name == 'legacy'"}]}},
]


def _pod(name: str, namespace: str, image: str = "nginx:1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": image}]}}


RESOURCES = [
    *[_pod(n, ns) for ns in ("team", "other") for n in ("ok", "legacy", "skip-me")],
    _pod("latest", "team", "nginx:latest"),
    # a Pod controller: the Pod policies' autogen variants
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team"},
     "spec": {"selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}},
]
NAMESPACES = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"env": "prod"}}},
              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other", "labels": {"env": "dev"}}}]


@pytest.fixture()
def loaded(tmp_path: Path) -> tuple[Any, list[Any], list[Any]]:
    for name, docs in (("policies", POLICIES), ("resources", RESOURCES), ("state", NAMESPACES)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
    policies = classify(load_documents([str(tmp_path / "policies.yaml")])).raise_errors()
    return (policies, load_documents([str(tmp_path / "resources.yaml")]),
            load_documents([str(tmp_path / "state.yaml")]))


def _run(loaded: tuple[Any, list[Any], list[Any]]) -> tuple[Any, Any, Any, EvalOptions, Environments]:
    policies, resources, state = loaded
    kinds = KindTable()
    provider = ObjectsProvider([d.obj for d in state], kinds.resource_of, kind_of=kinds.kind_of)
    libraries = library_factory(LibraryContext(now=NOW, provider=provider))
    envs = Environments(libraries)
    options = EvalOptions(now=NOW)
    outcome = run_eval(policies, resources, state, kinds=kinds, libraries=libraries, options=options, envs=envs)
    assert not outcome.errors
    compiled = pipeline.compile_run(policies, state, kinds, envs, options, [], [], "skipped")
    return outcome, compiled, namespace_objects(state, {}), options, envs


def _per_policy(compiled: Any, ctx: Any) -> list[tuple[Result, bool]]:
    """A subject's pairs as eval's loop made them before KindPlan: evaluate_validating per policy."""
    return [(result, reportable(result, cp.fixed.background, cp.fixed.disabled))
            for cp in compiled.validating
            for result in engine.evaluate_validating(cp, ctx, candidate_variants(cp, ctx.request))]


def test_the_flat_plan_makes_the_per_policy_loops_results(loaded: tuple[Any, list[Any], list[Any]]) -> None:
    outcome, compiled, namespaces, options, _ = _run(loaded)
    expected: list[tuple[Result, bool]] = []
    for subject in outcome.subjects:
        expected.extend(_per_policy(compiled, subject_context(subject, namespaces, options)))
    assert list(outcome.pairs) == expected
    seen = {(r.policy, r.subject.kind, r.subject.namespace, r.subject.name, r.result, r.message) for r, _ in expected}
    # every path the plan walks met: a messageExpression of variables, a matchConditions skip, a
    # namespaceSelector that leaves a namespace out, an exception, the lookup's error, a type error, the
    # namespaced policy in its own namespace only, an autogen variant
    assert ("vars-msg", "Pod", "team", "latest", "fail", "pin nginx:latest in team") in seen
    assert ("vars-msg", "Pod", "team", "skip-me", "skip", "skip") in seen
    assert {s[2] for s in seen if s[0] == "ns-selected"} == {"team"}
    assert ("excepted", "Pod", "team", "legacy", "skip",
            "rule is skipped due to policy exception: team/legacy-ok") in seen
    assert ("excepted", "Pod", "other", "ok", "pass", "success") in seen
    assert ("lookup", "Pod", "other", "ok", "error", "error: no such key: data") in seen
    assert ("typed", "Pod", "team", "legacy", "error", "error: type conversion error from 'str' to 'bool'") in seen
    assert {(s[2], s[3], s[4]) for s in seen if s[0] == "team/own-ns" and s[1] == "Pod"} == \
        {("team", "ok", "pass"), ("team", "legacy", "fail"), ("team", "skip-me", "fail"), ("team", "latest", "fail")}
    # the autogen variant: its matchCondition reads the template's metadata.name, which it has not
    assert ("vars-msg", "Deployment", "team", "web", "error", "failed to load context: no such key: name") in seen
    assert ("ns-selected", "Deployment", "team", "web", "pass", "success") in seen


def test_the_eval_path_calls_no_per_policy_loop(loaded: tuple[Any, list[Any], list[Any]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind's plan is made once and walked per subject: evaluate_validating is explain's (and the
    other callers') only; its results are the same as the whole run's above."""
    outcome, compiled, namespaces, options, _ = _run(loaded)

    def per_policy(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("evaluate_validating called on eval's path")

    monkeypatch.setattr(engine, "evaluate_validating", per_policy)
    monkeypatch.setattr(pipeline, "evaluate_validating", per_policy)
    for subject in outcome.subjects[:3]:
        ctx = subject_context(subject, namespaces, options)
        plan = KindPlan((cp, cands) for cp in compiled.validating if (cands := candidate_variants(cp, ctx.request)))
        pairs = pipeline.evaluate_policies(ctx, plan, compiled, state=[], kinds=KindTable(), options=options)
        assert pairs == [p for p in outcome.pairs if p[0].subject is subject.ref]


def test_a_lookup_of_a_kind_with_no_object_asks_the_kind_table_once() -> None:
    kinds = KindTable()
    asked: list[tuple[str, str]] = []

    def kind_of(api_version: str, resource: str) -> str | None:
        asked.append((api_version, resource))
        return kinds.kind_of(api_version, resource)

    refusals: list[str] = []

    def refused(api_version: str, kind: str, namespace: str) -> str | None:
        # still asked on every lookup, with the kind the table answered once
        refusals.append(f"{api_version} {kind} {namespace}")
        return "forbidden" if namespace == "locked" else None

    provider = ObjectsProvider([], kinds.resource_of, kind_of=kind_of, refused=refused)
    for _ in range(3):
        assert provider.get_resource("v1", "configmaps", "default", "absent") is None
    with pytest.raises(LookupRefused):
        provider.get_resource("v1", "configmaps", "locked", "absent")
    assert asked == [("v1", "configmaps")]
    assert refusals == ["v1 ConfigMap default"] * 3 + ["v1 ConfigMap locked"]
    # an object stored since is found (the stored kinds come first)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "absent", "namespace": "default"}}
    assert provider.add(cm)
    assert provider.get_resource("v1", "configmaps", "default", "absent") == cm
    # a resource the table does not serve: asked once too, and still not served
    for _ in range(2):
        assert provider.list_resources("v1", "configmaps", "", None)["kind"] == "ConfigMapList"
    for _ in range(2):
        with pytest.raises(CelFunctionError, match=NOT_FOUND_RESOURCE):
            provider.list_resources("example.com/v1", "widgets", "", None)
    assert asked == [("v1", "configmaps"), ("example.com/v1", "widgets")]
