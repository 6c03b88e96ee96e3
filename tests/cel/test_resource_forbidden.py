"""`resource.Get/List` on a kind the cluster refused to let the state read (401/403, a live read or a capture's
record): kyverno/sdk's resource library words a refusal `failed to get resource: permission denied: <err>`
(extensions/cel/libs/resource/impl.go; impl_test.go Test_impl_get_resource_forbidden_error,
Test_impl_list_resources_forbidden_error), an error rather than an empty answer that the state cannot vouch
for. A kind that was read answers as before. The text ends in kyrec's mark of a lookup the state cannot answer
(errors.py unread_mark: `read-failed`), what the engines read past the CEL boundary to make the result
undetermined."""

from __future__ import annotations

import datetime
import random
from types import SimpleNamespace
from typing import Any

from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider, builtin_kind_of, builtin_resource_of
from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_libs import kyverno_libraries
from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.load.run_inputs.sources import Inputs
from kubectl_kyrec.model import Document, Source
from kubectl_kyrec.run.providers import provider_for

NOW = datetime.datetime(2025, 1, 2, 15, 30, tzinfo=datetime.timezone.utc)
DENIED = 'deployments.apps is forbidden: User "dev" cannot list resource "deployments" in API group "apps"'
MARK = "(the lookup cannot be answered: read-failed)"
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}


def _run(provider: Any, expr: str, kind: str = "ValidatingPolicy", namespace: str = "") -> Any:
    ctx = LibraryContext(NOW, provider, namespace, random.Random(1))
    env = Environment(kyverno_libraries(ctx, policy_kind=kind), ["object"])
    outcome = env.compile(expr).evaluate(env.activation({"object": {}}))
    return outcome.error if outcome.error is not None else outcome.value


def _refused(api_version: str, kind: str, namespace: str) -> str | None:
    return DENIED if kind == "Deployment" else None


def test_a_refused_read_is_permission_denied() -> None:
    provider = ObjectsProvider([CM], refused=_refused)
    assert _run(provider, 'resource.List("apps/v1", "deployments", "default")') == \
        f"failed to list resource: permission denied: {DENIED} {MARK}"
    assert _run(provider, 'resource.Get("apps/v1", "deployments", "default", "nginx")') == \
        f"failed to get resource: permission denied: {DENIED} {MARK}"
    # the namespaced policies' spelling goes through the same library
    assert _run(provider, 'resource.List("apps/v1", "deployments")', "NamespacedValidatingPolicy", "default") == \
        f"failed to list resource: permission denied: {DENIED} {MARK}"
    # a kind that was read answers
    assert _run(provider, 'resource.Get("v1", "configmaps", "default", "c").metadata.name') == "c"


def test_a_runs_provider_refuses_what_the_state_could_not_read() -> None:
    refused = FailedRead("list", "apps/v1", "Deployment", "deployments.apps", status=403, reason="Forbidden",
                         message=DENIED)
    timed_out = FailedRead("list", "batch/v1", "Job", "jobs.batch", status=None, reason="Timeout",
                           message="timeout")
    state = ClusterState.from_objects(
        [Document(CM, Source("state.yaml", 1))], listed=[ListedKind("v1", "ConfigMap", "")],
        unreadable={ListedKind("apps/v1", "Deployment", ""): refused, ListedKind("batch/v1", "Job", ""): timed_out})
    inputs = Inputs(policies=None, resources=[], state=state, values=None,  # type: ignore[arg-type]
                    kinds=SimpleNamespace(resource_of=builtin_resource_of, kind_of=builtin_kind_of))
    provider = provider_for(inputs)
    assert _run(provider, 'resource.List("apps/v1", "deployments", "default")') == \
        f"failed to list resource: permission denied: {DENIED} {MARK}"
    # a read that failed otherwise is not a refusal: not worded as one
    assert "permission denied" not in str(_run(provider, 'resource.List("batch/v1", "jobs", "default")'))
    assert _run(provider, 'resource.List("v1", "configmaps", "default").items.size()') == 1
