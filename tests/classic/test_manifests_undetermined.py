"""validate.manifests on signed objects: what kyrec verifies offline is checked against Kyverno's CLI in
tests/consistency/test_manifests_oracle.py; these are the cases it leaves `undetermined`, each saying why,
because deciding them needs what kyrec does not have (a dry run, Fulcio/Rekor, a key by reference, the value
search), and the ones it decides the same without a key (a diff, a missing signature)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_kyrec.classic.manifests import evaluate
from kubectl_kyrec.model import UNDETERMINED
from tests.consistency.manifests_oracle import DOMAIN, make_key, public_pem, service, signed

KEY = make_key("ecdsa")


def _keys(**extra: Any) -> dict[str, Any]:
    return {"attestors": [{"entries": [{"keys": {"publicKeys": public_pem(KEY)}}]}], **extra}


def _tampered() -> dict[str, Any]:
    obj = signed(service("web"), [KEY])
    obj["spec"]["selector"] = {"app": "other"}
    return obj


@pytest.mark.parametrize(("manifests", "obj", "why"), [
    (_keys(dryRun={"enable": True}), _tampered(), "only a server-side dry run"),
    ({"attestors": [{"entries": [{"certificates": {"cert": "x"}}]}]}, signed(service("web"), [KEY]),
     "certificate and keyless attestors"),
    ({"attestors": [{"entries": [{"keys": {"publicKeys": "k8s://ns/secret"}}]}]}, signed(service("web"), [KEY]),
     "by reference"),
    (_keys(), signed(service("web"), [KEY], manifest=service("other-name")), "ManifestSearchByValue"),
    (_keys(), {**signed(service("web"), [KEY]), "metadata": {
        "name": "web", "annotations": {**signed(service("web"), [KEY])["metadata"]["annotations"],
                                       f"{DOMAIN}/bundle": "e30="}}}, "Rekor"),
])
def test_undetermined_with_the_reason(manifests: dict[str, Any], obj: dict[str, Any], why: str) -> None:
    response = evaluate(manifests, obj, "CREATE")
    assert response is not None and response.status == UNDETERMINED
    assert why in response.message


def test_a_dry_run_is_not_needed_when_the_manifest_matches() -> None:
    response = evaluate(_keys(dryRun={"enable": True}), signed(service("web"), [KEY]), "CREATE")
    assert response is not None and response.status == "pass"


def test_a_diff_fails_once_the_signature_verifies() -> None:
    response = evaluate(_keys(), _tampered(), "CREATE")
    assert response is not None and response.status == "fail"
    assert response.message.endswith('diff found; {"items":[{"key":"spec.selector.app","values":'
                                     '{"after":"other","before":"web"}}]}')


def test_a_message_without_signature_fails_as_not_found() -> None:
    obj = signed(service("web"), [KEY])
    del obj["metadata"]["annotations"][f"{DOMAIN}/signature"]
    response = evaluate(_keys(), copy.deepcopy(obj), "CREATE")
    assert response is not None and response.status == "fail"
    assert response.message.endswith(".keys: failed to verify signature: signature not found")
