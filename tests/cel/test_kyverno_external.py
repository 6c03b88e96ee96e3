"""globalContext.Get, image.GetMetadata and http.* through CEL, with the namespaced restrictions."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cel.context import EmptyProvider, ObjectsProvider
from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_external import global_context_library, http_library, image_data_library

CA_BUNDLE = """
-----BEGIN CERTIFICATE-----
MIIBcDCCARWgAwIBAgIUVt/5dZrsPjITwbXN5sdYfU/iVSAwCgYIKoZIzj0EAwIw
DTELMAkGA1UEAwwCZWMwHhcNMjYxMTI5MDc1ODA1WhcNMjYxMTMwMDc1ODA1WjAN
MQswCQYDVQQDDAJlYzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABFc+xNMYBd/L
l/19xaUHN7p6zA8ay08lIlMd3cq3ryy6wrCxreoPpCWaPd2viPeLXZuby4sXiFCn
1Xr3OuKlSESjUzBRMB0GA1UdDgQWBBTWRaXolfz/tPTUMvrU5F/i5MjZuzAfBgNV
HSMEGDAWgBTWRaXolfz/tPTUMvrU5F/i5MjZuzAPBgNVHRMBAf8EBTADAQH/MAoG
CCqGSM49BAMCA0kAMEYCIQCEme8xHTi+1i8Ct0H4p0BieFR9w9oJz4T2nGs3LbWF
6gIhAMT7RU4Rv16/K1rN12FgIqWO69L+RvSNCaeVSUoIkOOe
-----END CERTIFICATE-----
"""

CONTEXT = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context", "spec": {
    "images": [{"image": "ghcr.io/kyverno/kyverno:latest", "config": {"architecture": "amd64"}}],
    "globalContext": [{"name": "deployments", "value": [{"name": "d1"}]},
                      {"name": "deployments", "projection": "count", "value": 1}],
    "http": [{"method": "GET", "url": "http://svc.local/", "body": {"metadata": {"labels": {"app": "a"}}}},
             {"method": "POST", "url": "http://svc.local/", "body": {"received": "test"}},
             {"method": "PUT", "url": "http://svc.local/", "body": "stored"}]}}


def run(expr: str, libraries: list[Library]) -> Any:
    env = Environment(libraries, [])
    outcome = env.compile(expr).evaluate(env.activation({}))
    return outcome.error if outcome.error is not None else outcome.value


def gctx(expr: str, denied: bool = False, provider: Any = None) -> Any:
    return run(expr, [global_context_library(provider or ObjectsProvider(context_file=CONTEXT), denied=denied)])


def http(expr: str, denied: bool = False, provider: Any = None) -> Any:
    return run(expr, [http_library(provider or ObjectsProvider(context_file=CONTEXT), denied=denied)])


def test_global_context_in_both_spellings() -> None:
    assert gctx('globalContext.Get("deployments")') == [{"name": "d1"}]
    assert gctx('globalContext.get("deployments", "count")') == 1.0


def test_a_missing_global_context_entry_is_null() -> None:
    # Kyverno's graceful handling: conformance test globalreference-missing-graceful
    assert gctx('globalContext.get("missing-entry-1", "count") == null && globalContext.get("x", "") == null') is True
    assert gctx('globalContext.Get("anything") == null', provider=EmptyProvider()) is True


def test_global_context_errors_are_wrapped() -> None:
    provider = ObjectsProvider(context_file={**CONTEXT, "spec": {"globalContext": [
        {"name": "e", "projection": "p", "value": 1}]}})
    assert str(gctx('globalContext.get("e", "q")', provider=provider)).startswith(
        'failed to get global reference: global context entry "e" projection "q" not found')


def test_global_context_is_denied_to_namespaced_policies() -> None:
    assert gctx('globalContext.Get("deployments")', denied=True) == \
        "failed to get global reference: globalContext lookups are not allowed in namespaced policies"


def test_image_metadata() -> None:
    libraries = [image_data_library(ObjectsProvider(context_file=CONTEXT))]
    assert run('image.GetMetadata("ghcr.io/kyverno/kyverno:latest").config.architecture', libraries) == "amd64"
    assert run('image.getMetadata("ghcr.io/kyverno/kyverno:latest") != null', libraries) is True
    assert run('image.GetMetadata("nginx")', libraries) == \
        "failed to get image data: image data for nginx not found in the context"
    assert run('image.GetMetadata("nginx")', [image_data_library(EmptyProvider())]) == \
        "failed to get image data: image.GetMetadata(nginx): needs registry access (not available offline)"


def test_http_verbs_and_spellings() -> None:
    assert http('http.Get("http://svc.local/").metadata.labels.app') == "a"
    assert http('http.get("http://svc.local/", {"Accept": "application/json"}).statusCode') == 200
    assert http('http.post("http://svc.local/", {"labels": "x"}, {"Content-Type": "application/json"}).received') \
        == "test"
    assert http('http.Post("http://svc.local/", {"labels": "x"})') == {"received": "test", "statusCode": 200}
    # a body that is not an object comes back under "body"
    assert http('http.Put("http://svc.local/", {})') == {"body": "stored", "statusCode": 200}
    assert http('http.put("http://svc.local/", {}, {"X": "y"}).body') == "stored"


def test_http_client_methods() -> None:
    assert http('http.Client("").Get("http://svc.local/").metadata.labels.app') == "a"
    assert http(f'http.client("""{CA_BUNDLE}""").post("http://svc.local/", {{}}).received') == "test"
    assert http('http.Client("not a pem")') == "request failed: failed to parse PEM CA bundle for APICall"


def test_http_offline_without_stubs() -> None:
    assert http('http.Get("https://example.com")', provider=EmptyProvider()) == \
        "request failed: http.Get: needs network access (not available offline)"


def test_http_is_denied_to_namespaced_policies_unless_allowed() -> None:
    denied = "request failed: http calls are not allowed in namespaced policies: set " \
             "--allowHTTPInNamespacedPolicies to enable"
    assert http('http.Get("http://svc.local/")', denied=True) == denied
    assert http('http.Client("").Post("http://svc.local/", {})', denied=True) == denied


def test_http_methods_reject_other_maps() -> None:
    assert http('{"a": 1}.Get("http://svc.local/")') == "no such overload"
