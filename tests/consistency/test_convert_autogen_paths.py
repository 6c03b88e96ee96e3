"""convert: a quoted request path (`request."object".metadata`) escapes classic autogen's text rewrite but not
the CEL autogen's; such a policy is refused (found by the converted corpus suites: restrict-automount-sa-token)."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.run.convert import verify


def _policy(key: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", **({"annotations": annotations} if annotations else {})},
            "spec": {"rules": [{
                "name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "preconditions": {"all": [{"key": key, "operator": "NotEquals", "value": "skip-me"}]},
                "validate": {"message": "m", "pattern": {"spec": {"hostNetwork": False}}}}]}}


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "d", "namespace": "default", "labels": {"team": "skip-me"}},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                  "metadata": {"labels": {"a": "b"}},
                  "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "i"}]}}}}


def test_a_quoted_request_path_under_autogen_is_refused() -> None:
    conv = convert_policy(_policy("{{ request.\"object\".metadata.labels.team || '' }}"))
    assert conv.documents == []
    assert conv.refusals == ["spec.rules[0]: {{ request.\"object\".metadata.labels.team || '' }}: a quoted "
                             "request path is not rewritten by classic autogen, and is by the CEL autogen; not "
                             "converted"]


def test_the_plain_path_converts_and_decides_alike() -> None:
    original = _policy("{{ request.object.metadata.labels.team || '' }}")
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, subjects = verify(original, conv.documents, [DEPLOYMENT])
    assert subjects > 5 and [d.line() for d in diffs] == []


def test_without_autogen_a_quoted_path_converts() -> None:
    original = _policy("{{ request.\"object\".metadata.labels.team || '' }}",
                       {"pod-policies.kyverno.io/autogen-controllers": "none"})
    conv = convert_policy(original)
    assert conv.refusals == []
    diffs, _ = verify(original, conv.documents, [DEPLOYMENT])
    assert [d.line() for d in diffs] == []


def test_the_refusal_is_needed(monkeypatch: Any) -> None:
    """Written anyway, the conversion fails the Deployment the ClusterPolicy skips (its own label)."""
    import kubectl_kyrec.convert.policy as policy

    monkeypatch.setattr(policy, "_autogen_reads_alike", lambda rules: None)
    original = _policy("{{ request.\"object\".metadata.labels.team || '' }}")
    diffs, _ = verify(original, policy.convert_policy(original).documents, [DEPLOYMENT])
    assert "p: Deployment/default/d (as given): original pass, converted fail" in [d.line() for d in diffs]
